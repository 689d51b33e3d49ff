/**
 * plainjob on SQLite (better-sqlite3): `addMany` for the bulk enqueue. Its defaults, as its README
 * ("Defining Workers") shows them: its workers take one job at a time and poll, so concurrency 50
 * is 50 `defineWorker()` workers in the process, each at its default poll interval
 * (`pollIntervall`, 1000 ms, src/worker.ts). Its README's advice for more throughput is more
 * worker processes ("Multi-process Workers"), which the one-process drain leaves out for every queue.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { better, defineQueue, defineWorker, JobStatus } from "plainjob";

const silent = { error() {}, warn() {}, info() {}, debug() {} };

export const plainjob = {
  name: "plainjob",
  store: "sqlite",
  package: "plainjob",
  settings: (c) => `${c} defineWorker() workers, defaults (poll 1 s)`,
  create: async () => join(mkdtempSync(join(tmpdir(), "plainjob-compare-")), "bench.db"),

  async open(file) {
    const queue = defineQueue({ connection: better(new Database(file)), logger: silent });
    const workers = [];
    return {
      enqueueBulk: async (payloads) => void queue.addMany("noop", payloads),
      enqueue: async (payload) => void queue.add("noop", payload),
      async work(concurrency, onJob) {
        for (let i = 0; i < concurrency; i++) {
          const worker = defineWorker("noop", async (job) => onJob(JSON.parse(job.data)), {
            queue,
            logger: silent,
          });
          workers.push(worker);
          void worker.start();
        }
      },
      remaining: async () =>
        queue.countJobs({ status: JobStatus.Pending }) + queue.countJobs({ status: JobStatus.Processing }),
      async close() {
        await Promise.all(workers.map((w) => w.stop()));
        queue.close();
      },
    };
  },

  destroy: async (file) => rmSync(join(file, ".."), { recursive: true, force: true }),
};
