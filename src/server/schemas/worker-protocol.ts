/**
 * Schemas of the remote-worker protocol: lease, complete, fail, heartbeat, checkpoint, release,
 * snooze, report.
 * @module
 */
import { MAX_ATTEMPTS_PER_REQUEST, MAX_COUNT, MAX_KEY_LENGTH } from "../../validation.js";
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

/** A lease's length when a heartbeat extends it. */
const leaseMs = { type: "integer", minimum: MIN_LEASE_MS, maximum: MAX_REMOTE_LEASE_MS } as const;

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
        leaseMs,
        waitMs: { type: "integer", minimum: 0, maximum: MAX_LEASE_WAIT_MS },
        workerId: { ...text(MAX_KEY_LENGTH), minLength: 1 },
        maxWeight: count,
        weightCap: count,
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
      properties: { attempt, leaseMs },
    },
    response: { 200: ok, ...errors },
  },
  "POST /v1/heartbeats": {
    summary:
      "Extend many attempts' leases in one request (one store write): each result says whether its attempt is still current. `pausedQueues` names the queues paused now, so a worker holding leased jobs it has not started can give back those of a paused queue",
    tags: ["worker"],
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
        leaseMs,
      },
    },
    response: {
      200: {
        type: "object",
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
  "POST /v1/jobs/:id/snooze": {
    summary:
      "End an attempt without failing it: the job is pending again after `delayMs`, its errors untouched, and the attempt does not count toward `maxAttempts` (`job.snoozes` counts it); 409 when the attempt is not current",
    tags: ["worker"],
    params: idParams,
    body: {
      type: "object",
      required: ["attempt", "delayMs"],
      additionalProperties: false,
      properties: { attempt, delayMs: duration },
    },
    response: { 200: ok, ...errors },
  },
  "POST /v1/report": {
    summary:
      "Report many outcomes in one request (completions are written in one transaction); a snooze needs `delayMs`",
    tags: ["worker"],
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
              result: {},
              error: reportedError,
              retryable: { type: "boolean" },
              delayMs: { ...duration, description: `With \`outcome: "snooze"\`: ${duration.description}` },
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
