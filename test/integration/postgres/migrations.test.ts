/**
 * Migrations and opening: numbered migrations applied once under an advisory lock however many
 * processes start at once, recorded in the schema's ledger; `migrate: false` refuses a schema that
 * is not up to date; the store URL and options are checked.
 */
import { expect, onTestFinished, test } from "vitest";
import { defineJob } from "../../../src/define-job.js";
import { ErrandError } from "../../../src/errors.js";
import { openQueue, openStore } from "../../../src/queue.js";
import { migrations } from "../../../src/store/generated/postgres-migrations.js";
import { DEFAULT_BACKOFF_TEXT } from "../../../src/store/packed-row.js";
import { migrate, PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { LIST_SCAN } from "../../../src/store/store.js";
import { ManualClock } from "../../../src/testing/index.js";
import {
  dropSchema,
  freshSchema,
  PG_URL,
  pgUrl,
  schemaAt,
  silentLogger,
  withPg,
} from "../../helpers/postgres.js";

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

test("takes a version 10 schema's waiting keyed jobs into version 11's parking", {
  timeout: 30_000,
}, async () => {
  const schema = freshSchema("errand_mig10");
  onTestFinished(() => dropSchema(schema));
  await schemaAt(schema, 10);
  await withPg(async (c) => {
    const insert = `INSERT INTO "${schema}".errand_job (id, type, queue, state, payload, priority, weight,
      run_at, max_attempts, backoff, delivery, created_at, key, attempt, lease_expires_at, worker_id)
      VALUES ($1, 'one', 'default', $2, '{}', 0, 1, 1000, 5, $8, 'at_least_once', $3, $4, $5, $6, $7)`;
    const b = DEFAULT_BACKOFF_TEXT;
    await c.query(insert, ["a1", "active", 900, "a", 1, 60_000, "w", b]);
    for (let i = 2; i <= 5; i++) await c.query(insert, [`a${i}`, "pending", 900 + i, "a", 0, null, null, b]);
    await c.query(insert, ["b1", "pending", 1000, "b", 0, null, null, b]);
  });

  const queue = await openQueue({ store: pgUrl(schema), clock: new ManualClock(5000) });
  onTestFinished(() => queue.close());
  queue.register(defineJob({ type: "one", keyConcurrency: 1, handler: async () => null }));
  // a1 runs: a's waiting jobs are parked by this claim, b's job starts.
  expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(["b1"]);
  const parked = await withPg(async (c) =>
    (await c.query(`SELECT id FROM "${schema}".errand_job WHERE parked = 1 ORDER BY id`)).rows.map(
      (r) => r.id as string,
    ),
  );
  expect(parked).toEqual(["a2", "a3", "a4", "a5"]);
  expect(await queue.complete((await queue.get("a1"))!, null)).toBe(true);
  expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(["a2"]);
});

test("gives a version 12 schema's key whose rate-parked jobs have no wake a way back (version 13)", {
  timeout: 30_000,
}, async () => {
  const schema = freshSchema("errand_mig12");
  onTestFinished(() => dropSchema(schema));
  await schemaAt(schema, 12);
  // What version 12 could leave: a key's jobs parked by its rate limit, no wake, nothing running.
  await withPg(async (c) => {
    const insert = `INSERT INTO "${schema}".errand_job (id, type, queue, state, payload, priority, weight,
      run_at, max_attempts, backoff, delivery, created_at, key, attempt, parked)
      VALUES ($1, 'krate', 'default', 'pending', '{}', 0, 1, 1000, 5, $3, 'at_least_once', $2, 'a', 0, 3)`;
    for (let i = 2; i <= 4; i++) await c.query(insert, [`a${i}`, 900 + i, DEFAULT_BACKOFF_TEXT]);
  });

  const clock = new ManualClock(5000);
  const queue = await openQueue({ store: pgUrl(schema), clock });
  onTestFinished(() => queue.close());
  queue.register(
    defineJob({
      type: "krate",
      keyConcurrency: 1,
      keyRateLimit: { limit: 1, periodMs: 100 },
      handler: async () => null,
    }),
  );
  const ran: string[] = [];
  for (let step = 0; step < 5; step++) {
    for (const j of await queue.lease({ limit: 10, maintenance: false })) {
      ran.push(j.id);
      expect(await queue.complete(j, null)).toBe(true);
    }
    await clock.advance(1_000);
  }
  expect(ran).toEqual(["a2", "a3", "a4"]);
});
