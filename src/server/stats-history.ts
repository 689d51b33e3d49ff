import type { Clock } from "../clock.js";
import { MAX_TIMER_MS } from "../duration.js";
import type { Job } from "../job.js";
import type { Queue } from "../queue.js";
import { checkInt } from "../validation.js";

/** What {@link StatsHistory} counts. */
export type HistoryCounter = "enqueued" | "completed" | "failed";

const COUNTERS: readonly HistoryCounter[] = ["enqueued", "completed", "failed"];

/** A window of per-interval counts, oldest first, in columns (the shape a chart takes). */
export interface StatsHistoryResult {
  /** Length of one interval. */
  intervalMs: number;
  /** Epoch milliseconds at which each interval starts. */
  times: number[];
  /** Jobs enqueued in each interval. */
  enqueued: number[];
  /** Attempts completed in each interval. */
  completed: number[];
  /** Attempts failed in each interval, retried or not. */
  failed: number[];
}

/** The most intervals a {@link StatsHistory} keeps: its ring takes 20 bytes an interval, 20 MB here. */
export const MAX_HISTORY_SIZE = 1_000_000;
/** Intervals a history keeps by default: an hour of seconds (what a server keeps). */
export const DEFAULT_HISTORY_SIZE = 3600;
/** The seconds `GET /v1/stats/history` answers when not told. */
export const DEFAULT_HISTORY_SECONDS = 300;

/**
 * Counts of enqueues, completions and failed attempts per second over the last hour, for the
 * dashboard's throughput chart. A ring of fixed size: each slot remembers which second it holds,
 * so a write is O(1), and seconds nobody wrote to read as 0 without a timer clearing them.
 *
 * It counts what this server sees: jobs enqueued and attempts reported through it, and the events
 * of workers that share its queue in this process. Workers elsewhere report to the store directly,
 * and their completions do not show up here (the store's counts in `/v1/stats` do include them).
 * @since 0.1.0
 */
export class StatsHistory {
  /** Length of one interval. */
  readonly intervalMs: number;
  /** How many intervals the ring keeps: the window is `size × intervalMs` long. */
  readonly size: number;
  readonly #clock: Clock;
  /** Which interval (epoch ms / intervalMs) each slot holds. */
  readonly #slotOf: Float64Array;
  readonly #counts: Record<HistoryCounter, Uint32Array>;
  #detach = () => {};

  /**
   * An empty history read by `clock`; it counts nothing until {@link StatsHistory.follow} or
   * {@link StatsHistory.record}.
   * @param options - `intervalMs` (default 1000; 1 ms to about 24.8 days) and `size` (default
   *   3600, one hour of seconds; at most {@link MAX_HISTORY_SIZE}: the ring is allocated whole).
   * @throws ErrandError `INVALID_OPTION` for an interval or size outside those bounds.
   */
  constructor(clock: Clock, options: { intervalMs?: number; size?: number } = {}) {
    this.#clock = clock;
    this.intervalMs = checkInt("StatsHistory intervalMs", options.intervalMs ?? 1000, 1, MAX_TIMER_MS);
    this.size = checkInt("StatsHistory size", options.size ?? DEFAULT_HISTORY_SIZE, 1, MAX_HISTORY_SIZE);
    this.#slotOf = new Float64Array(this.size).fill(-1);
    this.#counts = {
      enqueued: new Uint32Array(this.size),
      completed: new Uint32Array(this.size),
      failed: new Uint32Array(this.size),
    };
  }

  /** Counts the queue's `enqueued`, `completed` and `failed` events until {@link close}. */
  follow(queue: Queue): this {
    const on = {
      enqueued: () => this.record("enqueued"),
      completed: () => this.record("completed"),
      failed: () => this.record("failed"),
    } as const satisfies Record<HistoryCounter, (job: Job) => void>;
    for (const c of COUNTERS) queue.on(c, on[c]);
    this.#detach = () => {
      for (const c of COUNTERS) queue.off(c, on[c]);
    };
    return this;
  }

  /**
   * Adds `n` to `counter` in the interval holding `at` (default: now). A write for an interval that
   * has left the window (`size` intervals back from now) is dropped.
   *
   * Age is judged against the clock, not against what the slot holds: a slot may hold an interval
   * ahead of now, written while the wall clock was stepped ahead, and after the clock steps back
   * the writes of the present take that slot over (a slot that held "tomorrow" would otherwise
   * refuse every write as too old for a day). A write stamped ahead of now takes a slot only when
   * the slot holds nothing of the window: it never wipes the count of an interval still shown.
   */
  record(counter: HistoryCounter, n = 1, at?: number): void {
    const current = Math.floor(this.#clock.now() / this.intervalMs);
    const interval = at === undefined ? current : Math.floor(at / this.intervalMs);
    const slot = ((interval % this.size) + this.size) % this.size;
    const held = this.#slotOf[slot]!;
    if (held !== interval) {
      // Older than the window: there is no slot for it any more.
      if (interval <= current - this.size) return;
      // From the future, into a slot that holds an interval of the window: keep what is shown.
      if (interval > current && held > current - this.size && held <= current) return;
      // The slot held an interval a full ring ago, or one ahead of now: start it afresh.
      this.#slotOf[slot] = interval;
      for (const c of COUNTERS) this.#counts[c][slot] = 0;
    }
    this.#counts[counter][slot]! += n;
  }

  /**
   * The last `intervals` intervals up to and including the current one. A slot is read only for
   * the interval it holds, so counts stamped ahead of `now` (the clock was ahead when they were
   * written) are not shown until their time comes, and reads never see past `now`.
   */
  series(intervals = 300, now = this.#clock.now()): StatsHistoryResult {
    const n = Math.min(Math.max(1, Math.floor(intervals)), this.size);
    const last = Math.floor(now / this.intervalMs);
    const out: StatsHistoryResult = {
      intervalMs: this.intervalMs,
      times: [],
      enqueued: [],
      completed: [],
      failed: [],
    };
    for (let interval = last - n + 1; interval <= last; interval++) {
      const slot = ((interval % this.size) + this.size) % this.size;
      const held = this.#slotOf[slot] === interval;
      out.times.push(interval * this.intervalMs);
      for (const c of COUNTERS) out[c].push(held ? this.#counts[c][slot]! : 0);
    }
    return out;
  }

  /** Stops following the queue. Safe to call twice. */
  close(): void {
    this.#detach();
    this.#detach = () => {};
  }
}
