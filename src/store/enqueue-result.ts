import type { JobRecord } from "../job.js";
import type { EnqueueResult } from "./store.js";

/**
 * The result of every job an enqueue inserted: one frozen object, shared, since a bulk enqueue
 * would otherwise make one per job just to say the same thing.
 * @internal
 */
export const INSERTED: EnqueueResult = Object.freeze({ inserted: true });

/**
 * Whether `job`, holding a new job's unique or debounce key, is blocked or pending past its
 * expiresAt: a job no claim can take, which holds the key no longer (Store.enqueueMany).
 * @internal
 */
export function pastExpiry(job: JobRecord, now: number): boolean {
  return (
    (job.state === "blocked" || job.state === "pending") && job.expiresAt !== null && job.expiresAt <= now
  );
}
