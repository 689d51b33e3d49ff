/** Drain: N waiting jobs run by one worker process at concurrency 50; its RSS and CPU per job. */
import { fmtInt, round } from "../common.js";
import { type CpuSplit, cpuSplit } from "../cpu.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface DrainResult {
  jobs: number;
  concurrency: number;
  elapsedMs: number;
  jobsPerSec: number;
  exactlyOnce: boolean;
  handlerCalls: number;
  completedInStore: number;
  workerRssMB: number;
  workerRssBeforeMB: number;
  workerHeapUsedMB: number;
  workerHeapTotalMB: number;
  cpu: CpuSplit;
}

export const drain: Scenario<"drain"> = {
  name: "drain",
  measures: "jobs/s of one worker process draining --jobs waiting jobs, its RSS and CPU per job",
  inDefaultRun: () => true,
  async run({ store, options: o, runtime: rt, log }) {
    const db = store.fresh("drain");
    try {
      await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
      const done = await drainIn(store, db, o.jobs, 50, rt);
      const stats = await withQueue(db, (q) => q.stats());
      const left = stats.states.pending + stats.states.active;
      const exactlyOnce =
        done.calls === o.jobs &&
        done.distinct === o.jobs &&
        done.repeated === 0 &&
        stats.states.completed === o.jobs &&
        left === 0;
      const r = {
        jobs: o.jobs,
        concurrency: 50,
        elapsedMs: round(done.elapsedMs, 1),
        jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
        exactlyOnce,
        handlerCalls: done.calls,
        completedInStore: stats.states.completed,
        workerRssMB: round(done.rssBytes / 2 ** 20, 1),
        workerRssBeforeMB: round(done.rssBeforeBytes / 2 ** 20, 1),
        workerHeapUsedMB: round(done.heapUsedBytes / 2 ** 20, 1),
        workerHeapTotalMB: round(done.heapTotalBytes / 2 ** 20, 1),
        cpu: cpuSplit(o.jobs, done.elapsedMs, done.cpuMs, done.serverCpuMs),
      };
      log(`drain: ${fmtInt(r.jobsPerSec)} jobs/s, exactly once: ${exactlyOnce}, RSS ${r.workerRssMB} MB`);
      return r;
    } finally {
      await db.dispose();
    }
  },
};
