/**
 * A lease's claims, bounded in what they bring into the server's memory. A claim reads every job
 * it takes whole (payload, checkpoint, error history) before the answer is measured against
 * MAX_PAGE_CHARS (page-size.ts): one claim of 1,000 jobs with 1 MB payloads read a gigabyte of
 * text, parsed, to answer 32 MiB of it, and a few such leases at once ran the server out of heap.
 * @module
 */
import type { Job } from "../job.js";
import { roomNow } from "../queue-checks.js";
import type { LeaseOptions } from "../queue-options.js";
import { itemsPerRead, MAX_PAGE_CHARS } from "./page-size.js";

/**
 * How many jobs one claim of a lease takes: as many as READ_CHARS holds with a payload and a
 * checkpoint of `maxPayloadBytes` each (a job being leased has no result), and at least 1: 64 at
 * the default 1 MB, so the usual lease (a worker's free slots) is one claim. (An error history, up
 * to MAX_ERROR_HISTORY entries, is left out of the bound: counting its worst would cut every claim
 * to a few jobs for a history hardly any job has.)
 */
export function claimSize(maxPayloadBytes: number): number {
  return itemsPerRead(2 * maxPayloadBytes);
}

/** A lease's options as the lease route resolves them: `limit` always set. */
export type LeaseAsked = LeaseOptions & { limit: number };

/**
 * Leases what one `claim(asked)` would, in claims of at most `size` jobs. Each claim after the
 * first asks for what is left of the limit and of `maxWeight`; none follows a claim that came back
 * short (nothing more was ready, or no weight was left) or one that took the jobs past
 * MAX_PAGE_CHARS, which the answer could not carry anyway. A lease within `size` is one claim,
 * as asked. A claim after the first that fails is passed to `onLaterFault`, and the jobs already
 * claimed are answered; none is made once `stop()` says the answer will not be sent (the
 * connection closed, the server draining), the caller giving back what was claimed. A job a later
 * claim takes again (its short lease ran out meanwhile) is answered once, at its later attempt.
 *
 * `rateRuled`: a type leased has a rate limit, so `ahead` is taken off the room (LeaseOptions.ahead)
 * once, here, and the claims ask for no `ahead` of their own: each would otherwise take it off
 * again, from its own smaller limit.
 */
export async function leaseInClaims(
  asked: LeaseAsked,
  size: number,
  rateRuled: boolean,
  claim: (options: LeaseAsked) => Promise<Job[]>,
  onLaterFault: (error: unknown) => void,
  stop: () => boolean = () => false,
): Promise<Job[]> {
  if (asked.limit <= size) return claim(asked);
  const { ahead = 0, ...rest } = asked;
  let { limit, maxWeight } = rest;
  if (rateRuled && ahead > 0) {
    const room = roomNow(rest, ahead);
    if (room <= 0) return [];
    limit = Math.min(limit, room);
    if (maxWeight !== undefined) maxWeight = room;
  }
  const cap = asked.weightCap ?? Number.POSITIVE_INFINITY;
  const jobs: Job[] = [];
  /** Where each job is in `jobs`, by id. */
  const at = new Map<string, number>();
  let chars = 0;
  for (;;) {
    if (jobs.length > 0 && stop()) return jobs;
    const ask = Math.min(size, limit - jobs.length);
    let got: Job[];
    try {
      got = await claim({ ...rest, limit: ask, ...(maxWeight === undefined ? {} : { maxWeight }) });
    } catch (error) {
      if (jobs.length === 0) throw error;
      // The jobs already claimed are answered rather than left leased to no one.
      onLaterFault(error);
      return jobs;
    }
    for (const job of got) {
      const seen = at.get(job.id);
      if (seen !== undefined) {
        // Its lease ran out while later claims ran (a lease of a few hundred milliseconds) and a
        // maintenance pass put it back: only this attempt is current, so the answer names it.
        jobs[seen] = job;
      } else {
        at.set(job.id, jobs.length);
        jobs.push(job);
      }
      chars += JSON.stringify(job).length;
      if (maxWeight !== undefined) maxWeight -= Math.min(job.weight, cap);
    }
    if (got.length < ask || jobs.length >= limit || chars > MAX_PAGE_CHARS) return jobs;
    if (maxWeight !== undefined && maxWeight <= 0) return jobs;
  }
}
