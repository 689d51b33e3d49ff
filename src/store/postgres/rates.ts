/**
 * Rate limits during one PostgreSQL claim (ClaimParams.rateLimits, KeyRules.keyRateLimit): each
 * scope's starts in its sliding window (errand_rate_start), counted once the claim holds the
 * scope's advisory lock (claim.ts: a type's with the cap locks, a key's with the key's lock), the
 * claim's own starts added to them, and, at the end, the starts written and `held.until` set.
 * @module
 */
import type { JobRecord } from "../../job.js";
import type { StatementName } from "../generated/postgres-queries.js";
import { holdUntil, RATE_FORGET_LAG_MS, type RateRule, rateScope } from "../store.js";
import { bandedTexts } from "./bands.js";
import type { PgConnection, Queryable } from "./connection.js";

/** One scope met in the claim. */
interface Scope {
  type: string;
  /** Null for a type's scope. */
  key: string | null;
  rule: RateRule;
  /** Starts in the window before this claim. */
  counted: number;
  /** Starts this claim made. */
  taken: number;
}

export class Rates {
  readonly #connection: PgConnection;
  readonly #sql: Record<StatementName, string>;
  readonly #db: Queryable;
  readonly #now: number;
  /** By scope name (a Map: scopes hold user-supplied names). */
  readonly #scopes = new Map<string, Scope>();

  constructor(connection: PgConnection, sql: Record<StatementName, string>, db: Queryable, now: number) {
    this.#connection = connection;
    this.#sql = sql;
    this.#db = db;
    this.#now = now;
  }

  /**
   * Counts the starts in the window of scopes not met before (their locks held by the caller),
   * dropping those that left it more than RATE_FORGET_LAG_MS ago; returns each one's room (`limit` less its starts; ≤ 0: none).
   */
  async count(
    scopes: ReadonlyArray<{ type: string; key: string | null; rule: RateRule }>,
  ): Promise<Map<string, number>> {
    const names = scopes.map((s) => rateScope(s.type, s.key));
    const rows = await this.#connection.query<{ scope: string; n: number }>(this.#db, this.#sql.rateCount, [
      names,
      scopes.map((s) => this.#now - s.rule.periodMs),
      RATE_FORGET_LAG_MS,
    ]);
    const room = new Map<string, number>();
    for (const { scope, n } of rows) {
      const s = scopes[names.indexOf(scope)]!;
      this.#scopes.set(scope, { ...s, counted: n, taken: 0 });
      room.set(scope, s.rule.limit - n);
    }
    return room;
  }

  /** A job the claim took: a start for its type's scope and its key's, where they are limited. */
  take(record: JobRecord): void {
    const type = this.#scopes.get(record.type);
    if (type && type.key === null) type.taken += 1;
    if (record.key === null) return;
    const key = this.#scopes.get(rateScope(record.type, record.key));
    if (key) key.taken += 1;
  }

  /**
   * Records the claim's starts; then, when `held` is given and a scope is left without room while
   * its type (and key) has a job among the next `limit` ready ones (of `types`, null: all) of a
   * queue in `queues`, sets `held.until` to the soonest time one has room again (keeping a sooner
   * value already there).
   */
  async finish(
    queues: readonly string[],
    limit: number,
    types: readonly string[] | null,
    held: { until: number | null } | undefined,
  ): Promise<void> {
    const started = [...this.#scopes].filter(([, s]) => s.taken > 0);
    if (started.length > 0) {
      await this.#connection.query(this.#db, this.#sql.rateStart, [
        started.map(([name]) => name),
        this.#now,
        started.map(([, s]) => s.taken),
      ]);
    }
    if (!held) return;
    const full = [...this.#scopes].filter(([, s]) => s.counted + s.taken >= s.rule.limit);
    if (full.length === 0) return;
    const rows = await this.#connection.query<{ until: number | null }>(
      this.#db,
      bandedTexts(this.#sql)(this.#sql.rateHeld),
      [
        full.map(([name]) => name),
        full.map(([, s]) => s.type),
        full.map(([, s]) => s.key),
        full.map(([, s]) => this.#now - s.rule.periodMs),
        full.map(([, s]) => s.counted + s.taken - s.rule.limit),
        full.map(([, s]) => s.rule.periodMs),
        queues,
        this.#now,
        limit,
        types,
      ],
    );
    const until = rows[0]?.until ?? null;
    holdUntil(held, until);
  }
}
