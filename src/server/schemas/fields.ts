/**
 * The building blocks of errand's HTTP schemas: bounded fields, enqueue options, and the replies,
 * errors and path params that route groups share. Each route group's schemas (beside this file)
 * are built from them.
 * @module
 */
import { MAX_DURATION_MS, MAX_TIMER_MS } from "../../duration.js";
import {
  JOB_ID_PATTERN,
  LIST_CURSOR_PATTERN,
  MAX_ATTEMPT,
  MAX_COUNT,
  MAX_DATE_MS,
  MAX_DEPENDENCIES,
  MAX_ERROR_NAME_LENGTH,
  MAX_ERROR_STACK_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  MAX_KEY_LENGTH,
  MAX_LIMIT,
  MAX_LIST_CURSOR_LENGTH,
  MAX_PRIORITY,
  MIN_DATE_MS,
  MIN_PRIORITY,
  NAME_PATTERN,
  TEXT_PATTERN,
} from "../../validation.js";

export const name = { type: "string", pattern: NAME_PATTERN.source, maxLength: 128 } as const;

/**
 * A pattern matching exactly the decimal integers 1 to `max`, without sign or leading zeros: a
 * query's bound said by its schema, since query strings are not coerced (`coerceTypes: false`).
 * Built digit by digit from `max`: every shorter number, then each prefix of `max` followed by a
 * smaller digit and any digits, then `max` itself.
 */
export function upToPattern(max: number): string {
  const digits = String(max);
  const n = digits.length;
  const alternatives = n > 1 ? [`[1-9][0-9]{0,${n - 2}}`] : [];
  for (let i = 0; i < n; i++) {
    const lo = i === 0 ? 1 : 0;
    const hi = Number(digits[i]) - 1;
    if (hi < lo) continue;
    const rest = n - i - 1;
    alternatives.push(`${digits.slice(0, i)}[${lo}-${hi}]${rest ? `[0-9]{${rest}}` : ""}`);
  }
  alternatives.push(digits);
  return `^(?:${alternatives.join("|")})$`;
}

/**
 * A query parameter taking a whole number from 1 to `max`, `fallback` when absent (the schema's
 * `default`, which the server's validator fills in, so the handler sees what the document says).
 */
export const countQuery = <M extends number, D extends number>(max: M, fallback: D, what: string) =>
  ({
    type: "string",
    pattern: upToPattern(max),
    default: `${fallback}`,
    description: `${what}: a whole number from 1 to ${max} in decimal (no sign, no leading zeros), ${fallback} when absent; else INVALID_REQUEST`,
  }) as const;

/** A page's `limit`: 1 to {@link MAX_LIMIT}, 50 when absent. */
export const pageLimit = countQuery(MAX_LIMIT, 50, "Most items in the page");

/** The query of a list paged by name (`limit`, and the previous page's `nextCursor`). */
export const namePageQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: pageLimit,
    cursor: { ...name, description: "`nextCursor` of the previous page" },
  },
} as const;
export const jobId = { type: "string", pattern: JOB_ID_PATTERN.source, maxLength: 255 } as const;
/** A `list()` cursor: a job id on the SQL stores, `<time>:<id>` on Redis, so longer than an id. */
export const listCursor = {
  type: "string",
  pattern: LIST_CURSOR_PATTERN.source,
  maxLength: MAX_LIST_CURSOR_LENGTH,
  description: "`nextCursor` of the previous page",
} as const;
/**
 * Free text a store keeps as text: no U+0000 and no lone surrogate (see `checkText`), which
 * PostgreSQL cannot store and the other stores would store differently.
 */
export const text = (maxLength: number) =>
  ({
    type: "string",
    pattern: TEXT_PATTERN,
    maxLength,
    description: "text without U+0000 or lone surrogates",
  }) as const;
/**
 * A duration up to `maximum` ms. A string's value is checked by the server against the same bound
 * (`INVALID_DURATION`), since a schema cannot read "2h".
 */
export const durationUpTo = <M extends number>(maximum: M) =>
  ({
    description: `milliseconds, or a duration like "30s", "5m", "2h", "1h30m"; at most ${maximum} ms`,
    anyOf: [
      { type: "integer", minimum: 0, maximum },
      { type: "string", maxLength: 32 },
    ],
  }) as const;
