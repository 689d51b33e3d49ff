/**
 * Issue 3: `queue.enqueue(job, payload, { db: client })` inserts through the caller's own pg
 * client, inside the caller's transaction: the job exists only if that transaction commits.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { ErrandError } from "../../../src/errors.js";
import type { Job } from "../../../src/job.js";
import { openQueue, Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { Worker } from "../../../src/worker/worker.js";
import { newJob } from "../../helpers/new-job.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";

const receipt = defineJob({ type: "receipt", handler: async (p: { order: number }) => p.order });

/** A queue on a fresh schema, an `orders` table of the app's own in it, and an app connection. */
async function setup() {
  const schema = freshSchema("errand_tx");
  const clock = new ManualClock();
  const store = await PostgresStore.open({
    connectionString: PG_URL,
    schema,
    poolSize: 2,
    logger: silentLogger,
  });
  const queue = new Queue(store, { clock });
  const app = new pg.Client({ connectionString: PG_URL });
  await app.connect();
  onTestFinished(async () => {
    await app.end();
    await store.close();
    await dropSchema(schema);
  });
  await app.query(`CREATE TABLE "${schema}".orders (id integer PRIMARY KEY)`);
  return { schema, clock, store, queue, app };
}

test("a job enqueued in a transaction that commits exists, and wakes a worker, only at the commit", async () => {
  const { schema, clock, queue, app } = await setup();
  // A worker in "another process": its own store on the same schema, polling only on demand.
  const workerStore = await PostgresStore.open({
    connectionString: PG_URL,
    schema,
    poolSize: 2,
    logger: silentLogger,
  });
  const workerQueue = new Queue(workerStore, { clock });
  const worker = new Worker(workerQueue, { jobs: [receipt], pollIntervalMs: 3_600_000, maintenance: false });
  onTestFinished(async () => {
    const closed = worker.close({ graceMs: 0 });
    await clock.advance(0);
    await closed;
    await workerStore.close();
  });
  await worker.start();
  const started = new Promise<Job>((resolve) => worker.once("active", resolve));

  await app.query("BEGIN");
  await app.query(`INSERT INTO "${schema}".orders VALUES (1)`);
  const job = await queue.enqueue(receipt, { order: 1 }, { db: app });
  expect(job).toMatchObject({ state: "pending", duplicate: false, payload: { order: 1 } });
  // Inside the transaction it is there; outside, not yet.
  const { rows } = await app.query(`SELECT state FROM "${schema}".errand_job WHERE id = $1`, [job.id]);
  expect(rows).toEqual([{ state: "pending" }]);
  expect(await queue.get(job.id)).toBeNull();
  expect(await queue.lease({ types: ["receipt"] })).toEqual([]);
  // The same id again in the same transaction is the same job.
  expect((await queue.enqueue(receipt, { order: 9 }, { id: job.id, db: app })).duplicate).toBe(true);

  await app.query("COMMIT");
  // The NOTIFY went out with the commit: the idle worker starts it without polling.
  expect((await started).id).toBe(job.id);
  expect((await queue.get(job.id))?.payload).toEqual({ order: 1 });
});

test("a job enqueued in a transaction that rolls back never existed", async () => {
  const { schema, clock, queue, app } = await setup();
  await app.query("BEGIN");
  await app.query(`INSERT INTO "${schema}".orders VALUES (2)`);
  const one = await queue.enqueue(receipt, { order: 2 }, { db: app });
  const many = await queue.enqueueMany(receipt, [{ order: 3 }, { order: 4 }], { db: app, uniqueKey: "o-3" });
  expect(many.map((j) => j.duplicate)).toEqual([false, true]);
  await app.query("ROLLBACK");

  expect(await queue.get(one.id)).toBeNull();
  expect(await queue.get(many[0]!.id)).toBeNull();
  expect((await queue.stats()).states.pending).toBe(0);
  expect((await app.query(`SELECT count(*)::integer AS n FROM "${schema}".orders`)).rows).toEqual([{ n: 0 }]);
  expect(await queue.lease({ types: ["receipt"], limit: 10 })).toEqual([]);
  // The unique key the rolled-back job held is free.
  expect((await queue.enqueue(receipt, { order: 5 }, { uniqueKey: "o-3" })).duplicate).toBe(false);
  await clock.advance(0);
});

