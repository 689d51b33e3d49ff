/**
 * graphile-worker on PostgreSQL: `addJobs` for the bulk enqueue, `run()` with `concurrency` for
 * the worker (LISTEN/NOTIFY wake-ups). Two settings: its defaults, and the batching it documents
 * for high throughput (a local queue that fetches many jobs at once, completions batched).
 */
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";
import { dropSchema, freshName } from "./util.mjs";

const silent = new Logger(() => () => {});

/** @param {string} name @param {string} settings @param {object} preset */
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
            preset: { worker: preset },
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

export const defaults = graphile("graphile-worker", "run({ concurrency: 50 }), defaults otherwise", {});
export const batched = graphile(
  "graphile-worker (batched)",
  "run({ concurrency: 50 }) with localQueue.size 51 and completeJobBatchDelay 0, its documented batching",
  { localQueue: { size: 51 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
);
