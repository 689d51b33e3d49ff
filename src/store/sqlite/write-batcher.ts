import type Database from "better-sqlite3";

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
 * lock upgrade; the connection's busy timeout makes the loser wait, and a batch that still meets
 * `SQLITE_BUSY` is tried again, so no caller ever sees it.
 */
export class WriteBatcher {
  #pending: PendingWrite[] = [];
  #scheduled = false;
  readonly #runAll: (ops: PendingWrite[], results: unknown[], errors: unknown[]) => void;
  readonly #afterCommit: () => void;

  constructor(db: Database.Database, afterCommit: () => void) {
    this.#afterCommit = afterCommit;
    const savepoint = db.transaction((fn: () => unknown) => fn());
    const runAll = db.transaction((ops: PendingWrite[], results: unknown[], errors: unknown[]) => {
      for (let i = 0; i < ops.length; i++) {
        try {
          results[i] = ops.length === 1 ? ops[i]!.fn() : savepoint(ops[i]!.fn);
        } catch (error) {
          if (ops.length === 1) throw error;
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
    try {
      this.#runAll(ops, results, errors);
    } catch (error) {
      if (isBusy(error)) {
        // Another process held the lock past the busy timeout: try the same writes again.
        this.#pending = ops.concat(this.#pending);
        this.#scheduled = true;
        setTimeout(this.#flush, BUSY_RETRY_MS);
        return;
      }
      for (const op of ops) op.reject(error);
      return;
    }
    this.#afterCommit();
    for (let i = 0; i < ops.length; i++) {
      if (errors[i] !== undefined) ops[i]!.reject(errors[i]);
      else ops[i]!.resolve(results[i]);
    }
  };
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED";
}
