/**
 * Per-key rules and rate limits during one SQLite claim (ClaimParams.keyRules, rateLimits): a
 * keyed job of a type with `keyConcurrency` is taken only while its key has room, under `ordered`
 * only as its key's earliest job in the hot set, and under a rate limit (the type's, the key's)
 * only while fewer than `limit` starts fall in the window (errand_rate_start holds them). The
 * store's single writer makes the counts read here exact for the claim's transaction.
 * @module
 */
import type { JobRecord } from "../../job.js";
import { holdUntil, type KeyRules, RATE_FORGET_LAG_MS, type RateRule, rateScope } from "../store.js";
import type { Statements } from "./statements.js";

/**
 * Rate-limited types found with no room, kept by the store across claims: `until`, the time the
 * window has room again, with the rule it was found under. Sound because a window's count cannot
 * fall before `until`: other claimers' starts only add to it, and the starts forgotten (rateForget)
 * were out of every window already. So until then a claim passes the type over without a
 * statement, and never walks its jobs (a type held with a million ready jobs costs claims of other
 * types nothing). Keyed by type name: a Map, never a plain object. A cache: an entry dropped only
 * costs the next claim of its type a count, so it is held to {@link MAX_CLOSED_RATES} entries.
 */
export type ClosedRates = Map<string, { limit: number; periodMs: number; until: number }>;

/**
 * Most entries a store's {@link ClosedRates} holds. An entry leaves when a claim of its type finds
 * it past; a type deleted while closed is never claimed again, so without a bound every such type
 * (made and deleted over a server's life) stayed.
 */
export const MAX_CLOSED_RATES = 1_000;

/**
 * Records `type` closed until `until`: past the bound, entries already open go, then the oldest.
 * @internal exported for its test
 */
export function recordClosed(
  closed: ClosedRates,
  type: string,
  rate: RateRule,
  until: number,
  now: number,
): void {
  closed.delete(type);
  if (closed.size >= MAX_CLOSED_RATES) {
    for (const [t, e] of closed) if (e.until <= now) closed.delete(t);
    if (closed.size >= MAX_CLOSED_RATES) closed.delete(closed.keys().next().value!);
  }
  closed.set(type, { limit: rate.limit, periodMs: rate.periodMs, until });
}

export class KeyGate {
  readonly #q: Statements;
  readonly #rules: Record<string, KeyRules>;
  readonly #now: number;
  /** Running jobs per `type\0key`, those taken by this claim included. */
  readonly #active = new Map<string, number>();
  /** The types whose keys' running jobs were read into #active. */
  readonly #activeRead = new Set<string>();
  readonly #skip: string[] = [];
  readonly #excluded: Array<[string, string]> = [];
  readonly #closed = new Set<string>();
  /** Keys closed by keyConcurrency (1) or order (2), whose ready jobs the claim parks at its end. */
  readonly #parkable: Array<{ type: string; key: string; mark: 1 | 2 }> = [];
  readonly #rates: Record<string, RateRule> | undefined;
  readonly #held: { until: number | null } | undefined;
  readonly #closedRates: ClosedRates | undefined;
  /** Starts in the window per scope (`type`, or `type|key`), those of this claim included. */
  readonly #starts = new Map<string, number>();
  /** The key scopes (`type|key`) whose windows this claim counted, with their rules. */
  readonly #keyRates = new Map<string, { type: string; key: string; rate: RateRule }>();
  /** Types whose rate limit has no room left in this claim: the candidates query skips them. */
  readonly closedTypes: string[] = [];

  constructor(
    q: Statements,
    rules: Record<string, KeyRules>,
    now: number,
    rates?: Record<string, RateRule>,
    held?: { until: number | null },
    closedRates?: ClosedRates,
  ) {
    this.#q = q;
    this.#rules = rules;
    this.#now = now;
    this.#rates = rates;
    this.#held = held;
    this.#closedRates = closedRates;
  }

