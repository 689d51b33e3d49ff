import { types } from "node:util";
import { ErrandError, type ErrandErrorCode } from "./errors.js";

/**
 * Names that match the characters of {@link NAME_PATTERN} but are refused anyway: `__proto__`,
 * `constructor` and `prototype`. Names become keys (of `stats().queues` and `.types`, of the JSON
 * the server sends, of whatever a user's own code builds from them), and on a JavaScript object
 * these three are not plain keys: assigning to `obj.__proto__` replaces the object's prototype,
 * and `constructor`/`prototype` are how a prototype is reached. errand keeps names off ordinary
 * objects itself; refusing these three at the edge also protects code downstream of it.
 * @since 0.1.0
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * The one pattern every queue, job type, schedule and owner name must match, everywhere (API,
 * server, CLI): starts with a letter, digit or underscore; then letters, digits and `_ . : -`; at
 * most 128 characters; and not one of the {@link RESERVED_NAMES} (the lookahead). It keeps names
 * safe in URLs, Redis keys, SQL identifiers in logs, file names, and as keys of JavaScript objects.
 * @since 0.1.0
 */
export const NAME_PATTERN = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;

/**
 * Job ids are client-chosen more freely than names, but stay printable and bounded (255). `.` and
 * `..` are not ids: no URL can carry them as a path segment (browsers and fetch resolve them away,
 * `%2E` too), so the server's routes could never reach such a job.
 */
export const JOB_ID_PATTERN = /^(?!\.\.?$)[A-Za-z0-9_.:@+=-][A-Za-z0-9_.:@+=/-]{0,254}$/;

/** Longest text {@link describe} gives for a value, before its ellipsis. */
const DESCRIBE_MAX = 60;

/**
 * A short text for a user's value in an error message: a refusal must never fail while being
 * written. `String()` throws for a null-prototype object and a Symbol's template, and
 * `JSON.stringify()` for a BigInt, a cycle or deep nesting; this looks only at `typeof` (and at a
 * string's or number's own text), never calls the value's own methods or getters, and is cut to
 * about 60 characters.
 * @since 0.1.0
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value.length > DESCRIBE_MAX ? `${value.slice(0, DESCRIBE_MAX)}…` : value);
    case "number":
    case "boolean":
    case "undefined":
      return String(value);
    case "bigint":
      return "a bigint";
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
    default:
      if (value === null) return "null";
      try {
        // A Proxy can throw from these (a revoked one, a getPrototypeOf trap): then "an object".
        if (Array.isArray(value)) return "an array";
        if (value instanceof Date) return "a Date";
      } catch {}
      return "an object";
  }
}

function checkName(kind: string, code: ErrandErrorCode, value: unknown): string {
  if (typeof value !== "string" || !NAME_PATTERN.test(value)) {
    const shown = describe(value);
    if (typeof value === "string" && RESERVED_NAMES.has(value)) {
      throw new ErrandError(
        code,
        `${kind} name ${shown} is reserved: ${[...RESERVED_NAMES].join(", ")} are special keys of JavaScript objects`,
      );
    }
    throw new ErrandError(code, `${kind} name ${shown} must match ${NAME_PATTERN} (1 to 128 characters)`);
  }
  return value;
}

/** @throws ErrandError `INVALID_QUEUE_NAME` */
export function checkQueueName(value: unknown): string {
  return checkName("queue", "INVALID_QUEUE_NAME", value);
}

/** @throws ErrandError `INVALID_TYPE_NAME` */
export function checkTypeName(value: unknown): string {
  return checkName("job type", "INVALID_TYPE_NAME", value);
}

/** @throws ErrandError `INVALID_SCHEDULE_NAME` */
export function checkScheduleName(value: unknown): string {
  return checkName("schedule", "INVALID_SCHEDULE_NAME", value);
}

/** A job's key (a tenant, an account) is a name. @throws ErrandError `INVALID_KEY` */
export function checkJobKey(value: unknown): string {
  return checkName("key", "INVALID_KEY", value);
}

/** A job's owner is a name too. @throws ErrandError `INVALID_OPTION` */
export function checkOwnerName(value: unknown): string {
  return checkName("owner", "INVALID_OPTION", value);
}

