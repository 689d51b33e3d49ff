/**
 * Every error errand raises on purpose is an {@link ErrandError} with a stable string `code`.
 * Callers branch on `code`, never on the message; the server (a later module) maps each code to
 * one HTTP status.
 * @since 0.1.0
 */
export type ErrandErrorCode =
  /** A payload failed the job type's schema, or is not JSON-serialisable. */
  | "INVALID_PAYLOAD"
  /** A queue name is empty, too long or has characters outside the allowed pattern. */
  | "INVALID_QUEUE_NAME"
  /** A job type name is empty, too long or has characters outside the allowed pattern. */
  | "INVALID_TYPE_NAME"
  /** A schedule name is empty, too long or has characters outside the allowed pattern. */
  | "INVALID_SCHEDULE_NAME"
  /** A job id is empty, too long or has characters outside the allowed pattern. */
  | "INVALID_JOB_ID"
  /** A cron expression could not be parsed. */
  | "INVALID_CRON"
  /** A timezone is not a valid IANA zone. */
  | "INVALID_TIMEZONE"
  /** A date is not a valid `Date` (or ISO string / epoch milliseconds where accepted). */
  | "INVALID_DATE"
  /** A duration is negative, not finite, or an unreadable string. */
  | "INVALID_DURATION"
  /** An option is unknown or out of its bounds; the message names the field and the bound. */
  | "INVALID_OPTION"
  /** An attempt number is not a positive integer. */
  | "INVALID_ATTEMPT"
  /** `dependsOn` names a job that does not exist (or was pruned); nothing was stored. */
  | "DEPENDENCY_NOT_FOUND"
  /** An `enqueueFlow` graph has a cycle, a duplicate ref or a ref to nothing; nothing was stored. */
  | "INVALID_FLOW"
  /** A job's `key` (or a debounce key) is not a name of the allowed pattern and length. */
  | "INVALID_KEY"
  /** A `rateLimit` / `keyRateLimit` is not `{ limit, periodMs }` within bounds. */
  | "INVALID_RATE_LIMIT"
  /** A store URL names no known store, or cannot be opened. */
  | "INVALID_STORE_URL"
  /** A worker claimed a job whose type it has no handler for. */
  | "UNKNOWN_JOB_TYPE"
  /** The job does not exist. */
  | "JOB_NOT_FOUND"
  /**
   * The job exists but is in a state the operation does not apply to; or, for a retry or replay,
   * another blocked, pending or active job holds the job's `uniqueKey` (a waiting holder past its
   * `expiresAt` is expired instead, as an enqueue does).
   */
  | "INVALID_STATE"
  /** A bounded collection is full (a server's job types, `maxJobTypes`): remove one before adding another. */
  | "LIMIT_REACHED"
  /** The queue, worker or store has been closed. */
  | "CLOSED"
  /** The handler ran longer than its `timeoutMs`. */
  | "TIMEOUT"
  /** A handler asked not to be retried. */
  | "NON_RETRYABLE"
  /** The underlying datastore failed; `cause` holds the original error. */
  | "STORE_ERROR"
  /** A report (complete, fail, heartbeat, checkpoint) named an attempt that is not current; nothing changed. */
  | "STALE_ATTEMPT"
  /** An HTTP request was malformed: bad JSON, wrong types, unknown fields, too deeply nested. */
  | "INVALID_REQUEST"
  /** An HTTP request body was larger than the server's limit. */
  | "PAYLOAD_TOO_LARGE"
  /**
   * An HTTP request that changes something did not say `content-type: application/json`. The
   * server asks it of every such request, with a body or not, because a web page on another site
   * can send any other type (a form, a no-cors `fetch`) without the browser asking the server first.
   */
  | "UNSUPPORTED_MEDIA_TYPE"
  /** An HTTP request had no valid credentials. */
  | "UNAUTHORIZED"
  /** The credentials are valid but their role may not do this. */
  | "FORBIDDEN"
  /** Too many failed authentication attempts; try again later. */
  | "RATE_LIMITED"
  /** A job type, schedule or route that does not exist. */
  | "NOT_FOUND"
  /** The server or its store cannot be reached. */
  | "UNAVAILABLE"
  /** A fault errand did not expect (a bug); the server logs it and answers 500. */
  | "INTERNAL";

