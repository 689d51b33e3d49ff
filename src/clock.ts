import { MAX_TIMER_MS } from "./duration.js";
import { ErrandError } from "./errors.js";
import { addToDate, describe, MAX_DATE_MS, MIN_DATE_MS, toEpochMs } from "./validation.js";

/**
 * All time in errand comes through a Clock: stores compare against the `now` it gives, and the
 * worker's timers (polling, heartbeats, timeouts, sweeps) are set on it. Tests swap in a
 * {@link ManualClock} and travel in time without sleeping.
 * @since 0.1.0
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Calls `fn` once after `ms` milliseconds of this clock's time.
   * @remarks errand keeps the timers it sets under {@link MAX_TIMER_MS}, but a job stored before
   * that bound may carry a longer `timeoutMs`: a clock built on `setTimeout` must chain such a timer
   * (as {@link systemClock} does), since Node fires an overlong one after 1 ms.
   * @returns a function that cancels the timer; calling it twice is harmless.
   */
  setTimer(ms: number, fn: () => void): () => void;
}

/**
 * The wall clock, with Node's timers. Timers are unref'd so they never keep a process alive.
 * A timer longer than {@link MAX_TIMER_MS} is set as a chain of shorter ones: Node would fire it
 * after 1 ms instead. errand refuses such durations at its edge; this keeps a value stored before
 * that (a job's `timeoutMs`) from firing at once all the same.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    let handle: NodeJS.Timeout;
    const arm = (left: number) => {
      handle =
        left > MAX_TIMER_MS
          ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS)
          : setTimeout(fn, Math.max(0, left));
      handle.unref();
    };
    arm(Number.isNaN(ms) ? 0 : ms);
    return () => clearTimeout(handle);
  },
};

/**
 * `clock` with its `now()` held to the dates every store keeps: whole epoch milliseconds from 1970
 * to the end of year 9999. A custom clock's NaN, fraction or far-future instant would otherwise
 * reach the stores (SQLite refused NaN with a constraint error, 1e20 was stored as a date that
 * reads back null). {@link systemClock} is returned as it is: `Date.now()` is always such a value.
 * @throws ErrandError `INVALID_OPTION` from `now()`, naming what it returned.
 */
export function checkedClock(clock: Clock): Clock {
  if (clock === systemClock) return clock;
  return {
    now() {
      const now = clock.now();
      if (Number.isSafeInteger(now) && now >= MIN_DATE_MS && now <= MAX_DATE_MS) return now;
      throw new ErrandError(
        "INVALID_OPTION",
        `clock.now() returned ${describe(now)}; a clock gives whole epoch milliseconds from ${MIN_DATE_MS} (1970) to ${MAX_DATE_MS} (the end of year 9999)`,
      );
    },
    setTimer: (ms, fn) => clock.setTimer(ms, fn),
  };
}

/** A ManualClock's date: a number or a Date (not the ISO strings toEpochMs also reads). */
function manualDate(field: string, value: unknown): number {
  if (typeof value !== "number" && !(value instanceof Date)) {
    throw new ErrandError(
      "INVALID_DATE",
      `${field} must be epoch milliseconds or a Date, got ${describe(value)}`,
    );
  }
  return toEpochMs(field, value);
}

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told. Timers fire, in order, as {@link ManualClock.advance} passes
 * their due time.
 * @example
 * ```ts
 * const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
 * const queue = await openQueue({ store, clock });
 * await queue.enqueue(report, {}, { delayMs: 3_600_000 });
 * await clock.advance(3_600_000); // the job is due now
 * ```
 * @since 0.1.0
 */
export class ManualClock implements Clock {
  #now: number;
  #timers: PendingTimer[] = [];
  #seq = 0;

  /** @throws ErrandError `INVALID_DATE` for a start that is no date every store keeps. */
  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.#now = manualDate("ManualClock: start", start);
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: PendingTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      const i = this.#timers.indexOf(timer);
      if (i >= 0) this.#timers.splice(i, 1);
    };
  }

  /** Number of timers waiting to fire; handy to assert that a component cleaned up. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers in time order. Between timers it yields to the
   * event loop so that the work a timer starts (a claim, a heartbeat) can run before the next one.
   */
  async advance(ms: number): Promise<void> {
    if (typeof ms !== "number" || !(ms >= 0)) {
      throw new ErrandError(
        "INVALID_DURATION",
        `ManualClock.advance: ms must be a number of milliseconds ≥ 0, got ${describe(ms)}`,
      );
    }
    // Whole milliseconds, as every date a store keeps (a Queue refuses a fractional now()).
    const target = addToDate("ManualClock.advance", this.#now, Math.trunc(ms));
    for (;;) {
      const next = this.#earliestDue(target);
      if (!next) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.#now = target;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Sets the time to `at` (never backwards), firing timers on the way. */
  async set(at: number | Date): Promise<void> {
    const t = manualDate("ManualClock.set", at);
    if (t > this.#now) await this.advance(t - this.#now);
  }

  #earliestDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.#timers) {
      if (t.at > limit) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/**
 * A `clock` option: undefined, or an object with `now()` and `setTimer()`.
 * @throws ErrandError `INVALID_OPTION`
 */
export function checkClock(value: unknown): Clock | undefined {
  if (value === undefined) return undefined;
  const c = value as Partial<Clock> | null;
  if (
    typeof c !== "object" ||
    c === null ||
    typeof c.now !== "function" ||
    typeof c.setTimer !== "function"
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `clock must have now() and setTimer() (a Clock such as ManualClock), got ${describe(value)}`,
    );
  }
  return value as Clock;
}
