/**
 * The PostgreSQL store's options and their checks.
 * @module
 */
import type pg from "pg";
import type { Logger } from "pino";
import { MAX_TIMER_MS } from "../../duration.js";
import { ErrandError } from "../../errors.js";
import { checkKnownKeys } from "../../known-keys.js";

/**
 * What a schema name must look like: a plain lower-case SQL identifier, short enough that the
 * wake-up channel derived from it (`<schema>_wake`) fits PostgreSQL's 63-byte name limit.
 * @since 0.1.0
 */
export const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,47}$/;

/** @throws ErrandError `INVALID_OPTION` unless `schema` matches {@link SCHEMA_PATTERN}. */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== "string" || !SCHEMA_PATTERN.test(schema)) {
    const shown = typeof schema === "string" ? JSON.stringify(schema) : typeof schema;
    throw new ErrandError(
      "INVALID_OPTION",
      `schema ${shown} must match ${SCHEMA_PATTERN} (a lower-case identifier of 1 to 48 characters)`,
    );
  }
  return schema;
}

/**
 * Options for {@link PostgresStore.open}. Give `connectionString` or `pool`, not both.
 * @since 0.1.0
 */
export interface PostgresStoreOptions {
  /** `postgres://user:pass@host:5432/db`; the store makes (and on close ends) its own pool. */
  connectionString?: string;
  /**
   * Your own `pg.Pool`. The store never ends it, and keeps one of its connections for LISTEN
   * while open: size it for that.
   */
  pool?: pg.Pool;
  /**
   * The schema errand's tables live in, created on first migrate. Several independent errand
   * installations can share a database under different schemas.
   * @defaultValue "errand"
   */
  schema?: string;
  /**
   * Apply pending migrations when opening. Off: opening fails unless the schema is already at
   * this errand's version (run {@link migrate} from a deploy step instead).
   * @defaultValue true
   */
  migrate?: boolean;
  /**
   * Connections in the store's own pool (with `connectionString`), besides the one kept for LISTEN.
   * @defaultValue 10
   */
  poolSize?: number;
  /**
   * How long an operation retries after a connection fault (a restart, a terminated backend, a
   * refused connection) before it fails with `STORE_ERROR`. Every operation is compare-and-set,
   * so running it again is safe; see the README for the rare case where a commit's reply was lost.
   * @defaultValue 10_000
   */
  retryMs?: number;
  /**
   * How long one statement of errand's may wait for its answer before it fails with `STORE_ERROR`
   * and its connection is destroyed: a server that stops answering with the connection open (a
   * hung server, a network that drops packets silently) then cannot hang a worker or `close()` for
   * good, as it would until TCP keep-alive gave up, minutes later. It must exceed errand's longest
   * statement: a bulk enqueue of hundreds of thousands of jobs, or a prune batch, takes seconds at
   * worst. A statement that timed out may still have run, like one whose connection dropped; it is
   * not retried (a retry would make the caller wait as long again). A statement fails between the
   * deadline and a quarter of it later (at most 5 s later): one watchdog timer per store checks
   * the connections with a statement in flight, so a statement starts no timer of its own. Applies
   * to errand's own statements only: not to migrations (which may wait for another process's
   * lock) nor to the LISTEN connection (idle by design), nor to statements on a connection you
   * pass to a transactional enqueue. `0` sets no deadline.
   * @defaultValue 30_000
   */
  queryTimeoutMs?: number;
  /**
   * Backoff between attempts to re-establish the LISTEN connection after it drops, doubling
   * from `min` to `max`. Workers poll (their `pollIntervalMs`) until it is back.
   * @defaultValue { min: 100, max: 5_000 }
   */
  reconnectDelayMs?: { min?: number; max?: number };
  /** Where connection faults are logged. @defaultValue pino at level "warn" */
  logger?: Logger;
}

const OPTION_KEYS = new Set([
  "connectionString",
  "pool",
  "schema",
  "migrate",
  "poolSize",
  "retryMs",
  "queryTimeoutMs",
  "reconnectDelayMs",
  "logger",
]);

/** @throws ErrandError `INVALID_OPTION`, naming the field and its bound. */
export function checkOptions(options: PostgresStoreOptions): PostgresStoreOptions & { schema: string } {
  checkKnownKeys("PostgresStore", options, OPTION_KEYS);
  if ((options.connectionString === undefined) === (options.pool === undefined)) {
    throw new ErrandError("INVALID_OPTION", "PostgresStore: give connectionString or pool (exactly one)");
  }
  if (options.connectionString !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(options.connectionString);
    } catch {}
    if (!url || !/^postgres(ql)?:$/.test(url.protocol)) {
      throw new ErrandError(
        "INVALID_OPTION",
        "PostgresStore: connectionString must be a postgres:// or postgresql:// URL",
      );
    }
  }
  const poolMax = (options.pool as { options?: { max?: number } } | undefined)?.options?.max;
  if (poolMax !== undefined && poolMax < 2) {
    throw new ErrandError(
      "INVALID_OPTION",
      `PostgresStore: pool.max must be ≥ 2 (one connection is kept for LISTEN), got ${poolMax}`,
    );
  }
  for (const [field, value, min] of [
    ["poolSize", options.poolSize, 1],
    ["retryMs", options.retryMs, 0],
    ["queryTimeoutMs", options.queryTimeoutMs, 0],
    ["reconnectDelayMs.min", options.reconnectDelayMs?.min, 1],
    ["reconnectDelayMs.max", options.reconnectDelayMs?.max, 1],
  ] as const) {
    // Timers' bound: a longer reconnect delay overflows Node's timer and fires at once.
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min || value > MAX_TIMER_MS)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `PostgresStore: ${field} must be an integer from ${min} to ${MAX_TIMER_MS}`,
      );
    }
  }
  return { ...options, schema: checkSchemaName(options.schema ?? "errand") };
}