/**
 * The one error class errand throws deliberately.
 * @example
 * ```ts
 * try { await queue.enqueue(sendEmail, payload); }
 * catch (e) { if (e instanceof ErrandError && e.code === "INVALID_PAYLOAD") console.log(e.details); }
 * ```
 * @since 0.1.0
 */
export class ErrandError extends Error {
  /** `"ErrandError"`; each subclass gives its own. */
  override readonly name: string = "ErrandError";
  /** Structured context, for example the schema issues of an invalid payload. */
  readonly details: unknown;

  /**
   * @param code - what went wrong, for code to branch on (the message is for people).
   * @param options - `cause`: the fault underneath; `details`: structured context.
   */
  constructor(
    readonly code: ErrandErrorCode,
    message: string,
    options?: { cause?: unknown; details?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.details = options?.details;
  }
}

/**
 * Throw this from a handler to fail the job without retrying: it goes straight to `dead`.
 * @example `throw new NonRetryableError("the account was deleted")`
 * @since 0.1.0
 */
export class NonRetryableError extends ErrandError {
  /** `"NonRetryableError"`. */
  override readonly name = "NonRetryableError";
  /** Its code is `NON_RETRYABLE`; `cause` keeps the error underneath, if any. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("NON_RETRYABLE", message, options);
  }
}

/** Raised into a handler's `signal` (and recorded as the attempt's error) when `timeoutMs` passes. */
export class JobTimeoutError extends ErrandError {
  /** `"JobTimeoutError"`. */
  override readonly name = "JobTimeoutError";
  /** Its code is `TIMEOUT`; its message names `timeoutMs`. */
  constructor(timeoutMs: number) {
    super("TIMEOUT", `job exceeded its timeout of ${timeoutMs} ms`);
  }
}

/** True when `error` asks not to be retried: a {@link NonRetryableError} or any error with `retryable === false`. */
export function isNonRetryable(error: unknown): boolean {
  if (error instanceof NonRetryableError) return true;
  return (
    typeof error === "object" && error !== null && (error as { retryable?: unknown }).retryable === false
  );
}

/**
 * A `dependsOn` id that names no job, in the one wording every store and the server use (a client
 * must not tell which store, or which refusal, it met by the words).
 * @internal
 */
export function dependencyNotFound(id: string): ErrandError {
  return new ErrandError("DEPENDENCY_NOT_FOUND", `dependsOn names no job: ${JSON.stringify(id)}`, {
    details: { id },
  });
}

/**
 * A debounce key held by a waiting job of another type: debouncing onto it would give that job a
 * payload its own type never checked. The one wording every store uses.
 * @internal
 */
export function debounceKeyHeld(key: string, holderType: string, type: string): ErrandError {
  return new ErrandError(
    "INVALID_KEY",
    `debounce key ${JSON.stringify(key)} is held by a waiting job of type ${JSON.stringify(holderType)}, not ${JSON.stringify(type)}: a debounce key debounces the jobs of one type`,
    { details: { debounceKey: key, holderType, type } },
  );
}

/**
 * The refusal of a debounce key held by a waiting job of another owner: a debounce key debounces
 * the jobs of one owner (or of none), so one owner's enqueue never rewrites another's job. Names
 * neither owner: the one refused must not learn whose job holds the key.
 * @internal
 */
export function debounceKeyHeldByOwner(key: string): ErrandError {
  return new ErrandError(
    "INVALID_KEY",
    `debounce key ${JSON.stringify(key)} is held by a waiting job of another owner: a debounce key debounces the jobs of one owner`,
    { details: { debounceKey: key } },
  );
}

/**
 * The refusal of a new job's debounce key held by a waiting job the enqueue cannot debounce onto:
 * one of another owner ({@link debounceKeyHeldByOwner}, checked first, so nothing of that job is
 * named) or of another type ({@link debounceKeyHeld}).
 * @internal
 */
export function refuseHolder(
  key: string,
  job: { type: string; owner: string | null },
  holder: { type: string; owner: string | null },
): ErrandError {
  return holder.owner !== job.owner
    ? debounceKeyHeldByOwner(key)
    : debounceKeyHeld(key, holder.type, job.type);
}

/**
 * Wraps a fault from a datastore driver so every store reports it the same way, keeping the original
 * as `cause`. ErrandErrors pass through unchanged.
 */
export function storeError(operation: string, cause: unknown): ErrandError {
  if (cause instanceof ErrandError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new ErrandError("STORE_ERROR", `${operation} failed: ${message}`, { cause });
}
