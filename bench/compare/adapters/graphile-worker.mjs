/**
 * graphile-worker on PostgreSQL: `addJobs` for the bulk enqueue, `run()` with `concurrency` for
 * the worker (LISTEN/NOTIFY wake-ups).
 *
 * Measured at its documented best for throughput, the configuration of its performance page
 * (https://worker.graphile.org/docs/performance, "Quick stats" and "Batching"):
 * `localQueue: { size: 500 }`, `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`. That page runs
 * `concurrentJobs: 24` with `maxPoolSize: 25`; the `maxPoolSize` TSDoc in its types
 * (dist/index.d.ts) says "If in doubt, we recommend setting it to `10` or `concurrentJobs + 2`,
 * whichever is larger", so 52 at concurrency 50 and 302 at 300 (its default, 10, can leave no client free to
 * start or release jobs). The `localQueue.size` TSDoc calls `concurrentJobs + 1` "a good starting
 * point" and "a much higher number" right for very fast tasks at high throughput, which a no-op
 * drain is; the performance page's 500 is that higher number.
 *
 * Its defaults (no local queue, a completion per job, pool of 10) stay available as
 * `--lib graphile-worker-defaults`, outside the default run: no figure is published against them.
 */
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";
import { dropSchema, freshName } from "./util.mjs";

const silent = new Logger(() => () => {});

/**
 * @param {string} name
 * @param {(concurrency: number) => string} settings
 * @param {(concurrency: number) => object} preset
 */
function graphile(name, settings, preset) {
  return {
    name,
    store: "postgres",
    package: "graphile-worker",
    settings,
    create: async () => freshName("cmp_gw"),

    async open(schema, env) {
      const utils = await makeWorkerUtils({ connectionString: env.pgUrl, schema, logger: silent });
      await utils.migrate();
      /** @type {Awaited<ReturnType<typeof run>> | null} */
      let runner = null;
      let count = null;
      return {
        enqueueBulk: (payloads) =>
          utils.addJobs(payloads.map((payload) => ({ identifier: "noop", payload }))),
        enqueue: (payload) => utils.addJob("noop", payload),
        async work(concurrency, onJob) {
          runner = await run({
            connectionString: env.pgUrl,
            schema,
            concurrency,
            noHandleSignals: true,
            logger: silent,
            taskList: { noop: async (payload) => onJob(payload) },
            preset: { worker: preset(concurrency) },
          });
        },
        // Completed jobs are deleted: what is left in its jobs table is still to do.
        async remaining() {
          count ??= new pg.Pool({ connectionString: env.pgUrl, max: 1 });
          const { rows } = await count.query(`SELECT count(*)::int AS n FROM "${schema}"._private_jobs`);
          return rows[0].n;
        },
        async close() {
          await runner?.stop();
          await utils.release();
          await count?.end();
        },
      };
    },

    destroy: (schema, env) => dropSchema(env.pgUrl, schema),
  };
}

/** "`concurrentJobs + 2`, or 10, whichever is larger" (its maxPoolSize TSDoc). */
const poolSize = (c) => Math.max(10, c + 2);
/** The performance page's 500, and never below its "`concurrentJobs + 1`" starting point. */
const localQueueSize = (c) => Math.max(500, c + 1);

export const best = graphile(
  "graphile-worker",
  (c) =>
    `concurrency ${c}, localQueue.size ${localQueueSize(c)}, completeJobBatchDelay 0, failJobBatchDelay 0, maxPoolSize ${poolSize(c)}`,
  (c) => ({
    localQueue: { size: localQueueSize(c) },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    maxPoolSize: poolSize(c),
  }),
);
export const defaults = graphile(
  "graphile-worker (defaults)",
  (c) => `concurrency ${c}, defaults otherwise`,
  () => ({}),
);
