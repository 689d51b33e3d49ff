/**
 * What holds a type's ready jobs back, and its busiest keys: the `limits` part of `stats`.
 *
 * Each store reads the same bounded sample (the first {@link LimitStatsParams.sampleLimit} ready
 * jobs of a type in claim order, with their keys' running jobs, ordered heads and rate-limit
 * windows) into a {@link HeldSample}; {@link limitStats} turns it into counts here, once for
 * every store, so the three agree by construction.
 * @module
 */
import { nameRecord } from "../name-record.js";
import type { KeyRules, RateRule } from "./store.js";

/**
 * Ready jobs of a type that a claim made now would not take, by what holds them back. A ready job
 * is pending, due (`runAt <= now`), not expired, in a queue that is not paused. Each held job is
 * counted once, under the first rule that holds it in this order:
 *
 * 1. `order` — the type is `ordered`, the job has a key, and an earlier job of that key (by
 *    createdAt, then id) is still blocked, pending or active, or a job of that key is running.
 * 2. `keyConcurrency` — of its key's remaining ready jobs, those beyond the key's room
 *    (`keyConcurrency` less the key's running jobs).
 * 3. `rateLimit` — of its key's remaining ready jobs, those beyond the room left in the key's
 *    `keyRateLimit` window; then, of the type's remaining ready jobs (keyed or not), those beyond
 *    the room left in the type's `rateLimit` window (`limit` less the starts in `(now − periodMs,
 *    now]`).
 *
 * So `order + keyConcurrency + rateLimit` is how many of the ready jobs an unbounded claim of the
 * type would leave pending now. The type's own `concurrency` cap and a claimer's limit or weight
 * are not counted here.
 * @since 0.2.0
 */
export interface HeldBack {
  /** Held by the type's `rateLimit` or the key's `keyRateLimit`: their window is full. */
  rateLimit: number;
  /** Held because their key already runs `keyConcurrency` jobs (or would, with the ones before them). */
  keyConcurrency: number;
  /** Held by `ordered`: an earlier job of the same key is unfinished. */
  order: number;
  /**
   * `true` when every ready job of the type was looked at. `false` when the type has more ready
   * jobs than stats reads (`sampleLimit`, 1,000 by default): the counts (and `busiestKeys`' ready
   * counts) are then those among the first `sampleLimit` in claim order (priority, runAt, id), so
   * lower bounds ("1,000+"), never more than the truth.
   */
  exact: boolean;
}

/** A key's load: its ready jobs (among those stats read, see {@link HeldBack.exact}) and running jobs. @since 0.2.0 */
export interface KeyLoad {
  /** The key (the `key` enqueue option). */
  key: string;
  /** Its jobs of the type that are ready to run, among those stats read. */
  ready: number;
  /** Its jobs of the type that are running. */
  active: number;
}

/** One type's held-back counts and busiest keys (`stats().limits[type]`). @since 0.2.0 */
export interface TypeLimitStats {
  /** How many of the type's ready jobs a claim now would hold back, by rule. */
  heldBack: HeldBack;
  /**
   * The keys with the most ready plus running jobs, most first (ties by key), at most `topKeys`
   * (10 by default). Keys with neither are left out.
   */
  busiestKeys: KeyLoad[];
}

/** How many ready jobs of each type `stats` reads for {@link HeldBack}, at most. */
export const HELD_SAMPLE_LIMIT = 1_000;
/** How many busiest keys `stats` reports per type. */
export const BUSIEST_KEYS = 10;

/** The types `stats` looks into, with the rules a claim would keep for them. */
export interface LimitStatsParams {
  /** The types to report on (each once). */
  types: string[];
  /** Type-wide rate limits, as `ClaimParams.rateLimits` (own keys only, null prototype). */
  rateLimits?: Record<string, RateRule>;
  /** Per-key rules, as `ClaimParams.keyRules`. */
  keyRules?: Record<string, KeyRules>;
  /** At most this many ready jobs of each type are read. */
  sampleLimit: number;
  /** At most this many busiest keys per type. */
  topKeys: number;
}

