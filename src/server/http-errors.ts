import { STATUS_CODES } from "node:http";
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
  INVALID_FLOW: 400,
  INVALID_KEY: 400,
  INVALID_RATE_LIMIT: 400,
  DEPENDENCY_NOT_FOUND: 400,
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
  LIMIT_REACHED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  STORE_ERROR: 503,
  CLOSED: 503,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The JSON body of every error response. */
export interface ErrorBody {
  /** The {@link ErrandError} code: what clients branch on. */
  code: ErrandErrorCode;
  /** What went wrong, for people. */
  message: string;
  /** Structured context (`ErrandError.details`, a request's schema errors); null when there is none. */
  details?: unknown;
}

/**
 * Fastify's own refusals, by their `code`, as errand's codes: the router's (a path segment that is
 * not valid percent-encoding, one longer than any id or name), the content-type parsers' and the
 * body reader's. Each keeps Fastify's status where errand has no code of its own for it (414).
 */
const FASTIFY_CODES: ReadonlyMap<string, ErrandErrorCode> = new Map([
  ["FST_ERR_BAD_URL", "INVALID_REQUEST"],
  ["FST_ERR_MAX_PARAM_LENGTH", "INVALID_REQUEST"],
  ["FST_ERR_CTP_BODY_TOO_LARGE", "PAYLOAD_TOO_LARGE"],
  ["FST_ERR_CTP_INVALID_MEDIA_TYPE", "UNSUPPORTED_MEDIA_TYPE"],
  ["FST_ERR_CTP_EMPTY_JSON_BODY", "INVALID_REQUEST"],
  ["FST_ERR_CTP_INVALID_JSON_BODY", "INVALID_REQUEST"],
  ["FST_ERR_CTP_INVALID_CONTENT_LENGTH", "INVALID_REQUEST"],
  ["FST_ERR_NOT_FOUND", "NOT_FOUND"],
]);

/** Messages that say more than Fastify's (which quote the raw path, or name an internal limit). */
const FASTIFY_MESSAGES: ReadonlyMap<string, string> = new Map([
  ["FST_ERR_BAD_URL", "the path is not valid percent-encoding (each % must start a UTF-8 escape like %2F)"],
  [
    "FST_ERR_MAX_PARAM_LENGTH",
    "a path segment is longer than any job id (255 characters) or name (128) errand accepts",
  ],
]);

/** What a client is told of a store's failure (STORE_ERROR); the log has the store's own words. */
export const STORE_FAILED = "the store failed; the server's log says why";

/**
 * Turns anything thrown inside a route, or refused by Fastify before one ran, into a status and an
 * {@link ErrorBody}. The one place that does so: every error leaves the server in errand's shape.
 */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof ErrandError) {
    // A store's failure speaks of its internals (an address, a user, a driver's words): the
    // client learns the code, and the server's log (every 5xx, whole) why.
    const message = error.code === "STORE_ERROR" ? STORE_FAILED : error.message;
    return {
      status: HTTP_STATUS[error.code] ?? 500,
      body: { code: error.code, message, details: error.details ?? null },
    };
  }
  const e = error as { code?: unknown; statusCode?: unknown; validation?: unknown; message?: unknown };
  const message = typeof e?.message === "string" ? e.message : String(error);
  if (e?.validation) {
    return { status: 400, body: { code: "INVALID_REQUEST", message, details: e.validation } };
  }
  const fastifyCode = typeof e?.code === "string" ? e.code : "";
  const code = FASTIFY_CODES.get(fastifyCode) ?? (e?.statusCode === 413 ? "PAYLOAD_TOO_LARGE" : undefined);
  const status = typeof e?.statusCode === "number" ? e.statusCode : 0;
  if (code) {
    return {
      // 414 has no code of its own; every other status follows the code.
      status: status === 414 ? 414 : HTTP_STATUS[code],
      body: { code, message: FASTIFY_MESSAGES.get(fastifyCode) ?? message, details: null },
    };
  }
  if (status >= 400 && status < 500) {
    // Any other refusal of Fastify's: the client's fault, in errand's shape.
    return { status, body: { code: "INVALID_REQUEST", message, details: null } };
  }
  return { status: 500, body: { code: "INTERNAL", message: "internal error", details: null } };
}

/**
 * The raw HTTP response for a request Node refused before Fastify saw it (Fastify's
 * `clientErrorHandler`), in errand's shape like every other refusal: a request head over Node's
 * header limit (a path of some 16 KiB) is 431, a request that took too long to arrive 408, any
 * other unparsable request 400. Null when there is no one left to answer (the peer reset).
 */
export function clientErrorResponse(error: { code?: unknown }): string | null {
  if (error.code === "ECONNRESET") return null;
  let status = 400;
  let body: ErrorBody = {
    code: "INVALID_REQUEST",
    message: "the request is not valid HTTP/1.1",
    details: null,
  };
  if (error.code === "HPE_HEADER_OVERFLOW") {
    status = 431;
    body = {
      code: "INVALID_REQUEST",
      message: "the request's path and headers are longer than the server accepts (Node's header limit)",
      details: null,
    };
  } else if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    status = 408;
    body = { code: "TIMEOUT", message: "the request did not arrive in time", details: null };
  }
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`
  );
}
