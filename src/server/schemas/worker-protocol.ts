/**
 * Schemas of the remote-worker protocol: lease, complete, fail, heartbeat, checkpoint, release,
 * snooze, report.
 * @module
 */
import { MAX_ATTEMPTS_PER_REQUEST, MAX_COUNT, MAX_KEY_LENGTH, MAX_LIMIT } from "../../validation.js";
import { MAX_LEASE_WAIT_MS, MAX_REMOTE_LEASE_MS, MIN_LEASE_MS } from "../../worker/runner-options.js";
import {
  attempt,
  count,
  duration,
  errors,
  idParams,
  jobId,
  jobsReply,
  name,
  ok,
  reportedError,
  text,
} from "./fields.js";

/** How long a lease or heartbeat holds a job when it does not say: 30 s. */
export const DEFAULT_LEASE_MS = 30_000;

/** A lease's length, as a lease asks for it or a heartbeat extends it (from the moment it is written). */
const leaseMs = {
  type: "integer",
  minimum: MIN_LEASE_MS,
  maximum: MAX_REMOTE_LEASE_MS,
  default: DEFAULT_LEASE_MS,
} as const;

/** `retryable` of a failure: false sends the job to `dead` at once. */
const retryable = {
  type: "boolean",
  default: true,
  description:
    "`false`: the job goes to `dead` now. `true` (the default): retried after its backoff while attempts remain, unless the job is `at_most_once`",
} as const;

/** One item's result in a batch's answer, in the batch's order: its id and whether it took. */
const batchResult = {
  type: "object",
  required: ["id", "ok"],
  properties: { id: { type: "string" }, ok: { type: "boolean" } },
} as const;

