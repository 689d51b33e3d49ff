/**
 * The SQL stores' `stats`: rows of counts grouped by state, queue and type, summed into
 * {@link StoreStats}. One place for what both stores did alike.
 * @internal
 * @module
 */
import { JOB_STATES, type JobState } from "../job.js";
import { nameRecord } from "../name-record.js";
import type { StoreStats } from "./store.js";

/** A count of jobs in one state, queue and type; the hot table's rows also carry the extras. */
export interface StatsRow {
  state: JobState;
  queue: string;
  type: string;
  n: number;
  /** Pending with runAt in the future. */
  scheduled?: number;
  /** Pending after a failed attempt. */
  retrying?: number;
  /** Earliest runAt among the group's ready pending jobs. */
  oldest?: number | null;
}

/** Sums grouped counts into {@link StoreStats}. */
export function statsFromRows(rows: Iterable<StatsRow>): StoreStats {
  const states = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  // Keyed by names from the store: null prototypes, so "__proto__" or "toString" is just a key.
  const queues: StoreStats["queues"] = nameRecord();
  const types: StoreStats["types"] = nameRecord();
  let scheduled = 0;
  let retrying = 0;
  let oldestReadyAt: number | null = null;
  for (const r of rows) {
    states[r.state] += r.n;
    const q = (queues[r.queue] ??= {});
    q[r.state] = (q[r.state] ?? 0) + r.n;
    const t = (types[r.type] ??= {});
    t[r.state] = (t[r.state] ?? 0) + r.n;
    scheduled += r.scheduled ?? 0;
    retrying += r.retrying ?? 0;
    const oldest = r.oldest ?? null;
    if (oldest !== null && (oldestReadyAt === null || oldest < oldestReadyAt)) oldestReadyAt = oldest;
  }
  return { states, scheduled, retrying, queues, types, oldestReadyAt };
}
