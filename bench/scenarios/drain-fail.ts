/** The drain with every job failing for good: the failure path's write (one per job to dead). Only when asked for. */
import { fmtInt, round } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface DrainFailResult {
  jobs: number;
  concurrency: number;
  elapsedMs: number;
  jobsPerSec: number;
  /** Each handler ran once and each job is dead, none left pending or active. */
  exactlyOnce: boolean;
  deadInStore: number;
}

export const drainFail: Scenario<"drain-fail"> = {
  name: "drain-fail",
  measures: "jobs/s of the drain when every job throws a NonRetryableError and goes to dead",
  inDefaultRun: () => false,
  async run({ store, options: o, runtime: rt, log }) {
    const db = store.fresh("drainfail");
    try {
      await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
      const done = await drainIn(store, db, o.jobs, 50, rt, "drain-fail");
      const stats = await withQueue(db, (q) => q.stats());
      const exactlyOnce =
        done.calls === o.jobs &&
        done.distinct === o.jobs &&
        done.repeated === 0 &&
        stats.states.dead === o.jobs &&
        stats.states.pending + stats.states.active === 0;
      const r = {
        jobs: o.jobs,
        concurrency: 50,
        elapsedMs: round(done.elapsedMs, 1),
        jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
        exactlyOnce,
        deadInStore: stats.states.dead,
      };
      log(`drain-fail: ${fmtInt(r.jobsPerSec)} jobs/s, each failed exactly once: ${exactlyOnce}`);
      return r;
    } finally {
      await db.dispose();
    }
  },
};
