import { ErrandError } from "./errors.js";
import { describe, MAX_DATE_MS } from "./validation.js";

/**
 * A span of time: milliseconds, or a readable string such as `"250ms"`, `"30s"`, `"5m"`, `"2h"`,
 * `"7d"`, or a sum of them (`"1h30m"`).
 * @since 0.1.0
 */
export type Duration = number | `${number}${DurationUnit}` | (string & {});
/** Units a {@link Duration} string may use. */
export type DurationUnit = "ms" | "s" | "m" | "h" | "d" | "w";

const UNIT_MS: Record<DurationUnit, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;

/**
 * The longest duration that reaches a timer (`setTimeout`): 2^31 − 1 ms, about 24.8 days. Node
 * (like browsers) keeps a timer's delay in a signed 32-bit integer and fires a longer one after
 * 1 ms instead, with a `TimeoutOverflowWarning`: a 25-day `timeoutMs` would abort its job at once.
 * Every duration errand turns into a timer is refused past it: a job's `timeoutMs`, and a worker's
 * or server's `leaseMs`, `heartbeatMs`, `pollIntervalMs`, `sweepIntervalMs`, `pruneIntervalMs`,
 * `leasePollMs`, `typesRefreshMs` and `graceMs`.
 * @since 0.1.0
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The longest duration errand accepts anywhere: {@link MAX_DATE_MS} ms, the span from the Unix
 * epoch to the end of year 9999. A longer `delayMs`, `expiresInMs`, retention or backoff delay could
 * only overflow a date; `now + delayMs` (and `now + expiresInMs`) is held to {@link MAX_DATE_MS}
 * as well.
 * @since 0.1.0
 */
export const MAX_DURATION_MS = MAX_DATE_MS;

/**
 * Converts a {@link Duration} to whole milliseconds, at most `max`.
 * @param max - the bound, named in the error: {@link MAX_DURATION_MS} unless the duration reaches
 *   a timer ({@link toTimerMs}) or has a tighter bound of its own.
 * @throws ErrandError `INVALID_DURATION` when negative, not finite, unreadable, or over `max`.
 */
export function toMs(field: string, value: Duration, max: number = MAX_DURATION_MS): number {
  const ms = parseMs(field, value);
  if (ms > max) {
    throw new ErrandError(
      "INVALID_DURATION",
      `${field} must be at most ${max} ms (${describeMax(max)}), got ${describe(value)}`,
      { details: { field, max } },
    );
  }
  return ms;
}

/**
 * {@link toMs} for a duration that becomes a timer: at most {@link MAX_TIMER_MS}.
 * @throws ErrandError `INVALID_DURATION`
 */
export function toTimerMs(field: string, value: Duration): number {
  return toMs(field, value, MAX_TIMER_MS);
}

function describeMax(max: number): string {
  if (max === MAX_TIMER_MS) return "2^31 − 1, the longest timer Node can set";
  if (max === MAX_DURATION_MS) return "the span from 1970 to the end of year 9999";
  return "its bound";
}

function parseMs(field: string, value: Duration): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      throw new ErrandError(
        "INVALID_DURATION",
        `${field} must be a finite number of milliseconds ≥ 0, got ${value}`,
      );
    }
    // `|| 0`: -0 (and what rounds to it) is 0, as every store gives it back.
    return Math.round(value) || 0;
  }
  if (typeof value === "string") {
    const text = value.replace(/\s+/g, "");
    let total = 0;
    let pos = 0;
    PART.lastIndex = 0;
    while (pos < text.length) {
      PART.lastIndex = pos;
      const m = PART.exec(text);
      if (!m) break;
      total += Number(m[1]) * UNIT_MS[m[2] as DurationUnit];
      pos = PART.lastIndex;
    }
    if (text.length > 0 && pos === text.length && Number.isFinite(total)) return Math.round(total);
  }
  throw new ErrandError(
    "INVALID_DURATION",
    `${field} must be milliseconds or a duration like "30s", "5m", "2h", "1h30m"; got ${describe(value)}`,
  );
}
