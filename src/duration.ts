import { ErrandError } from "./errors.js";

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
 * Converts a {@link Duration} to whole milliseconds.
 * @throws ErrandError `INVALID_DURATION` when negative, not finite, or unreadable.
 */
export function toMs(field: string, value: Duration): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      throw new ErrandError(
        "INVALID_DURATION",
        `${field} must be a finite number of milliseconds ≥ 0, got ${value}`,
      );
    }
    return Math.round(value);
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
    `${field} must be milliseconds or a duration like "30s", "5m", "2h", "1h30m"; got ${JSON.stringify(value)}`,
  );
}
