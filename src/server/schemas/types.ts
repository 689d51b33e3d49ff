/** Schemas of the job-type routes. @module */
import { errors, name, namePageQuery } from "./fields.js";

const typeParams = { type: "object", required: ["type"], properties: { type: name } } as const;

/** The job-type routes' schemas, keyed by `"METHOD /path"`. */
export const typeRouteSchemas = {
  "PUT /v1/types/:type": {
    summary:
      "Create or replace a job type's settings; 409 `LIMIT_REACHED` for a new type when the store holds the server's `maxJobTypes` (default 1,000)",
    description:
      "A `type` in the body may be left out; one that differs from the path's is refused with 400 `INVALID_REQUEST`.",
    operationId: "putJobType",
    tags: ["types"],
    params: typeParams,
    body: { $ref: "JobType#" },
    response: {
      200: { $ref: "JobType#", description: "The type's settings, replaced (its push `secret` never shown)" },
      201: { $ref: "JobType#", description: "The type's settings, created (its push `secret` never shown)" },
      ...errors,
    },
  },
  "GET /v1/types/:type": {
    summary: "A job type's settings",
    operationId: "getJobType",
    tags: ["types"],
    params: typeParams,
    response: {
      200: { $ref: "JobType#", description: "The type's settings (its push `secret` never shown)" },
      ...errors,
    },
  },
  "DELETE /v1/types/:type": {
    summary: "Forget a job type's settings (its jobs stay)",
    operationId: "deleteJobType",
    tags: ["types"],
    params: typeParams,
    response: { 204: { type: "null", description: "Forgotten; no body" }, ...errors },
  },
  "GET /v1/types": {
    summary: "A page of job types' settings by type name (byte order)",
    operationId: "listJobTypes",
    tags: ["types"],
    querystring: namePageQuery,
    response: {
      200: {
        type: "object",
        description: "A page of types; `nextCursor` is null on the last page",
        required: ["types", "nextCursor"],
        properties: {
          types: { type: "array", items: { $ref: "JobType#" } },
          nextCursor: { type: ["string", "null"], description: "null on the last page" },
        },
      },
      ...errors,
    },
  },
} as const;
