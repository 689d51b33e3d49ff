/** Schemas of the job routes: enqueue, read, list, cancel, retry, replay, reschedule. @module */
import { JOB_STATES } from "../../job.js";
import {
  duration,
  enqueueJob,
  enqueueOptionProperties,
  errors,
  idParams,
  instant,
  integer,
  jobId,
  jobReply,
  jobsReply,
  MAX_BULK,
  name,
  omit,
} from "./fields.js";

/** The job routes' schemas, keyed by `"METHOD /path"`. */
export const jobRouteSchemas = {
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
} as const;
