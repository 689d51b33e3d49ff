import type { StoreDoor } from "../store/instrument.js";
import { inChunks } from "./chunks.js";

/**
 * Expiry: pending jobs whose `expiresAt` passed by `now` become `expired` (emitted as such by the
 * door) and are never handed out. `limit` at a time, so no one call holds the store long, until a
 * chunk comes back short (as the pruner): claims pass over the expired jobs not yet expired, so a
 * backlog must not wait a sweep interval per chunk (200,000 of them: 400 sweeps, each claim
 * meanwhile reading past them), or until `chunks` chunks (the lease API's pass: one). Returns how
 * many.
 */
export async function expireJobs(
  door: StoreDoor,
  now: number,
  limit: number,
  chunks = Number.POSITIVE_INFINITY,
): Promise<number> {
  return inChunks(async () => {
    const n = (await door.expire({ now, limit })).length;
    return { done: n, more: n === limit };
  }, chunks);
}
