/**
 * What `stats().limits` costs (issue 15): a backlog of ready jobs of one type with
 * `keyConcurrency: 1` and a rate limit, over 1,000 keys, at `--jobs` / 10 and at `--jobs` (10,000
 * and 100,000 by default). At each size, `queue.stats()` is timed 21 times on a Queue that knows
 * the type's rules (so it reads the held-back sample, up to 1,000 ready jobs, and the keys) and 21
 * times on one that does not (the counts alone), alternating; the medians are reported. The held
 * part's cost (the difference) should not grow with the backlog: stats reads at most 1,000 ready
 * jobs per type whatever is waiting.
 */

import { defineJob } from "../../src/index.js";
import { fmtInt, median, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { payloads, type Scenario } from "./scenario.js";

export interface StatsHeldResult {
  keys: number;
  /** Per backlog size: median ms of stats() with the rules known, and without. */
  sizes: Array<{ jobs: number; withLimitsMs: number; withoutMs: number; heldMs: number; exact: boolean }>;
}

const KEYS = 1_000;
const CHUNK = 5_000;
const ROUNDS = 21;

const limited = defineJob({
  type: "noop",
  keyConcurrency: 1,
  rateLimit: { limit: 100, periodMs: "1s" },
  handler: async () => {},
});

export const statsHeld: Scenario<"stats-held"> = {
  name: "stats-held",
  measures: "stats() with and without held-back counts, over a backlog of --jobs/10 and --jobs keyed jobs",
  inDefaultRun: () => false,
  async run({ store, options: o, log }) {
    const sizes: StatsHeldResult["sizes"] = [];
    for (const jobs of [Math.round(o.jobs / 10), o.jobs]) {
      const db = store.fresh(`stats-held-${jobs}`);
      try {
        const withMs: number[] = [];
        const withoutMs: number[] = [];
        let exact = true;
        await withQueue(db, async (plain) => {
          const all = payloads(jobs);
          for (let from = 0; from < all.length; from += CHUNK) {
            await plain.enqueueBatch(
              all.slice(from, from + CHUNK).map((payload) => ({
                job: "noop",
                payload,
                options: { key: `k${payload.i % KEYS}` },
              })),
            );
          }
          await db.settle?.();
          await withQueue(db, async (ruled) => {
            ruled.register(limited);
            for (let i = 0; i < ROUNDS; i++) {
              let t = now();
              const s = await ruled.stats();
              withMs.push(now() - t);
              exact = s.limits.noop?.heldBack.exact ?? true;
              t = now();
              await plain.stats();
              withoutMs.push(now() - t);
            }
          });
        });
        const w = round(median(withMs), 2);
        const wo = round(median(withoutMs), 2);
        sizes.push({ jobs, withLimitsMs: w, withoutMs: wo, heldMs: round(w - wo, 2), exact });
        log(`  stats-held ${fmtInt(jobs)}: ${w} ms with limits, ${wo} ms without`);
      } finally {
        await db.dispose();
      }
    }
    return { keys: KEYS, sizes };
  },
};
