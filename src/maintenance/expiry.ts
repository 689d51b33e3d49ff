import type { StoreDoor } from "../store/instrument.js";

/**
 * Expiry: pending jobs whose `expiresAt` passed by `now` become `expired` (emitted as such by the
 * door) and are never handed out. Returns how many.
 */
export async function expireJobs(door: StoreDoor, now: number, limit: number): Promise<number> {
  return (await door.expire({ now, limit })).length;
}
