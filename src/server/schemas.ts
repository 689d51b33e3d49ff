/**
 * The JSON schemas of errand's HTTP API: the one source for request validation (Fastify/ajv), the
 * OpenAPI 3.1 document at `/openapi.json`, and the shapes `errand/client` sends. Shared shapes are
 * registered once by `$id` and referenced as `"<Id>#"`.
 * @module
 */
import { MAX_DURATION_MS, MAX_TIMER_MS } from "../duration.js";
import { JOB_STATES } from "../job.js";
import {
  JOB_ID_PATTERN,
  MAX_ATTEMPT,
  MAX_COUNT,
  MAX_DATE_MS,
  MAX_ERROR_NAME_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  MAX_KEY_LENGTH,
  MAX_PRIORITY,
  MIN_DATE_MS,
  MIN_PRIORITY,
  NAME_PATTERN,
  TEXT_PATTERN,
} from "../validation.js";

const name = { type: "string", pattern: NAME_PATTERN.source, maxLength: 128 } as const;
const jobId = { type: "string", pattern: JOB_ID_PATTERN.source, maxLength: 255 } as const;
/**
 * Free text a store keeps as text: no U+0000 and no lone surrogate (see `checkText`), which
 * PostgreSQL cannot store and the other stores would store differently.
 */
const text = (maxLength: number) =>
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
const durationUpTo = <M extends number>(maximum: M) =>
  ({
    description: `milliseconds, or a duration like "30s", "5m", "2h", "1h30m"; at most ${maximum} ms`,
    anyOf: [
      { type: "integer", minimum: 0, maximum },
      { type: "string", maxLength: 32 },
    ],
  }) as const;
/** A delay, expiry or backoff: at most the span from 1970 to the end of year 9999. */
const duration = durationUpTo(MAX_DURATION_MS);
/** A duration that becomes a timer (`timeoutMs`): at most 2^31 − 1 ms, about 24.8 days. */
const timerDuration = durationUpTo(MAX_TIMER_MS);
const instant = {
  description:
    "ISO-8601 date-time or epoch milliseconds, from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z",
  anyOf: [
    { type: "string", maxLength: 40 },
    { type: "integer", minimum: MIN_DATE_MS, maximum: MAX_DATE_MS },
  ],
} as const;
/** A failure as a worker reports it: a message, or { message, name, stack }. */
const reportedError = {
  anyOf: [
    text(MAX_ERROR_TEXT_LENGTH),
    {
      type: "object",
      required: ["message"],
      additionalProperties: false,
      properties: {
        message: text(MAX_ERROR_TEXT_LENGTH),
        name: text(MAX_ERROR_NAME_LENGTH),
        stack: text(MAX_ERROR_TEXT_LENGTH),
      },
    },
  ],
} as const;

