/**
 * A type held back by its rate limit does not slow the others (issue 15): the drain beside
 * `--backlog` ready jobs of a type whose rate limit is spent (1 start per hour, that start made
 * before the drain), enqueued before the drained jobs so that they come first in claim order, as a
 * share of the same drain without them (beside-backlog.ts). The drain's worker runs both types,
 * so its claims carry the held type's rate limit on both sides.
 */
import { defineJob } from "../../src/index.js";
import { type BesideBacklogResult, backlogScenario } from "./beside-backlog.js";
import { payloads } from "./scenario.js";

export type RateHeldResult = BesideBacklogResult;

/** The held type: its one start per hour is made before the first drain. */
const HELD = { type: "rate-held", rateLimit: { limit: 1, periodMs: 3_600_000 } };
const held = defineJob({ ...HELD, handler: async () => {} });

export const rateHeld = backlogScenario({
  name: "rate-held",
  measures:
    "jobs/s of the drain with --backlog jobs of a type held back by its rate limit waiting ahead, as a share of the drain without them",
  what: "held jobs",
  heldType: HELD,
  async prepare(q) {
    // Both sides: one job of the held type, started, so its window is spent for the hour.
    q.register(held);
    await q.enqueue(held, { i: -1 });
    const [started] = await q.lease({ types: [HELD.type], leaseMs: 3_600_000 });
    if (!started) throw new Error("rate-held: the held type's one start was not made");
  },
  enqueue: (q, n, from) => q.enqueueMany(held, payloads(n, from)),
  untouched(stats, waiting) {
    const h = stats.types[HELD.type] ?? {};
    return (h.pending ?? 0) === waiting && h.active === 1;
  },
});
