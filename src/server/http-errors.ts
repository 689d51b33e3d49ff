import { ErrandError, type ErrandErrorCode } from "../errors.js";

/**
 * The one place an {@link ErrandError} code becomes an HTTP status. Exhaustive by type: a new code
 * does not compile until it is given a status here. The client maps statuses back through the
 * `code` in the body, never through the status.
 * @since 0.1.0
 */
export const HTTP_STATUS: Readonly<Record<ErrandErrorCode, number>> = {
  INVALID_PAYLOAD: 400,
  INVALID_QUEUE_NAME: 400,
  INVALID_TYPE_NAME: 400,
  INVALID_SCHEDULE_NAME: 400,
  INVALID_JOB_ID: 400,
  INVALID_CRON: 400,
  INVALID_TIMEZONE: 400,
  INVALID_DATE: 400,
  INVALID_DURATION: 400,
  INVALID_OPTION: 400,
  INVALID_ATTEMPT: 400,
  INVALID_REQUEST: 400,
  INVALID_STORE_URL: 400,
  UNKNOWN_JOB_TYPE: 400,
  NON_RETRYABLE: 400,
  TIMEOUT: 408,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  JOB_NOT_FOUND: 404,
  NOT_FOUND: 404,
  INVALID_STATE: 409,
  STALE_ATTEMPT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  STORE_ERROR: 503,
  CLOSED: 503,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The JSON body of every error response. */
export interface ErrorBody {
  code: ErrandErrorCode;
  message: string;
  details?: unknown;
}

/** Turns anything thrown inside a route into a status and an {@link ErrorBody}. */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof ErrandError) {
    return {
      status: HTTP_STATUS[error.code] ?? 500,
      body: { code: error.code, message: error.message, details: error.details ?? null },
    };
  }
  const e = error as { code?: unknown; statusCode?: unknown; validation?: unknown; message?: unknown };
  const message = typeof e?.message === "string" ? e.message : String(error);
  if (e?.validation) {
    return { status: 400, body: { code: "INVALID_REQUEST", message, details: e.validation } };
  }
  if (e?.code === "FST_ERR_CTP_BODY_TOO_LARGE" || e?.statusCode === 413) {
    return { status: 413, body: { code: "PAYLOAD_TOO_LARGE", message, details: null } };
  }
  if (typeof e?.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    // Fastify's own refusals: bad JSON, empty body, unsupported media type, bad URL.
    return { status: e.statusCode, body: { code: "INVALID_REQUEST", message, details: null } };
  }
  return { status: 500, body: { code: "INTERNAL", message: "internal error", details: null } };
}
