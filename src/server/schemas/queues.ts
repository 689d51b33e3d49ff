/** Schemas of the inspection and queue routes: stats, stats history, queues, pause, resume, prune. @module */
import { NAME_PATTERN } from "../../validation.js";
import { DEFAULT_HISTORY_SECONDS, DEFAULT_HISTORY_SIZE } from "../stats-history.js";
import { countQuery, countsByState, errors } from "./fields.js";

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

/** One type's `limits` entry in stats (TypeLimitStats). */
const typeLimits = {
  type: "object",
  required: ["heldBack", "busiestKeys"],
  properties: {
    heldBack: {
      type: "object",
      required: ["rateLimit", "keyConcurrency", "order", "exact"],
      description:
        "Ready jobs (pending, due, not expired, queue not paused) a claim now would not take, each counted once: order first, then keyConcurrency, then rateLimit (the key's window, then the type's)",
      properties: {
        rateLimit: { type: "integer", description: "held by the type's rateLimit or the key's keyRateLimit" },
        keyConcurrency: { type: "integer", description: "held by their key's keyConcurrency" },
        order: { type: "integer", description: "held by ordered: an earlier job of the key is unfinished" },
        exact: {
          type: "boolean",
          description:
            "false when the type has more ready jobs than stats reads (1,000): the counts are lower bounds",
        },
      },
    },
    busiestKeys: {
      type: "array",
      description: "Keys with the most ready plus running jobs, most first, at most 10",
      items: {
        type: "object",
        required: ["key", "ready", "active"],
        properties: { key: { type: "string" }, ready: { type: "integer" }, active: { type: "integer" } },
      },
    },
  },
} as const;

/** The inspection and queue routes' schemas, keyed by `"METHOD /path"`. */
export const queueRouteSchemas = {
  "GET /v1/stats": {
    summary: "Counts by state, queue and type",
    operationId: "getStats",
    tags: ["stats"],
    response: {
      200: {
        type: "object",
        description: "The store's counts now",
        required: [
          "states",
          "scheduled",
          "retrying",
          "queues",
          "types",
          "oldestPendingAgeMs",
          "paused",
          "limits",
        ],
        properties: {
          states: {
            ...countsByState,
            required: ["blocked", "pending", "active", "completed", "dead", "cancelled", "expired"],
          },
          scheduled: { type: "integer" },
          retrying: { type: "integer" },
          queues: { type: "object", additionalProperties: countsByState },
          types: { type: "object", additionalProperties: countsByState },
          oldestPendingAgeMs: { type: "integer" },
          paused: { type: "array", items: { type: "string" }, description: "The paused queues" },
          limits: {
            type: "object",
            description:
              "Per job type with a rate limit or per-key rule: its ready jobs a claim now would hold back, by rule, and its busiest keys",
            additionalProperties: typeLimits,
          },
        },
      },
      ...errors,
    },
  },
  "GET /v1/stats/history": {
    summary:
      "Enqueues, completions and failed attempts per second, as this server saw them, over the last `seconds`",
    operationId: "getStatsHistory",
    tags: ["stats"],
    querystring: {
      type: "object",
      additionalProperties: false,
      properties: {
        seconds: countQuery(
          DEFAULT_HISTORY_SIZE,
          DEFAULT_HISTORY_SECONDS,
          "How many seconds back, up to the hour this server keeps",
        ),
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
    operationId: "listQueues",
    tags: ["queues"],
    response: {
      200: {
        type: "object",
        description: "Every queue with jobs or paused, by name (byte order)",
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
    operationId: "pauseQueue",
    tags: ["queues"],
    params: queueParams,
    response: {
      200: { ...queuePause, description: "The queue is paused; `changed` is false when it already was" },
      ...errors,
    },
  },
  "POST /v1/queues/:name/resume": {
    summary: "Resume a paused queue: its jobs are taken again at once",
    operationId: "resumeQueue",
    tags: ["queues"],
    params: queueParams,
    response: {
      200: { ...queuePause, description: "The queue is running; `changed` is false when it was not paused" },
      ...errors,
    },
  },
  "POST /v1/prune": {
    summary: "Delete finished jobs past their retention now",
    operationId: "pruneJobs",
    tags: ["jobs"],
    response: {
      200: {
        type: "object",
        description: "How many jobs were deleted",
        required: ["deleted"],
        properties: { deleted: { type: "integer" } },
      },
      ...errors,
    },
  },
} as const;
