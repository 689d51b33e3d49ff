import { describe, expect, it } from "vitest";
import {
  addToDate,
  checkAttempt,
  checkListCursor,
  checkText,
  JOB_ID_PATTERN,
  MAX_ATTEMPT,
  MAX_DATE_MS,
  MAX_LIST_CURSOR_LENGTH,
  sanitizeText,
  TEXT_PATTERN,
  toEpochMs,
  toJsonText,
} from "../../src/validation.js";

const code = (c: string) => expect.objectContaining({ name: "ErrandError", code: c });

describe("checkText", () => {
  it("takes text of 1 to maxLength characters, astral characters (surrogate pairs) included", () => {
    expect(checkText("uniqueKey", "order-42", 255)).toBe("order-42");
    expect(checkText("uniqueKey", "😀 é 中", 255)).toBe("😀 é 中");
    expect(checkText("uniqueKey", "x".repeat(255), 255)).toHaveLength(255);
  });

  it.each([
    ["U+0000", "a\u0000b"],
    ["a lone high surrogate", "a\ud800b"],
    ["a lone low surrogate", "\udc00"],
    ["a reversed pair", "\ude00\ud83d"],
    ["a high surrogate at the end", "key\ud83d"],
  ])("refuses %s with INVALID_OPTION naming the field", (_what, value) => {
    expect(() => checkText("workerId", value, 255)).toThrow(code("INVALID_OPTION"));
    expect(() => checkText("workerId", value, 255)).toThrow(/workerId/);
  });

  it("refuses empty, overlong and non-string values, with the code asked for", () => {
    for (const value of ["", "x".repeat(256), 42, null, undefined, {}]) {
      expect(() => checkText("uniqueKey", value, 255)).toThrow(code("INVALID_OPTION"));
    }
    expect(() => checkText("f", "\u0000", 9, "INVALID_REQUEST")).toThrow(code("INVALID_REQUEST"));
  });

  it("has a JSON-schema pattern that agrees with it under the u flag (as ajv compiles it)", () => {
    const pattern = new RegExp(TEXT_PATTERN, "u");
    for (const ok of ["", "plain", "😀", "é\t\n"]) expect(pattern.test(ok)).toBe(true);
    for (const bad of ["a\u0000", "\ud800", "x\udfff", "\ude00\ud83d"]) expect(pattern.test(bad)).toBe(false);
  });
});

describe("sanitizeText", () => {
  it("replaces U+0000 and lone surrogates with U+FFFD and keeps everything else", () => {
    expect(sanitizeText("a\u0000b\ud800c😀", 100)).toBe("a\uFFFDb\uFFFDc😀");
    expect(sanitizeText("clean", 100)).toBe("clean");
  });

  it("cuts to maxLength without leaving half a surrogate pair", () => {
    const cut = sanitizeText("ab😀", 3);
    expect(cut).toBe("ab\uFFFD");
    expect(checkText("t", cut, 3)).toBe(cut);
  });
});

