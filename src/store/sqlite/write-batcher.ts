import type Database from "better-sqlite3";
import { ErrandError, storeError } from "../../errors.js";

interface PendingWrite {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const BUSY_RETRY_MS = 5;

/**
 * Funnels every write of one process through one connection and groups the writes that arrive in
 * the same event-loop turn into one `BEGIN IMMEDIATE` transaction (Effectum's single writer).
 *
 * Each write runs in its own savepoint, so one write's error rolls back only that write, and is
 * reported to that caller alone. A commit costs one fsync of the WAL at most, however many writes
 * it carries: that is where bulk throughput comes from.
 *
 * `BEGIN IMMEDIATE` takes the database's write lock up front, so two processes never deadlock on a
 * lock upgrade; the connection's busy timeout makes the loser wait. A batch that meets
 * `SQLITE_BUSY` is tried again until it has been trying for the busy timeout (a brief busy, which
 * SQLite reports without waiting in WAL recovery or on a stale snapshot, never reaches a caller);
 * past that, another connection has held the lock longer than the store was told to wait, and
 * every write of the batch fails with `STORE_ERROR`. Waiting on without limit would leave callers,
 * and a close(), hanging for as long as the other process holds the lock, with nothing reported.
 *
 * Every driver fault (`SQLITE_FULL`, `SQLITE_IOERR`, `SQLITE_READONLY`, `SQLITE_CORRUPT`, a lock
 * held too long) reaches callers as `STORE_ERROR` with the SQLite error as `cause`, as
 * PostgreSQL's and Redis's do ({@link sqliteFault}).
 */
export class WriteBatcher {
  #pending: PendingWrite[] = [];
  #scheduled = false;
  readonly #runAll: (ops: PendingWrite[], results: unknown[], errors: unknown[]) => void;
  readonly #afterCommit: () => void;
  /** How long a batch keeps meeting `SQLITE_BUSY` before it fails: the connection's busy timeout. */
  readonly #busyBudgetMs: number;
  /** When the batch being retried first met `SQLITE_BUSY` (`performance.now()`); null: none is. */
  #busySince: number | null = null;

  constructor(db: Database.Database, afterCommit: () => void) {
    this.#afterCommit = afterCommit;
    // The store's busyTimeoutMs, as the connection was opened with it.
    this.#busyBudgetMs = Number(db.pragma("busy_timeout", { simple: true })) || 0;
    const savepoint = db.transaction((fn: () => unknown) => fn());
    const runAll = db.transaction((ops: PendingWrite[], results: unknown[], errors: unknown[]) => {
      for (let i = 0; i < ops.length; i++) {
        try {
          results[i] = ops.length === 1 ? ops[i]!.fn() : savepoint(ops[i]!.fn);
        } catch (error) {
          // SQLite rolls the whole transaction back on some faults (SQLITE_FULL, SQLITE_IOERR,
          // SQLITE_NOMEM): then the batch fails whole, or the writes after this one would each
          // run, and commit, in a transaction of their own while their callers were told it failed.
          if (ops.length === 1 || !db.inTransaction) throw error;
          errors[i] = error;
        }
      }
    });
    this.#runAll = (ops, results, errors) => runAll.immediate(ops, results, errors);
  }

  /** Runs `fn` inside the next write transaction; resolves after the commit. */
  write<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const ops = this.#pending;
    this.#pending = [];
    if (ops.length === 0) return;
    const results: unknown[] = new Array(ops.length);
    const errors: unknown[] = new Array(ops.length);
    // Once per batch, not per write: the busy wait inside runAll counts towards the budget.
    const started = performance.now();
    try {
      this.#runAll(ops, results, errors);
    } catch (error) {
      if (isBusy(error)) {
        this.#busySince ??= started;
        if (performance.now() - this.#busySince < this.#busyBudgetMs) {
          // Busy for less than the busy timeout so far: try the same writes again.
          this.#pending = ops.concat(this.#pending);
          this.#scheduled = true;
          setTimeout(this.#flush, BUSY_RETRY_MS);
          return;
        }
        this.#busySince = null;
        const fault = new ErrandError(
          "STORE_ERROR",
          `SQLite write failed: another connection held the database's write lock for more than busyTimeoutMs (${this.#busyBudgetMs} ms)`,
          { cause: error },
        );
        for (const op of ops) op.reject(fault);
        return;
      }
      this.#busySince = null;
      const fault = sqliteFault("SQLite write", error);
      for (const op of ops) op.reject(fault);
      return;
    }
    this.#busySince = null;
    this.#afterCommit();
    for (let i = 0; i < ops.length; i++) {
      if (errors[i] !== undefined) ops[i]!.reject(sqliteFault("SQLite write", errors[i]));
      else ops[i]!.resolve(results[i]);
    }
  };
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED";
}

/**
 * A SQLite driver fault as errand reports it: `STORE_ERROR` with the SQLite error as `cause`.
 * Passed through as they are: ErrandErrors (the store's own refusals), constraint errors (a store
 * maps those it expects to their codes where it runs the statement; one that escapes is a bug, not
 * an outage) and errors that are not SQLite's (a bug in errand).
 * @internal
 */
export function sqliteFault(operation: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof ErrandError || typeof code !== "string" || !code.startsWith("SQLITE_")) return error;
  if (code.startsWith("SQLITE_CONSTRAINT")) return error;
  return storeError(operation, error);
}
