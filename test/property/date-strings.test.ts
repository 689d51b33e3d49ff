/**
 * Date-time strings, as every caller that takes one reads them (`toEpochMs`: the library's
 * `runAt` / `expiresAt`, the server's bodies, the client and the CLI through them). fast-check
 * writes calendar strings from components on both sides of every range (month 0 to 13, day 0 to
 * 32, hour 0 to 24, minute 0 to 60, second 0 to 61, offsets up to ±24:60 or none), and the
 * property holds each one to a model built on `Date`'s own calendar: a string with an offset and a
 * real date and time is read as exactly that instant (or refused for the date bounds), and any
 * other is refused with `INVALID_DATE`, never rolled over into another day or read in the
 * process's own time zone.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrandError } from "../../src/errors.js";
import { MAX_DATE_MS, MIN_DATE_MS, toEpochMs } from "../../src/validation.js";
import { fcParams } from "../helpers/property.js";

const RUNS = 2000;

interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  fraction: string;
  t: "T" | "t";
  offset: { sign: "+" | "-"; hours: number; minutes: number } | "Z" | "z" | "";
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

const parts: fc.Arbitrary<Parts> = fc.record({
  year: fc.oneof(fc.integer({ min: 1969, max: 2101 }), fc.integer({ min: 0, max: 9999 })),
  month: fc.integer({ min: 0, max: 13 }),
  day: fc.oneof(fc.integer({ min: 0, max: 32 }), fc.integer({ min: 27, max: 31 })),
  hour: fc.integer({ min: 0, max: 24 }),
  minute: fc.integer({ min: 0, max: 60 }),
  second: fc.integer({ min: 0, max: 61 }),
  fraction: fc.oneof(fc.constant(""), fc.stringMatching(/^\.\d{1,12}$/)),
  t: fc.constantFrom("T" as const, "t" as const),
  offset: fc.oneof(
    fc.constantFrom("Z" as const, "z" as const, "" as const),
    fc.record({
      sign: fc.constantFrom("+" as const, "-" as const),
      hours: fc.integer({ min: 0, max: 24 }),
      minutes: fc.integer({ min: 0, max: 60 }),
    }),
  ),
});

function format(p: Parts): string {
  const offset =
    typeof p.offset === "string"
      ? p.offset
      : `${p.offset.sign}${pad(p.offset.hours)}:${pad(p.offset.minutes)}`;
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}${p.t}${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${p.fraction}${offset}`;
}

/** Days in a month by `Date`'s own calendar (setUTCFullYear, which reads years 0 to 99 as given). */
function daysIn(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

/** The instant `p` names, or null when it names none (no offset, or a component out of range). */
function model(p: Parts): number | null {
  if (p.offset === "") return null;
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > daysIn(p.year, p.month)) return null;
  if (p.hour > 23 || p.minute > 59 || p.second > 59) return null;
  let offsetMs = 0;
  if (typeof p.offset === "object") {
    if (p.offset.hours > 23 || p.offset.minutes > 59) return null;
    offsetMs = (p.offset.sign === "+" ? 1 : -1) * (p.offset.hours * 60 + p.offset.minutes) * 60_000;
  }
  const d = new Date(0);
  d.setUTCFullYear(p.year, p.month - 1, p.day);
  d.setUTCHours(p.hour, p.minute, p.second, Number(p.fraction.slice(1, 4).padEnd(3, "0")));
  return d.getTime() - offsetMs;
}

function refusal(text: string): ErrandError | null {
  try {
    toEpochMs("runAt", text);
    return null;
  } catch (error) {
    return error as ErrandError;
  }
}

describe("date-time strings", () => {
  it("are read as the instant their calendar date, time and offset name, or refused with INVALID_DATE", () => {
    fc.assert(
      fc.property(parts, (p) => {
        const text = format(p);
        const expected = model(p);
        if (expected === null || expected < MIN_DATE_MS || expected > MAX_DATE_MS) {
          const error = refusal(text);
          expect(error, `${text} was accepted`).toBeInstanceOf(ErrandError);
          expect(error?.code, text).toBe("INVALID_DATE");
          expect(error?.message, text).toMatch(/^runAt must be/);
        } else {
          expect(toEpochMs("runAt", text), text).toBe(expected);
          // The server's own form of that instant reads back as it.
          expect(toEpochMs("runAt", new Date(expected).toISOString()), text).toBe(expected);
        }
      }),
      fcParams(RUNS),
    );
  });
});
