/**
 * Schemas of the job routes: enqueue, flows, read, list, dependencies, dependents, cancel, retry,
 * replay, reschedule.
 * @module
 */
import { JOB_STATES } from "../../job.js";
import { LIST_SCAN, REDIS_LIST_SCAN } from "../../store/store.js";
import { MAX_DEPENDENCIES } from "../../validation.js";
import {
  duration,
  enqueuedJobsReply,
  enqueuedReply,
  enqueueJob,
  enqueueOptionProperties,
  errors,
  hiddenDuplicate,
  idParams,
  idsReply,
  instant,
  integer,
  jobId,
  jobKey,
  jobReply,
  listCursor,
  MAX_BULK,
  name,
  omit,
  pageLimit,
} from "./fields.js";

/**
 * One node of a flow: `{ ref, type, payload, dependsOn, ...options }`. `dependsOn` names other
 * nodes by ref, or stored jobs as `{ id }`.
 */
const flowNode = {
  type: "object",
  required: ["ref", "type"],
  additionalProperties: false,
  properties: {
    ref: { ...name, description: "The node's name within the flow; the reply's `jobs` is keyed by it" },
    type: name,
    payload: {},
    dependsOn: {
      type: "array",
      maxItems: MAX_DEPENDENCIES,
      description: "Refs of nodes of this flow, or `{ id }` of jobs already stored",
      items: {
        anyOf: [
          name,
          { type: "object", required: ["id"], additionalProperties: false, properties: { id: jobId } },
        ],
      },
    },
    // A node is one job that others may wait for; debounce decides which job it is.
    ...omit(enqueueOptionProperties, "dependsOn", "debounce"),
  },
} as const;

/** A flow's jobs by ref. */
const flowReply = {
  type: "object",
  required: ["jobs"],
  properties: {
    jobs: {
      type: "object",
      description: "Every node's job, keyed by its ref; `duplicate` marks jobs that already existed",
      additionalProperties: enqueuedReply,
    },
  },
} as const;

/** One dependency as a handler sees it (`ctx.dependencies()`). */
const jobDependency = {
  type: "object",
  required: ["id", "type", "state", "result"],
  description:
    "`type`, `state` and `result` are null when the dependency was pruned (or, for a producer, is another owner's)",
  properties: {
    id: { type: "string" },
    type: { type: ["string", "null"] },
    state: { type: ["string", "null"], enum: [...JOB_STATES, null] },
    result: {},
  },
} as const;

const pageQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: pageLimit,
    cursor: jobId,
  },
} as const;

