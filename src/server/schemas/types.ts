/** Schemas of the job-type routes. @module */
import { errors, name } from "./fields.js";

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
} as const;