describe("date bounds", () => {
  it("takes dates from the epoch to the end of year 9999", () => {
    expect(MAX_DATE_MS).toBe(Date.parse("9999-12-31T23:59:59.999Z"));
    expect(toEpochMs("runAt", 0)).toBe(0);
    expect(toEpochMs("runAt", MAX_DATE_MS)).toBe(MAX_DATE_MS);
    expect(toEpochMs("runAt", "9999-12-31T23:59:59.999Z")).toBe(MAX_DATE_MS);
    expect(toEpochMs("runAt", new Date(MAX_DATE_MS))).toBe(MAX_DATE_MS);
  });

  it.each([
    8.64e15 + 1,
    8.64e15,
    MAX_DATE_MS + 1,
    -1,
    1e308,
    new Date(MAX_DATE_MS + 1),
    new Date(-1),
    "1969-12-31T23:59:59.999Z",
  ])("refuses %j with INVALID_DATE naming the bounds", (value) => {
    expect(() => toEpochMs("expiresAt", value)).toThrow(code("INVALID_DATE"));
    expect(() => toEpochMs("expiresAt", value)).toThrow(/expiresAt must be from 1970-01-01.*9999-12-31/);
  });

  it("reads a date-time string with an offset (Z or ±hh:mm, either case) as that instant", () => {
    const at = Date.UTC(2030, 0, 1);
    expect(toEpochMs("runAt", "2030-01-01T00:00:00Z")).toBe(at);
    expect(toEpochMs("runAt", "2030-01-01t00:00:00z")).toBe(at);
    expect(toEpochMs("runAt", "2030-01-01T05:30:00+05:30")).toBe(at);
    expect(toEpochMs("runAt", "2029-12-31T19:00:00-05:00")).toBe(at);
    expect(toEpochMs("runAt", "2030-01-01T00:00:00-00:00")).toBe(at);
    // A fraction of any length, cut (not rounded) to whole milliseconds, as numbers are.
    expect(toEpochMs("runAt", "2030-01-01T00:00:00.5Z")).toBe(at + 500);
    expect(toEpochMs("runAt", "2030-01-01T00:00:00.123999Z")).toBe(at + 123);
    // Leap days.
    expect(toEpochMs("runAt", "2028-02-29T00:00:00Z")).toBe(Date.UTC(2028, 1, 29));
    expect(toEpochMs("runAt", "2000-02-29T23:59:59Z")).toBe(Date.UTC(2000, 1, 29, 23, 59, 59));
  });

  it.each([
    ["no offset (read in the process's own time zone)", "2030-01-01T00:00:00"],
    ["no offset, with a fraction", "2030-01-01T00:00:00.000"],
    ["a date alone (no time, no offset)", "2030-01-01"],
    ["February 30", "2026-02-30T00:00:00Z"],
    ["February 29 of a common year", "2026-02-29T00:00:00Z"],
    ["February 29 of 2100 (not a leap year)", "2100-02-29T00:00:00Z"],
    ["April 31", "2030-04-31T00:00:00Z"],
    ["day 0", "2030-01-00T00:00:00Z"],
    ["month 13", "2030-13-01T00:00:00Z"],
    ["month 0", "2030-00-01T00:00:00Z"],
    ["hour 24", "2030-01-01T24:00:00Z"],
    ["minute 60", "2030-01-01T00:60:00Z"],
    ["second 60 (a leap second)", "2030-06-30T23:59:60Z"],
    ["an offset hour of 24", "2030-01-01T00:00:00+24:00"],
    ["an offset minute of 60", "2030-01-01T00:00:00+01:60"],
    ["an offset without a colon", "2030-01-01T00:00:00+0100"],
    ["an offset of hours only", "2030-01-01T00:00:00+01"],
    ["no seconds", "2030-01-01T00:00Z"],
    ["a space for T", "2030-01-01 00:00:00Z"],
    ["an empty fraction", "2030-01-01T00:00:00.Z"],
    ["trailing text", "2030-01-01T00:00:00Z junk"],
    ["leading space", " 2030-01-01T00:00:00Z"],
    ["a week date", "2030-W01-1T00:00:00Z"],
    ["an expanded year", "+002030-01-01T00:00:00Z"],
    ["digits from another script", "２０３０-01-01T00:00:00Z"],
    ["a date Date.parse reads", "Tue, 01 Jan 2030 00:00:00 GMT"],
  ])("refuses %s with INVALID_DATE naming the field", (_what, value) => {
    expect(() => toEpochMs("runAt", value)).toThrow(code("INVALID_DATE"));
    expect(() => toEpochMs("runAt", value)).toThrow(/^runAt must be .*RFC 3339/);
  });

  it("refuses now + a duration past the end of year 9999 with INVALID_DURATION", () => {
    const now = Date.UTC(2026, 0, 1);
    expect(addToDate("delayMs", now, MAX_DATE_MS - now)).toBe(MAX_DATE_MS);
    expect(() => addToDate("delayMs", now, MAX_DATE_MS - now + 1)).toThrow(code("INVALID_DURATION"));
    expect(() => addToDate("expiresInMs", now, MAX_DATE_MS)).toThrow(/expiresInMs/);
  });
});

describe("checkListCursor", () => {
  it("takes a longest id, and `<time>:<id>` of a longest id at the latest time", () => {
    const id = "x".repeat(255);
    expect(JOB_ID_PATTERN.test(id)).toBe(true);
    expect(checkListCursor(id)).toBe(id);
    expect(checkListCursor(`${MAX_DATE_MS}:${id}`)).toHaveLength(MAX_LIST_CURSOR_LENGTH);
  });

  it("refuses empty, longer, other characters and non-strings with INVALID_OPTION naming its bound", () => {
    for (const value of ["", "x".repeat(MAX_LIST_CURSOR_LENGTH + 1), "a b", "a\n", "é", 42, null]) {
      expect(() => checkListCursor(value)).toThrow(code("INVALID_OPTION"));
      expect(() => checkListCursor(value)).toThrow(new RegExp(`cursor .* ${MAX_LIST_CURSOR_LENGTH}`));
    }
  });
});

describe("checkAttempt", () => {
  it("takes 1 to 2^31 − 1 (PostgreSQL's integer) and refuses the rest with INVALID_ATTEMPT", () => {
    expect(checkAttempt(1)).toBe(1);
    expect(checkAttempt(MAX_ATTEMPT)).toBe(2 ** 31 - 1);
    for (const value of [0, MAX_ATTEMPT + 1, 2 ** 40, 1.5, Number.NaN, "1"]) {
      expect(() => checkAttempt(value)).toThrow(code("INVALID_ATTEMPT"));
    }
  });
});

