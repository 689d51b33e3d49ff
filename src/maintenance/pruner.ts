import type { Clock } from "../clock.js";
import { type Duration, toMs } from "../duration.js";
import { ErrandError } from "../errors.js";
import { FINISHED_STATES, type FinishedState } from "../job.js";
import type { StoreDoor } from "../store/instrument.js";
import { inChunks } from "./chunks.js";

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
  return inChunks(async () => {
    const n = await door.prune({ now: clock.now(), retainMs, limit });
    return { done: n, more: n === limit };
  });
}

/**
 * Retention periods: `overrides` (a finished state each, as a duration) laid over `base`.
 * @throws ErrandError `INVALID_OPTION` for a key that is not a finished state, `INVALID_DURATION`
 */
export function resolveRetention(
  base: Readonly<Record<FinishedState, number>>,
  overrides: Partial<Record<string, Duration>> | undefined,
): Record<FinishedState, number> {
  const retainMs = { ...base };
  for (const [state, d] of Object.entries(overrides ?? {})) {
    if (!FINISHED_STATES.includes(state as FinishedState)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `retention.${state}: not a finished state (${FINISHED_STATES.join(", ")})`,
      );
    }
    retainMs[state as FinishedState] = toMs(`retention.${state}`, d as Duration);
  }
  return retainMs;
}