test("enqueueManyIds in the caller's transaction: its ids exist only once that transaction commits", async () => {
  const { schema, queue, app } = await setup();
  const payloads = Array.from({ length: 150 }, (_, order) => ({ order }));
  await app.query("BEGIN");
  const rolledBack = await queue.enqueueManyIds(receipt, payloads, { db: app });
  await app.query("ROLLBACK");
  expect(rolledBack).toHaveLength(150);
  expect(await queue.get(rolledBack[0]!)).toBeNull();
  expect((await queue.stats()).states.pending).toBe(0);

  await app.query("BEGIN");
  await app.query(`INSERT INTO "${schema}".orders VALUES (1)`);
  const ids = await queue.enqueueManyIds(receipt, payloads, { db: app });
  expect(await queue.get(ids[0]!), "not visible before the commit").toBeNull();
  await app.query("COMMIT");
  expect((await queue.stats()).states.pending).toBe(150);
  expect((await queue.get(ids[149]!))?.payload).toEqual({ order: 149 });
});

test("works with a client checked out of the app's own pool", async () => {
  const { schema, queue } = await setup();
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  onTestFinished(() => pool.end());
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`INSERT INTO "${schema}".orders VALUES (7)`);
    const job = await queue.enqueue(receipt, { order: 7 }, { db: client });
    await client.query("COMMIT");
    expect((await queue.get(job.id))?.state).toBe("pending");
  } finally {
    client.release();
  }
});

test("refuses a db that is not a connection, a db on a schedule, and a db on SQLite (INVALID_OPTION)", async () => {
  const { queue } = await setup();
  const code = async (action: () => Promise<unknown>) => {
    try {
      await action();
    } catch (e) {
      return e instanceof ErrandError ? e.code : String(e);
    }
    return "no error";
  };
  expect(await code(() => queue.enqueue(receipt, { order: 1 }, { db: {} }))).toBe("INVALID_OPTION");
  expect(
    await code(() =>
      queue.schedule("s", {
        cron: "* * * * *",
        job: receipt,
        payload: { order: 1 },
        options: { db: {} } as never,
      }),
    ),
  ).toBe("INVALID_OPTION");
  expect((await queue.stats()).states.pending).toBe(0);

  const dir = mkdtempSync(join(tmpdir(), "errand-tx-"));
  const sqlite = await openQueue(`sqlite:${join(dir, "e.db")}`);
  try {
    const app = new pg.Client({ connectionString: PG_URL });
    expect(await code(() => sqlite.enqueue(receipt, { order: 1 }, { db: app }))).toBe("INVALID_OPTION");
    expect((await sqlite.stats()).states.pending).toBe(0);
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a job with dependencies enqueued in the caller's transaction: blocked inside it, refused whole on an unknown id", async () => {
  const { schema, store, queue, app } = await setup();
  const dep = await queue.enqueue(receipt, { order: 1 });
  await app.query("BEGIN");
  await app.query(`INSERT INTO "${schema}".orders VALUES (2)`);
  const after = await queue.enqueue(receipt, { order: 2 }, { dependsOn: [dep.id], db: app });
  expect(after).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [dep.id] });
  // A refusal stores nothing of its call and leaves the caller's transaction usable.
  await expect(
    queue.enqueue(receipt, { order: 3 }, { id: "lost", dependsOn: [dep.id, "nowhere"], db: app }),
  ).rejects.toMatchObject({ code: "DEPENDENCY_NOT_FOUND", details: { id: "nowhere" } });
  await app.query(`INSERT INTO "${schema}".orders VALUES (3)`);
  await app.query("COMMIT");
  expect(await queue.get("lost")).toBeNull();
  expect(await queue.get(after.id)).toMatchObject({ state: "blocked" });
  const { rows } = await app.query(`SELECT count(*)::int AS n FROM "${schema}".orders`);
  expect(rows[0].n).toBe(2);

  // Outside any transaction the call is still all or none, in a transaction of its own: a job
  // of the call that comes later is no dependency (it must be earlier, or stored).
  const base = newJob({ id: "", type: "receipt", runAt: Date.now(), maxAttempts: 3 });
  await expect(
    store.enqueueMany({
      now: Date.now(),
      connection: app,
      jobs: [
        { ...base, id: "ok", dependsOn: JSON.stringify([dep.id]) },
        { ...base, id: "bad", dependsOn: JSON.stringify(["late"]) },
        { ...base, id: "late", dependsOn: null },
      ],
    }),
  ).rejects.toMatchObject({ code: "DEPENDENCY_NOT_FOUND", details: { id: "late" } });
  expect(await queue.get("ok")).toBeNull();
  expect(await queue.get("late")).toBeNull();
  const stored = await store.enqueueMany({
    now: Date.now(),
    connection: app,
    jobs: [
      { ...base, id: "first", dependsOn: null },
      { ...base, id: "second", dependsOn: JSON.stringify(["first", dep.id]) },
    ],
  });
  expect(stored[1]).toMatchObject({ inserted: true, record: { state: "blocked", blockedBy: 2 } });
  // Committed: another connection sees both.
  expect(await queue.get("second")).toMatchObject({ state: "blocked", blockedBy: 2 });
  expect((await queue.dependents("first")).jobs.map((j) => j.id)).toEqual(["second"]);
});