/** The job routes' schemas, keyed by `"METHOD /path"`. */
export const jobRouteSchemas = {
  "POST /v1/jobs": {
    summary: "Enqueue one job, or many (`{ jobs: [...] }`) in one transaction",
    operationId: "enqueueJobs",
    tags: ["jobs"],
    querystring: {
      type: "object",
      additionalProperties: false,
      properties: {
        return: {
          type: "string",
          enum: ["jobs", "ids"],
          description:
            "`ids`: answer `{ ids }`, each job's id in the order given (a duplicate's: the id of the job holding it), not the jobs whole; for bulk loads",
        },
      },
    },
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
        description:
          "Every job already existed (`duplicate`): the job (one) or `{ jobs }` (many); `{ ids }` with `return=ids`",
        anyOf: [jobReply, hiddenDuplicate, enqueuedJobsReply, idsReply],
      },
      201: {
        description:
          "The job (one) or `{ jobs }` (many), `duplicate` marking jobs that already existed; `{ ids }` with `return=ids`",
        anyOf: [jobReply, hiddenDuplicate, enqueuedJobsReply, idsReply],
      },
      ...errors,
    },
  },
  "PUT /v1/jobs/:id": {
    summary:
      "Idempotent enqueue under a client-chosen id: 201 the first time, 200 with the existing job after",
    operationId: "enqueueJobWithId",
    tags: ["jobs"],
    params: idParams,
    body: {
      type: "object",
      required: ["type"],
      additionalProperties: false,
      properties: { type: name, payload: {}, ...omit(enqueueOptionProperties, "id") },
    },
    response: {
      200: { ...enqueuedReply, description: "A job with this id (or unique key) already existed: that job" },
      201: { ...jobReply, description: "The job, enqueued" },
      ...errors,
    },
  },
  "POST /v1/flows": {
    summary:
      "Enqueue a DAG of jobs in one transaction: every node or none; a node waits (`blocked`) for the nodes it depends on",
    operationId: "enqueueFlow",
    tags: ["flows"],
    body: {
      type: "object",
      required: ["jobs"],
      additionalProperties: false,
      properties: { jobs: { type: "array", minItems: 1, maxItems: MAX_DEPENDENCIES, items: flowNode } },
    },
    response: {
      200: { description: "Every node's job already existed (`duplicate`)", ...flowReply },
      201: { description: "Every node's job, by ref", ...flowReply },
      ...errors,
    },
  },
  "GET /v1/jobs/:id": {
    summary: "A job, whatever its state (for a producer: only its own jobs; others are 404)",
    operationId: "getJob",
    tags: ["jobs"],
    params: idParams,
    response: { 200: { ...jobReply, description: "The job" }, ...errors },
  },
  "GET /v1/jobs": {
    summary: "A page of jobs, newest first (for a producer: only its own jobs)",
    description: `A page with a state, queue, type or key filter reads at most ${LIST_SCAN.toLocaleString("en")} jobs of each table the store walks (${REDIS_LIST_SCAN.toLocaleString("en")} on Redis), so it may hold fewer than \`limit\` jobs, even none, and still have a \`nextCursor\`: page on until \`nextCursor\` is null. A page also stops short of \`limit\` at 32 MiB of JSON.`,
    operationId: "listJobs",
    tags: ["jobs"],
    querystring: {
      type: "object",
      additionalProperties: false,
      properties: {
        state: { type: "string", enum: [...JOB_STATES] },
        queue: name,
        type: name,
        owner: { ...name, description: "Only this owner's jobs (a producer sees only its own anyway)" },
        key: { ...jobKey, description: "Only jobs with this key (a name, else INVALID_KEY)" },
        limit: pageLimit,
        cursor: listCursor,
        view: {
          type: "string",
          enum: ["full", "summary"],
          default: "full",
          description:
            "`full`: each job whole (`Job`). `summary`: each job without its payload, checkpoint, result, error history and dependency ids (`JobSummary`), for lists that show none of them; the filters, `limit` and cursors work the same",
        },
      },
    },
    response: {
      200: {
        description:
          "A page of jobs, newest first, as `view` asks: whole jobs, or summaries; `nextCursor` is null on the last page",
        anyOf: [
          {
            type: "object",
            description: "`view=full` (the default): each job whole",
            required: ["jobs", "nextCursor"],
            properties: {
              jobs: { type: "array", items: jobReply },
              nextCursor: { type: ["string", "null"] },
            },
          },
          {
            type: "object",
            description: "`view=summary`: each job as a `JobSummary`",
            required: ["jobs", "nextCursor"],
            properties: {
              jobs: { type: "array", items: { $ref: "JobSummary#" } },
              nextCursor: { type: ["string", "null"] },
            },
          },
        ],
      },
      ...errors,
    },
  },
  "GET /v1/jobs/:id/dependencies": {
    summary:
      "The jobs this one waits for, in its `dependsOn` order, with their states and results (also for the worker role)",
    operationId: "getJobDependencies",
    tags: ["flows"],
    params: idParams,
    response: {
      200: {
        type: "object",
        description: "Each dependency with its state and result (null fields for a pruned one)",
        required: ["dependencies"],
        properties: { dependencies: { type: "array", items: jobDependency } },
      },
      ...errors,
    },
  },
  "GET /v1/jobs/:id/dependents": {
    summary: "A page of the jobs waiting on this one, in id order (for a producer: only its own)",
    operationId: "listJobDependents",
    tags: ["flows"],
    params: idParams,
    querystring: pageQuery,
    response: {
      200: {
        type: "object",
        description: "A page of dependents; `nextCursor` is null on the last page",
        required: ["jobs", "nextCursor"],
        properties: { jobs: { type: "array", items: jobReply }, nextCursor: { type: ["string", "null"] } },
      },
      ...errors,
    },
  },
  "POST /v1/jobs/:id/cancel": {
    summary: "Cancel a blocked, pending or active job",
    operationId: "cancelJob",
    tags: ["jobs"],
    params: idParams,
    response: { 200: { ...jobReply, description: "The job, cancelled" }, ...errors },
  },
  "POST /v1/jobs/:id/retry": {
    summary:
      "Put a dead, cancelled or expired job back to pending (blocked while some of its dependencies are unfinished)",
    operationId: "retryJob",
    tags: ["jobs"],
    params: idParams,
    response: { 200: { ...jobReply, description: "The job, pending (or blocked) again" }, ...errors },
  },
  "POST /v1/jobs/:id/replay": {
    summary: "Enqueue a finished job's type and payload again under a new id",
    operationId: "replayJob",
    tags: ["jobs"],
    params: idParams,
    response: { 201: { ...jobReply, description: "The new job" }, ...errors },
  },
  "POST /v1/jobs/:id/reschedule": {
    summary:
      "Move a pending job in time, priority or queue (a blocked one: what applies once it is unblocked)",
    operationId: "rescheduleJob",
    tags: ["jobs"],
    params: idParams,
    body: {
      type: "object",
      additionalProperties: false,
      properties: { runAt: instant, delayMs: duration, priority: integer, queue: name },
    },
    response: { 200: { ...jobReply, description: "The job, rescheduled" }, ...errors },
  },
} as const;
