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

/**
 * The key holders an enqueue expired (EnqueueResult.expired), by the index of the job whose
 * insert freed their key.
 * @internal
 */
export type ExpiredByIndex = Map<number, JobRecord[]>;

/** Adds `holders` to job `index`'s expired key holders, making the map on first use. */
export function noteExpired(
  by: ExpiredByIndex | undefined,
  index: number,
  holders: readonly JobRecord[],
): ExpiredByIndex {
  const map = by ?? new Map<number, JobRecord[]>();
  const list = map.get(index);
  if (list === undefined) map.set(index, [...holders]);
  else list.push(...holders);
  return map;
}

/** Puts each job's expired key holders on its result: a copy, since INSERTED is shared. */
export function attachExpired(results: EnqueueResult[], by: ExpiredByIndex | undefined): void {
  if (by === undefined) return;
  for (const [i, expired] of by) {
    const r = results[i];
    if (r !== undefined) results[i] = { ...r, expired: [...(r.expired ?? []), ...expired] };
  }
}

/**
 * A key holder an enqueue expired may be a job the same call inserted a moment before: enqueued
 * already past its expiresAt, then met by a later job with its key. That job's answer becomes the
 * holder as stored, expired (its own `expired`, the holders it freed, kept). Reads nothing unless
 * some job of the call expired a holder.
 * @param idOf - the id of the call's job at an index.
 */
export function answerOwnExpired(results: EnqueueResult[], idOf: (index: number) => string): void {
  let byId: Map<string, number> | undefined;
  for (let i = 0; i < results.length; i++) {
    const holders = results[i]!.expired;
    if (holders === undefined) continue;
    if (byId === undefined) {
      byId = new Map();
      for (let k = 0; k < results.length; k++) byId.set(idOf(k), k);
    }
    for (const h of holders) {
      const k = byId.get(h.id);
      const r = results[k ?? -1];
      if (k === undefined || r === undefined || !r.inserted) continue;
      results[k] =
        r.expired === undefined
          ? { inserted: true, record: h }
          : { inserted: true, record: h, expired: r.expired };
    }
  }
}
