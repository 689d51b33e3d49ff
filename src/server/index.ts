/**
 * `errand/server`: errand's HTTP job server. JSON under `/v1`, an OpenAPI 3.1 document at
 * `/openapi.json`, Prometheus metrics at `/metrics`, bearer-token auth with roles, long-poll
 * leases for remote workers in any language, and push delivery to plain HTTP services.
 * @packageDocumentation
 */
export {
  Authenticator,
  type AuthOptions,
  loadTokens,
  type Permission,
  type Principal,
  parseTokens,
  ROLE_PERMISSIONS,
  ROLES,
  type Role,
  type TokenEntry,
} from "./auth.js";
export { type ErrorBody, HTTP_STATUS, toErrorResponse } from "./http-errors.js";
export {
  DEFAULT_MAX_JOB_TYPES,
  type JobTypeConfig,
  JobTypeRegistry,
  MAX_JOB_TYPES,
  type PushTarget,
  type TypePage,
} from "./job-types.js";
export { MAX_METRIC_NAMES, OTHER_LABEL, ServerMetrics } from "./metrics.js";
export { PushDelivery, type PushOptions, signPush } from "./push.js";
export { MAX_BULK, routeSchemas, sharedSchemas } from "./schemas.js";
export { createServer, type ErrandServerState, type ServerOptions } from "./server.js";
export {
  type HistoryCounter,
  MAX_HISTORY_SIZE,
  StatsHistory,
  type StatsHistoryResult,
} from "./stats-history.js";
