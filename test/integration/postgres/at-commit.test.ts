/**
 * PgConnection.atCommit: a statement sent with a transaction's COMMIT, in one message (the fair
 * claim's fairAdvance rides on it). It runs last and commits with the rest, or fails and commits
 * nothing; it is refused outside errand's own transactions; its values are literals made by
 * sqlTextArray, which must round-trip any string.
 */
import fc from "fast-check";
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import { integerArray, textArray } from "../../../src/store/postgres/arrays.js";
import { PgConnection, sqlTextArray } from "../../../src/store/postgres/connection.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";

async function connection(): Promise<{ c: PgConnection; schema: string }> {
  const schema = freshSchema("errand_atc");
  const c = new PgConnection(new pg.Pool({ connectionString: PG_URL, max: 2 }), true, {
    logger: silentLogger,
    retryMs: 0,
  });
  onTestFinished(async () => {
    await c.drain();
    await c.end();
    await dropSchema(schema);
  });
  await c.op("pool", (db) => db.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".t (v text)`));
  return { c, schema };
}

test("a statement at commit runs after the transaction's own, in it", async () => {
  const { c, schema } = await connection();
  await c.op("tx", async (db) => {
    await db.query(`INSERT INTO "${schema}".t VALUES ('first')`);
    // A statement's text may end in a comment (as queries/*.sql's do): the COMMIT is not in it.
    c.atCommit(db, `INSERT INTO "${schema}".t SELECT v || ' then last' FROM "${schema}".t\n-- the end`);
  });
  const { rows } = await c.pool.query(`SELECT v FROM "${schema}".t ORDER BY v`);
  expect(rows.map((r) => r.v)).toEqual(["first", "first then last"]);
});

test("a statement at commit that fails commits nothing of its transaction", async () => {
  const { c, schema } = await connection();
  await expect(
    c.op("tx", async (db) => {
      await db.query(`INSERT INTO "${schema}".t VALUES ('kept?')`);
      c.atCommit(db, `INSERT INTO "${schema}".missing VALUES (1)`);
    }),
  ).rejects.toThrow();
  const { rows } = await c.pool.query(`SELECT count(*)::integer AS n FROM "${schema}".t`);
  expect(rows[0].n).toBe(0);
  // The connection went back to the pool usable, with no statement left waiting for a commit.
  await c.op("tx", (db) => db.query(`INSERT INTO "${schema}".t VALUES ('after')`));
  const after = await c.pool.query(`SELECT v FROM "${schema}".t`);
  expect(after.rows.map((r) => r.v)).toEqual(["after"]);
});

test("atCommit is refused outside errand's transactions, and twice in one", async () => {
  const { c } = await connection();
  expect(() => c.atCommit(c.pool, "SELECT 1")).toThrow(/atCommit/);
  await c.op("tx", async (db) => {
    c.atCommit(db, "SELECT 1");
    expect(() => c.atCommit(db, "SELECT 2")).toThrow(/atCommit/);
  });
});

test("sqlTextArray's literal gives back exactly the strings it was given", async () => {
  const { c } = await connection();
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.string({ unit: "binary" }).map((s) => s.replaceAll("\u0000", "")),
        { maxLength: 8 },
      ),
      async (values) => {
        const { rows } = await c.pool.query(`SELECT ${sqlTextArray(values)} AS v`);
        expect(rows[0].v).toEqual(values);
      },
    ),
    { numRuns: 200 },
  );
});

test("textArray's literal (a bulk insert's ids and payloads, a completion's results) gives back exactly the strings and nulls it was given", async () => {
  const { c } = await connection();
  const roundTrip = async (values: Array<string | null>) => {
    const { rows } = await c.pool.query("SELECT $1::text[] AS v", [textArray(values)]);
    expect(rows[0].v).toEqual(values);
  };
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          fc.string({ unit: "binary" }).map((s) => s.replaceAll("\u0000", "")),
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.constantFrom('"', "\\", '\\"', "\\n", "{}", "NULL", "null", ",", " ", ""),
          fc.constant(null),
        ),
        { maxLength: 8 },
      ),
      roundTrip,
    ),
    { numRuns: 300 },
  );
  // Payload JSON takes the literal, not pg's element-by-element path (which is the fallback).
  const payloads = ['{"to":"a\\"b"}', '{"path":"C:\\\\x"}', '{"s":"\\u0000 and \\ud800"}', "[]"];
  expect(typeof textArray(payloads.slice(0, 2))).toBe("string");
  await roundTrip(payloads);
});

test("integerArray's literal (a batch's attempt numbers) gives back exactly the integers it was given", async () => {
  const { c } = await connection();
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 8 }),
      async (values) => {
        const { rows } = await c.pool.query("SELECT $1::integer[] AS v", [integerArray(values)]);
        expect(rows[0].v).toEqual(values);
      },
    ),
    { numRuns: 100 },
  );
});
