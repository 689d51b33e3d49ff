import type { JobRecord } from "../job.js";

/**
 * The order a claim hands jobs out in, whatever the store: priority first (higher first), then
 * `runAt`, then id. A claim over several queues gathers each queue's share separately, so the
 * store sorts the whole batch with this once at the end.
 * @internal
 */
export function claimOrder(a: JobRecord, b: JobRecord): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
