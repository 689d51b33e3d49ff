/**
 * The SQLite store's WAL checkpoints, run on a worker thread with its own connection, so that the
 * connection that writes (and the event loop it shares with the Queue) never copies the WAL back
 * into the database file itself.
 * @module
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * The writing connection's own automatic checkpoint (`wal_autocheckpoint`, pages) while the thread
 * runs: a backstop that bounds the WAL should the thread fall behind, far above what the WAL
 * reaches while it keeps up (a 20,000-job enqueueMany writes ~1,650 pages).
 */
export const BACKSTOP_PAGES = 10_000;

/** SQLite's default `wal_autocheckpoint`, for the writer again should the thread fail. */
const SQLITE_DEFAULT_PAGES = 1000;

/**
 * The least time between two checkpoints of the thread. A commit after a quiet spell is copied
 * back at once; under a steady stream of commits the thread copies what gathered in the last
 * interval, so small commits do not each cost a checkpoint's two fsyncs.
 */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * The thread starts once the store's commits have paused this long after a large write (and at
 * the latest {@link START_LATEST_MS} after it): a second bulk enqueue right behind the first then
 * does not share the CPU with the thread's start (~10 ms on this thread, ~30 ms on its own) and
 * first checkpoint, which cost it a quarter of its time (bench/RESULTS.md, session 24).
 */
export const START_QUIET_MS = 100;

/** The latest the thread starts after a large write's commit, however busy the writer stays. */
export const START_LATEST_MS = 1_000;

/**
 * The thread: on each "checkpoint" it runs a PASSIVE checkpoint (which never blocks the writer
 * nor waits for readers) no sooner than CHECKPOINT_INTERVAL_MS after the last, then answers
 * "done"; a failed one (another process checkpointing: SQLITE_BUSY) is left to the next ask or
 * the writer's backstop. CommonJS source run with `eval`, so it needs no file of its own beside
 * the compiled or the TypeScript source.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true, timeout: 0 });
db.pragma("synchronous = " + workerData.synchronous);
let last = 0;
let closing = false;
function checkpoint() {
  if (closing) return;
  last = Date.now();
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {}
  parentPort.postMessage("done");
}
parentPort.on("message", (m) => {
  if (m === "close") {
    closing = true;
    db.close();
    parentPort.close();
    return;
  }
  const wait = last + workerData.intervalMs - Date.now();
  if (wait > 0) setTimeout(checkpoint, wait);
  else checkpoint();
});
`;

/**
 * better-sqlite3's entry point, for a thread of the store's (this one, stats-reader.ts's) to load
 * the same driver the store uses.
 */
export const DRIVER = createRequire(import.meta.url).resolve("better-sqlite3");

/**
 * Keeps one store's WAL checkpointed from a worker thread once the store has made a large write
 * (a bulk enqueue). SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past
 * its threshold (1,000 pages), on the writer's thread: a 20,000-job enqueueMany (~1,650 pages of
 * WAL) paid ~35 ms of its ~150 ms for it. The thread takes that work off the writer, which keeps
 * a backstop ({@link BACKSTOP_PAGES}). A store that makes no large write starts no thread (~6 MB
 * of RSS) and checkpoints as SQLite does by default: a stream of small commits pays the same
 * checkpoints spread over many commits, and a worker process keeps its memory. Checkpoints are
 * SQLite's own: any number of connections or processes may run them, and a PASSIVE one copies only
 * committed frames that no reader still needs.
 */
export class Checkpointer {
  readonly #filename: string;
  readonly #synchronous: "NORMAL" | "FULL";
  readonly #autoCheckpoint: (pages: number) => void;
  #thread: Worker | null = null;
  /** A checkpoint was asked for and not yet answered: later commits need not ask again. */
  #asked = false;
  /** The thread was asked for (it may still be due to start): once for a store's life. */
  #started = false;
  /** A large write is under way: the thread starts after its commit. */
  #startAfterCommit = false;
  /** Starts the thread after a quiet spell (see {@link START_QUIET_MS}); re-armed by each commit. */
  #startTimer: NodeJS.Timeout | null = null;
  /** The latest the thread starts (epoch ms), set by the large write's commit. */
  #startBy = 0;
  #closed = false;
  #threadsStarted = 0;
  /** whenIdle()'s callers, answered when the thread answers. */
  #waiters: Array<() => void> = [];

