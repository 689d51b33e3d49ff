/** Schemas of the job-type routes. @module */
import { errors, name, namePageQuery } from "./fields.js";

const typeParams = { type: "object", required: ["type"], properties: { type: name } } as const;

/** The job-type routes' schemas, keyed by `"METHOD /path"`. */
export const typeRouteSchemas = {
  "PUT /v1/types/:type": {
    summary:
      "Create or replace a job type's settings; 409 `LIMIT_REACHED` for a new type when the store holds the server's `maxJobTypes` (default 1,000)",
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
    summary: "A page of job types' settings by type name (byte order)",
    tags: ["types"],
    querystring: namePageQuery,
    response: {
      200: {
        type: "object",
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