/** A delay, expiry or backoff: at most the span from 1970 to the end of year 9999. */
export const duration = durationUpTo(MAX_DURATION_MS);
/** A duration that becomes a timer (`timeoutMs`): at most 2^31 − 1 ms, about 24.8 days. */
export const timerDuration = durationUpTo(MAX_TIMER_MS);
export const instant = {
  description:
    "An RFC 3339 date-time with an offset (Z or ±hh:mm) on a real calendar day, or epoch milliseconds, from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z; a string without an offset or naming no real date or time is refused with INVALID_DATE",
  anyOf: [
    { type: "string", maxLength: 40 },
    { type: "integer", minimum: MIN_DATE_MS, maximum: MAX_DATE_MS },
  ],
} as const;
/**
 * A failure as a worker reports it: a message, or { message, name, stack }. A stack is taken up
 * to MAX_ERROR_TEXT_LENGTH, what clients before MAX_ERROR_STACK_LENGTH sent, and kept cut to
 * MAX_ERROR_STACK_LENGTH (failure-rule.ts), as a handler's own is.
 */
export const reportedError = {
  anyOf: [
    text(MAX_ERROR_TEXT_LENGTH),
    {
      type: "object",
      required: ["message"],
      additionalProperties: false,
      properties: {
        message: text(MAX_ERROR_TEXT_LENGTH),
        name: text(MAX_ERROR_NAME_LENGTH),
        stack: {
          ...text(MAX_ERROR_TEXT_LENGTH),
          description: `text without U+0000 or lone surrogates; kept cut to its first ${MAX_ERROR_STACK_LENGTH} characters`,
        },
      },
    },
  ],
} as const;

export const attempt = { type: "integer", minimum: 1, maximum: MAX_ATTEMPT } as const;
export const integer = { type: "integer", minimum: MIN_PRIORITY, maximum: MAX_PRIORITY } as const;
export const count = { type: "integer", minimum: 1, maximum: MAX_COUNT } as const;
export const nullableDate = { type: ["string", "null"], format: "date-time" } as const;
/** An exponential policy as stored with a job: every field resolved. */
export const storedExponential = {
  type: "object",
  required: ["type", "baseMs", "maxMs", "factor", "jitter"],
  properties: {
    type: { const: "exponential" },
    baseMs: { type: "integer" },
    maxMs: { type: "integer" },
    factor: { type: "number" },
    jitter: { type: "boolean" },
  },
} as const;
/** Counts by state; a state without jobs may be left out. */
export const countsByState = {
  type: "object",
  properties: {
    blocked: { type: "integer" },
    pending: { type: "integer" },
    active: { type: "integer" },
    completed: { type: "integer" },
    dead: { type: "integer" },
    cancelled: { type: "integer" },
    expired: { type: "integer" },
  },
} as const;

/** The settings a job type gives its jobs by default, and an enqueue may set for one job. */
export const typeDefaultProperties = {
  queue: name,
  priority: integer,
  weight: count,
  maxAttempts: count,
  backoff: { $ref: "Backoff#" },
  retryQueue: name,
  timeoutMs: timerDuration,
  delivery: { type: "string", enum: ["at_least_once", "at_most_once"] },
  onDependencyFailure: {
    type: "string",
    enum: ["cancel", "run"],
    description:
      "When a dependency ends dead, cancelled or expired: `cancel` the waiting job (and its own dependents), or `run` it once every dependency has finished",
  },
} as const;

/** A `dependsOn` list: ids of stored jobs, no duplicates (the server names a repeated id). */
export const dependsOn = {
  type: "array",
  maxItems: MAX_DEPENDENCIES,
  items: jobId,
  description:
    "Ids of jobs this one waits for (`blocked` until every one has completed); an unknown id is DEPENDENCY_NOT_FOUND and nothing is stored",
} as const;

/**
 * A job's key: the tenant, customer or account it belongs to. A name, but checked by the server
 * rather than by the schema, so that a bad one is refused as `INVALID_KEY`, as the Queue does.
 */
export const jobKey = {
  type: "string",
  description: `The job's key (a tenant, customer or account): a name (${NAME_PATTERN.source}, at most 128 characters), else INVALID_KEY. Its type's \`keyConcurrency\`, \`ordered\`, \`keyRateLimit\` and \`fair\` apply per key`,
} as const;