  /**
   * @param autoCheckpoint - sets the writer's `wal_autocheckpoint`: the backstop once the thread
   *   runs, SQLite's default again if it fails.
   */
  constructor(filename: string, synchronous: "NORMAL" | "FULL", autoCheckpoint: (pages: number) => void) {
    this.#filename = filename;
    this.#synchronous = synchronous;
    this.#autoCheckpoint = autoCheckpoint;
  }

  /**
   * Called before a large write (a bulk enqueue) is queued: the writer's own checkpoint is raised
   * to the backstop at once, so that write's commit does not checkpoint inline, and the thread
   * starts once the commits after it pause ({@link START_QUIET_MS}), not during that write or the
   * next, which it would slow (a thread's start is ~30 ms of CPU; measured, starting it beside a
   * 20,000-job insert made the insert ~35 ms slower).
   */
  expectLargeWrite(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#startAfterCommit = true;
    this.#autoCheckpoint(BACKSTOP_PAGES);
  }

  /** After each commit: asks the thread, if it runs (or is due to start), for a checkpoint. */
  afterCommit(): void {
    if (this.#startAfterCommit) {
      this.#startAfterCommit = false;
      this.#asked = true;
      this.#startBy = Date.now() + START_LATEST_MS;
      this.#armStart();
      return;
    }
    // Due to start: each commit before then pushes the start back, within the latest.
    if (this.#startTimer !== null) {
      this.#armStart();
      return;
    }
    if (this.#thread === null || this.#asked) return;
    this.#asked = true;
    this.#thread.postMessage("checkpoint");
  }

  /**
   * (Re)sets the timer that starts the thread: never inside a commit's callback, which the callers
   * of the write wait on (`new Worker` takes ~10 ms on the spot the first time). Unreferenced: a
   * process with nothing else to do ends without it, and closing the database checkpoints.
   */
  #armStart(): void {
    if (this.#startTimer !== null) clearTimeout(this.#startTimer);
    const wait = Math.max(0, Math.min(START_QUIET_MS, this.#startBy - Date.now()));
    this.#startTimer = setTimeout(() => {
      this.#startTimer = null;
      if (this.#closed) return this.#answered();
      this.#thread = this.#start();
      this.#thread.postMessage("checkpoint");
    }, wait);
    this.#startTimer.unref();
  }

  #start(): Worker {
    this.#threadsStarted++;
    const thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        driver: DRIVER,
        filename: this.#filename,
        synchronous: this.#synchronous,
        intervalMs: CHECKPOINT_INTERVAL_MS,
      },
    });
    // The store's close() ends it; an unclosed store must not keep the process alive for it.
    thread.unref();
    thread.on("message", () => this.#answered());
    thread.on("error", () => {
      // SQLite's own checkpoints carry on alone, at their default threshold.
      this.#thread = null;
      this.#answered();
      if (!this.#closed) this.#autoCheckpoint(SQLITE_DEFAULT_PAGES);
    });
    return thread;
  }

  /** Threads started over the store's life: one at most (tests). @internal */
  get threadsStarted(): number {
    return this.#threadsStarted;
  }

  /** Whether the thread runs (tests). @internal */
  get running(): boolean {
    return this.#thread !== null;
  }

  /** Resolves once no checkpoint asked for is still under way (tests). @internal */
  whenIdle(): Promise<void> {
    if (!this.#asked) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** The checkpoint asked for is done (or will not be): later commits may ask again. */
  #answered(): void {
    this.#asked = false;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Ends the thread (its connection closed) and waits for it. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#startAfterCommit = false;
    if (this.#startTimer !== null) {
      clearTimeout(this.#startTimer);
      this.#startTimer = null;
      this.#answered();
    }
    const thread = this.#thread;
    this.#thread = null;
    if (thread === null) return;
    const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
    // Held while closing: an awaited close must not find the event loop empty and end the process.
    thread.ref();
    thread.postMessage("close");
    await exited;
  }
}
