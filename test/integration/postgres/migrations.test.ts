/**
 * Migrations and opening: numbered migrations applied once under an advisory lock however many
 * processes start at once, recorded in the schema's ledger; `migrate: false` refuses a schema that
 * is not up to date; the store URL and options are checked.
 */
import { expect, onTestFinished, test } from "vitest";
import { ErrandError } from "../../../src/errors.js";
import { openQueue, openStore } from "../../../src/queue.js";
import { migrations } from "../../../src/store/generated/postgres-migrations.js";
import { migrate, PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { LIST_SCAN } from "../../../src/store/store.js";
import { dropSchema, freshSchema, PG_URL, pgUrl, silentLogger, withPg } from "../../helpers/postgres.js";

async function refused(action: () => Promise<unknown>): Promise<ErrandError> {
  try {
    await action();
  } catch (e) {
    if (e instanceof ErrandError) return e;
    throw e;
  }
  throw new Error("expected an ErrandError");
}

test("eight stores opening a fresh schema at once apply each migration exactly once", async () => {
  const schema = freshSchema("errand_mig");
  onTestFinished(() => dropSchema(schema));
  const stores = await Promise.all(
    Array.from({ length: 8 }, () =>
      PostgresStore.open({ connectionString: PG_URL, schema, poolSize: 1, logger: silentLogger }),
    ),
  );
  for (const s of stores) await s.close();
  const { rows } = await withPg((c) =>
    c.query(`SELECT version, name FROM "${schema}".errand_migration ORDER BY version`),
  );
  expect(rows).toEqual(migrations.map((m) => ({ version: m.version, name: m.name })));
  // Running it again changes nothing.
  expect(await migrate({ connectionString: PG_URL, schema })).toEqual({
    from: migrations.length,
    to: migrations.length,
    applied: [],
  });
});

test("migrate: false opens an up-to-date schema and refuses one that is not (STORE_ERROR)", async () => {
  const schema = freshSchema("errand_mig");
  onTestFinished(() => dropSchema(schema));
  const e = await refused(() =>
    PostgresStore.open({ connectionString: PG_URL, schema, migrate: false, logger: silentLogger }),
  );
  expect(e.code).toBe("STORE_ERROR");
  expect(e.message).toMatch(/version 0.*run migrate\(\)/);
  expect((await withPg((c) => c.query("SELECT to_regnamespace($1) AS ns", [schema]))).rows[0].ns).toBeNull();

  await migrate({ connectionString: PG_URL, schema });
  const store = await PostgresStore.open({
    connectionString: PG_URL,
    schema,
    migrate: false,
    logger: silentLogger,
  });
  await store.close();

  // A schema migrated by a newer errand is refused, not downgraded.
  await withPg((c) =>
    c.query(`INSERT INTO "${schema}".errand_migration VALUES (9999, '9999_future.sql', 0)`),
  );
  const newer = await refused(() =>
    PostgresStore.open({ connectionString: PG_URL, schema, logger: silentLogger }),
  );
  expect(newer.code).toBe("STORE_ERROR");
  expect(newer.message).toMatch(/9999.*upgrade errand/);
});

test("opens from a postgres:// or postgresql:// URL with ?schema=, and checks it", async () => {
  const schema = freshSchema("errand_url");
  onTestFinished(() => dropSchema(schema));
  const queue = await openQueue(pgUrl(schema));
  const job = await queue.enqueue("hello", { to: "world" });
  await queue.close();
  const again = await openQueue(pgUrl(schema).replace(/^postgres:/, "postgresql:"));
  expect((await again.get(job.id))?.payload).toEqual({ to: "world" });
  expect(again.store.capabilities).toEqual({
    listen: true,
    multiProcess: true,
    transactionalEnqueue: true,
    claimChunk: 150,
    prefetchChunk: 500,
    claimAhead: false,
    listScan: LIST_SCAN,
  });
  await again.close();

  for (const bad of ["Errand", "1errand", "errand-x", "a".repeat(49), "public; DROP"]) {
    const e = await refused(() => openStore(pgUrl(bad)));
    expect(e.code, bad).toBe("INVALID_STORE_URL");
    expect(e.message).toMatch(/schema/);
  }
  const unreachable = await refused(() => openStore("postgres://postgres@127.0.0.1:1/test?schema=errand_x"));
  expect(unreachable.code).toBe("STORE_ERROR");
});

test("checks PostgresStore options, naming the field (INVALID_OPTION)", async () => {
  const cases: Array<[object, RegExp]> = [
    [{}, /connectionString or pool/],
    [{ connectionString: PG_URL, pool: {} }, /connectionString or pool/],
    [{ connectionString: "mysql://x" }, /postgres:\/\//],
    [{ connectionString: PG_URL, shema: "x" }, /did you mean "schema"/],
    [{ connectionString: PG_URL, poolSize: 0 }, /poolSize/],
    [{ connectionString: PG_URL, retryMs: -1 }, /retryMs/],
    [{ connectionString: PG_URL, schema: "Bad" }, /schema "Bad"/],
  ];
  for (const [options, message] of cases) {
    const e = await refused(() => PostgresStore.open(options as never));
    expect(e.code).toBe("INVALID_OPTION");
    expect(e.message).toMatch(message);
  }
});