/** The `debounce` enqueue option; its key is checked by the server (`INVALID_KEY`), as `key` is. */
export const debounce = {
  type: "object",
  required: ["key", "delayMs"],
  additionalProperties: false,
  description:
    "Collapse bursts: while a job holding this debounce key is pending and not started, the enqueue replaces its payload and moves its runAt to now + delayMs, and answers that job (`duplicate`); otherwise a new job due at now + delayMs holds the key until it starts. Not with runAt, delayMs, uniqueKey or dependsOn",
  properties: {
    key: {
      type: "string",
      description: `non-empty text, at most ${MAX_KEY_LENGTH} characters, else INVALID_KEY`,
    },
    delayMs: duration,
  },
} as const;

/**
 * A type's rate limit. Its bounds are checked by the server rather than by the schema, so that a
 * bad one is refused as `INVALID_RATE_LIMIT`, as `defineJob` does.
 */
export const rateLimit = (description: string) =>
  ({
    type: "object",
    required: ["limit", "periodMs"],
    additionalProperties: false,
    description: `${description}. \`limit\` 1 to ${MAX_COUNT}, \`periodMs\` 1 ms to ${MAX_TIMER_MS} ms, else INVALID_RATE_LIMIT`,
    properties: {
      limit: { type: "integer" },
      periodMs: {
        description: 'milliseconds, or a duration like "1s", "1m"',
        anyOf: [{ type: "integer" }, { type: "string", maxLength: 32 }],
      },
    },
  }) as const;

/** Enqueue options, flat beside `type` and `payload` in an enqueue body. */
export const enqueueOptionProperties = {
  id: jobId,
  uniqueKey: { ...text(MAX_KEY_LENGTH), minLength: 1 },
  owner: {
    ...name,
    description:
      "Who the job belongs to. With auth, the enqueuing token's name by default; only an admin may name another owner.",
  },
  delayMs: duration,
  runAt: instant,
  expiresAt: instant,
  expiresInMs: duration,
  dependsOn,
  key: jobKey,
  debounce,
  ...typeDefaultProperties,
} as const;

export function omit<T extends object, K extends keyof T>(o: T, ...keys: K[]): Omit<T, K> {
  const copy = { ...o };
  for (const k of keys) delete copy[k];
  return copy;
}

/** One job to enqueue: `{ type, payload, ...options }`. */
export const enqueueJob = {
  type: "object",
  required: ["type"],
  additionalProperties: false,
  properties: { type: name, payload: {}, ...enqueueOptionProperties },
} as const;

/** Most jobs accepted in one bulk request. */
export const MAX_BULK = 10_000;

export const jobReply = { $ref: "Job#" } as const;
export const jobsReply = {
  type: "object",
  required: ["jobs"],
  properties: { jobs: { type: "array", items: jobReply } },
} as const;
/**
 * An enqueue's answer for a duplicate of a job the caller may not read (a producer meeting another
 * owner's job by id or unique key): that the id is taken, and nothing of the job.
 */
export const hiddenDuplicate = {
  type: "object",
  required: ["id", "duplicate"],
  additionalProperties: false,
  description:
    "A duplicate of a job the caller may not read (another owner's, by id or unique key): its id, nothing else",
  properties: { id: { type: "string" }, duplicate: { type: "boolean", const: true } },
} as const;
/** One job as an enqueue answers it: the job, or a {@link hiddenDuplicate}. */
export const enqueuedReply = { anyOf: [jobReply, hiddenDuplicate] } as const;
/** `{ jobs }` as a bulk enqueue answers it. */
export const enqueuedJobsReply = {
  type: "object",
  required: ["jobs"],
  properties: { jobs: { type: "array", items: enqueuedReply } },
} as const;
/** What `POST /v1/jobs?return=ids` answers: each job's id, in the order given. */
export const idsReply = {
  type: "object",
  required: ["ids"],
  properties: { ids: { type: "array", items: { type: "string" } } },
} as const;
export const errors = {
  400: { $ref: "Error#" },
  401: { $ref: "Error#" },
  403: { $ref: "Error#" },
  404: { $ref: "Error#" },
  409: { $ref: "Error#" },
} as const;
export const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: jobId },
} as const;
export const nameParams = { type: "object", required: ["name"], properties: { name } } as const;
export const ok = { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } } as const;
