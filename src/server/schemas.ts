/**
 * The JSON schemas of errand's HTTP API: the one source for request validation (Fastify/ajv), the
 * OpenAPI 3.1 document at `/openapi.json`, and the shapes `errand/client` sends. Shared shapes are
 * registered once by `$id` and referenced as `"<Id>#"`.
 * @module
 */
import { jobRouteSchemas } from "./schemas/jobs.js";
import { queueRouteSchemas } from "./schemas/queues.js";
import { scheduleRouteSchemas } from "./schemas/schedules.js";
import { typeRouteSchemas } from "./schemas/types.js";
import { workerRouteSchemas } from "./schemas/worker-protocol.js";

export { scheduleSchema, sharedSchemas } from "./schemas/components.js";
export { enqueueJob, MAX_BULK } from "./schemas/fields.js";

/** Every route's schema, keyed by `"METHOD /path"`, in the order the server registers them. */
export const routeSchemas = {
  ...jobRouteSchemas,
  ...workerRouteSchemas,
  ...typeRouteSchemas,
  ...scheduleRouteSchemas,
  ...queueRouteSchemas,
} as const;

/** The route keys. */
export type RouteKey = keyof typeof routeSchemas;
