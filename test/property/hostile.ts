/**
 * Hostile values for the property tests: the inputs issue 12 found errand mishandling, as
 * fast-check arbitraries. Each family is small and named, so a shrunk counterexample reads as
 * what it is (a prototype key, a NUL, a date in year 10000, 10,000 levels of nesting).
 *
 * Bounds the library promises (and these tests hold it to): a duration that reaches a timer is at
 * most {@link MAX_TIMER_MS}; a date is at most the end of year 9999 ({@link MAX_DATE_MS}).
 */
import fc from "fast-check";
import { ErrandError, type ErrandErrorCode } from "../../src/errors.js";
import { HTTP_STATUS } from "../../src/server/http-errors.js";

/** The largest delay `setTimeout` honours (2^31 − 1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** The last millisecond of year 9999, the latest date every store, `Date` and ISO-8601 can hold. */
export const MAX_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Every code errand answers a caller's mistake with: those the server maps to a 4xx. */
export const CLIENT_CODES: ReadonlySet<ErrandErrorCode> = new Set(
  (Object.entries(HTTP_STATUS) as Array<[ErrandErrorCode, number]>)
    .filter(([, status]) => status < 500)
    .map(([code]) => code),
);

/** Names that must not name anything: refused as names, never used as plain-object keys. */
export const RESERVED_NAMES = ["__proto__", "constructor", "prototype"] as const;

/** Every key `Object.prototype` has, and `prototype`: names that look up something on any `{}`. */
export const PROTOTYPE_KEYS: readonly string[] = [
  ...new Set([...Object.getOwnPropertyNames(Object.prototype), "prototype"]),
];

/** `Object.prototype`'s own keys now, to tell whether a call polluted it. */
export function prototypeKeys(): string[] {
  return Object.getOwnPropertyNames(Object.prototype).sort();
}

/**
 * Gives `value` a short description for fast-check's report, so a counterexample holding 10,000
 * levels of nesting, a cycle or a throwing getter prints as its name instead of overflowing the
 * reporter or throwing in it. The description is a non-enumerable symbol: JSON never sees it.
 */
export function labelled<T extends object>(label: string, value: T): T {
  Object.defineProperty(value, fc.toStringMethod, { value: () => label, enumerable: false });
  return value;
}

/** `{ a: { a: … } }`, `depth` levels, built without recursion. */
export function deepObject(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return labelled(`deepObject(${depth})`, value);
}

/** `[[[…]]]`, `depth` levels, built without recursion. */
export function deepArray(depth: number): unknown[] {
  let value: unknown[] = [];
  for (let i = 0; i < depth; i++) value = [value];
  return labelled(`deepArray(${depth})`, value);
}

/** JSON text of `depth` nested arrays: what a hostile HTTP client sends instead of a body. */
export function deepJsonText(depth: number): string {
  return "[".repeat(depth) + "]".repeat(depth);
}

function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return labelled("cyclic", value);
}

/**
 * What the hostile values' own getters and `toJSON` throw. It is the caller's own exception: a
 * callee may let it through unchanged (or wrap it in a typed error), as any API may.
 */
export class HostileThrow extends Error {
  override name = "HostileThrow";
}

function throwingGetter(): object {
  return labelled(
    "throwingGetter",
    Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        throw new HostileThrow("getter threw");
      },
    }),
  );
}

function throwingToJson(): object {
  return labelled("throwingToJSON", {
    toJSON() {
      throw new HostileThrow("toJSON threw");
    },
  });
}

/** An object with own keys `key` (a prototype key stays an own property, as JSON.parse makes it). */
export function own(entries: Array<[string, unknown]>): Record<string, unknown> {
  return Object.fromEntries(entries);
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

/** Strings with the characters stores cannot hold as text (NUL, lone surrogates) among others. */
export const badCharString: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof(
    fc.constant("\u0000"),
    loneSurrogate,
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
    fc.constantFrom("a", "/", "%", ".", ":", "|", "{", "}", "*", " "),
  ),
  minLength: 1,
  maxLength: 12,
});

/** Text around every length bound errand has (names 128, ids and keys 255), and far past them. */
export const longString: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(100, 101, 127, 128, 129, 254, 255, 256, 1000, 65_537),
    fc.constantFrom("x", "é", "😀", "\u0000"),
  )
  .map(([n, c]) => c.repeat(n));

/** A string over 1 MiB, past every size limit (payloads, request bodies). */
export const hugeString: fc.Arbitrary<string> = fc.constant("z".repeat(1_048_577));

