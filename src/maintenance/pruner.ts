import type { Clock } from "../clock.js";
import type { FinishedState } from "../job.js";
import type { StoreDoor } from "../store/instrument.js";

/**
 * Retention pruning: deletes finished jobs older than their state's retention, `limit` at a time
 * so no one call holds the store's write lock long, until a chunk comes back short. Returns how
 * many it deleted.
 */
export async function pruneFinished(
  door: StoreDoor,
  clock: Clock,
  retainMs: Record<FinishedState, number>,
  limit: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await door.prune({ now: clock.now(), retainMs, limit });
    total += n;
    if (n < limit) return total;
  }
}