/** The worker protocol's schemas, keyed by `"METHOD /path"`. */
export const workerRouteSchemas = {
  "POST /v1/lease": {
    summary: "Lease ready jobs for a remote worker; long-polls up to `waitMs` when none is ready",
    description:
      "Claims up to `limit` ready jobs and holds each for `leaseMs`: report each with the `attempt` it came with (complete, fail, release, snooze, or `/v1/report`), and heartbeat to hold it longer. With `waitMs`, an empty lease waits until a job is ready (answered the moment one is enqueued) or `waitMs` passes, then answers 200 `{ jobs: [] }`; a lease whose connection closes while it waits ends there.",
    operationId: "leaseJobs",
    tags: ["workers"],
    body: {
      type: "object",
      additionalProperties: false,
      properties: {
        types: {
          type: "array",
          items: name,
          minItems: 1,
          maxItems: 1000,
          description: "Only jobs of these types. Absent: jobs of any type",
        },
        queues: {
          description:
            "Queue names (each weight 1), or names with weights: a lease takes from the queues at random in proportion to their weights. Absent: `default` and the queues (retry queues included) of the job types this server knows, among `types` when given",
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
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_LIMIT,
          default: 1,
          description:
            "Most jobs in the answer; fewer when they would pass 32 MiB of JSON (the rest stay pending, their attempts unspent). A large lease is claimed in steps (64 jobs at the default `maxPayloadBytes` of 1 MB), none after the jobs pass 32 MiB",
        },
        leaseMs: {
          ...leaseMs,
          description:
            "How long each job is held (from the lease) before another worker may take it, unless a heartbeat extends it",
        },
        waitMs: {
          type: "integer",
          minimum: 0,
          maximum: MAX_LEASE_WAIT_MS,
          default: 0,
          description:
            "How long to wait for a job when none is ready (a long poll); 0: answer at once. A wait that ends without a job answers 200 `{ jobs: [] }`",
        },
        workerId: {
          ...text(MAX_KEY_LENGTH),
          minLength: 1,
          description:
            "Who holds the jobs, kept as each job's `workerId`. Absent: `remote:` and the client's address",
        },
        maxWeight: {
          ...count,
          description:
            "Total weight the worker has room for: the jobs leased have weights (`job.weight`, each counted as at most `weightCap`) summing to at most this, `limit` still bounding their number. Absent: no bound by weight",
        },
        weightCap: {
          ...count,
          description:
            "With `maxWeight`: a job counts as at most this much weight, so a job heavier than the room can still be leased alone. Absent: a job counts its whole weight",
        },
        ahead: {
          type: "integer",
          minimum: 0,
          maximum: MAX_COUNT,
          description:
            "Of the room asked for (`maxWeight`, or `limit` without it), how much is for jobs held before they can start (a prefetch buffer). A type with a rate limit or per-key rate limit is never leased ahead: its limit counts a start at the lease, so when a type leased has one, the lease takes at most the room less `ahead` (none when that leaves none, answered at once).",
        },
      },
    },
    response: {
      200: {
        type: "object",
        description:
          "The jobs leased, each `active` with its `attempt` and `leaseExpiresAt`; `{ jobs: [] }` when none was ready within `waitMs`",
        required: ["jobs"],
        properties: {
          ...jobsReply.properties,
          ahead: {
            type: "boolean",
            description:
              "`false` when a type leased has a rate limit or per-key rate limit: lease only what can start at once (`ahead` is taken off the room)",
          },
        },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/complete": {
    summary: "Complete an attempt; a stale attempt gets 409, a repeated identical complete 200",
    operationId: "completeJob",
    tags: ["workers"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt"],
      additionalProperties: false,
      properties: {
        attempt,
        result: { description: "Any JSON, kept as the job's `result`. Absent: null" },
      },
    },
    response: {
      200: {
        type: "object",
        description:
          "Completed; `duplicate: true` when this completion (same attempt, same result) had been written before",
        required: ["ok", "duplicate"],
        properties: { ok: { type: "boolean" }, duplicate: { type: "boolean" } },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/fail": {
    summary:
      "Fail an attempt: retried with backoff, or dead; a stale attempt gets 409, a repeated identical fail 200",
    operationId: "failJob",
    tags: ["workers"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "error"],
      additionalProperties: false,
      properties: { attempt, error: reportedError, retryable },
    },
    response: {
      200: {
        type: "object",
        description:
          "Failed: `pending` again at `runAt` (a retry), or `dead`; `duplicate: true` when this failure (same attempt, same error) had been recorded before and the job is still where it left it",
        required: ["ok", "state", "runAt", "duplicate"],
        properties: {
          ok: { type: "boolean" },
          state: { type: "string", enum: ["pending", "dead"] },
          runAt: { type: "string", format: "date-time" },
          duplicate: { type: "boolean" },
        },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/heartbeat": {
    summary: "Extend an attempt's lease; 409 when the attempt is no longer current (cancelled, lost)",
    operationId: "heartbeatJob",
    tags: ["workers"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt"],
      additionalProperties: false,
      properties: {
        attempt,
        leaseMs: {
          ...leaseMs,
          description: "The lease now runs until this long from now (not from its old end)",
        },
      },
    },
    response: { 200: { ...ok, description: "The lease was extended" }, ...errors },
  },
  "POST /v1/heartbeats": {
    summary:
      "Extend many attempts' leases in one request (one store write): each result says whether its attempt is still current. `pausedQueues` names the queues paused now, so a worker holding leased jobs it has not started can give back those of a paused queue",
    operationId: "heartbeatJobs",
    tags: ["workers"],
    body: {
      type: "object",
      required: ["jobs"],
      additionalProperties: false,
      properties: {
        jobs: {
          type: "array",
          minItems: 1,
          maxItems: MAX_ATTEMPTS_PER_REQUEST,
          items: {
            type: "object",
            required: ["id", "attempt"],
            additionalProperties: false,
            properties: { id: jobId, attempt },
          },
        },
        leaseMs: {
          ...leaseMs,
          description:
            "Each current attempt's lease now runs until this long from now (not from its old end)",
        },
      },
    },
    response: {
      200: {
        type: "object",
        description:
          "One result per job, in the request's order: `ok: false` where that attempt is no longer current (stop it)",
        required: ["results", "pausedQueues"],
        properties: {
          results: { type: "array", items: batchResult },
          pausedQueues: { type: "array", items: { type: "string" } },
        },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/checkpoint": {
    summary: "Save an attempt's progress; a retry sees it as `checkpoint`",
    operationId: "checkpointJob",
    tags: ["workers"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "data"],
      additionalProperties: false,
      properties: { attempt, data: {} },
    },
    response: { 200: { ...ok, description: "The checkpoint was saved" }, ...errors },
  },
  "POST /v1/jobs/:id/release": {
    summary: "Give an attempt back without using it up (a worker shutting down)",
    operationId: "releaseJob",
    tags: ["workers"],
    params: idParams,
    body: { type: "object", required: ["attempt"], additionalProperties: false, properties: { attempt } },
    response: { 200: { ...ok, description: "The job is pending again, its attempt unspent" }, ...errors },
  },
  "POST /v1/jobs/:id/snooze": {
    summary:
      "End an attempt without failing it: the job is pending again after `delayMs`, its errors untouched, and the attempt does not count toward `maxAttempts` (`job.snoozes` counts it); 409 when the attempt is not current",
    operationId: "snoozeJob",
    tags: ["workers"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "delayMs"],
      additionalProperties: false,
      properties: { attempt, delayMs: duration },
    },
    response: { 200: { ...ok, description: "The job is pending again, due after `delayMs`" }, ...errors },
  },
  "POST /v1/report": {
    summary:
      "Report many outcomes in one request (completions are written in one transaction); a snooze needs `delayMs`",
    operationId: "reportJobs",
    tags: ["workers"],
    body: {
      type: "object",
      required: ["reports"],
      additionalProperties: false,
      properties: {
        reports: {
          type: "array",
          minItems: 1,
          maxItems: MAX_ATTEMPTS_PER_REQUEST,
          items: {
            type: "object",
            required: ["id", "attempt", "outcome"],
            additionalProperties: false,
            properties: {
              id: jobId,
              attempt,
              outcome: { type: "string", enum: ["complete", "fail", "snooze"] },
              result: { description: 'With `outcome: "complete"`: the result. Absent: null' },
              error: {
                ...reportedError,
                description: 'With `outcome: "fail"`: what failed. Absent: the message "failed"',
              },
              retryable: { ...retryable, description: `With \`outcome: "fail"\`: ${retryable.description}` },
              delayMs: { ...duration, description: `With \`outcome: "snooze"\`: ${duration.description}` },
            },
          },
        },
      },
    },
    response: {
      200: {
        type: "object",
        description:
          "One result per report, in the request's order: `ok`, and `state` where it says more (`pending`, `dead`, `completed` for a repeated completion; a repeated failure is answered as the first was); `ok: false` with `code` (`STALE_ATTEMPT`, `JOB_NOT_FOUND`, …) where that report changed nothing",
        required: ["results"],
        properties: {
          results: {
            type: "array",
            items: {
              ...batchResult,
              properties: { ...batchResult.properties, code: { type: "string" }, state: { type: "string" } },
            },
          },
        },
      },
      ...errors,
    },
  },
} as const;