/** One key as a store read it for a type. */
export interface KeySample {
  /** Its ready jobs among the sample. */
  ready: number;
  /** Of those, how many are the key's earliest hot job (0 or 1; read for ordered types only). */
  heads: number;
  /** Its running jobs. */
  active: number;
  /** Starts in its `keyRateLimit` window (read for types with one only). */
  starts: number;
}

/** What a store read for one type: the raw material of {@link limitStats}. */
export interface HeldSample {
  /** Whether the sample holds every ready job of the type. */
  exact: boolean;
  /** Ready jobs without a key in the sample. */
  unkeyed: number;
  /** Starts in the type's `rateLimit` window (0 without one). */
  typeStarts: number;
  /** By key (a Map: keys are user-supplied names): the keys of the sample and those with running jobs. */
  keys: Map<string, KeySample>;
}

/** A fresh {@link KeySample} for `key` in `keys`, or the one there. */
export function keySample(keys: Map<string, KeySample>, key: string): KeySample {
  let k = keys.get(key);
  if (!k) {
    k = { ready: 0, heads: 0, active: 0, starts: 0 };
    keys.set(key, k);
  }
  return k;
}

/** The rules of `type` in `p`, read as a claim reads them: own keys only. */
export function rulesOf(
  p: LimitStatsParams,
  type: string,
): { keyRules: KeyRules; rateLimit: RateRule | undefined } {
  return {
    keyRules: (p.keyRules && Object.hasOwn(p.keyRules, type) ? p.keyRules[type] : undefined) ?? {},
    rateLimit: p.rateLimits && Object.hasOwn(p.rateLimits, type) ? p.rateLimits[type] : undefined,
  };
}

/** The held-back counts and busiest keys of one type from what its store read. */
export function limitStats(p: LimitStatsParams, type: string, s: HeldSample): TypeLimitStats {
  const { keyRules, rateLimit } = rulesOf(p, type);
  const held: HeldBack = { rateLimit: 0, keyConcurrency: 0, order: 0, exact: s.exact };
  let free = s.unkeyed;
  for (const k of s.keys.values()) {
    let left = k.ready;
    if (keyRules.ordered) {
      // The earliest starts only while no job of its key runs (one retried by hand can be behind
      // a running one).
      const heads = k.active > 0 ? 0 : k.heads;
      held.order += left - heads;
      left = heads;
    }
    if (keyRules.keyConcurrency !== undefined) {
      const over = Math.max(0, left - Math.max(0, keyRules.keyConcurrency - k.active));
      held.keyConcurrency += over;
      left -= over;
    }
    if (keyRules.keyRateLimit !== undefined) {
      const over = Math.max(0, left - Math.max(0, keyRules.keyRateLimit.limit - k.starts));
      held.rateLimit += over;
      left -= over;
    }
    free += left;
  }
  if (rateLimit !== undefined)
    held.rateLimit += Math.max(0, free - Math.max(0, rateLimit.limit - s.typeStarts));
  const busiestKeys = [...s.keys]
    .map(([key, k]) => ({ key, ready: k.ready, active: k.active }))
    .filter((k) => k.ready + k.active > 0)
    .sort((a, b) => b.ready + b.active - (a.ready + a.active) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, p.topKeys);
  return { heldBack: held, busiestKeys };
}

/** {@link limitStats} for every type of `p`, from its sample (none: nothing ready or running). */
export function limitStatsMany(
  p: LimitStatsParams,
  samples: ReadonlyMap<string, HeldSample>,
): Record<string, TypeLimitStats> {
  const out = nameRecord<TypeLimitStats>();
  for (const type of p.types) {
    out[type] = limitStats(
      p,
      type,
      samples.get(type) ?? { exact: true, unkeyed: 0, typeStarts: 0, keys: new Map() },
    );
  }
  return out;
}

/** Claim order of sampled rows across queues: priority desc, runAt, id. */
export function sampleOrder(
  a: { priority: number; runAt: number; id: string },
  b: { priority: number; runAt: number; id: string },
): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
