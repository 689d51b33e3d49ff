/**
 * The PostgreSQL store's part of `stats().limits`: each type's sample of ready jobs and its keys'
 * running jobs, ordered heads and windows (queries/statsHeld.sql, four statements whatever the
 * number of types), for held-back.ts to count.
 * @module
 */
import type { StatementName } from "../generated/postgres-queries.js";
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
import type { Queryable } from "./connection.js";

type Query = <R>(db: Queryable, text: string, values: unknown[]) => Promise<R[]>;

interface ReadyRow {
  type: string;
  id: string;
  key: string | null;
  priority: number;
  runAt: number;
}

/** `stats().limits` for `p`'s types; `rows` are the stats statement's, which say where each type has ready jobs. */
export async function pgLimitStats(
  query: Query,
  sql: Record<StatementName, string>,
  db: Queryable,
  p: LimitStatsParams,
  now: number,
  rows: readonly StatsRow[],
): Promise<Record<string, TypeLimitStats>> {
  const wanted = new Set(p.types);
  const pairs = rows.filter((r) => r.state === "pending" && r.oldest != null && wanted.has(r.type));
  const [ready, active] = await Promise.all([
    pairs.length === 0
      ? []
      : query<ReadyRow>(db, sql.statsHeldReady, [
          pairs.map((r) => r.type),
          pairs.map((r) => r.queue),
          now,
          p.sampleLimit + 1,
        ]),
    p.types.length === 0
      ? []
      : query<{ type: string; key: string; n: number }>(db, sql.statsHeldActive, [p.types]),
  ]);
  const byType = new Map<string, ReadyRow[]>();
  for (const r of ready) {
    const list = byType.get(r.type) ?? [];
    list.push(r);
    byType.set(r.type, list);
  }
  const samples = new Map<string, HeldSample>();
  const kept = new Set<string>();
  for (const type of p.types) {
    const all = (byType.get(type) ?? []).sort(sampleOrder);
    const jobs = all.slice(0, p.sampleLimit);
    for (const job of jobs) kept.add(job.id);
    const sample: HeldSample = {
      exact: all.length === jobs.length,
      unkeyed: 0,
      typeStarts: 0,
      keys: new Map(),
    };
    for (const job of jobs) {
      if (job.key === null) sample.unkeyed += 1;
      else keySample(sample.keys, job.key).ready += 1;
    }
    samples.set(type, sample);
  }
  for (const a of active) keySample(samples.get(a.type)!.keys, a.key).active = a.n;

  // Ordered types' heads, and the windows of rate limits, for the keys met.
  const headTypes: string[] = [];
  const headKeys: string[] = [];
  const scopes: string[] = [];
  const since: number[] = [];
  for (const type of p.types) {
    const { keyRules, rateLimit } = rulesOf(p, type);
    if (rateLimit) {
      scopes.push(rateScope(type, null));
      since.push(now - rateLimit.periodMs);
    }
    for (const [key, k] of samples.get(type)!.keys) {
      if (k.ready === 0) continue;
      if (keyRules.ordered) {
        headTypes.push(type);
        headKeys.push(key);
      }
      if (keyRules.keyRateLimit) {
        scopes.push(rateScope(type, key));
        since.push(now - keyRules.keyRateLimit.periodMs);
      }
    }
  }
  const [heads, starts] = await Promise.all([
    headTypes.length === 0
      ? []
      : query<{ type: string; key: string; first: string | null }>(db, sql.statsHeldHeads, [
          headTypes,
          headKeys,
        ]),
    scopes.length === 0 ? [] : query<{ scope: string; n: number }>(db, sql.statsHeldStarts, [scopes, since]),
  ]);
  for (const h of heads) {
    // Only a head among the sampled ready jobs counts (ids are unique across types).
    if (h.first !== null && kept.has(h.first)) keySample(samples.get(h.type)!.keys, h.key).heads = 1;
  }
  const startsOf = new Map(starts.map((s) => [s.scope, s.n]));
  for (const type of p.types) {
    const sample = samples.get(type)!;
    sample.typeStarts = startsOf.get(rateScope(type, null)) ?? 0;
    for (const [key, k] of sample.keys) k.starts = startsOf.get(rateScope(type, key)) ?? 0;
  }
  return limitStatsMany(p, samples);
}