describe("toJsonText", () => {
  it("writes plain data as JSON.stringify does, nested, unicode and null-prototype objects included", () => {
    const plain = [
      { i: 1 },
      "text",
      0,
      -1.5,
      true,
      null,
      [1, "a", null, [{ b: [false] }]],
      { nested: { deep: { list: [1, 2, { x: "😀 é" }] } }, empty: {}, none: [] },
      Object.assign(Object.create(null), { a: 1 }),
    ];
    for (const value of plain) expect(toJsonText("payload", value)).toBe(JSON.stringify(value));
  });

  it("converts what JSON converts (toJSON, Dates, undefined and functions inside) as before", () => {
    const at = new Date(0);
    expect(toJsonText("payload", { at })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
    expect(toJsonText("payload", { a: undefined, b: 1 })).toBe('{"b":1}');
    expect(toJsonText("payload", [undefined])).toBe("[null]");
    expect(toJsonText("payload", { toJSON: () => ({ x: 1 }) })).toBe('{"x":1}');
    class Point {
      constructor(readonly x: number) {}
    }
    expect(toJsonText("payload", new Point(2))).toBe('{"x":2}');
    const deep: Record<string, unknown> = {};
    let at2 = deep;
    for (let d = 0; d < 40; d++) at2 = at2.next = {};
    expect(toJsonText("payload", deep)).toBe(JSON.stringify(deep));
  });

  it("refuses what JSON would mangle, however deep (INVALID_PAYLOAD)", () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const bad = [
      undefined,
      () => 1,
      Symbol("s"),
      1n,
      Number.NaN,
      { n: Number.POSITIVE_INFINITY },
      [1, [2, [Number.NEGATIVE_INFINITY]]],
      { f: () => 1 },
      { s: Symbol("s") },
      { b: 1n },
      cycle,
    ];
    for (const value of bad) expect(() => toJsonText("payload", value)).toThrow(code("INVALID_PAYLOAD"));
  });

  it("refuses the built-in objects JSON writes as {}, naming the field and the kind", () => {
    const emptied: Array<[unknown, string]> = [
      [new Map([["a", 1]]), "Map"],
      [{ tags: new Set(["a"]) }, '"tags" is a Set'],
      [[new WeakMap()], "WeakMap"],
      [{ w: new WeakSet() }, "WeakSet"],
      [{ match: /a+/g }, "RegExp"],
      [{ cause: new TypeError("lost") }, "Error"],
      [{ pending: Promise.resolve(1) }, "Promise"],
      [{ deep: [{ deeper: { m: new Map() } }] }, '"m" is a Map'],
      [{ bytes: new ArrayBuffer(4) }, "an ArrayBuffer"],
      [{ view: new DataView(new ArrayBuffer(4)) }, "DataView"],
      [{ it: new Map([["a", 1]]).values() }, "an iterator"],
      [{ gen: (function* () {})() }, "an iterator"],
      [{ ref: new WeakRef({}) }, "WeakRef"],
      [{ query: new URLSearchParams("a=1") }, "URLSearchParams"],
      [{ headers: new Headers({ a: "1" }) }, "Headers"],
      [{ blob: new Blob(["x"]) }, "Blob"],
    ];
    for (const [value, said] of emptied) {
      expect(() => toJsonText("payload", value)).toThrow(code("INVALID_PAYLOAD"));
      expect(() => toJsonText("payload", value)).toThrow(said);
    }
    // An error class of the handler's own, with fields of its own: its message would still be lost.
    class HttpError extends Error {
      status = 502;
    }
    expect(() => toJsonText("result", { error: new HttpError("bad gateway") })).toThrow(
      code("INVALID_PAYLOAD"),
    );
    // What JSON does keep is not refused: a Map's entries as an array, an error as its fields.
    expect(toJsonText("payload", { m: [...new Map([["a", 1]])] })).toBe('{"m":[["a",1]]}');
    expect(toJsonText("payload", { e: { message: "x" } })).toBe('{"e":{"message":"x"}}');
    expect(() => toJsonText("result", { error: new HttpError("bad gateway") })).toThrow(
      '"error" is an Error',
    );
    // What writes itself by toJSON, or keeps its items, goes as before.
    expect(toJsonText("payload", { u: new URL("https://x.test/a") })).toBe('{"u":"https://x.test/a"}');
    expect(toJsonText("payload", { b: new Uint8Array([1, 2]) })).toBe('{"b":{"0":1,"1":2}}');
  });
});
