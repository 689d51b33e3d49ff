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

function checkName(kind: string, code: ErrandErrorCode, value: unknown): string {
  if (typeof value !== "string" || !NAME_PATTERN.test(value)) {
    const shown =
      typeof value === "string"
        ? JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)
        : typeof value;
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

/** @throws ErrandError `INVALID_ATTEMPT` unless `value` is an integer ≥ 1. */
export function checkAttempt(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ErrandError("INVALID_ATTEMPT", `attempt must be an integer ≥ 1, got ${String(value)}`);
  }
  return value;
}

/** Checks an integer option against its bounds, naming the field in the error. */
export function checkInt(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const bound = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `between ${min} and ${max}`;
    throw new ErrandError("INVALID_OPTION", `${field} must be an integer ${bound}, got ${String(value)}`);
  }
  return value;
}

/**
 * Turns a `Date`, an ISO-8601 string or epoch milliseconds into epoch milliseconds.
 * @throws ErrandError `INVALID_DATE`
 */
export function toEpochMs(field: string, value: unknown): number {
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === "number") ms = value;
  else if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}/.test(value)) ms = Date.parse(value);
  else ms = Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new ErrandError(
      "INVALID_DATE",
      `${field} must be a valid Date, ISO-8601 string or epoch milliseconds`,
    );
  }
  return Math.trunc(ms);
}

/**
 * Serialises a payload (or result, or checkpoint) to JSON text, refusing what JSON would silently
 * mangle: functions, symbols, bigints, `undefined` at the top, non-finite numbers and cycles.
 * @throws ErrandError `INVALID_PAYLOAD`
 */
export function toJsonText(field: string, value: unknown, maxBytes?: number): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, jsonGuard);
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

function jsonGuard(this: unknown, key: string, value: unknown): unknown {
  switch (typeof value) {
    case "function":
    case "symbol":
    case "bigint":
      throw new TypeError(`${key ? `"${key}"` : "value"} is a ${typeof value}`);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${key ? `"${key}"` : "value"} is ${value}`);
      return value;
    default:
      return value;
  }
}
