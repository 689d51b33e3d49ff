/**
 * Jobs whose ids errand just made, with no unique or debounce key, go in without ON CONFLICT
 * (PostgreSQL's speculative insertion costs a look in every unique index and a confirming WAL
 * record per row). Only an earlier try of the same insert, committed though its reply was lost,
 * can then be in the way: that clash must end as the skipping insert would have, with the jobs
 * found, not as an error. Anything that can meet a taken id or key keeps ON CONFLICT.
 *
 * The store's retry after a connection fault whose commit's reply was lost: what the earlier try
 * wrote may have moved on meanwhile (its jobs claimed, run and moved to history), and the retry
 * must not write it again.
 */
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { EnqueueManyParams } from "../../../src/store/store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

/** A store on a pool that records each statement's text; `inserts()` tells, per job insert, whether it skipped taken jobs. */
async function recordingStore() {
  const schema = freshSchema("errand_fresh");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const seen: string[] = [];
  // Every statement runs on some client of the pool (pool.query checks one out too).
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
      config: unknown,
      ...rest: unknown[]
    ) => {
      if (typeof config === "object" && config !== null && "text" in config) seen.push(String(config.text));
      return query(config, ...rest);
    };
  });
  const store = await PostgresStore.open({ pool, schema, retryMs: 0, logger: silentLogger });
  onTestFinished(async () => {
    await store.close();
    await pool.end();
    await dropSchema(schema);
  });
  const inserts = () => {
    const out = seen
      .filter((t) => /INSERT INTO "[^"]+"\.errand_job \(/.test(t))
      .map((t) => (t.includes("ON CONFLICT DO NOTHING") ? "skips taken" : "fresh"));
    seen.length = 0;
    return out;
  };
  /** The store's enqueueMany parameters, as the Queue sent them, for a retry by hand. */
  const sent: EnqueueManyParams[] = [];
  const enqueueMany = store.enqueueMany.bind(store);
  store.enqueueMany = (params) => {
    sent.push(params);
    return enqueueMany(params);
  };
  const count = () =>
    withPg(
      async (c) => (await c.query(`SELECT count(*)::integer AS n FROM "${schema}".errand_job`)).rows[0].n,
    );
  return { store, queue: new Queue(store), inserts, sent, count, enqueueMany };
}

test("a bulk enqueue of fresh ids inserts without ON CONFLICT; a retry of it, committed already, finds its jobs", async () => {
  const { queue, inserts, sent, count, enqueueMany } = await recordingStore();
  const jobs = await queue.enqueueMany("t", [{ n: 1 }, { n: 2 }, { n: 3 }]);
  expect(inserts()).toEqual(["fresh"]);
  expect(jobs.every((j) => !j.duplicate)).toBe(true);

  // The same insert again, as the connection's retry sends it when the first try's reply was lost.
  const again = await enqueueMany(sent[0]!);
  expect(inserts()).toEqual(["fresh", "skips taken"]);
  expect(again.map((r) => r.inserted)).toEqual([false, false, false]);
  expect(again.map((r) => (r.inserted ? null : r.existing.id))).toEqual(jobs.map((j) => j.id));
  expect(await count()).toBe(3);
});

test("one enqueue of a fresh id goes in without ON CONFLICT too", async () => {
  const { queue, inserts, count } = await recordingStore();
  const job = await queue.enqueue("t", { n: 1 });
  expect(inserts()).toEqual(["fresh"]);
  expect((await queue.get(job.id))?.state).toBe("pending");
  expect(await count()).toBe(1);
});

test("jobs that can meet a taken id or key keep ON CONFLICT: unique keys, chosen ids", async () => {
  const { queue, inserts, count } = await recordingStore();
  const [a, b] = await queue.enqueueMany("t", [{ n: 1 }, { n: 2 }], { uniqueKey: "k" });
  expect(inserts()).toEqual(["skips taken"]);
  expect(a!.duplicate).toBe(false);
  expect(b!.duplicate).toBe(true);
  expect(b!.id).toBe(a!.id);

  await queue.enqueue("t", { n: 3 }, { id: "chosen-1" });
  const again = await queue.enqueue("t", { n: 4 }, { id: "chosen-1" });
  expect(inserts()).toEqual(["skips taken", "skips taken"]);
  expect(again.duplicate).toBe(true);
  expect(await count()).toBe(2);
});

/** A job insert on the pool (committed as it runs), or the COMMIT of a transaction. */
const COMMITTING = /INSERT INTO "[^"]+"\.errand_job \(|COMMIT$/;

