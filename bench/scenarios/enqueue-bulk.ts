/** Bulk enqueue: one `enqueueMany` of N jobs; the median of 3, each on a fresh file, after one warm-up. */
import { fmtInt, now } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";

export interface EnqueueBulkResult {
  jobs: number;
  runs: number[];
  jobsPerSec: number;
  bestJobsPerSec: number;
}

export const enqueueBulk: Scenario<"enqueue-bulk"> = {
  name: "enqueue-bulk",
  measures: "jobs/s of one enqueueMany call of --jobs jobs",
  inDefaultRun: () => true,
  async run({ store, options: o, log }) {
    const runs: number[] = [];
    for (let r = 0; r < 4; r++) {
      const db = store.fresh("enqueue");
      try {
        await withQueue(db, async (q) => {
          const items = payloads(o.jobs);
          const t0 = now();
          await q.enqueueMany(noop, items);
          const ms = now() - t0;
          if (r > 0) runs.push(o.jobs / (ms / 1000));
        });
      } finally {
        await db.dispose();
      }
    }
    log(`enqueue-bulk: ${runs.map((r) => fmtInt(r)).join(", ")} jobs/s`);
    const sorted = [...runs].sort((a, b) => a - b);
    return {
      jobs: o.jobs,
      runs: runs.map(Math.round),
      jobsPerSec: Math.round(sorted[1]!),
      bestJobsPerSec: Math.round(sorted[2]!),
    };
  },
};