/** @throws ErrandError `INVALID_JOB_ID` */
export function checkJobId(value: unknown): string {
  if (typeof value !== "string" || !JOB_ID_PATTERN.test(value)) {
    throw new ErrandError("INVALID_JOB_ID", `job id must match ${JOB_ID_PATTERN} (1 to 255 characters)`);
  }
  return value;
}

/** @throws ErrandError `INVALID_ATTEMPT` unless `value` is an integer from 1 to {@link MAX_ATTEMPT}. */
export function checkAttempt(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > MAX_ATTEMPT) {
    throw new ErrandError(
      "INVALID_ATTEMPT",
      `attempt must be an integer between 1 and ${MAX_ATTEMPT}, got ${describe(value)}`,
    );
  }
  return value;
}

/** A flag option: a boolean or nothing. */
export function checkFlagOption(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") {
    throw new ErrandError("INVALID_OPTION", `${field} must be true or false, got ${describe(value)}`);
  }
  return value;
}

/** Checks an integer option against its bounds, naming the field in the error. */
export function checkInt(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const bound = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `between ${min} and ${max}`;
    throw new ErrandError("INVALID_OPTION", `${field} must be an integer ${bound}, got ${describe(value)}`, {
      details: { field, min, max },
    });
  }
  // -0 is 0, as every store gives it back.
  return value === 0 ? 0 : value;
}

/**
 * The one form of a date-time given as a string: RFC 3339's `date-time`, `YYYY-MM-DDTHH:MM:SS`,
 * an optional fraction, and an offset, `Z` or `±hh:mm` (`T` and `Z` in either case, as RFC 3339
 * allows). The offset is required: without one `Date.parse` reads the time in the process's own
 * time zone, so two servers on one store would store two instants for one request. A date alone
 * is no date-time either (ECMAScript reads it as UTC midnight, while it names a local day).
 * Components are checked for range after the match ({@link dateTimeMs}).
 */
const DATE_TIME_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Epoch milliseconds of an RFC 3339 date-time ({@link DATE_TIME_PATTERN}) naming a real date and
 * time, or NaN. Computed from the checked components, not by `Date.parse`, which rolls an
 * impossible date over (February 30 into March 2, 24:00 into the next day) and leaves anything
 * past ECMAScript's own date format to the engine.
 */
function dateTimeMs(text: string): number {
  const m = DATE_TIME_PATTERN.exec(text);
  if (m === null) return Number.NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  // Second 60 (a leap second, which RFC 3339 allows) is refused: errand's instants are epoch
  // milliseconds, which count no leap seconds, so 23:59:60 has no instant of its own; reading it
  // as the next second is the rollover this refuses for every other component.
  if (days === undefined || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) {
    return Number.NaN;
  }
  let offsetMinutes = 0;
  if (m[8] !== undefined) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23 || om > 59) return Number.NaN;
    offsetMinutes = (m[8] === "+" ? 1 : -1) * (oh * 60 + om);
  }
  // Milliseconds are cut from the fraction, not rounded, as a number's are (Math.trunc below).
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(1, 4).padEnd(3, "0"));
  // setUTCFullYear, not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime() - offsetMinutes * 60_000;
}

/**
 * Turns a `Date`, an RFC 3339 date-time string with an offset (e.g.
 * `"2030-01-01T09:00:00Z"` or `"2030-01-01T10:00:00+01:00"`) or epoch milliseconds into epoch
 * milliseconds, from {@link MIN_DATE_MS} to {@link MAX_DATE_MS}. A string without an offset, a
 * date alone, and a date or time that does not exist (February 30, 24:00, second 60) are refused.
 * @throws ErrandError `INVALID_DATE`, naming the field and the bounds.
 */
export function toEpochMs(field: string, value: unknown): number {
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === "number") ms = value;
  else if (typeof value === "string") ms = dateTimeMs(value);
  else ms = Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new ErrandError(
      "INVALID_DATE",
      typeof value === "string"
        ? `${field} must be an RFC 3339 date-time with an offset, on a real calendar day (e.g. "2030-01-01T09:00:00Z" or "2030-01-01T10:00:00+01:00"), got ${describe(value)}`
        : `${field} must be a valid Date, an RFC 3339 date-time string or epoch milliseconds`,
      { details: { field } },
    );
  }
  ms = Math.trunc(ms);
  if (ms < MIN_DATE_MS || ms > MAX_DATE_MS) {
    throw new ErrandError(
      "INVALID_DATE",
      `${field} must be from ${new Date(MIN_DATE_MS).toISOString()} to ${new Date(MAX_DATE_MS).toISOString()} (epoch ms ${MIN_DATE_MS} to ${MAX_DATE_MS}), got ${value instanceof Date ? ms : describe(value)}`,
      { details: { field, min: MIN_DATE_MS, max: MAX_DATE_MS } },
    );
  }
  return ms;
}

