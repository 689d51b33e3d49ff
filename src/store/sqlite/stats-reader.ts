/**
 * The SQLite store's counts (`stats()`), read on a worker thread with a read-only connection of
 * its own once they have become slow, so that counting a large backlog does not stop the event
 * loop the store shares with its Queue, workers and server.
 *
 * `stats()` counts every row of the hot table (errand_job: pending, active and blocked jobs; the
 * history's counts are kept as it changes, migration 12): beside 1,000,000 waiting jobs that takes
 * ~0.5 s on the store's own connection, all of it on the thread that also claims, completes and
 * answers HTTP, and the dashboard asks every two seconds. On the reader thread the same count
 * takes the same time on another core while the store goes on. Each read is one read transaction,
 * so both tables are read in one snapshot.
 * @module
 */
import { Worker } from "node:worker_threads";
import { ErrandError } from "../../errors.js";
import { statements } from "../generated/sqlite-queries.js";
import type { StatsRow } from "../stats-rows.js";
import { DRIVER } from "./checkpointer.js";

/**
 * A count on the store's connection that took this long (ms) moves every later one to the reader
 * thread. Below it the thread (~6 MB of RSS, ~30 ms to start) is not worth its keep: a worker
 * process that polls stats beside a 20,000-job backlog counts in ~10 ms and starts none.
 */
export const STATS_THREAD_AFTER_MS = 50;

/**
 * A hot table holding at least this many rows when stats() first counts (the store counts them up
 * to this, once) is counted on the reader thread from that first count: a count on the store's
 * connection would stop the event loop once, for ~0.5 s a million rows.
 */
export const STATS_THREAD_AFTER_ROWS = 100_000;

/** The hot table's groups and the history's, counted in one snapshot. */
export interface StatsRead {
  hot: StatsRow[];
  done: StatsRow[];
}

/**
 * The thread: on each `{ now }` it counts both tables in one read transaction and answers
 * `{ hot, done }`, or `{ error }`; on "close" it closes its connection and ends. CommonJS source
 * run with `eval`, as the checkpointer's, so it needs no file of its own.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { readonly: true, fileMustExist: true, timeout: workerData.busyTimeoutMs });
db.pragma("cache_size = -2000");
const hot = db.prepare(workerData.hot);
const done = db.prepare(workerData.done);
const read = db.transaction((now) => ({ hot: hot.all({ now }), done: done.all() }));
parentPort.on("message", (m) => {
  if (m === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage(read(m.now));
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
});
`;

interface Waiter {
  now: number;
  resolve: (read: StatsRead) => void;
  reject: (error: unknown) => void;
}

/**
 * One store's reader thread. At most one count runs at a time and one more waits: callers who
 * ask while one runs share the next, counted at the latest `now` asked for (so a dashboard in ten
 * tabs costs what one does, and slow counts never queue up without end).
 */
export class StatsReader {
  readonly #thread: Worker;
  /** The callers of the count under way, answered by the thread's next message. */
  #running: Waiter[] | null = null;
  /** Callers who asked while a count ran: the next count is theirs. */
  #next: Waiter[] = [];
  #failed: unknown = null;
  #closed = false;
  #exited = false;
  #reads = 0;

  constructor(filename: string, busyTimeoutMs: number) {
    this.#thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        driver: DRIVER,
        filename,
        busyTimeoutMs,
        hot: statements.statsHot,
        done: statements.statsDone,
      },
    });
    // The store's close() ends it; an unclosed store must not keep the process alive for it.
    this.#thread.unref();
    this.#thread.on("message", (m: StatsRead | { error: string }) => this.#answered(m));
    this.#thread.on("error", (cause) =>
      this.#fail(
        new ErrandError("STORE_ERROR", `the SQLite stats thread failed: ${String(cause)}`, { cause }),
      ),
    );
    this.#thread.on("exit", () => {
      this.#exited = true;
      this.#fail(new ErrandError("STORE_ERROR", "the SQLite stats thread ended"));
    });
  }

  /** Counts the thread was asked for over its life, each shared by the callers who waited (tests). @internal */
  get reads(): number {
    return this.#reads;
  }

  /** Whether the thread has failed: the store counts on its own connection again. */
  get failed(): boolean {
    return this.#failed !== null;
  }

  /** Counts both tables at `now` (or a later `now`, when shared with a caller who asked later). */
  read(now: number): Promise<StatsRead> {
    if (this.#closed) return Promise.reject(new ErrandError("CLOSED", "the SQLite store is closed"));
    if (this.#failed !== null) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      this.#next.push({ now, resolve, reject });
      if (this.#running === null) this.#send();
    });
  }

  #send(): void {
    const batch = this.#next;
    if (batch.length === 0) return;
    this.#next = [];
    this.#running = batch;
    this.#reads++;
    // Held while a count is under way: an awaited stats() must not find the event loop empty.
    this.#thread.ref();
    this.#thread.postMessage({ now: Math.max(...batch.map((w) => w.now)) });
  }

  #answered(m: StatsRead | { error: string }): void {
    const batch = this.#running ?? [];
    this.#running = null;
    this.#thread.unref();
    if ("error" in m) {
      const error = new ErrandError("STORE_ERROR", `SQLite stats failed: ${m.error}`);
      for (const w of batch) w.reject(error);
    } else {
      for (const w of batch) w.resolve(m);
    }
    if (!this.#closed) this.#send();
  }

  #fail(error: unknown): void {
    if (this.#failed !== null) return;
    this.#failed = error;
    for (const w of [...(this.#running ?? []), ...this.#next]) w.reject(error);
    this.#running = null;
    this.#next = [];
  }

  /** Ends the thread (its connection closed) and waits for it; counts still asked for are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closed = new ErrandError("CLOSED", "the SQLite store is closed");
    for (const w of [...(this.#running ?? []), ...this.#next]) w.reject(closed);
    this.#running = null;
    this.#next = [];
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#thread.once("exit", () => resolve()));
    this.#thread.ref();
    this.#thread.postMessage("close");
    await exited;
  }
}