  /**
   * Closes, before any walk, the rate-limited types among `types` known to have no room now (see
   * {@link ClosedRates}); a held type so closed still tells the claimer when it opens. A type
   * whose jobs were all taken meanwhile costs the claimer one early wake-up at most.
   */
  closeKnown(types: readonly string[]): void {
    if (!this.#rates || !this.#closedRates) return;
    for (const type of types) {
      if (!Object.hasOwn(this.#rates, type) || this.closedTypes.includes(type)) continue;
      const until = this.#knownUntil(type, this.#rates[type]!);
      if (until === null) continue;
      this.closedTypes.push(type);
      holdUntil(this.#held, until);
    }
  }

  /** The candidates query's `$skip` and `$xkeys`. */
  params(): { skip: string | null; xkeys: string | null } {
    return {
      skip: this.#skip.length > 0 ? JSON.stringify(this.#skip) : null,
      xkeys: this.#excluded.length > 0 ? JSON.stringify(this.#excluded) : null,
    };
  }

  /** Whether `row`, a candidate of `queue`, may be taken; if not, it is passed over from now on. */
  admit(row: JobRecord, queue: string): boolean {
    const typeRate = this.#rates && Object.hasOwn(this.#rates, row.type) ? this.#rates[row.type]! : null;
    if (typeRate && !this.#room(row.type, null, typeRate)) {
      this.closedTypes.push(row.type);
      return false;
    }
    if (row.key === null || !Object.hasOwn(this.#rules, row.type)) return true;
    const rules = this.#rules[row.type]!;
    const slot = `${row.type}\0${row.key}`;
    if (this.#closed.has(slot)) return this.#pass(row, slot, false);
    if (rules.keyRateLimit !== undefined && !this.#room(row.type, row.key, rules.keyRateLimit)) {
      return this.#pass(row, slot, true);
    }
    if (rules.keyConcurrency !== undefined && this.#running(row, slot) >= rules.keyConcurrency) {
      return this.#pass(row, slot, true, 1);
    }
    if (rules.ordered) {
      const first = this.#q.claimKeyEarliest.get({ type: row.type, key: row.key }) as Earliest;
      if (first.id !== row.id) {
        // The earliest will come up later in this walk if it can start now; else the key waits.
        const canStart =
          first.state === "pending" &&
          first.runAt <= this.#now &&
          first.queue === queue &&
          (first.expiresAt === null || first.expiresAt > this.#now);
        return this.#pass(row, slot, !canStart, 2);
      }
      // The earliest, but a later job of the key runs (this one was retried by hand from dead or
      // cancelled): it starts once that job has finished, which puts it back if parked.
      if (this.#running(row, slot) > 0) return this.#pass(row, slot, true, 2);
    }
    return true;
  }

  /** `row` was taken: its key has one more running, and an ordered key is closed for this claim. */
  took(row: JobRecord): void {
    if (this.#rates && Object.hasOwn(this.#rates, row.type)) this.#start(row.type);
    if (row.key === null || !Object.hasOwn(this.#rules, row.type)) return;
    const rules = this.#rules[row.type]!;
    const slot = `${row.type}\0${row.key}`;
    this.#active.set(slot, this.#running(row, slot) + 1);
    if (rules.keyRateLimit !== undefined) this.#start(rateScope(row.type, row.key));
    if (rules.ordered) this.#close(row, slot, 2);
  }

  /**
   * The keys this claim closed because their running jobs fill their room or their earliest job
   * cannot start now (not by a rate limit, which opens with time): the store parks their ready
   * jobs (sqlite-store.ts, migration 0010). Fair types are left out: their turns keep one key
   * from filling the front.
   */
  parkable(): ReadonlyArray<{ type: string; key: string; mark: 1 | 2 }> {
    return this.#parkable;
  }

  /**
   * The keys whose keyRateLimit window this claim found or left full (not of fair types), each
   * with its limit and when its window opens again: the store parks their ready jobs, to be put
   * back then (migration 0011).
   */
  rateParkable(): Array<{ type: string; key: string; limit: number; until: number }> {
    const out: Array<{ type: string; key: string; limit: number; until: number }> = [];
    for (const [scope, { type, key, rate }] of this.#keyRates) {
      if (this.#rules[type]!.fair === true) continue;
      const n = this.#starts.get(scope)!;
      if (n < rate.limit) continue;
      const leaving = this.#q.rateLeaving.get(scope, this.#now - rate.periodMs, n - rate.limit) as
        | number
        | undefined;
      out.push({ type, key, limit: rate.limit, until: (leaving ?? this.#now) + rate.periodMs });
    }
    return out;
  }

  /**
   * Whether the window of `type` (of its `key`, when given) has room for one more start now; when
   * it has none, `held.until` learns when it will (the start that must leave the window, plus the
   * period), and a type's is kept closed until then.
   */
  #room(type: string, key: string | null, rate: RateRule): boolean {
    const scope = rateScope(type, key);
    const since = this.#now - rate.periodMs;
    let n = this.#starts.get(scope);
    if (n === undefined) {
      if (key !== null) this.#keyRates.set(scope, { type, key, rate });
      // The starts long out of every window of this scope go (one write of the claim's); those
      // just out of it stay, for a claim whose `now` is behind this one's (RATE_FORGET_LAG_MS).
      this.#q.rateForget.run(scope, since - RATE_FORGET_LAG_MS);
      n = this.#q.rateCount.get(scope, since) as number;
      this.#starts.set(scope, n);
    }
    if (n < rate.limit) return true;
    const typeScope = key === null;
    if (this.#held || (typeScope && this.#closedRates)) {
      const leaving = this.#q.rateLeaving.get(scope, since, n - rate.limit) as number | undefined;
      const until = (leaving ?? this.#now) + rate.periodMs;
      holdUntil(this.#held, until);
      if (typeScope && this.#closedRates) recordClosed(this.#closedRates, type, rate, until, this.#now);
    }
    return false;
  }

  /** When a type known closed (under the same rule) opens; null when not known closed now. */
  #knownUntil(type: string, rate: RateRule): number | null {
    const known = this.#closedRates!.get(type);
    if (known === undefined) return null;
    if (known.until > this.#now && known.limit === rate.limit && known.periodMs === rate.periodMs) {
      return known.until;
    }
    this.#closedRates!.delete(type);
    return null;
  }

  #start(scope: string): void {
    this.#q.rateStart.run(scope, this.#now);
    this.#starts.set(scope, (this.#starts.get(scope) ?? 0) + 1);
  }

  #running(row: JobRecord, slot: string): number {
    if (!this.#activeRead.has(row.type)) {
      // Every key of the type at once: one walk of its active set, not one per key.
      this.#activeRead.add(row.type);
      for (const [key, n] of this.#q.claimKeyActive.all(row.type) as Array<[string, number]>) {
        const s = `${row.type}\0${key}`;
        this.#active.set(s, (this.#active.get(s) ?? 0) + n);
      }
    }
    return this.#active.get(slot) ?? 0;
  }

  #pass(row: JobRecord, slot: string, closeKey: boolean, park?: 1 | 2): false {
    if (closeKey) this.#close(row, slot, park);
    else this.#skip.push(row.id);
    return false;
  }

  #close(row: JobRecord, slot: string, park?: 1 | 2): void {
    if (this.#closed.has(slot)) return;
    this.#closed.add(slot);
    this.#excluded.push([row.type, row.key!]);
    if (park !== undefined && this.#rules[row.type]!.fair !== true) {
      this.#parkable.push({ type: row.type, key: row.key!, mark: park });
    }
  }
}

interface Earliest {
  id: string;
  state: string;
  runAt: number;
  queue: string;
  expiresAt: number | null;
}
