/**
 * The schemas registered once by `$id` (`addSchema`) and listed as OpenAPI components; routes refer
 * to them as `"<Id>#"`.
 * @module
 */
import { JOB_STATES, SUMMARY_LEAVES_OUT } from "../../job.js";
import { MAX_ERROR_HISTORY, MAX_ERROR_STACK_LENGTH } from "../../validation.js";
import { PUSH_LIMITS } from "../job-types.js";
import { ERROR_CODES } from "./error-codes.js";
import {
  count,
  duration,
  name,
  nullableDate,
  omit,
  rateLimit,
  storedExponential,
  typeDefaultProperties,
} from "./fields.js";

/** A job's fields as the `Job` schema describes them; the `JobSummary` schema is these, less five. */
const jobProperties = {
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
    description: `The error history: one entry per failed attempt (or dependency failure), oldest first, the most recent ${MAX_ERROR_HISTORY} kept; each entry's \`attempt\` says which attempt it was.`,
    items: {
      type: "object",
      required: ["attempt", "message", "at"],
      properties: {
        attempt: { type: "integer" },
        message: { type: "string" },
        name: { type: "string" },
        stack: { type: "string", description: `Cut to ${MAX_ERROR_STACK_LENGTH} characters` },
        at: { type: "integer" },
        kind: { type: "string" },
        dependency: {
          type: "string",
          description: 'With `kind: "dependency_failed"`: the dependency that did not succeed',
        },
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
  dependsOn: {
    type: "array",
    items: { type: "string" },
    description: "Ids of the jobs this one waits for, in the order given",
  },
  blockedBy: {
    type: "integer",
    description: "Dependencies still unfinished while `blocked`; 0 otherwise",
  },
  onDependencyFailure: { type: "string", enum: ["cancel", "run"] },
  key: {
    type: ["string", "null"],
    description: "The job's key (a tenant, customer or account), given at enqueue",
  },
  debounceKey: {
    type: ["string", "null"],
    description:
      "The debounce key the job holds while it is pending and not started (later enqueues with it replace its payload and runAt)",
  },
  snoozes: {
    type: "integer",
    description: "Times a handler snoozed the job: attempts that did not count toward `maxAttempts`",
  },
} as const;

/** The fields every job answer carries, in the order of the job field table. */
const jobRequired = [
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
  "dependsOn",
  "blockedBy",
  "onDependencyFailure",
  "key",
  "debounceKey",
  "snoozes",
] as const;

/** `T` without the elements in `X`, as a tuple (what the schema's types are derived from). */
type Without<T extends readonly string[], X> = T extends readonly [
  infer H extends string,
  ...infer R extends readonly string[],
]
  ? H extends X
    ? Without<R, X>
    : readonly [H, ...Without<R, X>]
  : readonly [];

/** `list` without the elements of `drop`, in order, typed as the tuple it is. */
function without<T extends readonly string[], X extends string>(list: T, drop: readonly X[]): Without<T, X> {
  return list.filter((f) => !(drop as readonly string[]).includes(f)) as unknown as Without<T, X>;
}

/** The fields every job summary carries. */
const jobSummaryRequired = without(jobRequired, SUMMARY_LEAVES_OUT);

/** Shared schemas, registered with `addSchema` and listed as OpenAPI components. */
export const sharedSchemas = [
  {
    $id: "Error",
    type: "object",
    description:
      "Every error response. `code` is stable; branch on it, never on `message`. Each status's response says which codes it carries and what their `details` hold.",
    required: ["code", "message"],
    properties: {
      code: { type: "string", enum: ERROR_CODES },
      message: { type: "string" },
      details: { description: "Structured context for the code, or null" },
    },
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
    required: jobRequired,
    properties: {
      ...jobProperties,
      duplicate: {
        type: "boolean",
        description:
          "On enqueue: the id or unique key matched an existing job. When that job is one the caller may not read (a producer's view of another owner's job), the reply is only `{ id, duplicate }`.",
      },
    },
  },
  {
    $id: "JobSummary",
    type: "object",
    description:
      "A job without the fields whose size its callers decide (`payload`, `checkpoint`, `result`, `errors`, `dependsOn`): what `GET /v1/jobs?view=summary` answers, a few hundred bytes a job whatever the jobs carry. Read a job's whole record with `GET /v1/jobs/{id}`.",
    required: jobSummaryRequired,
    additionalProperties: false,
    properties: omit(jobProperties, ...SUMMARY_LEAVES_OUT),
  },
  {
    $id: "JobType",
    type: "object",
    description:
      "A job type's server-side settings: defaults applied at enqueue, and cluster-wide caps (per type, per key) and order at lease.",
    additionalProperties: false,
    properties: {
      type: name,
      ...typeDefaultProperties,
      concurrency: count,
      keyConcurrency: {
        ...count,
        description:
          "At most this many jobs of the type and one key running at once, cluster-wide (jobs without a key are not limited by it)",
      },
      ordered: {
        type: "boolean",
        description:
          "Jobs of the type with the same key start one at a time, in enqueue order (jobs without a key are not ordered)",
      },
      fair: {
        type: "boolean",
        description:
          "Keys take turns: when several keys have ready jobs of the type, leases take them round-robin across keys (priority still orders within a key; jobs without a key are one group). A job takes its turn when enqueued through a server that has this setting",
      },
      rateLimit: rateLimit(
        "At most `limit` jobs of the type start in any interval of `periodMs` (a sliding window), counted across every worker and server on the store; held-back jobs stay pending until the window has room",
      ),
      keyRateLimit: rateLimit(
        "As `rateLimit`, per key: each key of the type has its own window (jobs without a key are not limited by it)",
      ),
      push: {
        type: "object",
        description: "Push delivery: the server leases this type's jobs and POSTs each to `url`.",
        required: ["url"],
        additionalProperties: false,
        properties: {
          url: { type: "string", format: "uri", maxLength: PUSH_LIMITS.urlLength },
          secret: {
            type: "string",
            minLength: PUSH_LIMITS.secretLength.min,
            maxLength: PUSH_LIMITS.secretLength.max,
            writeOnly: true,
          },
          timeoutMs: {
            type: "integer",
            minimum: PUSH_LIMITS.timeoutMs.min,
            maximum: PUSH_LIMITS.timeoutMs.max,
          },
        },
      },
    },
  },
] as const;

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
