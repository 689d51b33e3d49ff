import { Cron } from "croner";
import { ErrandError } from "./errors.js";
import { describe, MAX_CRON_LENGTH, MAX_TIMEZONE_LENGTH } from "./validation.js";

/**
 * Checks an IANA timezone name.
 * @throws ErrandError `INVALID_TIMEZONE`
 */
export function checkTimezone(timezone: unknown): string {
  if (typeof timezone !== "string" || timezone.length === 0 || timezone.length > MAX_TIMEZONE_LENGTH) {
    throw new ErrandError(
      "INVALID_TIMEZONE",
      `timezone must be an IANA zone name such as "Europe/Berlin" (at most ${MAX_TIMEZONE_LENGTH} characters)`,
    );
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch (cause) {
    throw new ErrandError("INVALID_TIMEZONE", `unknown timezone ${describe(timezone)}`, { cause });
  }
  return timezone;
}

/**
 * The same zone whatever its spelling ("europe/london", a link such as "GB"), as ICU names it.
 * `timezone` must have passed {@link checkTimezone}.
 */
export function canonicalTimezone(timezone: string): string {
  return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
}

/**
 * The first tick of `cron` (5 fields, or 6 with seconds) in `timezone` strictly after `after`.
 * Parsing is croner's; croner also takes an ISO 8601 date-time as a one-off, which is no schedule
 * (it never fires again after its tick) and is refused here, as anything else not of 5 or 6 fields.
 *
 * Daylight saving, as Vixie cron does it (croner's `fixedTimeRule: "no-wildcard"`): a schedule
 * with a wildcard or step in its seconds, minutes or hours runs through both passes of a repeated
 * hour and on the new clock through a skipped one; a fixed-time one (no wildcard or step there, as
 * `30 1 * * *` or `30 1,13 * * *`) runs once in a repeated hour, the first time, and a time in a
 * skipped hour runs once, at the gap's end.
 * @throws ErrandError `INVALID_CRON` / `INVALID_TIMEZONE`
 */
export function nextCronTick(cron: string, timezone: string, after: number): number {
  checkTimezone(timezone);
  let pattern: Cron;
  try {
    if (typeof cron !== "string" || cron.trim().length === 0) throw new Error("empty expression");
    if (cron.length > MAX_CRON_LENGTH) throw new Error(`longer than ${MAX_CRON_LENGTH} characters`);
    const fields = cron.trim().split(/\s+/).length;
    if (fields !== 5 && fields !== 6) throw new Error("five fields, or six with seconds, are required");
    // croner reads "?" as the value of the current time, from the wall clock at each parse: a
    // schedule's ticks would move with the moment it was read, on the clock of no queue.
    if (cron.includes("?"))
      throw new Error('"?" is not taken (croner reads it as the current time): give * or a value');
    // domAndDow false: a day of the month OR a day of the week, as Vixie cron and croner 9 read
    // them. sloppyRanges: croner 11 refuses "5/15" and "0/30", which croner 9 took and stores hold.
    pattern = new Cron(cron, {
      timezone,
      paused: true,
      domAndDow: false,
      sloppyRanges: true,
      fixedTimeRule: "no-wildcard",
    });
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ErrandError("INVALID_CRON", `invalid cron expression ${describe(cron)}: ${why}`, {
      cause,
    });
  }
  let next: number | undefined;
  let cause: unknown;
  try {
    next = pattern.nextRun(new Date(after))?.getTime();
  } catch (error) {
    // croner's search recurses per candidate: for some days no listed month has ("0 0 31 4,6 *")
    // it runs out of stack instead of answering null.
    cause = error;
  }
  // croner answers an Invalid Date rather than null for some ticks past its range: neither fires.
  if (next === undefined || !Number.isFinite(next)) {
    throw new ErrandError("INVALID_CRON", `cron expression ${describe(cron)} never fires`, { cause });
  }
  return next;
}
