import type { AttemptOutcome } from "../failure-rule.js";
import { leaseExpiryError } from "../failure-rule.js";
import { type Job, toJob } from "../job.js";
import type { StoreDoor } from "../store/instrument.js";
import { inChunks } from "./chunks.js";

/**
 * Lease recovery: active jobs whose lease ran out by `now` (their worker crashed, hung or lost
 * its connection) are failed by the failure rule, as a failed attempt (retry or dead; `dead`
 * straight away for at-most-once jobs and poison pills). Each fail is the store's compare-and-set
 * on the expired lease, so any number of recoverers may run at once. `limit` at a time until a
 * chunk comes back short, or recovers none (another recoverer took them), so a crash that left
 * 100,000 leases is recovered in one sweep, not 200; or until `chunks` chunks (the lease API's
 * pass: one). Returns how many it recovered.
 */
export async function recoverLeases(
  door: StoreDoor,
  fail: (outcomes: AttemptOutcome[]) => Promise<Array<Job | null>>,
  now: number,
  limit: number,
  chunks = Number.POSITIVE_INFINITY,
): Promise<number> {
  return inChunks(async () => {
    const lapsed = await door.expiredLeases({ now, limit });
    if (lapsed.length === 0) return { done: 0, more: false };
    const failed = await fail(
      lapsed.map((record) => ({
        job: toJob(record),
        error: leaseExpiryError(record),
        kind: "lease_expired",
        leaseExpired: true,
      })),
    );
    const n = failed.filter((job) => job !== null).length;
    return { done: n, more: lapsed.length === limit && n > 0 };
  }, chunks);
}