/**
 * A store whose connection "loses" the reply of the first statement that commits an enqueue: the
 * statement runs and commits, `meanwhile` runs, then the connection fails as a dropped one does,
 * and the store's retry (after a connection fault) runs the enqueue again.
 */
async function lossyStore(meanwhile: (schema: string) => Promise<void>) {
  const schema = freshSchema("errand_lost_reply");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  let armed = false;
  const inTransaction = new Set<pg.PoolClient>();
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
      config: unknown,
      ...rest: unknown[]
    ) => {
      const text =
        typeof config === "object" && config !== null && "text" in config ? String(config.text) : "";
      const done = rest[0];
      if (text === "BEGIN") inTransaction.add(client);
      const commits = inTransaction.has(client) ? /COMMIT$/.test(text) : COMMITTING.test(text);
      if (/COMMIT$|^ROLLBACK$/.test(text)) inTransaction.delete(client);
      if (armed && commits && typeof done === "function") {
        armed = false;
        return query(config, (error: Error | null, result: unknown) => {
          if (error) return done(error, result);
          meanwhile(schema).then(
            () => done(new Error("Connection terminated unexpectedly")),
            (e: Error) => done(e),
          );
        });
      }
      return query(config, ...rest);
    };
  });
  const store = await PostgresStore.open({ pool, schema, retryMs: 5_000, logger: silentLogger });
  onTestFinished(async () => {
    await store.close();
    await pool.end();
    await dropSchema(schema);
  });
  return { queue: new Queue(store), schema, arm: () => (armed = true) };
}

/** Another process's worker: claims every ready job of the schema and completes it (moved to history). */
async function runEverything(schema: string): Promise<void> {
  const other = await PostgresStore.open({ connectionString: PG_URL, schema, logger: silentLogger });
  try {
    const queue = new Queue(other);
    for (;;) {
      const leased = await queue.lease({ limit: 100, queues: ["default", "other"] });
      if (leased.length === 0) return;
      for (const job of leased) expect(await queue.complete(job, "ran")).toBe(true);
    }
  } finally {
    await other.close();
  }
}

async function storedRows(schema: string): Promise<{ hot: number; done: number }> {
  return withPg(async (c) => {
    const { rows } = await c.query(
      `SELECT (SELECT count(*) FROM "${schema}".errand_job)::integer AS hot,
              (SELECT count(*) FROM "${schema}".errand_job_done)::integer AS done`,
    );
    return rows[0];
  });
}

test.each([
  ["a bulk enqueue of one shape", (queue: Queue) => queue.enqueueMany("t", [{ n: 1 }, { n: 2 }, { n: 3 }])],
  [
    "a bulk enqueue of mixed jobs",
    (queue: Queue) =>
      queue.enqueueBatch([
        { job: "t", payload: { n: 1 } },
        { job: "u", payload: { n: 2 }, options: { priority: 5 } },
        { job: "t", payload: { n: 3 }, options: { queue: "other" } },
      ]),
  ],
  ["one enqueue", async (queue: Queue) => [await queue.enqueue("t", { n: 1 })]],
  [
    "a flow (its second job waits for its first)",
    async (queue: Queue) => {
      const { jobs } = await queue.enqueueFlow([
        { ref: "a", job: "t", payload: { n: 1 } },
        { ref: "b", job: "t", payload: { n: 2 }, dependsOn: ["a"] },
      ]);
      return [jobs.a!, jobs.b!];
    },
  ],
])(
  "%s whose commit's reply was lost, its jobs run and finished meanwhile, is not inserted again by the retry",
  async (_name, enqueue) => {
    const { queue, schema, arm } = await lossyStore(runEverything);
    arm();
    const jobs = await enqueue(queue);
    // Every job ran once, in the other worker, and is in history: none is back in the hot table.
    expect(await storedRows(schema)).toEqual({ hot: 0, done: jobs.length });
    for (const job of jobs) {
      expect(job.duplicate).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: "ran", attempt: 1 });
    }
  },
);

test("a replay whose commit's reply was lost, its copy run and finished meanwhile, is not copied again by the retry", async () => {
  const { queue, schema, arm } = await lossyStore(runEverything);
  const job = await queue.enqueue("t", { n: 1 });
  await runEverything(schema);
  arm();
  const copy = await queue.replay(job.id);
  expect(copy.id).not.toBe(job.id);
  expect(copy).toMatchObject({ state: "completed", result: "ran", attempt: 1 });
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 2 });
});
