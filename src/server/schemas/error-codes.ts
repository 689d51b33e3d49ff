/**
 * What the OpenAPI document says of errors: the codes each status can carry and what `details`
 * holds for each, built from {@link HTTP_STATUS} (the one table of codes and statuses), so a new
 * code is documented under its status the moment it is given one.
 * @module
 */
import type { ErrandErrorCode } from "../../errors.js";
import { HTTP_STATUS } from "../http-errors.js";

/** Every code an error response can carry, in the table's order. */
export const ERROR_CODES = Object.keys(HTTP_STATUS) as ErrandErrorCode[];

/** What `details` holds, for the codes that carry some; every other code's is null. */
export const ERROR_DETAILS: Partial<Record<ErrandErrorCode, string>> = {
  INVALID_REQUEST:
    "a schema refusal's errors, an array of `{ instancePath, keyword, params, message }` (Ajv's); null or an object naming the field for the server's own checks",
  INVALID_OPTION: "`{ field }`, with `min` / `max` or `maxLength` when a bound was passed",
  INVALID_DURATION: "`{ field }`, with `min` / `max` when a bound was passed",
  INVALID_DATE: "`{ field }`, with `min` / `max` when a bound was passed",
  INVALID_PAYLOAD: "the payload schema's issues, when a schema refused it",
  INVALID_FLOW: "the node at fault: `{ ref }` (with `dependsOn`), `{ id }`, or a cycle's `{ refs }`",
  STALE_ATTEMPT: "`{ state, attempt }`: the job's state and current attempt now",
  INVALID_STATE: "`{ state }`: the job's state, which the operation does not apply to",
  LIMIT_REACHED: "`{ limit }`: the bound reached (a server's `maxJobTypes`)",
  FORBIDDEN:
    "`{ role, needs }` (the permission the role lacks), `{ role, owner }`, or the refused `{ host }`, `{ origin }` or `{ secFetchSite }`",
  UNSUPPORTED_MEDIA_TYPE: "`{ contentType }` or `{ contentEncoding }`",
  RATE_LIMITED: "`{ retryAfterMs }`, also sent as `Retry-After` in seconds",
  UNAVAILABLE: "null, or `{ retryAfterMs }` when the server says when to come back (also as `Retry-After`)",
};

/**
 * The codes a response of `status` can carry: those the table gives that status, and
 * `INVALID_REQUEST` for 414 and 431 (a path or headers too long), which keep their own status.
 */
export function codesOf(status: number): ErrandErrorCode[] {
  if (status === 414 || status === 431) return ["INVALID_REQUEST"];
  return ERROR_CODES.filter((code) => HTTP_STATUS[code] === status);
}

/** `lead`, then the codes a response of `status` can carry, each with what its `details` hold. */
export function describeStatus(status: number, lead: string): string {
  const codes = codesOf(status).map((code) => {
    const details = ERROR_DETAILS[code];
    return details ? `\`${code}\` (details: ${details})` : `\`${code}\``;
  });
  return codes.length ? `${lead}. Codes: ${codes.join("; ")}.` : lead;
}

/** Why each documented error status is answered, before its codes. */
export const STATUS_LEADS: Readonly<Record<number, string>> = {
  400: "The request is malformed or a value is out of its bounds; nothing changed",
  401: "No credentials, or a token the server does not know",
  403: "The token's role may not do this, or the host or origin is refused",
  404: "No such job, type, schedule or route (for a producer, another owner's job is not found either)",
  409: "The job's state does not allow it, the attempt is not current, or a bound is reached; nothing changed",
  413: "The request body is larger than the server's bodyLimit",
  414: "A path segment longer than the router takes",
  415: "A change sent without `content-type: application/json`, compressed, or with a charset other than utf-8",
  429: "Too many failed logins from this client address: wait `Retry-After` seconds",
  431: "Request headers larger than the server takes",
  500: "The server failed (an `authorize` hook that returned what it may not, a bug); its log says why",
  503: "The store is unreachable, or the server is closing; retry later (`Retry-After` when given)",
};
