/**
 * pg-boss on PostgreSQL: `insert` for the bulk enqueue (its docs, api/jobs.md: many jobs in one
 * statement); a worker that fetches batches, as its docs advise for throughput.
 *
 * Settings, each from its docs for v12 (https://pgboss.io/api/workers, and the TSDoc of
 * `WorkOptions` in the installed dist/types.d.ts, 12.38):
 * - `batchSize: 50`: "the number of jobs to fetch" in one query (default 1, "1 job every 2
 *   seconds"); 50 = the harness's concurrency, so 50 jobs are in hand at a time as for the others.
 * - `burstWhenBatchFull: true`: "while each fetch returns a full `batchSize` batch there is clearly
 *   more work, so the worker keeps fetching continuously with no delay" (default false).
 * - `useListenNotify: true` on the instance and `notify: true` on the queue: its fastest wake-up
 *   (NOTIFY wakes workers at once); `pollingIntervalSeconds: 0.5`, its documented minimum, for
 *   when the listener is unavailable.
 * `teamSize` (pg-boss ≤ 9) is gone in v12: its types have no such option; `localConcurrency` (a
 * count of polling loops, default 1) replaced it. `localConcurrency: 50` with single-job fetches
 * is its plainer mapping of "concurrency 50", but each of those loops waits out the poll interval
 * after every job: ~100 jobs/s, so the batch fetch is its best here.
 */

import pg from "pg";
import { PgBoss } from "pg-boss";
import { dropSchema, freshName } from "./util.mjs";

export const pgBoss = {
  name: "pg-boss",
  store: "postgres",
  package: "pg-boss",
  settings: (c) =>
    `work batchSize ${c}, burstWhenBatchFull, pollingIntervalSeconds 0.5; useListenNotify, queue notify`,
  create: async () => freshName("cmp_pgb"),

  async open(schema, env) {
    const boss = new PgBoss({ connectionString: env.pgUrl, schema, useListenNotify: true });
    boss.on("error", (error) => process.emitWarning(`pg-boss: ${error.message}`));
    await boss.start();
    if (!(await boss.getQueue("noop"))) await boss.createQueue("noop", { notify: true });
    let count = null;
    return {
      enqueueBulk: (payloads) =>
        boss.insert(
          "noop",
          payloads.map((data) => ({ data })),
        ),
      enqueue: (payload) => boss.send("noop", payload),
      async work(concurrency, onJob) {
        const options = { batchSize: concurrency, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };
        await boss.work("noop", options, async (jobs) => {
          for (const job of jobs) onJob(job.data);
        });
      },
      async remaining() {
        count ??= new pg.Pool({ connectionString: env.pgUrl, max: 1 });
        const { rows } = await count.query(
          `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = 'noop' AND state < 'completed'`,
        );
        return rows[0].n;
      },
      async close() {
        await boss.stop({ graceful: false, close: true });
        await count?.end();
      },
    };
  },

  destroy: (schema, env) => dropSchema(env.pgUrl, schema),
};