/** Strings chosen to break something: NUL, lone surrogates, path tricks, quoting, odd Unicode. */
export const trickyString: fc.Arbitrary<string> = fc.constantFrom(
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\udc00",
  "\udc00\ud800",
  "..",
  ".",
  "/",
  "a/b",
  "%",
  "%00",
  "%2F",
  "%E0%A4%A",
  "\n",
  "\t",
  "é",
  "名前",
  "\u202e",
  "\ufeff",
  "'; DROP TABLE errand_job; --",
  "{p}",
  "a|b",
  "*",
  "-1",
  "1e308",
  "NaN",
  "null",
);

/** Text no store can hold as it is: NUL and lone surrogates, alone and inside other text. */
export const unstorableString: fc.Arbitrary<string> = fc.constantFrom(
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00",
  "\udc00\ud800",
  "😀\ud83d",
);

/** Any hostile string. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: trickyString, weight: 4 },
  { arbitrary: fc.constantFrom(...PROTOTYPE_KEYS), weight: 4 },
  { arbitrary: unstorableString, weight: 3 },
  { arbitrary: badCharString, weight: 2 },
  { arbitrary: longString, weight: 2 },
  { arbitrary: hugeString, weight: 1 },
);

/** Numbers at and past every bound: sign, 32-bit timers, 53-bit integers, dates, non-finite. */
export const hostileNumber: fc.Arbitrary<number> = fc.constantFrom(
  0,
  -0,
  -1,
  1,
  1.5,
  -1.5,
  99,
  100,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  MAX_DATE_MS,
  MAX_DATE_MS + 1,
  8.64e15,
  8.64e15 + 1,
  1e308,
  -1e308,
  Number.MIN_VALUE,
  Number.EPSILON,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
);

/** Durations: hostile numbers and strings a duration parser must refuse or bound. */
export const hostileDuration: fc.Arbitrary<number | string> = fc.oneof(
  hostileNumber,
  fc.constantFrom(
    "999999999999h",
    "25d",
    "24d",
    "24d20h31m23s648ms",
    "2147483647ms",
    "2147483648ms",
    "0ms",
    "1.5s",
    "-1s",
    " 1 h ",
    "1h30m",
    "1e308ms",
    "99999999999999999999w",
    "10000y",
    "",
    "ms",
    "1",
    "1x",
    "\u00001s",
  ),
);

/** Dates in year 10000 and past `Date`'s range, before 1970, invalid, and as strings and numbers. */
export const hostileDate: fc.Arbitrary<Date | string | number> = fc.oneof(
  fc
    .constantFrom(
      Date.UTC(10000, 0, 1),
      MAX_DATE_MS,
      MAX_DATE_MS + 1,
      8.64e15,
      -8.64e15,
      -1,
      0,
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(1, 0, 1),
      Number.NaN,
    )
    .map((ms) => new Date(ms)),
  fc.constantFrom(
    "10000-01-01T00:00:00Z",
    "+010000-01-01T00:00:00Z",
    "+275760-09-13T00:00:00.001Z",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T23:59:59.999-01:00",
    "1969-12-31T23:59:59.999Z",
    "0000-01-01T00:00:00Z",
    "2026-02-30",
    "2026-01-01T00:00:00+25:00",
    "2026-13-01",
    "tomorrow",
    "",
  ),
  hostileNumber,
);

/** Values of the wrong kind for any field: JSON's other types, and what JSON cannot hold. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, true, false, [], {}, [1], 0),
  fc.constant(10n),
  fc.constant(Symbol("s")),
  fc.constant(labelled("function", () => 1)),
  fc.constant(labelled("Map", new Map([["a", 1]]))),
  fc.constant(new Date(Number.NaN)),
);

/** Values JSON serialisation must refuse or survive: deep nesting, cycles, throwing getters. */
export const hostileStructure: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(10_000, 100_000).map(deepObject),
  fc.constantFrom(10_000).map(deepArray),
  fc.constantFrom(127, 128, 129, 1000).map(deepObject),
  fc.constant(null).map(cyclic),
  fc.constant(null).map(throwingGetter),
  fc.constant(null).map(throwingToJson),
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => own([[k, { polluted: true }]])),
  fc.constant(own([["__proto__", { pending: 1 }]])),
);

/** Any hostile value at all. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: hostileNumber, weight: 3 },
  { arbitrary: hostileDate, weight: 1 },
  { arbitrary: wrongType, weight: 2 },
  { arbitrary: hostileStructure, weight: 2 },
);

/** JSON payloads that are legal but awkward: any Unicode (lone surrogates too), near size bounds. */
export const awkwardJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "binary", minLength: 50, maxLength: 400 }).map((s) => ({ text: s })),
  fc.string({ unit: fc.oneof(loneSurrogate, fc.constant("\u0000"), fc.constant("é")), maxLength: 200 }),
  fc.constantFrom(127, 1000).map(deepObject),
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => own([[k, 1]])),
  fc.constant(own([["__proto__", { pending: 1 }]])),
);