/**
 * `now + ms` as a date, refused when it would fall past {@link MAX_DATE_MS} (a `delayMs` or
 * `expiresInMs` too long for any date a store keeps).
 * @throws ErrandError `INVALID_DURATION`, naming the field.
 */
export function addToDate(field: string, now: number, ms: number): number {
  const at = now + ms;
  if (at > MAX_DATE_MS) {
    throw new ErrandError(
      "INVALID_DURATION",
      `${field} of ${ms} ms from now falls past ${new Date(MAX_DATE_MS).toISOString()}, the latest date errand stores`,
      { details: { field, max: MAX_DATE_MS - now } },
    );
  }
  return at;
}

/** ES2024's well-formed string methods: Node 20 has them, the TypeScript lib errand targets not yet. */
interface WellFormedText {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * Checks free text that a store keeps as text (a unique key, a worker id): a string of 1 to
 * `maxLength` UTF-16 code units, without U+0000 and without lone surrogates. PostgreSQL's `text`
 * cannot hold U+0000, and a lone surrogate has no UTF-8 form (a store would keep U+FFFD or fail), so
 * either would be stored differently on different stores, or not at all: refused alike on all.
 * @throws ErrandError `code` (`INVALID_OPTION` unless told), naming the field.
 * @since 0.1.0
 */
export function checkText(
  field: string,
  value: unknown,
  maxLength: number,
  code: ErrandErrorCode = "INVALID_OPTION",
): string {
  if (typeof value !== "string" || value.length === 0 || value.length > maxLength) {
    throw new ErrandError(
      code,
      `${field} must be a string of 1 to ${maxLength} characters, got ${typeof value === "string" ? `${value.length} characters` : describe(value)}`,
      { details: { field, maxLength } },
    );
  }
  if (value.includes("\u0000") || !(value as string & WellFormedText).isWellFormed()) {
    throw new ErrandError(
      code,
      `${field} must not contain U+0000 (NUL) or a lone surrogate (text no store keeps as given)`,
      { details: { field } },
    );
  }
  return value;
}

/**
 * Makes text errand records on its own account (a handler's error message, name and stack) safe for
 * every store instead of refusing it, since refusing would lose the failure: U+0000 and lone
 * surrogates become U+FFFD, and text longer than `maxLength` is cut.
 */
export function sanitizeText(value: string, maxLength: number): string {
  const cut = value.length > maxLength ? value.slice(0, maxLength) : value;
  // A cut through a surrogate pair leaves a lone half, which toWellFormed() replaces too.
  const w = cut as string & WellFormedText;
  const clean = w.isWellFormed() ? cut : w.toWellFormed();
  return clean.includes("\u0000") ? clean.replaceAll("\u0000", "\uFFFD") : clean;
}

/**
 * Serialises a payload (or result, or checkpoint) to JSON text, refusing what JSON would silently
 * mangle: functions, symbols, bigints, `undefined` at the top, non-finite numbers, cycles, and the
 * built-in objects whose contents it leaves out (Map, Set, WeakMap, WeakSet, WeakRef, RegExp,
 * Error, Promise, ArrayBuffer, DataView, iterators, URLSearchParams, Blob, Headers, FormData).
 * @throws ErrandError `INVALID_PAYLOAD`
 */
export function toJsonText(field: string, value: unknown, maxBytes?: number): string {
  let text: string | undefined;
  try {
    // A replacer takes JSON.stringify off its fast path (~1 µs more per small payload, most of
    // what serialising a bulk enqueue cost): plain data, which it cannot mangle, goes without.
    text = plainData(value, 0) ? JSON.stringify(value) : JSON.stringify(value, jsonGuard);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ErrandError("INVALID_PAYLOAD", `${field} is not JSON-serialisable: ${why}`, { cause });
  }
  if (text === undefined) {
    throw new ErrandError("INVALID_PAYLOAD", `${field} is not JSON-serialisable: ${typeof value}`);
  }
  // A UTF-16 code unit is 1 to 3 bytes of UTF-8: count bytes only when the length cannot decide.
  if (
    maxBytes !== undefined &&
    (text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text) > maxBytes))
  ) {
    throw new ErrandError(
      "INVALID_PAYLOAD",
      `${field} is ${Buffer.byteLength(text)} bytes; the limit is ${maxBytes}`,
    );
  }
  return text;
}

