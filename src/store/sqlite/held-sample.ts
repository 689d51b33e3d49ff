/**
 * The SQLite store's part of `stats().limits`: each type's sample of ready jobs and its keys'
 * running jobs, ordered heads and windows (queries/statsHeld.sql), for held-back.ts to count.
 * @module
 */
import {
  type HeldSample,
  keySample,
  type LimitStatsParams,
  limitStatsMany,
  rulesOf,
  sampleOrder,
  type TypeLimitStats,
} from "../held-back.js";
import type { StatsRow } from "../stats-rows.js";
import { rateScope } from "../store.js";
import type { Statements } from "./statements.js";

interface ReadyRow {
  id: string;
  key: string | null;
  priority: number;
  runAt: number;
}

/** `stats().limits` for `p`'s types; `rows` are statsHot's, which say where each type has ready jobs. */
export function sqliteLimitStats(
  q: Statements,
  p: LimitStatsParams,
  now: number,
  rows: readonly StatsRow[],
): Record<string, TypeLimitStats> {
  const paused = new Set(q.pausedQueues.all() as string[]);
  const samples = new Map<string, HeldSample>();
  for (const type of p.types) {
    const { keyRules, rateLimit } = rulesOf(p, type);
    let ready: ReadyRow[] = [];
    for (const r of rows) {
      if (r.type !== type || r.state !== "pending" || r.oldest == null || paused.has(r.queue)) continue;
      const params = { queue: r.queue, type, now, limit: p.sampleLimit + 1 };
      ready.push(...(q.statsHeldReady.all(params) as ReadyRow[]));
      // Ready jobs a claim parked (migration 0010) are out of the claim index: read beside it.
      ready.push(...(q.statsHeldParked.all(params) as ReadyRow[]));
    }
    ready.sort(sampleOrder);
    const exact = ready.length <= p.sampleLimit;
    ready = ready.slice(0, p.sampleLimit);
    const sample: HeldSample = {
      exact,
      unkeyed: 0,
      typeStarts: rateLimit ? (q.rateCount.get(type, now - rateLimit.periodMs) as number) : 0,
      keys: new Map(),
    };
    for (const job of ready) {
      if (job.key === null) sample.unkeyed += 1;
      else keySample(sample.keys, job.key).ready += 1;
    }
    for (const { key, n } of q.statsHeldActive.all(type) as Array<{ key: string; n: number }>) {
      keySample(sample.keys, key).active = n;
    }
    if (keyRules.ordered) {
      const heads = new Set<string>();
      for (const key of sample.keys.keys()) {
        const first = q.claimKeyEarliest.get({ type, key }) as { id: string } | undefined;
        if (first) heads.add(first.id);
      }
      for (const job of ready)
        if (job.key !== null && heads.has(job.id)) keySample(sample.keys, job.key).heads += 1;
    }
    const keyRate = keyRules.keyRateLimit;
    if (keyRate) {
      for (const [key, k] of sample.keys) {
        if (k.ready > 0) k.starts = q.rateCount.get(rateScope(type, key), now - keyRate.periodMs) as number;
      }
    }
    samples.set(type, sample);
  }
  return limitStatsMany(p, samples);
}
