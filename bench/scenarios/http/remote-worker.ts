/**
 * For comparison with http-work: the same drain by errand's own `RemoteWorker` (concurrency 50)
 * in this process, which gathers the completions of one event-loop turn into one report.
 */
import { defineJob } from "../../../src/index.js";
import { fmtInt, now, round } from "../../common.js";
import { withQueue } from "../../stores.js";
import { noop, payloads, type Scenario } from "../scenario.js";
import { withServer } from "./server.js";

export interface HttpRemoteWorkerResult {
  jobs: number;
  concurrency: number;
  elapsedMs: number;
  jobsPerSec: number;
  exactlyOnce: boolean;
}

export const httpRemoteWorker: Scenario<"http-remote-worker"> = {
  name: "http-remote-worker",
  measures: "jobs/s of errand's RemoteWorker draining --jobs jobs over HTTP",
  group: "http",
  inDefaultRun: () => false,
  async run({ store, options: o, runtime: rt, log }) {
    const { ErrandClient, RemoteWorker } = await import("../../../src/client/index.js");
    const db = store.fresh("http-rw");
    try {
      await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
      return await withServer(db, rt, "http-remote-worker", async (s) => {
        const calls = new Map<string, number>();
        const job = defineJob({
          type: "noop",
          handler: async (_payload: unknown, ctx) => {
            calls.set(ctx.job.id, (calls.get(ctx.job.id) ?? 0) + 1);
          },
        });
        const worker = new RemoteWorker(new ErrandClient({ url: s.base }), {
          jobs: [job],
          concurrency: 50,
          waitMs: 1000,
        });
        let completed = 0;
        let failure: unknown = null;
        worker.on("error", (e) => {
          failure ??= e;
        });
        const finished = new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error("http-remote-worker: not done in 120 s")), 120_000);
          worker.on("completed", () => {
            if (++completed === o.jobs) {
              clearTimeout(timer);
              resolve(now());
            }
          });
        });
        const t0 = now();
        try {
          await worker.start();
          const elapsedMs = (await finished) - t0;
          if (failure) throw failure;
          let repeated = 0;
          for (const n of calls.values()) if (n > 1) repeated++;
          const r = {
            jobs: o.jobs,
            concurrency: 50,
            elapsedMs: round(elapsedMs, 1),
            jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
            exactlyOnce: calls.size === o.jobs && repeated === 0,
          };
          log(
            `http-remote-worker: ${fmtInt(r.jobsPerSec)} jobs/s (RemoteWorker, completions batched per turn)`,
          );
          return r;
        } finally {
          await worker.close({ graceMs: 2_000 });
        }
      });
    } finally {
      await db.dispose();
    }
  },
};
