/**
 * BullMQ on Redis: `addBulk` for the bulk enqueue (https://docs.bullmq.io/guide/queues/adding-bulks),
 * a `Worker` with `concurrency` (https://docs.bullmq.io/guide/workers/concurrency; blocking
 * commands wake it), its defaults otherwise: its docs name no other setting for throughput, and
 * completed jobs are kept by default, as errand keeps them too.
 */
import { Queue, Worker } from "bullmq";
import { flushPrefix, freshName } from "./util.mjs";

export const bullmq = {
  name: "BullMQ",
  store: "redis",
  package: "bullmq",
  settings: (c) => `Worker concurrency ${c}, defaults otherwise`,
  create: async () => freshName("cmp_bull"),

  async open(prefix, env) {
    const url = new URL(env.redisUrl);
    const connection = { host: url.hostname, port: Number(url.port || 6379) };
    const queue = new Queue("noop", { connection, prefix });
    // Connected before the first call, as every other queue's session is.
    await queue.waitUntilReady();
    /** @type {Worker | null} */
    let worker = null;
    return {
      enqueueBulk: (payloads) => queue.addBulk(payloads.map((data) => ({ name: "noop", data }))),
      enqueue: (payload) => queue.add("noop", payload),
      async work(concurrency, onJob) {
        worker = new Worker("noop", async (job) => onJob(job.data), { connection, prefix, concurrency });
        await worker.waitUntilReady();
      },
      async remaining() {
        const c = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "paused");
        return Object.values(c).reduce((a, b) => a + b, 0);
      },
      async close() {
        await worker?.close();
        await queue.close();
      },
    };
  },

  destroy: (prefix, env) => flushPrefix(env.redisUrl, `${prefix}:`),
};
