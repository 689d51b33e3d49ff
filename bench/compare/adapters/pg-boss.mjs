/**
 * pg-boss on PostgreSQL: `insert` for the bulk enqueue; a worker fetching batches of 50 and
 * fetching again at once while batches come back full (`burstWhenBatchFull`), so 50 jobs are in
 * hand at a time; its fastest wake-up: LISTEN/NOTIFY on (`useListenNotify`, queue `notify`),
 * polling at its minimum of 0.5 s as the fallback. (`localConcurrency: 50` with single-job
 * fetches is its plainer mapping of "concurrency 50", but each of those 50 loops waits out the
 * poll interval after every job: ~100 jobs/s.)
 */

import pg from "pg";
import { PgBoss } from "pg-boss";
import { dropSchema, freshName } from "./util.mjs";

export const pgBoss = {
  name: "pg-boss",
  store: "postgres",
  package: "pg-boss",
  settings:
    "work({ batchSize: 50, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }), useListenNotify and queue notify on",
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