/**
 * Unknown option keys mixed with hostile values: prototype keys, near misses of real keys, any
 * string. Built with own properties, as `JSON.parse` would build them.
 */
export function withUnknownKeys(known: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const key = fc.oneof(
    fc.constantFrom(...PROTOTYPE_KEYS),
    fc.constantFrom(...known).map((k) => `${k}s`),
    fc.constantFrom(...known).map((k) => k.toUpperCase()),
    fc.string({ minLength: 1, maxLength: 8 }),
  );
  return fc
    .uniqueArray(fc.tuple(key, hostileValue), { minLength: 1, maxLength: 2, selector: ([k]) => k })
    .filter((entries) => entries.some(([k]) => !known.includes(k)))
    .map(own);
}

/** Options a callee refuses together (`enqueue: give delayMs or runAt, not both`). */
export const EXCLUSIVE_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ["delayMs", "runAt"],
  ["expiresInMs", "expiresAt"],
];

/**
 * An options object: some known keys with valid values (`fields` gives each key's), and then at
 * most one hostile thing: a hostile value in one of the keys, or an unknown key. One at a time,
 * so each check the callee makes is reached on its own rather than hidden behind the first one.
 * `hostile` gives the hostile values, for every key or (a function) for each.
 */
export function hostileOptions(
  fields: Record<string, fc.Arbitrary<unknown>>,
  hostile: fc.Arbitrary<unknown> | ((key: string) => fc.Arbitrary<unknown>) = hostileValue,
): fc.Arbitrary<Record<string, unknown>> {
  // Valid options never give both keys of a pair the callee refuses together ("delayMs or runAt").
  const exclusive = EXCLUSIVE_OPTIONS.filter(([a, b]) => a in fields && b in fields);
  const hostileOf = typeof hostile === "function" ? hostile : () => hostile;
  const keys = Object.keys(fields);
  const valid = fc.tuple(...keys.map((k) => fc.option(fields[k]!, { nil: undefined, freq: 2 })));
  const spoiler = fc.oneof(
    { arbitrary: fc.constant(null), weight: 2 },
    {
      arbitrary: fc
        .constantFrom(...keys)
        .chain((k) => hostileOf(k).map((v) => [[k, v]] as Array<[string, unknown]>)),
      weight: 5,
    },
    { arbitrary: withUnknownKeys(keys).map((o) => Object.entries(o)), weight: 1 },
  );
  return fc.tuple(valid, spoiler).map(([values, spoiled]) => {
    const entries = keys.flatMap((k, i) =>
      values[i] === undefined || exclusive.some(([a, b]) => k === b && values[keys.indexOf(a)] !== undefined)
        ? []
        : [[k, values[i]] as [string, unknown]],
    );
    return own([...entries.filter(([k]) => !spoiled?.some(([s]) => s === k)), ...(spoiled ?? [])]);
  });
}

/** What a call did: its value, or what it threw. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs `fn` (sync or async) and reports its outcome instead of throwing. */
export async function outcome<T>(fn: () => T | Promise<T>): Promise<Outcome<Awaited<T>>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A short description of anything thrown, for assertion messages. */
export function describeError(error: unknown): string {
  if (error instanceof ErrandError) return `ErrandError ${error.code}: ${error.message.slice(0, 300)}`;
  if (error instanceof Error) return `${error.name}: ${error.message.slice(0, 300)}`;
  return `non-Error ${typeof error}: ${String(error).slice(0, 300)}`;
}

/**
 * Asserts that `error` is a caller's mistake reported the errand way: an {@link ErrandError}
 * whose code is a client code (never STORE_ERROR, INTERNAL, CLOSED or a crash of another class),
 * or the caller's own {@link HostileThrow} let through.
 */
export function assertClientError(error: unknown, where: string): asserts error is ErrandError {
  if (error instanceof HostileThrow) return;
  if (!(error instanceof ErrandError)) {
    throw new Error(`${where}: threw ${describeError(error)} instead of a typed ErrandError`, {
      cause: error,
    });
  }
  if (!CLIENT_CODES.has(error.code)) {
    throw new Error(`${where}: refused with ${describeError(error)}, which is not a client error`, {
      cause: error,
    });
  }
}
