import { describe, expect, it } from "vitest";
import { checkTimezone, nextCronTick } from "../../src/cron.js";
import { MAX_CRON_LENGTH, MAX_TIMEZONE_LENGTH } from "../../src/validation.js";

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

/** The first `n` ticks strictly after `from`. */
function ticks(cron: string, timezone: string, from: number, n: number): string[] {
  const out: string[] = [];
  let t = from;
  for (let i = 0; i < n; i++) {
    t = nextCronTick(cron, timezone, t);
    out.push(iso(t));
  }
  return out;
}

describe("nextCronTick", () => {
  it("returns the first tick strictly after the given time", () => {
    expect(iso(nextCronTick("*/15 * * * *", "UTC", utc("2026-01-01T10:07:00Z")))).toBe(
      "2026-01-01T10:15:00.000Z",
    );
    // Exactly on a tick: the next one, never the same.
    expect(iso(nextCronTick("*/15 * * * *", "UTC", utc("2026-01-01T10:15:00Z")))).toBe(
      "2026-01-01T10:30:00.000Z",
    );
    expect(iso(nextCronTick("*/15 * * * *", "UTC", utc("2026-01-01T10:14:59.999Z")))).toBe(
      "2026-01-01T10:15:00.000Z",
    );
  });

  it("reads six fields as seconds precision", () => {
    expect(ticks("*/20 * * * * *", "UTC", utc("2026-01-01T00:00:00Z"), 3)).toEqual([
      "2026-01-01T00:00:20.000Z",
      "2026-01-01T00:00:40.000Z",
      "2026-01-01T00:01:00.000Z",
    ]);
  });

  it("reads the cron in the given timezone", () => {
    // 09:00 in Berlin in winter is 08:00 UTC; in New York it is 14:00 UTC.
    const from = utc("2026-01-10T00:00:00Z");
    expect(iso(nextCronTick("0 9 * * *", "Europe/Berlin", from))).toBe("2026-01-10T08:00:00.000Z");
    expect(iso(nextCronTick("0 9 * * *", "America/New_York", from))).toBe("2026-01-10T14:00:00.000Z");
  });

  it("keeps a daily job at 09:00 local time across the spring DST change in Europe/Berlin", () => {
    // Clocks go forward on 2026-03-29 at 02:00 CET → 03:00 CEST: 09:00 moves from 08:00Z to 07:00Z.
    expect(ticks("0 9 * * *", "Europe/Berlin", utc("2026-03-27T12:00:00Z"), 3)).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
  });

  it("keeps a daily job at 09:00 local time across the autumn DST change in Europe/Berlin", () => {
    // Clocks go back on 2026-10-25 at 03:00 CEST → 02:00 CET: 09:00 moves from 07:00Z to 08:00Z.
    expect(ticks("0 9 * * *", "Europe/Berlin", utc("2026-10-23T12:00:00Z"), 3)).toEqual([
      "2026-10-24T07:00:00.000Z",
      "2026-10-25T08:00:00.000Z",
      "2026-10-26T08:00:00.000Z",
    ]);
  });

  it("still fires once on the spring-forward day for a time that does not exist (02:30 Berlin)", () => {
    const fired = ticks("30 2 * * *", "Europe/Berlin", utc("2026-03-27T12:00:00Z"), 3);
    expect(fired[0]).toBe("2026-03-28T01:30:00.000Z"); // 02:30 CET
    expect(fired[2]).toBe("2026-03-30T00:30:00.000Z"); // 02:30 CEST
    // On 2026-03-29 local 02:30 is skipped by the clocks; the job runs that day all the same, once.
    const onTheDay = fired.filter((t) => t >= "2026-03-28T23:00:00.000Z" && t < "2026-03-29T22:00:00.000Z");
    expect(onTheDay).toHaveLength(1);
  });

  it("fires once, not twice, on the fall-back day for a time that happens twice (02:30 Berlin)", () => {
    const fired = ticks("30 2 * * *", "Europe/Berlin", utc("2026-10-23T12:00:00Z"), 3);
    const onTheDay = fired.filter((t) => t >= "2026-10-24T22:00:00.000Z" && t < "2026-10-25T23:00:00.000Z");
    expect(onTheDay).toHaveLength(1);
    expect(fired[0]).toBe("2026-10-24T00:30:00.000Z"); // 02:30 CEST
    expect(fired[2]).toBe("2026-10-26T01:30:00.000Z"); // 02:30 CET
  });

  it("runs an hourly job every real hour through the spring gap, never twice at one instant", () => {
    const fired = ticks("0 * * * *", "Europe/Berlin", utc("2026-03-28T22:30:00Z"), 6);
    expect(fired).toEqual([
      "2026-03-28T23:00:00.000Z", // 00:00 CET
      "2026-03-29T00:00:00.000Z", // 01:00 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST (02:00 does not exist)
      "2026-03-29T02:00:00.000Z",
      "2026-03-29T03:00:00.000Z",
      "2026-03-29T04:00:00.000Z",
    ]);
  });

  it("runs a fixed time in the repeated hour once, at its first pass, east and west of UTC", () => {
    // Berlin, 25 October 2026: 02:30 CEST is 00:30 UTC, 02:30 CET 01:30 UTC (croner 9 took the second).
    expect(ticks("30 2 * * *", "Europe/Berlin", utc("2026-10-24T12:00:00Z"), 1)).toEqual([
      "2026-10-25T00:30:00.000Z",
    ]);
    // London, 01:30 BST (00:30 UTC); New York, 1 November, 01:30 EDT (05:30 UTC).
    expect(ticks("30 1 * * *", "Europe/London", utc("2026-10-24T12:00:00Z"), 2)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    expect(ticks("30 1 * * *", "America/New_York", utc("2026-10-31T12:00:00Z"), 1)).toEqual([
      "2026-11-01T05:30:00.000Z",
    ]);
    // A list of fixed hours is fixed-time too (Vixie cron): once each, not twice at 01:30.
    expect(ticks("30 1,13 * * *", "Europe/London", utc("2026-10-24T13:00:00Z"), 3)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T13:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    // Lord Howe goes back half an hour: 01:45 happens twice; once, at +11.
    expect(ticks("45 1 * * *", "Australia/Lord_Howe", utc("2026-04-04T00:00:00Z"), 1)).toEqual([
      "2026-04-04T14:45:00.000Z",
    ]);
  });

  it("runs interval schedules through both passes of the repeated hour", () => {
    // London, 25 October 2026: 01:00 BST (00:00 UTC), then 01:00 GMT (01:00 UTC). croner 9 skipped the second.
    expect(ticks("0 * * * *", "Europe/London", utc("2026-10-24T22:30:00Z"), 4)).toEqual([
      "2026-10-24T23:00:00.000Z",
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
    ]);
    expect(ticks("*/15 * * * *", "America/New_York", utc("2026-11-01T04:50:00Z"), 9)).toEqual(
      Array.from({ length: 9 }, (_, i) => iso(utc("2026-11-01T05:00:00Z") + i * 15 * 60_000)),
    );
  });

  it("runs a fixed time that the clocks skip once, at the end of the gap", () => {
    // New York, 8 March 2026: 02:00 EST becomes 03:00 EDT (07:00 UTC).
    expect(ticks("30 2 * * *", "America/New_York", utc("2026-03-07T12:00:00Z"), 2)).toEqual([
      "2026-03-08T07:00:00.000Z",
      "2026-03-09T06:30:00.000Z",
    ]);
  });

  it("reads a step from a start (5/15) as croner 9 did, and 5L as the last Friday of the month", () => {
    expect(ticks("5/15 * * * *", "UTC", utc("2026-01-01T00:00:00Z"), 4)).toEqual([
      "2026-01-01T00:05:00.000Z",
      "2026-01-01T00:20:00.000Z",
      "2026-01-01T00:35:00.000Z",
      "2026-01-01T00:50:00.000Z",
    ]);
    // croner 9 dropped the L: every Friday.
    expect(ticks("0 0 * * 5L", "UTC", utc("2026-11-01T00:00:00Z"), 2)).toEqual([
      "2026-11-27T00:00:00.000Z",
      "2026-12-25T00:00:00.000Z",
    ]);
  });

  it("refuses a cron longer than MAX_CRON_LENGTH and a zone longer than MAX_TIMEZONE_LENGTH", () => {
    const long = `${"0,".repeat(100)}0 * * * *`;
    expect(long.length).toBeGreaterThan(MAX_CRON_LENGTH);
    expect(() => nextCronTick(long, "UTC", 0)).toThrow(expect.objectContaining({ code: "INVALID_CRON" }));
    expect(() => nextCronTick(`${"0,".repeat(59)}0 * * * *`, "UTC", 0)).not.toThrow();
    expect(() => checkTimezone(`Europe/${"x".repeat(MAX_TIMEZONE_LENGTH)}`)).toThrow(
      expect.objectContaining({ code: "INVALID_TIMEZONE" }),
    );
  });

  it("only ever moves forward through a DST change", () => {
    for (const [cron, from] of [
      ["*/10 * * * *", "2026-10-24T22:00:00Z"],
      ["0 * * * *", "2026-10-24T20:00:00Z"],
      ["*/10 * * * *", "2026-03-28T23:00:00Z"],
    ] as const) {
      let t = utc(from);
      for (let i = 0; i < 40; i++) {
        const next = nextCronTick(cron, "Europe/Berlin", t);
        expect(next).toBeGreaterThan(t);
        t = next;
      }
    }
  });

  it.each(["", "   ", "bogus", "61 * * * *", "* * * *", "* * * * * * * *", "0 25 * * *"])(
    "refuses the cron %j with INVALID_CRON",
    (cron) => {
      expect(() => nextCronTick(cron, "UTC", 0)).toThrow(
        expect.objectContaining({ name: "ErrandError", code: "INVALID_CRON" }),
      );
    },
  );

  // croner also takes an ISO 8601 date-time as a one-off pattern; a schedule is a cron of five or
  // six fields, and a one-off in year 0 gave croner's Invalid Date, which reached the stores as NaN.
  it.each(["0000-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "2030-01-01T00:00:00+14:00"])(
    "refuses the date-time %j, which is no cron of five or six fields, with INVALID_CRON",
    (cron) => {
      for (const tz of ["UTC", "Pacific/Kiritimati"]) {
        expect(() => nextCronTick(cron, tz, utc("2026-01-01T00:00:00Z"))).toThrow(
          expect.objectContaining({ name: "ErrandError", code: "INVALID_CRON" }),
        );
      }
    },
  );

  // Day 31 of months that have 30 days: croner's search for it overflowed the stack (a RangeError).
  it.each(["0 0 30 2 *", "0 0 31 4 *", "0 0 31 4,6,9,11 *", "0 0 30,31 2 *"])(
    "refuses %j, which never fires, with INVALID_CRON",
    (cron) => {
      expect(() => nextCronTick(cron, "UTC", utc("2026-01-01T00:00:00Z"))).toThrow(
        expect.objectContaining({ code: "INVALID_CRON", message: expect.stringMatching(/never fires/) }),
      );
    },
  );

  it.each(["Mars/Olympus_Mons", "Europe/Berln", "", "+25:00"])(
    "refuses the timezone %j with INVALID_TIMEZONE",
    (tz) => {
      expect(() => nextCronTick("* * * * *", tz, 0)).toThrow(
        expect.objectContaining({ name: "ErrandError", code: "INVALID_TIMEZONE" }),
      );
      expect(() => checkTimezone(tz)).toThrow(expect.objectContaining({ code: "INVALID_TIMEZONE" }));
    },
  );

  it("refuses a non-string timezone with INVALID_TIMEZONE", () => {
    expect(() => checkTimezone(undefined)).toThrow(expect.objectContaining({ code: "INVALID_TIMEZONE" }));
    expect(() => checkTimezone(3)).toThrow(expect.objectContaining({ code: "INVALID_TIMEZONE" }));
  });

  it("checks the timezone before the cron", () => {
    expect(() => nextCronTick("bogus", "Nowhere/Land", 0)).toThrow(
      expect.objectContaining({ code: "INVALID_TIMEZONE" }),
    );
  });

  it("accepts valid timezones and returns them", () => {
    expect(checkTimezone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(checkTimezone("UTC")).toBe("UTC");
  });
});