const attempt = { type: "integer", minimum: 1, maximum: MAX_ATTEMPT } as const;
const integer = { type: "integer", minimum: MIN_PRIORITY, maximum: MAX_PRIORITY } as const;
const count = { type: "integer", minimum: 1, maximum: MAX_COUNT } as const;
const nullableDate = { type: ["string", "null"], format: "date-time" } as const;
/** An exponential policy as stored with a job: every field resolved. */
const storedExponential = {
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
const countsByState = {
  type: "object",
  properties: {
    pending: { type: "integer" },
    active: { type: "integer" },
    completed: { type: "integer" },
    dead: { type: "integer" },
    cancelled: { type: "integer" },
    expired: { type: "integer" },
  },
} as const;

/** Shared schemas, registered with `addSchema` and listed as OpenAPI components. */
export const sharedSchemas = [
  {
    $id: "Error",
    type: "object",
    description: "Every error response. `code` is stable; branch on it, never on `message`.",
    required: ["code", "message"],
    properties: { code: { type: "string" }, message: { type: "string" }, details: {} },
  },
  {
    $id: "Backoff",
    description: "Wait between failed attempts.",
    oneOf: [
      {
        type: "object",
        required: ["type", "delayMs"],
        additionalProperties: false,
        properties: { type: { const: "fixed" }, delayMs: duration },
      },
      {
        type: "object",
        required: ["type"],
        additionalProperties: false,
        properties: {
          type: { const: "exponential" },
          baseMs: duration,
          maxMs: duration,
          factor: { type: "number", minimum: 1, maximum: 100 },
          jitter: { type: "boolean" },
        },
      },
    ],
  },
  {
    $id: "Job",
    type: "object",
    description: "A job in any state. Times are ISO-8601 strings.",
    required: [
      "id",
      "type",
      "queue",
      "state",
      "payload",
      "checkpoint",
      "result",
      "priority",
      "weight",
      "runAt",
      "expiresAt",
      "attempt",
      "maxAttempts",
      "backoff",
      "retryQueue",
      "delivery",
      "timeoutMs",
      "uniqueKey",
      "leaseExpiresAt",
      "workerId",
      "errors",
      "createdAt",
      "startedAt",
      "finishedAt",
      "owner",
    ],
    properties: {
      id: { type: "string" },
      type: { type: "string" },
      queue: { type: "string" },
      state: { type: "string", enum: [...JOB_STATES] },
      payload: {},
      checkpoint: {},
      result: {},
      priority: { type: "integer" },
      weight: { type: "integer" },
      runAt: { type: "string", format: "date-time" },
      expiresAt: nullableDate,
      attempt: { type: "integer" },
      maxAttempts: { type: "integer" },
      backoff: {
        description: "The stored retry policy; `custom` stands for a function policy, with its fallback.",
        oneOf: [
          {
            type: "object",
            required: ["type", "delayMs"],
            properties: { type: { const: "fixed" }, delayMs: { type: "integer" } },
          },
          storedExponential,
          {
            type: "object",
            required: ["type", "fallback"],
            properties: { type: { const: "custom" }, fallback: storedExponential },
          },
        ],
      },
      retryQueue: { type: ["string", "null"] },
      delivery: { type: "string", enum: ["at_least_once", "at_most_once"] },
      timeoutMs: { type: ["integer", "null"] },
      uniqueKey: { type: ["string", "null"] },
      leaseExpiresAt: nullableDate,
      workerId: { type: ["string", "null"] },
      errors: {
        type: "array",
        items: {
          type: "object",
          required: ["attempt", "message", "at"],
          properties: {
            attempt: { type: "integer" },
            message: { type: "string" },
            name: { type: "string" },
            stack: { type: "string" },
            at: { type: "integer" },
            kind: { type: "string" },
          },
        },
      },
      createdAt: { type: "string", format: "date-time" },
      startedAt: nullableDate,
      finishedAt: nullableDate,
      owner: {
        type: ["string", "null"],
        description: "Who enqueued the job: the enqueuing token's name, or the `owner` given at enqueue.",
      },
      duplicate: {
        type: "boolean",
        description:
          "On enqueue: the id or unique key matched an existing job. When that job is one the caller may not read (a producer's view of another owner's job), the reply is only `{ id, duplicate }`.",
      },
    },
  },
  {
    $id: "JobType",
    type: "object",
    description:
      "A job type's server-side settings: defaults applied at enqueue, and a cluster-wide cap at lease.",
    additionalProperties: false,
    properties: {
      type: name,
      queue: name,
      priority: integer,
      weight: count,
      maxAttempts: count,
      backoff: { $ref: "Backoff#" },
      retryQueue: name,
      timeoutMs: timerDuration,
      delivery: { type: "string", enum: ["at_least_once", "at_most_once"] },
      concurrency: count,
      push: {
        type: "object",
        description: "Push delivery: the server leases this type's jobs and POSTs each to `url`.",
        required: ["url"],
        additionalProperties: false,
        properties: {
          url: { type: "string", format: "uri", maxLength: 2048 },
          secret: { type: "string", minLength: 16, maxLength: 256, writeOnly: true },
          timeoutMs: { type: "integer", minimum: 100, maximum: 600_000 },
        },
      },
    },
  },
] as const;

/** Enqueue options, flat beside `type` and `payload` in an enqueue body. */
const enqueueOptionProperties = {
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
  queue: name,
  priority: integer,
  weight: count,
  maxAttempts: count,
  backoff: { $ref: "Backoff#" },
  retryQueue: name,
  timeoutMs: timerDuration,
  delivery: { type: "string", enum: ["at_least_once", "at_most_once"] },
} as const;

function omit<T extends object, K extends keyof T>(o: T, ...keys: K[]): Omit<T, K> {
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

const jobReply = { $ref: "Job#" } as const;
const jobsReply = {
  type: "object",
  required: ["jobs"],
  properties: { jobs: { type: "array", items: jobReply } },
} as const;
const errors = {
  400: { $ref: "Error#" },
  401: { $ref: "Error#" },
  403: { $ref: "Error#" },
  404: { $ref: "Error#" },
  409: { $ref: "Error#" },
} as const;
const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: jobId },
} as const;
const nameParams = { type: "object", required: ["name"], properties: { name } } as const;
/** Checked by the queue (INVALID_QUEUE_NAME, as everywhere), not here (which would be INVALID_REQUEST). */
const queueParams = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string", description: `a queue name, matching ${NAME_PATTERN.source}` } },
} as const;
/** A pause or resume: the queue, whether it is paused now, and whether this call changed that. */
const queuePause = {
  type: "object",
  required: ["name", "paused", "changed"],
  properties: { name: { type: "string" }, paused: { type: "boolean" }, changed: { type: "boolean" } },
} as const;
const typeParams = { type: "object", required: ["type"], properties: { type: name } } as const;
const ok = { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } } as const;

