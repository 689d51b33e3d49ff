/** Schemas of the schedule routes. @module */
import { MAX_CRON_LENGTH, MAX_TIMEZONE_LENGTH } from "../../validation.js";
import { enqueueOptionProperties, errors, name, namePageQuery, nameParams, omit } from "./fields.js";

/** The schedule routes' schemas, keyed by `"METHOD /path"`. */
export const scheduleRouteSchemas = {
  "PUT /v1/schedules/:name": {
    summary: "Create or replace a cron schedule",
    operationId: "putSchedule",
    tags: ["schedules"],
    params: nameParams,
    body: {
      type: "object",
      required: ["cron", "type"],
      additionalProperties: false,
      properties: {
        cron: { type: "string", minLength: 1, maxLength: MAX_CRON_LENGTH },
        timezone: { type: "string", minLength: 1, maxLength: MAX_TIMEZONE_LENGTH },
        type: name,
        payload: {},
        options: {
          type: "object",
          additionalProperties: false,
          properties: omit(enqueueOptionProperties, "id", "delayMs", "runAt", "expiresAt", "dependsOn"),
        },
      },
    },
    response: {
      200: { $ref: "Schedule#", description: "The schedule as stored, with its next run" },
      ...errors,
    },
  },
  "GET /v1/schedules/:name": {
    summary: "A schedule",
    operationId: "getSchedule",
    tags: ["schedules"],
    params: nameParams,
    response: { 200: { $ref: "Schedule#", description: "The schedule" }, ...errors },
  },
  "DELETE /v1/schedules/:name": {
    summary: "Remove a schedule (jobs it enqueued stay)",
    operationId: "deleteSchedule",
    tags: ["schedules"],
    params: nameParams,
    response: { 204: { type: "null", description: "Removed; no body" }, ...errors },
  },
  "GET /v1/schedules": {
    summary: "A page of schedules by name (byte order)",
    operationId: "listSchedules",
    tags: ["schedules"],
    querystring: namePageQuery,
    response: {
      200: {
        type: "object",
        description: "A page of schedules; `nextCursor` is null on the last page",
        required: ["schedules", "nextCursor"],
        properties: {
          schedules: { type: "array", items: { $ref: "Schedule#" } },
          nextCursor: { type: ["string", "null"], description: "null on the last page" },
        },
      },
      ...errors,
    },
  },
} as const;
