/**
 * Fairness against a backlog (issue 15): 10,000 jobs of key A enqueued first, then 10 of key B,
 * on a fresh database; one claimer of concurrency 5 (leases as many jobs as it has free slots,
 * finishes its oldest, and again) starts them until all of B's have started. Measured: how many
 * of A's started before B's last, with `fair: true` (target: fewer than 50) and, for contrast,
 * the same type without it (B's jobs wait out A's backlog). The claimer runs in this process
 * against the store, as the lease API does; the starts are the order the store handed jobs out.
 */
import { defineJob, type Job, type Queue } from "../../src/index.js";
import { fmtInt } from "../common.js";
import { withQueue } from "../stores.js";
import type { Scenario, ScenarioContext } from "./scenario.js";

export interface FairStarvationResult {
  backlog: number;
  late: number;
  concurrency: number;
  /** With `fair: true`: A's starts before B's last. */
  fairABeforeLastB: number;
  /** The same without `fair`. */
  plainABeforeLastB: number;
  /** Milliseconds from the first lease to B's last start, with `fair`. */
  fairMs: number;
}

const BACKLOG = 10_000;
const LATE = 10;
const CONCURRENCY = 5;

/** A's starts before B's last, and how long until B's last started. */
async function starve(ctx: ScenarioContext, fair: boolean): Promise<{ aBefore: number; ms: number }> {
  const db = ctx.store.fresh(fair ? "fair-starvation" : "fair-starvation-plain");
  try {
    return await withQueue(db, async (q: Queue) => {
      const def = defineJob({ type: "tenant-sync", fair, handler: async () => {} });
      q.register(def);
      const a = Array.from({ length: BACKLOG }, (_, i) => ({ i }));
      for (let from = 0; from < a.length; from += 5_000) {
        await q.enqueueMany(def, a.slice(from, from + 5_000), { key: "tenant-a" });
      }
      await q.enqueueMany(
        def,
        Array.from({ length: LATE }, (_, i) => ({ i })),
        { key: "tenant-b" },
      );
      const t0 = performance.now();
      const running: Job[] = [];
      let aStarted = 0;
      let bStarted = 0;
      for (;;) {
        const got = await q.lease({ limit: CONCURRENCY - running.length });
        for (const j of got) {
          if (j.key === "tenant-b") bStarted++;
          else if (bStarted < LATE) aStarted++;
        }
        running.push(...got);
        if (bStarted === LATE) return { aBefore: aStarted, ms: Math.round(performance.now() - t0) };
        if (running.length === 0) throw new Error("fair-starvation: ran out of jobs before B's started");
        await q.complete(running.shift()!, null);
      }
    });
  } finally {
    await db.dispose();
  }
}

export const fairStarvation: Scenario<"fair-starvation"> = {
  name: "fair-starvation",
  measures: "10,000 of key A then 10 of key B, one claimer of concurrency 5: A's starts before B's last",
  inDefaultRun: () => true,
  async run(ctx) {
    const fair = await starve(ctx, true);
    const plain = await starve(ctx, false);
    const r: FairStarvationResult = {
      backlog: BACKLOG,
      late: LATE,
      concurrency: CONCURRENCY,
      fairABeforeLastB: fair.aBefore,
      plainABeforeLastB: plain.aBefore,
      fairMs: fair.ms,
    };
    ctx.log(
      `fair-starvation: ${fmtInt(r.fairABeforeLastB)} of A's ${fmtInt(BACKLOG)} started before B's last with fair, ${fmtInt(r.plainABeforeLastB)} without`,
    );
    return r;
  },
};