/** Every route's schema, keyed by `"METHOD /path"`. */
export const routeSchemas = {
  "POST /v1/jobs": {
    summary: "Enqueue one job, or many (`{ jobs: [...] }`) in one transaction",
    tags: ["jobs"],
    body: {
      oneOf: [
        enqueueJob,
        {
          type: "object",
          required: ["jobs"],
          additionalProperties: false,
          properties: { jobs: { type: "array", minItems: 1, maxItems: MAX_BULK, items: enqueueJob } },
        },
      ],
    },
    response: {
      200: {
        description: "Every job already existed (`duplicate`): the job (one) or `{ jobs }` (many)",
        anyOf: [jobReply, jobsReply],
      },
      201: {
        description: "The job (one) or `{ jobs }` (many); `duplicate` marks jobs that already existed",
        anyOf: [jobReply, jobsReply],
      },
      ...errors,
    },
  },
  "PUT /v1/jobs/:id": {
    summary:
      "Idempotent enqueue under a client-chosen id: 201 the first time, 200 with the existing job after",
    tags: ["jobs"],
    params: idParams,
    body: {
      type: "object",
      required: ["type"],
      additionalProperties: false,
      properties: { type: name, payload: {}, ...omit(enqueueOptionProperties, "id") },
    },
    response: { 200: jobReply, 201: jobReply, ...errors },
  },
  "GET /v1/jobs/:id": {
    summary: "A job, whatever its state (for a producer: only its own jobs; others are 404)",
    tags: ["jobs"],
    params: idParams,
    response: { 200: jobReply, ...errors },
  },
  "GET /v1/jobs": {
    summary: "A page of jobs, newest first (for a producer: only its own jobs)",
    tags: ["jobs"],
    querystring: {
      type: "object",
      additionalProperties: false,
      properties: {
        state: { type: "string", enum: [...JOB_STATES] },
        queue: name,
        type: name,
        owner: { ...name, description: "Only this owner's jobs (a producer sees only its own anyway)" },
        limit: { type: "string", pattern: "^[0-9]{1,4}$", description: "1 to 1000, default 50" },
        cursor: jobId,
      },
    },
    response: {
      200: {
        type: "object",
        required: ["jobs", "nextCursor"],
        properties: { jobs: { type: "array", items: jobReply }, nextCursor: { type: ["string", "null"] } },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/cancel": {
    summary: "Cancel a pending or active job",
    tags: ["jobs"],
    params: idParams,
    response: { 200: jobReply, ...errors },
  },
  "POST /v1/jobs/:id/retry": {
    summary: "Put a dead, cancelled or expired job back to pending",
    tags: ["jobs"],
    params: idParams,
    response: { 200: jobReply, ...errors },
  },
  "POST /v1/jobs/:id/replay": {
    summary: "Enqueue a finished job's type and payload again under a new id",
    tags: ["jobs"],
    params: idParams,
    response: { 201: jobReply, ...errors },
  },
  "POST /v1/jobs/:id/reschedule": {
    summary: "Move a pending job in time, priority or queue",
    tags: ["jobs"],
    params: idParams,
    body: {
      type: "object",
      additionalProperties: false,
      properties: { runAt: instant, delayMs: duration, priority: integer, queue: name },
    },
    response: { 200: jobReply, ...errors },
  },
  "POST /v1/lease": {
    summary: "Lease ready jobs for a remote worker; long-polls up to `waitMs` when none is ready",
    tags: ["worker"],
    body: {
      type: "object",
      additionalProperties: false,
      properties: {
        types: { type: "array", items: name, minItems: 1, maxItems: 1000 },
        queues: {
          description: "queue names, or names with weights",
          anyOf: [
            { type: "array", items: name, minItems: 1, maxItems: 1000 },
            {
              type: "object",
              minProperties: 1,
              propertyNames: name,
              additionalProperties: count,
            },
          ],
        },
        limit: { type: "integer", minimum: 1, maximum: 1000 },
        leaseMs: { type: "integer", minimum: 100, maximum: 86_400_000 },
        waitMs: { type: "integer", minimum: 0, maximum: 120_000 },
        workerId: { ...text(MAX_KEY_LENGTH), minLength: 1 },
        maxWeight: count,
        weightCap: count,
      },
    },
    response: { 200: jobsReply, ...errors },
  },
  "POST /v1/jobs/:id/complete": {
    summary: "Complete an attempt; a stale attempt gets 409, a repeated identical complete 200",
    tags: ["worker"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt"],
      additionalProperties: false,
      properties: { attempt, result: {} },
    },
    response: {
      200: {
        type: "object",
        required: ["ok", "duplicate"],
        properties: { ok: { type: "boolean" }, duplicate: { type: "boolean" } },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/fail": {
    summary: "Fail an attempt: retried with backoff, or dead",
    tags: ["worker"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "error"],
      additionalProperties: false,
      properties: {
        attempt,
        error: reportedError,
        retryable: { type: "boolean" },
      },
    },
    response: {
      200: {
        type: "object",
        required: ["ok", "state", "runAt"],
        properties: {
          ok: { type: "boolean" },
          state: { type: "string", enum: ["pending", "dead"] },
          runAt: { type: "string", format: "date-time" },
        },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/heartbeat": {
    summary: "Extend an attempt's lease; 409 when the attempt is no longer current (cancelled, lost)",
    tags: ["worker"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt"],
      additionalProperties: false,
      properties: { attempt, leaseMs: { type: "integer", minimum: 100, maximum: 86_400_000 } },
    },
    response: { 200: ok, ...errors },
  },
  "POST /v1/jobs/:id/checkpoint": {
    summary: "Save an attempt's progress; a retry sees it as `checkpoint`",
    tags: ["worker"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "data"],
      additionalProperties: false,
      properties: { attempt, data: {} },
    },
    response: { 200: ok, ...errors },
  },
  "POST /v1/jobs/:id/release": {
    summary: "Give an attempt back without using it up (a worker shutting down)",
    tags: ["worker"],
    params: idParams,
    body: { type: "object", required: ["attempt"], additionalProperties: false, properties: { attempt } },
    response: { 200: ok, ...errors },
  },
  "POST /v1/report": {
    summary: "Report many outcomes in one request (completions are written in one transaction)",
    tags: ["worker"],
    body: {
      type: "object",
      required: ["reports"],
      additionalProperties: false,
      properties: {
        reports: {
          type: "array",
          minItems: 1,
          maxItems: 1000,
          items: {
            type: "object",
            required: ["id", "attempt", "outcome"],
            additionalProperties: false,
            properties: {
              id: jobId,
              attempt,
              outcome: { type: "string", enum: ["complete", "fail"] },
              result: {},
              error: reportedError,
              retryable: { type: "boolean" },
            },
          },
        },
      },
    },
    response: {
      200: {
        type: "object",
        required: ["results"],
        properties: {
          results: {
            type: "array",
            items: {
              type: "object",
              required: ["id", "ok"],
              properties: {
                id: { type: "string" },
                ok: { type: "boolean" },
                code: { type: "string" },
                state: { type: "string" },
              },
            },
          },
        },
      },
      ...errors,
    },
  },
  "PUT /v1/types/:type": {
    summary: "Create or replace a job type's settings",
    tags: ["types"],
    params: typeParams,
    body: { $ref: "JobType#" },
    response: { 200: { $ref: "JobType#" }, 201: { $ref: "JobType#" }, ...errors },
  },
  "GET /v1/types/:type": {
    summary: "A job type's settings",
    tags: ["types"],
    params: typeParams,
    response: { 200: { $ref: "JobType#" }, ...errors },
  },
  "DELETE /v1/types/:type": {
    summary: "Forget a job type's settings (its jobs stay)",
    tags: ["types"],
    params: typeParams,
    response: { 204: { type: "null" }, ...errors },
  },
  "GET /v1/types": {
    summary: "Every job type's settings",
    tags: ["types"],
    response: {
      200: {
        type: "object",
        required: ["types"],
        properties: { types: { type: "array", items: { $ref: "JobType#" } } },
      },
      ...errors,
    },
  },
  "PUT /v1/schedules/:name": {
    summary: "Create or replace a cron schedule",
    tags: ["schedules"],
    params: nameParams,
    body: {
      type: "object",
      required: ["cron", "type"],
      additionalProperties: false,
      properties: {
        cron: { type: "string", minLength: 1, maxLength: 128 },
        timezone: { type: "string", minLength: 1, maxLength: 64 },
        type: name,
        payload: {},
        options: {
          type: "object",
          additionalProperties: false,
          properties: omit(enqueueOptionProperties, "id", "delayMs", "runAt"),
        },
      },
    },
    response: { 200: { $ref: "Schedule#" }, ...errors },
  },
  "GET /v1/schedules/:name": {
    summary: "A schedule",
    tags: ["schedules"],
    params: nameParams,
    response: { 200: { $ref: "Schedule#" }, ...errors },
  },
  "DELETE /v1/schedules/:name": {
    summary: "Remove a schedule (jobs it enqueued stay)",
    tags: ["schedules"],
    params: nameParams,
    response: { 204: { type: "null" }, ...errors },
  },
  "GET /v1/schedules": {
    summary: "Every schedule",
    tags: ["schedules"],
    response: {
      200: {
        type: "object",
        required: ["schedules"],
        properties: { schedules: { type: "array", items: { $ref: "Schedule#" } } },
      },
      ...errors,
    },
  },
  "GET /v1/stats": {
    summary: "Counts by state, queue and type",
    tags: ["inspect"],
    response: {
      200: {
        type: "object",
        required: ["states", "scheduled", "retrying", "queues", "types", "oldestPendingAgeMs", "paused"],
        properties: {
          states: {
            ...countsByState,
            required: ["pending", "active", "completed", "dead", "cancelled", "expired"],
          },
          scheduled: { type: "integer" },
          retrying: { type: "integer" },
          queues: { type: "object", additionalProperties: countsByState },
          types: { type: "object", additionalProperties: countsByState },
          oldestPendingAgeMs: { type: "integer" },
          paused: { type: "array", items: { type: "string" }, description: "The paused queues" },
        },
      },
      ...errors,
    },
  },
  "GET /v1/stats/history": {
    summary:
      "Enqueues, completions and failed attempts per second, as this server saw them, over the last `seconds`",
    tags: ["inspect"],
    querystring: {
      type: "object",
      additionalProperties: false,
      properties: {
        seconds: { type: "string", pattern: "^[0-9]{1,4}$", description: "1 to 3600, default 300" },
      },
    },
    response: {
      200: {
        type: "object",
        description:
          "Columns, oldest first: `times[i]` (epoch milliseconds) starts the interval that the counts at `i` cover",
        required: ["intervalMs", "times", "enqueued", "completed", "failed"],
        properties: {
          intervalMs: { type: "integer" },
          times: { type: "array", items: { type: "integer" } },
          enqueued: { type: "array", items: { type: "integer" } },
          completed: { type: "array", items: { type: "integer" } },
          failed: { type: "array", items: { type: "integer" } },
        },
      },
      ...errors,
    },
  },
  "GET /v1/queues": {
    summary: "Every queue with its counts by state, and whether it is paused",
    tags: ["inspect"],
    response: {
      200: {
        type: "object",
        required: ["queues"],
        properties: {
          queues: {
            type: "array",
            items: {
              type: "object",
              required: ["name", "counts", "paused"],
              properties: {
                name: { type: "string" },
                counts: { type: "object", additionalProperties: { type: "integer" } },
                paused: { type: "boolean" },
              },
            },
          },
        },
      },
      ...errors,
    },
  },
  "POST /v1/queues/:name/pause": {
    summary: "Pause a queue: no worker takes its jobs until it is resumed (running jobs finish)",
    tags: ["queues"],
    params: queueParams,
    response: { 200: queuePause, ...errors },
  },
  "POST /v1/queues/:name/resume": {
    summary: "Resume a paused queue: its jobs are taken again at once",
    tags: ["queues"],
    params: queueParams,
    response: { 200: queuePause, ...errors },
  },
  "POST /v1/prune": {
    summary: "Delete finished jobs past their retention now",
    tags: ["inspect"],
    response: {
      200: { type: "object", required: ["deleted"], properties: { deleted: { type: "integer" } } },
      ...errors,
    },
  },
} as const;

/** The schedule shape, registered with the shared schemas. */
export const scheduleSchema = {
  $id: "Schedule",
  type: "object",
  required: ["name", "cron", "timezone", "type", "payload", "options", "nextRunAt"],
  properties: {
    name: { type: "string" },
    cron: { type: "string" },
    timezone: { type: "string" },
    type: { type: "string" },
    payload: {},
    options: { type: "object", additionalProperties: true },
    nextRunAt: { type: "string", format: "date-time" },
  },
} as const;

/** The route keys. */
export type RouteKey = keyof typeof routeSchemas;