/** Nesting past which {@link plainData} leaves a value to the guarded path (a cycle goes there). */
const PLAIN_DEPTH = 32;

/**
 * Whether JSON.stringify keeps `value` as it is without {@link jsonGuard}: strings, booleans,
 * null, finite numbers, and arrays and plain objects of them without `toJSON`. Anything else
 * (undefined, a Date, a class instance, a bigint, a cycle, deep nesting) answers false and takes
 * the guarded path, which refuses or converts it exactly as before.
 */
function plainData(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth >= PLAIN_DEPTH) return false;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype || "toJSON" in value) return false;
        for (let i = 0; i < value.length; i++) if (!plainData(value[i], depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if ((proto !== Object.prototype && proto !== null) || "toJSON" in value) return false;
      for (const key in value) {
        if (!plainData((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function jsonGuard(this: unknown, key: string, value: unknown): unknown {
  switch (typeof value) {
    case "function":
    case "symbol":
    case "bigint":
      throw new TypeError(`${key ? `"${key}"` : "value"} is a ${typeof value}`);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${key ? `"${key}"` : "value"} is ${value}`);
      return value;
    case "object": {
      const kind = value === null ? null : emptiedKind(value);
      if (kind)
        throw new TypeError(`${key ? `"${key}"` : "value"} is ${kind}, whose contents JSON leaves out`);
      return value;
    }
    default:
      return value;
  }
}

/**
 * The kind (with its article) of a built-in object whose contents JSON.stringify leaves out,
 * writing `{}` or its own enumerable fields only (a Map's entries, an Error's message, a buffer's
 * bytes), or null. Stored, it would come back as an empty object with no error said: the data
 * lost in silence. util.types, so objects from another realm count too. (A typed array keeps its
 * items, as an object of indexes; a URL or Date writes its text by toJSON, which runs first.)
 */
function emptiedKind(value: object): string | null {
  // Plain objects and arrays, nearly every value here, skip the native calls below.
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === Array.prototype || proto === null) return null;
  if (types.isMap(value)) return "a Map";
  if (types.isSet(value)) return "a Set";
  if (types.isWeakMap(value)) return "a WeakMap";
  if (types.isWeakSet(value)) return "a WeakSet";
  if (value instanceof WeakRef) return "a WeakRef";
  if (types.isRegExp(value)) return "a RegExp";
  if (types.isNativeError(value) || value instanceof Error) return "an Error";
  if (types.isPromise(value)) return "a Promise";
  if (types.isAnyArrayBuffer(value)) return "an ArrayBuffer";
  if (types.isDataView(value)) return "a DataView";
  if (types.isMapIterator(value) || types.isSetIterator(value) || types.isGeneratorObject(value)) {
    return "an iterator";
  }
  if (value instanceof URLSearchParams) return "a URLSearchParams";
  if (value instanceof Blob) return "a Blob";
  if (value instanceof Headers) return "a Headers";
  if (value instanceof FormData) return "a FormData";
  return null;
}

// ---- bounds ----------------------------------------------------------------------------------
// Every number, date and string errand stores has a bound that every store keeps exactly, checked
// at the edge (the library's entry points, the HTTP schemas, the CLI through the library), so a
// value is either stored as given on every store or refused with a typed error naming the field
// and the bound. Durations are bounded in duration.ts (MAX_TIMER_MS, MAX_DURATION_MS).

/**
 * The earliest `runAt` / `expiresAt` accepted: the Unix epoch, 1970-01-01T00:00:00.000Z. An
 * earlier time means nothing more to a queue than "now" does, and the HTTP API's epoch
 * milliseconds were never negative.
 * @since 0.1.0
 */
export const MIN_DATE_MS = 0;

/**
 * The latest `runAt` / `expiresAt` accepted: 9999-12-31T23:59:59.999Z (253 402 300 799 999).
 * Every store keeps it exactly (a PostgreSQL bigint, a SQLite integer, a Redis score, which is a
 * double and exact up to 2^53), and so do `Date` and ISO-8601 with a four-digit year. Without it,
 * `runAt: 8.64e15 + 1` was stored and read back as an invalid date (`"runAt": null`).
 * @since 0.1.0
 */
export const MAX_DATE_MS = 253_402_300_799_999;

/**
 * Longest `cursor` of `list()` in characters: 271, a longest job id (255), a colon and a longest
 * time (the 15 digits of {@link MAX_DATE_MS}). A cursor is where the page before ended, as the
 * store gave it: a job id on SQLite and PostgreSQL, `<time>:<id>` on Redis, which lists by time
 * and must carry the time the job was listed at, not look it up again (the job may have moved or
 * gone since). Bounded like an id, so a client's cursor costs a store no more than an id does.
 * @since 0.3.0
 */
export const MAX_LIST_CURSOR_LENGTH = 255 + 1 + String(MAX_DATE_MS).length;

/**
 * What a `list()` cursor may be: the characters of a job id ({@link JOB_ID_PATTERN}, `:` among
 * them), 1 to {@link MAX_LIST_CURSOR_LENGTH}. Whether it is a cursor the store gave is the
 * store's to say.
 */
export const LIST_CURSOR_PATTERN = new RegExp(`^[A-Za-z0-9_.:@+=/-]{1,${MAX_LIST_CURSOR_LENGTH}}$`);

/** A `list()` cursor, checked for its characters and length. @throws ErrandError `INVALID_OPTION` */
export function checkListCursor(value: unknown): string {
  if (typeof value !== "string" || !LIST_CURSOR_PATTERN.test(value)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `list: cursor must be a nextCursor list() gave, 1 to ${MAX_LIST_CURSOR_LENGTH} of the characters of a job id, got ${describe(value)}`,
      { details: { field: "cursor", max: MAX_LIST_CURSOR_LENGTH } },
    );
  }
  return value;
}

/**
 * Priority bounds: the safe integers, ±(2^53 − 1). PostgreSQL keeps a bigint, SQLite a 64-bit
 * integer, and Redis orders its ready lanes by `-priority` as a sorted-set score, a double, exact
 * over exactly this range: any wider and two priorities could share a score (and a lane order).
 * @since 0.1.0
 */
export const MAX_PRIORITY = Number.MAX_SAFE_INTEGER;
/** The lowest priority: −(2^53 − 1). See {@link MAX_PRIORITY}. @since 0.1.0 */
export const MIN_PRIORITY = Number.MIN_SAFE_INTEGER;

/**
 * The largest count errand takes for a job's `weight` and `maxAttempts`, a type's cluster-wide
 * `concurrency`, a worker's `concurrency`, queue weights and a lease's `maxWeight` / `weightCap`:
 * 1 000 000. Claims add weights up (a batch of up to 1000 jobs), and attempts count up to
 * `maxAttempts` in PostgreSQL's 32-bit `attempt` column; this bound keeps every sum exact and
 * every attempt number under {@link MAX_ATTEMPT}, and matches what the HTTP API always allowed.
 * @since 0.1.0
 */
export const MAX_COUNT = 1_000_000;

/**
 * The largest attempt number a report (complete, fail, heartbeat, checkpoint, release) may name:
 * 2^31 − 1, PostgreSQL's `integer`. A larger one was a 503 from PostgreSQL instead of a 400.
 * @since 0.1.0
 */
export const MAX_ATTEMPT = 2 ** 31 - 1;

/** Most jobs one `list` page or one `lease` returns: 1000. @since 0.1.0 */
export const MAX_LIMIT = 1000;

/**
 * Most attempts one `POST /v1/heartbeats` or one `POST /v1/report` names: the server's schema
 * holds requests to it, and ErrandClient splits longer lists into as many requests as they need.
 * @internal
 */
export const MAX_ATTEMPTS_PER_REQUEST = 1000;

/**
 * The largest `maxPayloadBytes` a queue accepts: 256 MiB. Payloads, results and checkpoints are
 * one value each in every store, and Redis refuses a value over 512 MB; JSON escaping can double a
 * text's size on the way.
 * @since 0.1.0
 */
export const MAX_PAYLOAD_BYTES = 256 * 1024 * 1024;

/**
 * Longest bearer token, server and client alike: one HTTP header carries it, well inside Node's
 * 16 KiB limit on a request's head.
 */
export const MAX_TOKEN_LENGTH = 4096;

/** Longest unique key and worker id, in UTF-16 code units: 255. @since 0.1.0 */
export const MAX_KEY_LENGTH = 255;

/**
 * Most dependencies one job may have (`dependsOn`), and most nodes in one `enqueueFlow`: 10 000.
 * A job waiting on more is better expressed as a tree of flows.
 */
export const MAX_DEPENDENCIES = 10_000;

/**
 * Checks a `dependsOn` list: an array of job ids, no duplicates, at most {@link MAX_DEPENDENCIES},
 * none equal to `self`. Returns its JSON text, or null for an empty list.
 * @throws ErrandError `INVALID_OPTION` (or `INVALID_JOB_ID` for a bad id) naming `where`.
 */
export function checkDependsOn(where: string, value: unknown, self: string | undefined): string | null {
  if (!Array.isArray(value)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: dependsOn must be an array of job ids, got ${describe(value)}`,
    );
  }
  if (value.length > MAX_DEPENDENCIES) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: dependsOn has ${value.length} ids; at most ${MAX_DEPENDENCIES}`,
    );
  }
  if (value.length === 0) return null;
  const seen = new Set<string>();
  for (const id of value) {
    const checked = checkJobId(id);
    if (seen.has(checked)) {
      throw new ErrandError("INVALID_OPTION", `${where}: dependsOn names ${JSON.stringify(checked)} twice`);
    }
    if (checked === self) {
      throw new ErrandError(
        "INVALID_OPTION",
        `${where}: a job cannot depend on itself (${JSON.stringify(checked)})`,
      );
    }
    seen.add(checked);
  }
  return JSON.stringify(value);
}

/**
 * Longest error message recorded for a failed attempt: 65 536 characters. A remote worker's longer
 * report is refused (400); a handler's own error is cut to it instead. Also the longest stack a
 * remote worker may send, which is then kept cut to {@link MAX_ERROR_STACK_LENGTH}.
 * @since 0.1.0
 */
export const MAX_ERROR_TEXT_LENGTH = 65_536;

/**
 * Longest cron expression a schedule takes, in UTF-16 code units: far more than any real one (five
 * fields of lists), and short enough that a sweep's parse of every schedule stays cheap (a 2 MB one
 * took ~280 ms a parse).
 * @since 0.1.0
 */
export const MAX_CRON_LENGTH = 128;

/**
 * Longest time zone name a schedule takes (the longest IANA name has 32 characters).
 * @since 0.1.0
 */
export const MAX_TIMEZONE_LENGTH = 64;

/**
 * Longest stack trace recorded for a failed attempt: 4000 characters, on every path (a handler's
 * own error, and a remote worker's report, which may send up to {@link MAX_ERROR_TEXT_LENGTH}).
 * A longer stack is cut, never refused: refusing would lose the failure.
 * @remarks A stack's first frames say where it failed; the rest, kept once per attempt in the
 * {@link MAX_ERROR_HISTORY} entries every read of the job carries, would mostly be weight.
 * @since 0.3.0
 */
export const MAX_ERROR_STACK_LENGTH = 4000;

/**
 * Most entries a job's error history (`job.errors`) keeps: 100, the most recent. The write that
 * would make it 101 drops the oldest, on every store and every path that records a failure
 * (a failed attempt, an expired lease, a dependency's failure). Each entry keeps its `attempt`,
 * so a reader still knows which attempts the kept entries are.
 * @remarks `maxAttempts` may be up to {@link MAX_COUNT}, and every read of a job (get, list, the
 * dashboard) carries its whole history: unbounded, one job retried for days, or a worker failing
 * it in a loop, would grow one row without end. BullMQ keeps at most `stackTraceLimit` stacks
 * per job, Sidekiq the last error. A history stored longer by an earlier version is cut to this
 * bound by its next failure.
 * @since 0.3.0
 */
export const MAX_ERROR_HISTORY = 100;

/** Longest error name recorded for a failed attempt: 256 characters. @since 0.1.0 */
export const MAX_ERROR_NAME_LENGTH = 256;

/**
 * {@link checkText}'s rule as a JSON-schema pattern (the HTTP schemas): no U+0000, no lone
 * surrogate. ajv compiles patterns with the `u` flag, so a surrogate pair is one code point and
 * only an unpaired half falls in the excluded range.
 */
export const TEXT_PATTERN = "^[^\\u0000\\ud800-\\udfff]*$";
