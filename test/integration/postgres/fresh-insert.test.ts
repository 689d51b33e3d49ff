/**
 * Jobs whose ids errand just made, with no unique or debounce key, go in without ON CONFLICT
 * (PostgreSQL's speculative insertion costs a look in every unique index and a confirming WAL
 * record per row). Only an earlier try of the same insert, committed though its reply was lost,
 * can then be in the way: that clash must end as the skipping insert would have, with the jobs
 * found, not as an error. Anything that can meet a taken id or key keeps ON CONFLICT.
 *
 * What such a retry does when the earlier try's jobs have run meanwhile: lost-reply.test.ts.
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
