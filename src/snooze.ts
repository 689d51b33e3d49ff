/**
 * Snooze: a handler's way to say "not now, and that was not a failure". `return ctx.snooze("30s")`
 * ends the attempt; the job is pending again at now + delay, its error history untouched, and the
 * attempt is not counted toward `maxAttempts` (`job.snoozes` counts them).
 * @module
 */
import { type Duration, toMs } from "./duration.js";

/**
 * What `ctx.snooze(delay)` returns; a handler returns it. A class, so a result that only looks
 * like one (a plain object from JSON) is never taken for a snooze.
 * @since 0.2.0
 */
export class Snooze {
  /** How long from the end of the attempt until the job is due again, in ms. */
  readonly delayMs: number;

  /** @throws ErrandError `INVALID_DURATION` for a delay that is not a duration within bounds. */
  constructor(delay: Duration) {
    this.delayMs = toMs("snooze", delay);
  }
}
