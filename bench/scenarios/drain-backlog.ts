/** Drain rate with a large backlog (`--backlog`) waiting vs the drain scenario's, measured in the same run. */
import { Presets, SingleBar } from "cli-progress";
import { fmtInt, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface DrainBacklogResult {
  backlog: number;
  measured: number;
  setupMs: number;
  elapsedMs: number;
  jobsPerSec: number;
  baselineJobsPerSec: number;
  ratio: number;
}

export const drainBacklog: Scenario<"drain-backlog"> = {
  name: "drain-backlog",
  measures: "jobs/s of the drain with --backlog jobs waiting, as a share of the drain's",
  needs: ["drain"],
  inDefaultRun: (_store, o) => !o.quick,
  async run({ store, options: o, runtime: rt, log, results }) {
    const baseline = results.drain!.jobsPerSec;
    const db = store.fresh("backlog");
    try {
      // Setting up a million jobs takes a while: show how far it got (on a terminal only).
      const bar = process.stderr.isTTY
        ? new SingleBar(
            { format: "[bench] drain-backlog: enqueue |{bar}| {value}/{total} jobs" },
            Presets.shades_classic,
          )
        : null;
      const t0 = now();
      bar?.start(o.backlog, 0);
      await withQueue(db, async (q) => {
        const CHUNK = 20_000;
        for (let from = 0; from < o.backlog; from += CHUNK) {
          await q.enqueueMany(noop, payloads(Math.min(CHUNK, o.backlog - from), from));
          bar?.update(Math.min(from + CHUNK, o.backlog));
        }
      }).finally(() => bar?.stop());
      const setupMs = now() - t0;
      log(`drain-backlog: ${fmtInt(o.backlog)} jobs enqueued in ${(setupMs / 1000).toFixed(1)} s`);
      const measured = Math.min(o.jobs, o.backlog);
      const done = await drainIn(store, db, measured, 50, rt, "drain", o.backlog);
      const jobsPerSec = Math.round(measured / (done.elapsedMs / 1000));
      const r = {
        backlog: o.backlog,
        measured,
        setupMs: Math.round(setupMs),
        elapsedMs: round(done.elapsedMs, 1),
        jobsPerSec,
        baselineJobsPerSec: baseline,
        ratio: round(jobsPerSec / baseline, 3),
      };
      log(`drain-backlog: ${fmtInt(jobsPerSec)} jobs/s vs ${fmtInt(baseline)} (ratio ${r.ratio})`);
      return r;
    } finally {
      await db.dispose();
    }
  },
};
