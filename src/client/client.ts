import type { BackoffFunction, BackoffOptions } from "../backoff.js";
import { type AnyJobDefinition, type JobDefinition, validatePayload } from "../define-job.js";
import { type Duration, MAX_TIMER_MS, toMs } from "../duration.js";
import { type BatchItem, planEnqueue } from "../enqueue-plan.js";
import { ErrandError, type ErrandErrorCode, isNonRetryable } from "../errors.js";
import { jsonOf } from "../failure-rule.js";
import type { FlowNode } from "../flow-plan.js";
import { JOB_STATES, type Job, type JobDependency, type JobSummary, jobDate } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import { toNameRecord } from "../name-record.js";
import type {
  EnqueuedJob,
  EnqueueOptions,
  FailOptions,
  FlowResult,
  JobPage,
  JobSummaryPage,
  LeaseOptions,
  ListOptions,
  ListViewOptions,
  QueueStats,
  Schedule,
  ScheduleOptions,
  SchedulePage,
  SchedulePageOptions,
  TypePageOptions,
} from "../queue.js";
import { checkListOptions, checkObject, checkRef } from "../queue-checks.js";
import type { AttemptRef } from "../store/store.js";
import {
  checkInt,
  checkJobId,
  checkQueueName,
  checkScheduleName,
  checkTypeName,
  describe,
  JOB_ID_PATTERN,
  MAX_ATTEMPT,
  MAX_ATTEMPTS_PER_REQUEST,
  MAX_ERROR_NAME_LENGTH,
  MAX_ERROR_STACK_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  MAX_PAYLOAD_BYTES,
  MAX_TOKEN_LENGTH,
  sanitizeText,
  toJsonText,
} from "../validation.js";
import { MAX_LEASE_WAIT_MS } from "../worker/runner-options.js";

/**
 * Options for an {@link ErrandClient}.
 * @since 0.1.0
 */
export interface ClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** A bearer token; its role decides what the client may do. */
  token?: string;
  /**
   * How long a request may take (a lease's `waitMs` is added to it), 1 ms to
   * {@link MAX_CLIENT_TIMEOUT_MS}. @defaultValue 30_000
   */
  timeoutMs?: Duration;
  /** The fetch every request goes through (a test double, a proxy's). @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /**
   * The largest answer the client reads, in bytes, 1 to {@link MAX_RESPONSE_BYTES}: a longer one
   * (by its `Content-Length`, or as it arrives) is cut off and refused with `PAYLOAD_TOO_LARGE`,
   * never read whole into memory. An answer is as large as what the call asks for: a lease of
   * 1,000 jobs or a page of full jobs carries their payloads, results and error histories.
   * @defaultValue 268_435_456 (256 MiB, the largest `maxPayloadBytes`)
   * @since 0.3.0
   */
  maxResponseBytes?: number;
}

/** A job type's settings on a server (see `errand/server`'s JobTypeConfig). */
export interface RemoteJobType {
  /** The type's name. */
  type: string;
  /** The queue the type's jobs go to. */
  queue?: string;
  /** Higher runs first within a queue. */
  priority?: number;
  /** How much of a worker's concurrency a running job takes. */
  weight?: number;
  /** Attempts before a job is `dead`, the first included. */
  maxAttempts?: number;
  /** A function policy cannot travel over HTTP: give the type's handler-side definition one instead. */
  backoff?: Exclude<BackoffOptions, BackoffFunction>;
  /** Retries go to this queue instead of the job's own. */
  retryQueue?: string;
  /** Each attempt fails after this long: ms, or a duration string (`"5m"`). */
  timeoutMs?: number | string;
  /** `"at_least_once"` retries after crashes; `"at_most_once"` never starts a job twice. */
  delivery?: "at_least_once" | "at_most_once";
  /** What the type's blocked jobs do when a dependency ends dead, cancelled or expired. */
  onDependencyFailure?: "cancel" | "run";
  /** At most this many jobs of the type running at once, cluster-wide. */
  concurrency?: number;
  /** At most this many jobs of the type and one key running at once, cluster-wide. */
  keyConcurrency?: number;
  /** Jobs of the type with the same key start one at a time, in enqueue order. */
  ordered?: boolean;
  /** Keys take turns: claims go round-robin across the type's keys (no key: one group). */
  fair?: boolean;
  /** At most `limit` starts of the type in any interval of `periodMs`, cluster-wide. */
  rateLimit?: { limit: number; periodMs: number | string };
  /** As `rateLimit`, per key. */
  keyRateLimit?: { limit: number; periodMs: number | string };
  /** Where the server pushes the type's jobs; the server never sends `secret` back. */
  push?: { url: string; secret?: string; timeoutMs?: number };
}

/** A page of {@link ErrandClient.typePage}, by type name. */
export interface RemoteTypePage {
  /** This page's types, by name in byte order. */
  types: RemoteJobType[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Options for {@link ErrandClient.lease}: the Queue's, plus how long to wait for a job. (Not
 * `maintenance`: the server decides that.)
 */
export interface RemoteLeaseOptions extends Omit<LeaseOptions, "leaseMs" | "maintenance"> {
  /**
   * How long each claimed job is held before another worker may take it, unless a heartbeat
   * extends the lease: 100 ms to 1 day (the server's bound).
   * @defaultValue 30_000
   */
  leaseMs?: number;
  /** Long-poll: wait up to this long for a job when none is ready. @defaultValue 0 */
  waitMs?: number;
  /**
   * Aborts the request while it waits for the server's answer (a worker closing): the server gives
   * back what a claim under way took for it. Once the answer has begun it is read whole (bounded by
   * the client's `timeoutMs` plus `waitMs`), so the jobs it carries reach the caller, who must give
   * them back (`release`).
   */
  signal?: AbortSignal;
}

/**
 * Options for {@link ErrandClient.list}: the Queue's, `view` included.
 * @since 0.3.0
 */
export type RemoteListOptions = ListViewOptions;

export type { JobSummaryPage };

/** One outcome for {@link ErrandClient.report}; a snooze is pending again after `delayMs`. */
export type ReportItem = AttemptRef &
  (
    | {
        /** The attempt succeeded. */
        outcome: "complete";
        /** What the handler returned (JSON-serialisable). @defaultValue null */
        result?: unknown;
      }
    | {
        /** The attempt failed: the job retries with its backoff, or is `dead`. */
        outcome: "fail";
        /** What the handler threw; its message, name (or `code`) and stack are kept. */
        error: unknown;
        /** `false` sends the job straight to `dead`. */
        retryable?: boolean;
      }
    | {
        /** The attempt ends without counting: the job is pending again after `delayMs`. */
        outcome: "snooze";
        /** How long until the job is due again. */
        delayMs: Duration;
      }
  );

const DATE_FIELDS = ["runAt", "expiresAt", "leaseExpiresAt", "createdAt", "startedAt", "finishedAt"] as const;

/** Turns a job from JSON (ISO strings) into a {@link Job} (Dates). */
export function reviveJob<J extends Job>(wire: Record<string, unknown>): J {
  const job: Record<string, unknown> = { ...wire };
  for (const f of DATE_FIELDS) {
    const v = job[f];
    job[f] = v === null || v === undefined ? null : jobDate(Date.parse(v as string));
  }
  return job as J;
}

/**
 * An error as the server's fail endpoint takes it, already as the server keeps it: its text cut to
 * the bounds a failure is recorded with (the stack to {@link MAX_ERROR_STACK_LENGTH}: the server
 * takes up to {@link MAX_ERROR_TEXT_LENGTH} from older clients, and cuts it) and made text every
 * store keeps. U+0000 or a lone surrogate, which the server's schema refuses, would otherwise lose
 * the failure to a 400; a raw slice could leave a lone surrogate of its own.
 */
export function wireError(error: unknown): { message: string; name?: string; stack?: string } {
  // Never throws, whatever a handler threw (a BigInt, a cycle, a throwing getter, a Proxy), as a
  // Queue's failure record never does: a throw here would lose the failure.
  try {
    if (error instanceof Error) {
      const code = (error as { code?: unknown }).code;
      const message = error.message;
      const stack = error.stack;
      return {
        message: sanitizeText(typeof message === "string" ? message : jsonOf(message), MAX_ERROR_TEXT_LENGTH),
        name: sanitizeText(String(typeof code === "string" ? code : error.name), MAX_ERROR_NAME_LENGTH),
        ...(typeof stack === "string" && stack ? { stack: sanitizeText(stack, MAX_ERROR_STACK_LENGTH) } : {}),
      };
    }
    return {
      message: sanitizeText(typeof error === "string" ? error : jsonOf(error), MAX_ERROR_TEXT_LENGTH),
    };
  } catch {
    return { message: sanitizeText(describe(error), MAX_ERROR_TEXT_LENGTH) };
  }
}

/**
 * The longest `timeoutMs` a client takes: a lease's `waitMs` (up to 2 minutes) is added to it,
 * and the sum must stay a timer Node can set.
 */
export const MAX_CLIENT_TIMEOUT_MS = MAX_TIMER_MS - MAX_LEASE_WAIT_MS;
/**
 * The largest `maxResponseBytes`: the longest string V8 makes (0x1fffffe8 characters), since an
 * answer is read as one. Past it, reading failed only after the whole answer was in memory.
 * @since 0.3.0
 */
export const MAX_RESPONSE_BYTES = 0x1fffffe8;
/** The longest server URL a client takes. */
const MAX_URL_LENGTH = 2048;
const CLIENT_KEYS = new Set(["url", "token", "timeoutMs", "fetch", "maxResponseBytes"]);

/**
 * Refuses, when the client is made, what would make every request fail later with a TypeError
 * from fetch or a timer (a URL fetch cannot use, a token with a line break, a NaN timeout).
 */
function checkClientOptions(o: ClientOptions): {
  url: string;
  token: string | undefined;
  timeoutMs: number;
  fetch: typeof fetch;
  maxResponseBytes: number;
} {
  if (typeof o !== "object" || o === null) {
    throw new ErrandError(
      "INVALID_OPTION",
      `ErrandClient: give a URL or an options object, got ${describe(o)}`,
    );
  }
  checkKnownKeys("ErrandClient", o, CLIENT_KEYS);
  if (typeof o.url !== "string" || o.url.length === 0 || o.url.length > MAX_URL_LENGTH) {
    throw new ErrandError(
      "INVALID_OPTION",
      `ErrandClient: url must be an http(s) URL of at most ${MAX_URL_LENGTH} characters, got ${describe(o.url)}`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(o.url);
  } catch {
    throw new ErrandError("INVALID_OPTION", `ErrandClient: url is not a URL: ${describe(o.url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ErrandError(
      "INVALID_OPTION",
      `ErrandClient: url must be http: or https:, got ${parsed.protocol}`,
    );
  }
  if (
    parsed.username ||
    parsed.password ||
    parsed.search ||
    parsed.hash ||
    o.url.includes("#") ||
    o.url.includes("?")
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      "ErrandClient: url must name the server alone (no credentials, query or fragment: give the token as `token`)",
    );
  }
  if (
    o.token !== undefined &&
    (typeof o.token !== "string" ||
      o.token.length > MAX_TOKEN_LENGTH ||
      !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(o.token))
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `ErrandClient: token must be 1 to ${MAX_TOKEN_LENGTH} printable ASCII characters, not starting or ending with a space (an HTTP header carries it)`,
    );
  }
  const timeoutMs = toMs("timeoutMs", o.timeoutMs ?? 30_000, MAX_CLIENT_TIMEOUT_MS);
  if (timeoutMs < 1)
    throw new ErrandError("INVALID_DURATION", `timeoutMs must be at least 1 ms, got ${timeoutMs}`);
  if (o.fetch !== undefined && typeof o.fetch !== "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      `ErrandClient: fetch must be a function, got ${describe(o.fetch)}`,
    );
  }
  const maxResponseBytes = checkInt(
    "ErrandClient: maxResponseBytes",
    o.maxResponseBytes ?? MAX_PAYLOAD_BYTES,
    1,
    MAX_RESPONSE_BYTES,
  );
  return {
    url: o.url.replace(/\/+$/, ""),
    token: o.token,
    timeoutMs,
    fetch: o.fetch ?? globalThis.fetch,
    maxResponseBytes,
  };
}

/**
 * errand over HTTP, with the same methods as {@link Queue}: enqueue, inspect, change, schedule,
 * and the lease API for remote runners. Errors are {@link ErrandError}s with the server's code;
 * a report for a stale attempt resolves `false`, as on a local queue.
 * @example
 * ```ts
 * const client = new ErrandClient({ url: "http://127.0.0.1:8080", token: process.env.ERRAND_TOKEN });
 * await client.enqueue("send-email", { to: "a@b.c" }, { delayMs: "2h" });
 * ```
 * @since 0.1.0
 */
export class ErrandClient {
  /** The server's base URL, without trailing slashes. */
  readonly url: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #maxResponseBytes: number;

  /**
   * @throws ErrandError `INVALID_OPTION` for a URL that is not http(s) (or carries credentials, a
   * query or a fragment), a token no HTTP header can carry, a `timeoutMs` outside 1 ms to
   * {@link MAX_CLIENT_TIMEOUT_MS}, a `fetch` that is not a function, a `maxResponseBytes` that is
   * not an integer from 1 to {@link MAX_RESPONSE_BYTES}, or an unknown option.
   */
  constructor(options: ClientOptions | string) {
    const o = checkClientOptions(typeof options === "string" ? { url: options } : options);
    this.url = o.url;
    this.#token = o.token;
    this.#timeoutMs = o.timeoutMs;
    this.#fetch = o.fetch;
    this.#maxResponseBytes = o.maxResponseBytes;
  }

  /**
   * One request. Resolves the parsed body of a 2xx answer (undefined for 204).
   *
   * `signal` aborts the request, and rejects with its reason. With `keepAnswer`, it aborts only
   * until the server's answer begins (fetch resolved: its status and headers arrived); from then on
   * the body is read whole, bounded by the timeout alone, since an answer cut in flight may carry
   * what the server has already done for the caller (a lease's jobs). A body that still fails to
   * arrive (the connection drops mid-way) is `UNAVAILABLE`, and what it carried is lost to the
   * caller. `leaseAhead` sets it.
   *
   * Every request is bounded: by `timeoutMs` (headers and body, even through a `fetch` option that
   * ignores its signal) and by `maxResponseBytes`. No redirect is followed.
   * @throws ErrandError with the server's code; for an answer that is not errand's, a code by its
   *   status (`UNAUTHORIZED` 401, `FORBIDDEN` 403, `NOT_FOUND` 404, `PAYLOAD_TOO_LARGE` 413,
   *   `RATE_LIMITED` 429 with `details.retryAfterMs` from `Retry-After`, `UNAVAILABLE` 502–504,
   *   otherwise `INTERNAL`); `UNAVAILABLE` when the server cannot be reached, does not answer within
   *   the timeout, redirects, or answers a 2xx that is not JSON; `PAYLOAD_TOO_LARGE` for an answer
   *   past `maxResponseBytes`.
   */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    options: { signal?: AbortSignal; timeoutMs?: number; keepAnswer?: boolean } = {},
  ): Promise<{ status: number; body: T }> {
    // A path step `.` or `..` (an id no URL can carry: fetch resolves it away) would ask for another route.
    if (
      path
        .split("?", 1)[0]!
        .split("/")
        .some((step) => /^(?:\.|%2e){1,2}$/i.test(step))
    ) {
      throw new ErrandError(
        "INVALID_JOB_ID",
        `job ids "." and ".." cannot be sent in a URL (${method} ${path})`,
      );
    }
    const headers: Record<string, string> = {};
    // The server asks every change for JSON, body or not: a web page on another site cannot send it.
    if (body !== undefined || (method !== "GET" && method !== "HEAD")) {
      headers["content-type"] = "application/json";
    }
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let json: string | undefined;
    try {
      json = body === undefined ? undefined : JSON.stringify(body);
    } catch (cause) {
      // A cycle, a BigInt, a throwing toJSON: the caller's value, not the server's fault.
      throw new ErrandError(
        "INVALID_PAYLOAD",
        `${method} ${path}: the body cannot be sent as JSON: ${cause instanceof Error ? cause.message : describe(cause)}`,
        { cause },
      );
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    // With keepAnswer, the caller's signal reaches fetch only until the answer begins. A request
    // made in this event-loop turn is cut at once (it may not have gone out: then it never does).
    // One made earlier is cut once the promise jobs queued now have run (a nextTick queued from
    // one runs after them all), never after I/O: an answer whose head is in, its fetch resolved
    // and the code awaiting it not yet run (behind a fetch wrapper, say), is kept, and the server
    // sees the connection close as soon as it would have.
    const caller = options.keepAnswer && options.signal ? new AbortController() : undefined;
    let answered = false;
    let sameTurn = caller !== undefined;
    if (caller) setImmediate(() => (sameTurn = false));
    const cut = () => {
      if (!answered) caller?.abort(options.signal?.reason);
    };
    const cutOff = () => (sameTurn ? cut() : process.nextTick(cut));
    if (caller) {
      if (options.signal!.aborted) caller.abort(options.signal!.reason);
      else options.signal!.addEventListener("abort", cutOff, { once: true });
    }
    const given = caller?.signal ?? options.signal;
    const signal = given ? AbortSignal.any([given, timeout]) : timeout;
    const where = `${method} ${this.url}${path}`;
    let response: Response;
    let text: string;
    try {
      // Raced against the signal too: a `fetch` option that ignores it must not hang the caller.
      // No redirect is followed: the request, its token and its body would go elsewhere.
      response = await untilAborted(
        this.#fetch(`${this.url}${path}`, { method, headers, body: json, signal, redirect: "manual" }),
        signal,
      );
      answered = true;
      options.signal?.removeEventListener("abort", cutOff);
      // A `fetch` option of the caller's may resolve anything.
      if (typeof response?.text !== "function" || typeof response.status !== "number") {
        throw new TypeError(`fetch resolved ${describe(response)}, not a Response`);
      }
      // Reading the body can fail too (the connection drops, the signal aborts).
      text = await untilAborted(readBody(response, this.#maxResponseBytes, where), signal);
    } catch (cause) {
      options.signal?.removeEventListener("abort", cutOff);
      if (caller ? caller.signal.aborted : options.signal?.aborted) throw cause;
      if (cause instanceof ErrandError) throw cause;
      const why = timeout.aborted
        ? `no answer within ${timeoutMs} ms (the client's timeoutMs${options.timeoutMs === undefined ? "" : " plus the lease's waitMs"})`
        : cause instanceof Error
          ? `${cause.message}${networkCode(cause)}`
          : describe(cause);
      throw new ErrandError("UNAVAILABLE", `${where} failed: ${why}`, { cause });
    }
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers?.get?.("location") ?? null;
      throw new ErrandError(
        "UNAVAILABLE",
        `${where}: the server answered ${response.status}, a redirect to ${location ?? "nowhere"}; the client follows no redirect (its token and body would go there): give the URL that serves errand as \`url\``,
        { details: { status: response.status, location } },
      );
    }
    let parsed: unknown;
    let isJson = true;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
      isJson = false;
    }
    if (!response.ok) throw errorOf(where, response, isJson ? parsed : undefined, text);
    if (!isJson)
      throw notErrands(where, response.status, `a body that is not JSON (${excerpt(response, text)})`);
    return { status: response.status, body: parsed as T };
  }

  /** A job answered by `method path`, held to the fields every job has ({@link jobProblem}). */
  async #job<J extends Job>(method: string, path: string, body?: unknown): Promise<J> {
    const out = await this.request<unknown>(method, path, body);
    const problem = jobProblem(out.body);
    if (problem) throw notErrands(`${method} ${this.url}${path}`, out.status, `a job that ${problem}`);
    return reviveJob<J>(out.body as Record<string, unknown>);
  }

  /** A page of jobs answered by `method path`, each held to the fields every job has. */
  async #jobPage(method: string, path: string): Promise<{ jobs: Job[]; nextCursor: string | null }> {
    const out = await this.request<unknown>(method, path);
    const where = `${method} ${this.url}${path}`;
    const page = out.body;
    if (!isRecord(page)) throw notErrands(where, out.status, `${describe(page)}, not an object`);
    const { jobs, nextCursor } = page;
    if (!Array.isArray(jobs)) throw notErrands(where, out.status, `jobs ${describe(jobs)}, not a list`);
    if (nextCursor !== null && typeof nextCursor !== "string")
      throw notErrands(where, out.status, `nextCursor ${describe(nextCursor)}`);
    for (const [i, j] of jobs.entries()) {
      const problem = jobProblem(j);
      if (problem) throw notErrands(where, out.status, `jobs[${i}] that ${problem}`);
    }
    return { jobs: jobs.map((j) => reviveJob(j as Record<string, unknown>)), nextCursor };
  }

  /**
   * {@link request}'s body, held to the shape the call reads: an object (unless 204), and each
   * field `shape` names an array or an object. A body of another shape (a proxy's page, another
   * server) is `UNAVAILABLE`, never a TypeError from the code that reads it.
   */
  async #call<T>(
    method: string,
    path: string,
    body?: unknown,
    shape: Record<string, "array" | "object"> = {},
  ): Promise<T> {
    const out = await this.request<T>(method, path, body);
    if (out.status === 204) return out.body;
    const where = `${method} ${this.url}${path}`;
    if (!isRecord(out.body)) throw notErrands(where, out.status, `${describe(out.body)}, not an object`);
    for (const [field, kind] of Object.entries(shape)) {
      const value = (out.body as Record<string, unknown>)[field];
      if (kind === "array" ? !Array.isArray(value) : !isRecord(value)) {
        throw notErrands(
          where,
          out.status,
          `${field} ${describe(value)}, not ${kind === "array" ? "a list" : "an object"}`,
        );
      }
    }
    return out.body;
  }

  // ---- enqueue -------------------------------------------------------------------------------

  /**
   * Adds one job (by type name or a definition). With `options.id`, enqueue is an idempotent PUT.
   * @remarks With a producer's token, a duplicate of another owner's job (its id or unique key
   * taken) is answered as `{ id, duplicate: true }` and nothing else: the job's other fields are
   * absent, since the producer may not read it (the OpenAPI document says so beside Job). The same goes for
   * each job of {@link enqueueBatch} and {@link enqueueFlow}.
   */
  async enqueue<P>(
    job: JobDefinition<P, unknown> | string,
    payload: P,
    options: EnqueueOptions = {},
  ): Promise<EnqueuedJob<P>> {
    const type = typeOf("enqueue", job);
    const { id, ...rest } = checkOptions("enqueue", options);
    payload = (await payloadOf(job, payload)) as P;
    const wire =
      id === undefined
        ? await this.#call<Record<string, unknown>>("POST", "/v1/jobs", { type, payload, ...rest })
        : await this.#call<Record<string, unknown>>("PUT", jobPath(id), {
            type,
            payload,
            ...rest,
          });
    return reviveJob<EnqueuedJob<P>>(wire);
  }

  /** Adds many jobs of one type, in one request and one transaction. */
  async enqueueMany<P>(
    job: JobDefinition<P, unknown> | string,
    payloads: readonly P[],
    options: EnqueueOptions = {},
  ): Promise<EnqueuedJob<P>[]> {
    return this.enqueueBatch(
      listOf<P>("enqueueMany", "payloads", payloads).map((payload) => ({ job, payload, options })),
    );
  }

  /**
   * {@link enqueueMany}, answering each job's id (Queue.enqueueManyIds' API): the server answers
   * `{ ids }` (`?return=ids`), not every job whole, which is most of a large bulk request's cost.
   * @since 0.2.0
   */
  async enqueueManyIds<P>(
    job: JobDefinition<P, unknown> | string,
    payloads: readonly P[],
    options: EnqueueOptions = {},
  ): Promise<string[]> {
    const jobs = await this.#bulkItems(
      "enqueueManyIds",
      listOf<P>("enqueueManyIds", "payloads", payloads).map((payload) => ({ job, payload, options })),
    );
    if (jobs.length === 0) return [];
    const out = await this.#call<{ ids: string[] }>(
      "POST",
      "/v1/jobs?return=ids",
      { jobs },
      { ids: "array" },
    );
    return out.ids;
  }

  /** A bulk enqueue's items as the server takes them, each checked as `where` names it. */
  async #bulkItems<P>(
    where: string,
    list: ReadonlyArray<{ job: JobDefinition<P, unknown> | string; payload: P; options?: EnqueueOptions }>,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      checkObject(where, `items[${i}]`, item);
      const { job, payload, options } = item!;
      const type = typeOf(where, job);
      const checked = checkOptions(where, options ?? {});
      // Awaited only for a schema: a plain bulk load stays one synchronous pass.
      const value = hasSchema(job) ? await payloadOf(job, payload) : checkPayload(payload);
      items[i] = { type, payload: value, ...checked };
    }
    return items;
  }

  /** Adds jobs of any types, each with its own options, in one request and one transaction. */
  async enqueueBatch<P>(
    items: ReadonlyArray<{ job: JobDefinition<P, unknown> | string; payload: P; options?: EnqueueOptions }>,
  ): Promise<EnqueuedJob<P>[]> {
    const jobs = await this.#bulkItems(
      "enqueueBatch",
      listOf<(typeof items)[number]>("enqueueBatch", "items", items),
    );
    if (jobs.length === 0) return [];
    const out = await this.#call<{ jobs: Record<string, unknown>[] }>(
      "POST",
      "/v1/jobs",
      { jobs },
      { jobs: "array" },
    );
    return out.jobs.map((j) => reviveJob<EnqueuedJob<P>>(j));
  }

  /**
   * {@link enqueueBatch}, answering each item's id in order (Queue.enqueueBatchIds' API): the
   * server answers `{ ids }` (`?return=ids`), not every job whole.
   * @since 0.2.0
   */
  async enqueueBatchIds(items: ReadonlyArray<BatchItem>): Promise<string[]> {
    const jobs = await this.#bulkItems(
      "enqueueBatchIds",
      listOf<(typeof items)[number]>("enqueueBatchIds", "items", items),
    );
    if (jobs.length === 0) return [];
    const out = await this.#call<{ ids: string[] }>(
      "POST",
      "/v1/jobs?return=ids",
      { jobs },
      { ids: "array" },
    );
    return out.ids;
  }

  /**
   * Adds a DAG of jobs in one request and one transaction: every node or none (see
   * `Queue.enqueueFlow`). A node's `dependsOn` names other nodes by `ref`, or stored jobs as `{ id }`.
   * @example
   * ```ts
   * const flow = await client.enqueueFlow([
   *   { ref: "a", job: "fetch-page", payload: { url: u1 } },
   *   { ref: "b", job: "fetch-page", payload: { url: u2 } },
   *   { ref: "c", job: "merge", payload: {}, dependsOn: ["a", "b"] },
   * ]);
   * flow.jobs.c.state; // "blocked"
   * ```
   * @throws ErrandError `INVALID_FLOW` (a cycle, a duplicate ref, a ref to nothing),
   *   `DEPENDENCY_NOT_FOUND` (an `{ id }` that names no job); nothing is stored then.
   * @since 0.2.0
   */
  async enqueueFlow(nodes: readonly FlowNode[]): Promise<FlowResult> {
    // The options first: a stray `ref` or `type` among them must not replace the node's own.
    const list = listOf<FlowNode>("enqueueFlow", "nodes", nodes, "INVALID_FLOW");
    // No nodes, no flow: answered here as a Queue answers it (the server takes one node or more).
    if (list.length === 0) return { jobs: Object.create(null) };
    const jobs: Record<string, unknown>[] = [];
    for (const [i, node] of list.entries()) {
      if (typeof node !== "object" || node === null || Array.isArray(node)) {
        throw new ErrandError(
          "INVALID_FLOW",
          `enqueueFlow: nodes[${i}] must be an object { ref, job, payload }, got ${describe(node)}`,
        );
      }
      const { ref, job, payload, dependsOn, options } = node;
      jobs.push({
        ...checkOptions("enqueueFlow", options ?? {}),
        ref,
        type: typeOf("enqueueFlow", job),
        payload: await payloadOf(job, payload),
        ...(dependsOn === undefined ? {} : { dependsOn }),
      });
    }
    const out = await this.#call<{ jobs: Record<string, Record<string, unknown>> }>(
      "POST",
      "/v1/flows",
      { jobs },
      { jobs: "object" },
    );
    // Refs are the caller's names: a null-prototype record, as `Queue.enqueueFlow` returns.
    const byRef: FlowResult["jobs"] = Object.create(null);
    for (const [ref, wire] of Object.entries(out.jobs)) byRef[ref] = reviveJob(wire);
    return { jobs: byRef };
  }

  // ---- reads and changes ---------------------------------------------------------------------

  /** The job, whatever its state; null when there is none. */
  async get<P = unknown, R = unknown>(id: string): Promise<Job<P, R> | null> {
    try {
      return await this.#job<Job<P, R>>("GET", jobPath(id));
    } catch (error) {
      if (error instanceof ErrandError && error.code === "JOB_NOT_FOUND") return null;
      throw error;
    }
  }

  /**
   * A page of jobs, newest first: each whole, or with `view: "summary"` each as a
   * {@link JobSummary} (without its payload, checkpoint, result, errors and dependency ids).
   * @throws ErrandError `INVALID_OPTION` for a bad filter, limit, view or an unknown option, and the
   *   codes of the names it checks
   */
  async list(options: ListOptions & { view: "summary" }): Promise<JobSummaryPage>;
  /** A page of jobs, newest first, each whole. */
  async list(options?: ListOptions & { view?: "full" }): Promise<JobPage>;
  /** A page of jobs, newest first, as `options.view` asks. */
  async list(options?: ListViewOptions): Promise<JobPage | JobSummaryPage>;
  async list(options: ListViewOptions = {}): Promise<JobPage | JobSummaryPage> {
    checkObject("list", "options", options);
    // Checked as a Queue checks them, so a bad option gets the Queue's code, not the HTTP schema's.
    checkListOptions(options);
    return this.#jobPage("GET", withQuery("/v1/jobs", options));
  }

  /**
   * The jobs `id` waits for, in its `dependsOn` order, each with its state and result (what a
   * handler's `ctx.dependencies()` returns; null fields for a pruned one).
   * @throws ErrandError `JOB_NOT_FOUND`
   * @since 0.2.0
   */
  async dependencies(id: string): Promise<JobDependency[]> {
    return (
      await this.#call<{ dependencies: JobDependency[] }>("GET", jobPath(id, "/dependencies"), undefined, {
        dependencies: "array",
      })
    ).dependencies;
  }

  /**
   * A page of the jobs waiting on `id`, in id order; pass `nextCursor` back as `cursor` for the next.
   * @throws ErrandError `JOB_NOT_FOUND`
   * @since 0.2.0
   */
  async dependents(id: string, options: { limit?: number; cursor?: string } = {}): Promise<JobPage> {
    const path = jobPath(id, "/dependents");
    checkObject("dependents", "options", options);
    return this.#jobPage("GET", withQuery(path, { limit: options.limit, cursor: options.cursor }));
  }

  /**
   * The server's {@link Queue.cancel}: cancels a pending or active job.
   * @throws ErrandError `JOB_NOT_FOUND`, `INVALID_STATE` for a completed, dead or expired job,
   *   `FORBIDDEN` (admin only)
   */
  async cancel(id: string): Promise<Job> {
    return this.#job("POST", jobPath(id, "/cancel"));
  }

  /**
   * The server's {@link Queue.retry}: a dead, cancelled or expired job back to pending, same id.
   * @throws ErrandError `JOB_NOT_FOUND`, `INVALID_STATE` for a blocked, pending, active or
   *   completed job or when another blocked, pending or active job holds its `uniqueKey`,
   *   `FORBIDDEN` (admin only)
   */
  async retry(id: string): Promise<Job> {
    return this.#job("POST", jobPath(id, "/retry"));
  }

  /**
   * The server's {@link Queue.replay}: a finished job's type and payload enqueued again as a new job.
   * @throws ErrandError `JOB_NOT_FOUND`, `INVALID_STATE` for a blocked, pending or active job or
   *   when another blocked, pending or active job holds its `uniqueKey`, `FORBIDDEN` (admin only)
   */
  async replay(id: string): Promise<Job> {
    return this.#job("POST", jobPath(id, "/replay"));
  }

  /**
   * The server's {@link Queue.reschedule}: moves a pending job in time, priority or queue.
   * @throws ErrandError `JOB_NOT_FOUND`, `INVALID_STATE` when the job is not pending, `FORBIDDEN`
   *   (admin only)
   */
  async reschedule(
    id: string,
    options: { runAt?: Date | string | number; delayMs?: number | string; priority?: number; queue?: string },
  ): Promise<Job> {
    const path = jobPath(id, "/reschedule");
    checkObject("reschedule", "options", options);
    return this.#job("POST", path, options);
  }

  /**
   * The server's {@link Queue.stats}. `queues`, `types` and `limits` are null-prototype records, as
   * locally: a queue named `toString` is found only when the server reported it. `limits` covers
   * the types the server knows the rules of (its `PUT /v1/types` settings).
   */
  async stats(): Promise<QueueStats> {
    const stats = await this.#call<QueueStats>("GET", "/v1/stats");
    return {
      ...stats,
      queues: toNameRecord(stats.queues),
      types: toNameRecord(stats.types),
      // A server from before 0.2.0 sends none.
      limits: toNameRecord(stats.limits),
    };
  }

  /** Every queue with its counts by state. */
  async queues(): Promise<Array<{ name: string; counts: Record<string, number>; paused: boolean }>> {
    return (
      await this.#call<{ queues: Array<{ name: string; counts: Record<string, number>; paused: boolean }> }>(
        "GET",
        "/v1/queues",
        undefined,
        { queues: "array" },
      )
    ).queues;
  }

  /**
   * Pauses a queue on the server's store (see `Queue.pauseQueue`); `true` when it was not paused.
   * @throws ErrandError `INVALID_QUEUE_NAME`, `FORBIDDEN` (admin only)
   */
  async pauseQueue(name: string): Promise<boolean> {
    const path = `/v1/queues/${encodeURIComponent(checkQueueName(name))}/pause`;
    return (await this.#call<{ changed: boolean }>("POST", path)).changed;
  }

  /**
   * Resumes a paused queue (see `Queue.resumeQueue`); `true` when it was paused.
   * @throws ErrandError `INVALID_QUEUE_NAME`, `FORBIDDEN` (admin only)
   */
  async resumeQueue(name: string): Promise<boolean> {
    const path = `/v1/queues/${encodeURIComponent(checkQueueName(name))}/resume`;
    return (await this.#call<{ changed: boolean }>("POST", path)).changed;
  }

  /** Deletes finished jobs past retention now; returns how many. */
  async prune(): Promise<number> {
    return (await this.#call<{ deleted: number }>("POST", "/v1/prune")).deleted;
  }

  // ---- schedules and types -------------------------------------------------------------------

  /**
   * The server's {@link Queue.schedule}: creates or replaces a recurring job (a definition given
   * as `job` travels as its type name).
   * @throws ErrandError `INVALID_SCHEDULE_NAME`, `INVALID_CRON`, `INVALID_TIMEZONE`,
   *   `INVALID_PAYLOAD`, `FORBIDDEN` (admin only)
   */
  async schedule<P>(name: string, options: ScheduleOptions<P>): Promise<Schedule> {
    const path = `/v1/schedules/${encodeURIComponent(checkScheduleName(name))}`;
    checkObject("schedule", "options", options);
    const { job, ...rest } = options;
    if (rest.options !== undefined) checkOptions("schedule", rest.options);
    const payload = await payloadOf(job, rest.payload);
    const s = await this.#call<Schedule & { nextRunAt: string }>("PUT", path, {
      ...rest,
      payload,
      type: typeOf("schedule", job),
    });
    return { ...s, nextRunAt: new Date(s.nextRunAt) };
  }

  /** Removes a schedule; jobs it already enqueued stay. `false` when there was none. */
  async unschedule(name: string): Promise<boolean> {
    try {
      await this.#call("DELETE", `/v1/schedules/${encodeURIComponent(checkScheduleName(name))}`);
      return true;
    } catch (error) {
      if (error instanceof ErrandError && error.code === "NOT_FOUND") return false;
      throw error;
    }
  }

  /** Every schedule on the server, by name (byte order), read a page of 1,000 at a time. */
  async schedules(): Promise<Schedule[]> {
    return everyPage(
      (options) => this.schedulePage(options),
      (page) => page.schedules,
    );
  }

  /**
   * The server's {@link Queue.schedulePage}: a page of schedules by name (byte order); pass
   * `nextCursor` back as `cursor` for the next.
   * @throws ErrandError `INVALID_OPTION`, `INVALID_SCHEDULE_NAME` (a bad cursor)
   * @since 0.3.0
   */
  async schedulePage(options: SchedulePageOptions = {}): Promise<SchedulePage> {
    checkObject("schedulePage", "options", options);
    const page = await this.#call<{
      schedules: Array<Schedule & { nextRunAt: string }>;
      nextCursor: string | null;
    }>("GET", withQuery("/v1/schedules", options), undefined, { schedules: "array" });
    return {
      schedules: page.schedules.map((s) => ({ ...s, nextRunAt: new Date(s.nextRunAt) })),
      nextCursor: page.nextCursor,
    };
  }

  /** Creates or replaces a job type's settings on the server. */
  async setType(config: RemoteJobType): Promise<RemoteJobType> {
    checkObject("setType", "config", config);
    const { type, ...rest } = config;
    return this.#call("PUT", typePath(type), rest);
  }

  /** A job type's settings on the server (no push `secret`); null when it has none. */
  async getType(type: string): Promise<RemoteJobType | null> {
    try {
      return await this.#call("GET", typePath(type));
    } catch (error) {
      if (error instanceof ErrandError && error.code === "NOT_FOUND") return null;
      throw error;
    }
  }

  /**
   * Deletes a job type's settings on the server (its jobs get the built-in defaults from then on);
   * `false` when it had none.
   * @since 0.2.0
   */
  async deleteType(type: string): Promise<boolean> {
    try {
      await this.#call("DELETE", typePath(type));
      return true;
    } catch (error) {
      if (error instanceof ErrandError && error.code === "NOT_FOUND") return false;
      throw error;
    }
  }

  /**
   * Every job type's settings on the server, sorted by type name (no push `secret`s), read a page
   * of 1,000 at a time.
   */
  async types(): Promise<RemoteJobType[]> {
    return everyPage(
      (options) => this.typePage(options),
      (page) => page.types,
    );
  }

  /**
   * A page of the server's job types by name (byte order): at most `limit` (default 50, up to
   * 1,000), after `cursor`; pass `nextCursor` back as `cursor` for the next.
   * @throws ErrandError `INVALID_OPTION`, `INVALID_TYPE_NAME` (a bad cursor)
   */
  async typePage(options: TypePageOptions = {}): Promise<RemoteTypePage> {
    checkObject("typePage", "options", options);
    return this.#call("GET", withQuery("/v1/types", options), undefined, { types: "array" });
  }

  // ---- the lease API -------------------------------------------------------------------------

  /** Leases up to `limit` ready jobs; with `waitMs`, waits that long for one when none is ready. */
  async lease(options: RemoteLeaseOptions = {}): Promise<Job[]> {
    return (await this.leaseAhead(options)).jobs;
  }

  /**
   * {@link lease}, with the server's word on leasing ahead: `ahead: false` when a type leased has a
   * rate limit or per-key rate limit, so only what can start at once is leased
   * (`LeaseOptions.ahead`). A RemoteWorker's prefetch reads it.
   * @internal
   */
  async leaseAhead(options: RemoteLeaseOptions = {}): Promise<{ jobs: Job[]; ahead: boolean }> {
    checkObject("lease", "options", options);
    const { signal, ...body } = options;
    const out = await this.request<unknown>("POST", "/v1/lease", body, {
      ...(signal ? { signal, keepAnswer: true } : {}),
      timeoutMs: this.#timeoutMs + (options.waitMs ?? 0),
    });
    const where = `POST ${this.url}/v1/lease`;
    const jobs = isRecord(out.body) ? out.body.jobs : undefined;
    if (!Array.isArray(jobs)) throw notErrands(where, out.status, `jobs ${describe(jobs)}, not a list`);
    const leased = leasedJobs(where, out.status, jobs);
    // More than asked would overfill the caller's slots (no answer errand's server gives): the
    // first `limit` are taken and the rest given back, their attempts unspent, rather than left
    // leased to no one until their leases run out (an at-most-once job would then go dead unrun).
    const limit = typeof body.limit === "number" ? body.limit : 1;
    if (leased.length > limit) {
      await Promise.allSettled(leased.splice(limit).map((job) => this.release(job)));
    }
    return {
      jobs: leased,
      ahead: (out.body as { ahead?: unknown }).ahead !== false,
    };
  }

  /** `true` when the attempt was current (or this same completion was already recorded). */
  async complete(job: AttemptRef, result?: unknown): Promise<boolean> {
    const ref = checkRef("complete", job);
    return this.#report(jobPath(ref.id, "/complete"), {
      attempt: ref.attempt,
      ...(result === undefined ? {} : { result: checkJson("result", result) }),
    });
  }

  /**
   * Fails an attempt (retried with backoff, or dead); `false` when the attempt is stale. A repeat
   * of a failure the server recorded (same attempt, same error) is `true` again, not stale.
   */
  async fail(job: AttemptRef, error: unknown, options: FailOptions = {}): Promise<boolean> {
    const ref = checkRef("fail", job);
    checkObject("fail", "options", options);
    return this.#report(jobPath(ref.id, "/fail"), failBody(ref, error, options));
  }

  /**
   * Like {@link fail}, but resolves the job's new state (`pending` to retry, or `dead`), or null
   * when the attempt was stale. A repeat of a recorded failure resolves the state it left.
   */
  async failWithState(
    job: AttemptRef,
    error: unknown,
    options: FailOptions = {},
  ): Promise<"pending" | "dead" | null> {
    const ref = checkRef("failWithState", job);
    checkObject("failWithState", "options", options);
    try {
      const path = jobPath(ref.id, "/fail");
      const out = await this.#call<{ state: "pending" | "dead" }>(
        "POST",
        path,
        failBody(ref, error, options),
      );
      if (out.state !== "pending" && out.state !== "dead") {
        throw notErrands(
          `POST ${this.url}${path}`,
          200,
          `state ${describe(out.state)}, not "pending" or "dead"`,
        );
      }
      return out.state;
    } catch (e) {
      if (isStale(e)) return null;
      throw e;
    }
  }

  /** Extends the lease; `false` when the attempt is no longer current (cancelled, lost). */
  async heartbeat(job: AttemptRef, options: { leaseMs?: number } = {}): Promise<boolean> {
    const ref = checkRef("heartbeat", job);
    checkObject("heartbeat", "options", options);
    return this.#report(jobPath(ref.id, "/heartbeat"), {
      attempt: ref.attempt,
      ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    });
  }

  /**
   * Extends many leases, a request per 1,000: `ok[i]` is false when `jobs[i]`'s attempt is no
   * longer current (cancelled, lost). `pausedQueues` names the queues paused now.
   */
  async heartbeatMany(
    jobs: readonly AttemptRef[],
    options: { leaseMs?: number } = {},
  ): Promise<{ ok: boolean[]; pausedQueues: string[] }> {
    const refs = listOf<unknown>("heartbeatMany", "jobs", jobs).map((j) => checkRef("heartbeatMany", j));
    checkObject("heartbeatMany", "options", options);
    const ok: boolean[] = [];
    let pausedQueues: string[] = [];
    for (let i = 0; i < refs.length; i += MAX_ATTEMPTS_PER_REQUEST) {
      const chunk = refs.slice(i, i + MAX_ATTEMPTS_PER_REQUEST);
      const out = await this.#call<{ results: Array<{ ok: boolean }>; pausedQueues: string[] }>(
        "POST",
        "/v1/heartbeats",
        { jobs: chunk, ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}) },
        { results: "array", pausedQueues: "array" },
      );
      checkResults(`POST ${this.url}/v1/heartbeats`, out.results, chunk.length);
      if (!out.pausedQueues.every((q) => typeof q === "string")) {
        throw notErrands(`POST ${this.url}/v1/heartbeats`, 200, "pausedQueues that are not all names");
      }
      for (const r of out.results) ok.push(r.ok);
      pausedQueues = out.pausedQueues;
    }
    return { ok, pausedQueues };
  }

  /** Saves progress for the attempt; a retry sees it as `job.checkpoint`. `false` when stale. */
  async checkpoint(job: AttemptRef, data: unknown): Promise<boolean> {
    const ref = checkRef("checkpoint", job);
    return this.#report(jobPath(ref.id, "/checkpoint"), {
      attempt: ref.attempt,
      data: checkJson("checkpoint", data),
    });
  }

  /**
   * Ends the attempt without failing it: pending again after `delay`, not counted as an attempt
   * (`ctx.snooze` of a RemoteWorker's handler). `false` when the attempt is stale.
   */
  async snooze(job: AttemptRef, delay: Duration): Promise<boolean> {
    const ref = checkRef("snooze", job);
    const delayMs = toMs("snooze", delay);
    return this.#report(jobPath(ref.id, "/snooze"), { attempt: ref.attempt, delayMs });
  }

  /** Gives an attempt back without using it up. */
  async release(job: AttemptRef): Promise<boolean> {
    const ref = checkRef("release", job);
    return this.#report(jobPath(ref.id, "/release"), { attempt: ref.attempt });
  }

  /**
   * Many outcomes in one request (more than the server takes in one, 1,000, go in as many requests
   * as they need, one after another); one result per item, in order.
   */
  async report(
    items: ReportItem[],
  ): Promise<Array<{ id: string; ok: boolean; code?: string; state?: string }>> {
    listOf<unknown>("report", "items", items).forEach((item, i) => {
      checkObject("report", `items[${i}]`, item);
    });
    if (items.length <= MAX_ATTEMPTS_PER_REQUEST) return this.#reportOnce(items);
    const results: Array<{ id: string; ok: boolean; code?: string; state?: string }> = [];
    for (let i = 0; i < items.length; i += MAX_ATTEMPTS_PER_REQUEST) {
      results.push(...(await this.#reportOnce(items.slice(i, i + MAX_ATTEMPTS_PER_REQUEST))));
    }
    return results;
  }

  async #reportOnce(
    items: ReportItem[],
  ): Promise<Array<{ id: string; ok: boolean; code?: string; state?: string }>> {
    const reports = items.map((r) => {
      if (r.outcome === "complete") {
        return {
          id: r.id,
          attempt: r.attempt,
          outcome: r.outcome,
          result: checkJson("result", r.result ?? null),
        };
      }
      if (r.outcome === "snooze") {
        return { id: r.id, attempt: r.attempt, outcome: r.outcome, delayMs: toMs("snooze", r.delayMs) };
      }
      return {
        id: r.id,
        attempt: r.attempt,
        outcome: r.outcome,
        error: wireError(r.error),
        ...(r.retryable === undefined ? {} : { retryable: r.retryable }),
      };
    });
    const { results } = await this.#call<{
      results: Array<{ id: string; ok: boolean; code?: string; state?: string }>;
    }>("POST", "/v1/report", { reports }, { results: "array" });
    return checkResults(`POST ${this.url}/v1/report`, results, items.length);
  }

  async #report(path: string, body: unknown): Promise<boolean> {
    try {
      await this.#call("POST", path, body);
      return true;
    } catch (error) {
      if (isStale(error)) return false;
      throw error;
    }
  }
}

/** ` (ECONNRESET)` for a fetch failure whose cause names a system error code; "" otherwise. */
function networkCode(error: Error): string {
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? ` (${code})` : "";
}

/** Whether `value` is a JSON object (not null, not an array). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Resolves or rejects as `work` does, or rejects with the signal's reason once it aborts: a
 * `fetch` option (or its body) that ignores the signal cannot hold a request past its timeout.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}

/**
 * An answer's body as text, refused with `PAYLOAD_TOO_LARGE` once it passes `max` bytes (by its
 * Content-Length, or as it arrives): cut off there, never read whole into memory.
 */
async function readBody(response: Response, max: number, where: string): Promise<string> {
  const tooLarge = (size: string) =>
    new ErrandError(
      "PAYLOAD_TOO_LARGE",
      `${where}: the answer is larger than the client's maxResponseBytes (${max} bytes): ${size}`,
      { details: { status: response.status, maxResponseBytes: max } },
    );
  const body = response.body;
  const declared = Number(response.headers?.get?.("content-length") ?? Number.NaN);
  if (declared > max) {
    body?.cancel().catch(() => {});
    throw tooLarge(`${declared} bytes by its Content-Length`);
  }
  if (typeof body?.getReader !== "function") {
    // No stream (no body, or a Response-like from a `fetch` option): read as it is given.
    const text = await response.text();
    if (text.length > max) throw tooLarge(`${text.length} characters`);
    return text;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      throw tooLarge(`more than ${max} bytes arrived`);
    }
    chunks.push(value);
  }
  // As Response.text() decodes it: UTF-8, a byte-order mark dropped.
  return new TextDecoder().decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
}

/** The code of an error answer that is not errand's `{ code, message }`, by its status. */
const STATUS_CODES: Readonly<Record<number, ErrandErrorCode>> = {
  400: "INVALID_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  408: "UNAVAILABLE",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "RATE_LIMITED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "UNAVAILABLE",
};

/** What an errand error code looks like; anything else in `code` is not errand's. */
const ERROR_CODE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * The error of a non-2xx answer: errand's own `{ code, message, details }` as it says, or (a
 * proxy's page, a load balancer's) a code by its status, `details.retryAfterMs` from its
 * `Retry-After`, and a message naming the request and quoting the start of the answer.
 */
function errorOf(where: string, response: Response, parsed: unknown, text: string): ErrandError {
  const status = response.status;
  if (isRecord(parsed) && typeof parsed.code === "string" && ERROR_CODE_PATTERN.test(parsed.code)) {
    return new ErrandError(
      parsed.code as ErrandErrorCode,
      typeof parsed.message === "string" ? parsed.message : `HTTP ${status}`,
      {
        details: {
          status,
          ...(parsed.details === null || parsed.details === undefined ? {} : { details: parsed.details }),
        },
      },
    );
  }
  const retryAfterMs = retryAfterOf(response.headers?.get?.("retry-after"));
  return new ErrandError(
    STATUS_CODES[status] ?? "INTERNAL",
    `${where}: HTTP ${status}, not an errand answer: ${excerpt(response, text)}`,
    { details: { status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) } },
  );
}

/** `Retry-After` (seconds, or an HTTP date) in ms, 0 to a day; undefined when absent or unreadable. */
function retryAfterOf(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const ms = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), 86_400_000) : undefined;
}

/** An answer's type and first 120 characters, for a message. */
function excerpt(response: Response, text: string): string {
  const type = response.headers?.get?.("content-type") ?? "no content type";
  if (!text) return `${type}, empty`;
  const head = text.slice(0, 120).replace(/\s+/g, " ");
  return `${type}, ${JSON.stringify(head)}${text.length > 120 ? "…" : ""}`;
}

/** A 2xx answer the call cannot read: not JSON, or not the shape it has. */
function notErrands(where: string, status: number, what: string): ErrandError {
  return new ErrandError("UNAVAILABLE", `${where}: HTTP ${status} with ${what}: not an errand answer`, {
    details: { status },
  });
}

/**
 * A batch answer's results, one per item sent, each `{ ok: boolean }`: the worker matches them to
 * its jobs by position, so one missing or extra would credit an outcome or a lease to another job.
 */
function checkResults<R extends { ok: boolean; code?: string }>(
  where: string,
  results: R[],
  sent: number,
): R[] {
  if (results.length !== sent) {
    throw notErrands(where, 200, `${results.length} results for ${sent} items`);
  }
  for (const [i, r] of results.entries()) {
    if (!isRecord(r) || typeof r.ok !== "boolean" || (r.code !== undefined && typeof r.code !== "string")) {
      throw notErrands(where, 200, `results[${i}] ${describe(r)}, not { ok, code? }`);
    }
  }
  return results;
}

/**
 * The jobs of a lease answer, each held to what a worker runs it by (an id, an attempt, a type, a
 * queue, a weight, its timeout, delivery and lease), or the whole answer is refused
 * (`UNAVAILABLE`, naming the job and field): one job without an attempt would fail every
 * heartbeat of the worker, one without a weight its accounting. An id named twice is taken once
 * (the first): run twice, its attempt would run twice at once in one worker.
 */
function leasedJobs(where: string, status: number, wire: unknown[]): Job[] {
  const jobs: Job[] = [];
  const ids = new Set<string>();
  for (const [i, j] of wire.entries()) {
    const problem = leasedJobProblem(j);
    if (problem) throw notErrands(where, status, `jobs[${i}] ${problem}`);
    const { id } = j as { id: string };
    if (ids.has(id)) continue;
    ids.add(id);
    jobs.push(reviveJob(j as Record<string, unknown>));
  }
  return jobs;
}

/** Dates every job has; the other {@link DATE_FIELDS} may be null. */
const REQUIRED_DATES = new Set<string>(["runAt", "createdAt"]);

/**
 * What makes `j` no job as any answer of one holds it (a page of summaries too), or null: its id,
 * type, queue, state, counters and dates, the fields a caller reads a job by. Its payload, result
 * and the rest are the caller's to read.
 */
function jobProblem(j: unknown): string | null {
  if (!isRecord(j)) return `is ${describe(j)}`;
  if (typeof j.id !== "string" || !JOB_ID_PATTERN.test(j.id)) return `has id ${describe(j.id)}`;
  for (const f of ["type", "queue"] as const)
    if (typeof j[f] !== "string") return `has ${f} ${describe(j[f])}`;
  if (!JOB_STATES.includes(j.state as Job["state"])) return `has state ${describe(j.state)}`;
  for (const f of ["attempt", "maxAttempts", "priority"] as const) {
    if (typeof j[f] !== "number" || !Number.isSafeInteger(j[f])) return `has ${f} ${describe(j[f])}`;
  }
  for (const f of DATE_FIELDS) {
    const v = j[f];
    if (
      v === null || v === undefined
        ? REQUIRED_DATES.has(f)
        : typeof v !== "string" || Number.isNaN(Date.parse(v))
    )
      return `has ${f} ${describe(v)}`;
  }
  return null;
}

/** What makes `j` no job a worker can run, or null. */
function leasedJobProblem(j: unknown): string | null {
  if (!isRecord(j)) return `is ${describe(j)}, not a job`;
  const field = badLeasedField(j);
  return field === null ? null : `has ${field} ${describe(j[field])}`;
}

/** The first field of a leased job a worker cannot run it by, or null. */
function badLeasedField(j: Record<string, unknown>): string | null {
  if (typeof j.id !== "string" || !JOB_ID_PATTERN.test(j.id)) return "id";
  const attempt = j.attempt;
  if (typeof attempt !== "number" || !Number.isSafeInteger(attempt) || attempt < 1 || attempt > MAX_ATTEMPT)
    return "attempt";
  if (typeof j.type !== "string") return "type";
  if (typeof j.queue !== "string") return "queue";
  const weight = j.weight;
  if (typeof weight !== "number" || !Number.isSafeInteger(weight) || weight < 1) return "weight";
  const timeoutMs = j.timeoutMs;
  if (timeoutMs !== null && !(typeof timeoutMs === "number" && timeoutMs >= 0)) return "timeoutMs";
  if (j.delivery !== "at_least_once" && j.delivery !== "at_most_once") return "delivery";
  if (typeof j.leaseExpiresAt !== "string" || Number.isNaN(Date.parse(j.leaseExpiresAt)))
    return "leaseExpiresAt";
  return null;
}

/**
 * A failure's body: the attempt, the error, and `retryable` as given, or false for an error that
 * says it is not retryable (NonRetryableError, `retryable: false`), as a Queue reads it.
 */
function failBody(ref: AttemptRef, error: unknown, options: FailOptions): object {
  const retryable = options.retryable ?? (isNonRetryable(error) ? false : undefined);
  return { attempt: ref.attempt, error: wireError(error), ...(retryable === undefined ? {} : { retryable }) };
}

/**
 * Whether a report was refused as no longer current: its attempt is not the job's current one
 * (409 STALE_ATTEMPT), or the job is gone (404 JOB_NOT_FOUND: pruned while a slow worker ran it).
 * A local Queue answers both with `false`.
 */
function isStale(error: unknown): boolean {
  return error instanceof ErrandError && (error.code === "STALE_ATTEMPT" || error.code === "JOB_NOT_FOUND");
}

/**
 * A job's path, the id checked as the Queue checks it, so that it is sent whole: no `.` or `..`
 * (fetch would resolve them to another route) and no lone surrogate (encodeURIComponent throws).
 */
/** `path` with `options`' defined entries as its query string. */
/** Every item of a list the server pages by name, read a page of 1,000 at a time. */
async function everyPage<P extends { nextCursor: string | null }, T>(
  read: (options: { limit: number; cursor?: string }) => Promise<P>,
  items: (page: P) => T[],
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await read({ limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    out.push(...items(page));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

function withQuery(path: string, options: object): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(options)) if (v !== undefined) q.set(k, String(v));
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}

function jobPath(id: unknown, tail = ""): string {
  return `/v1/jobs/${encodeURIComponent(checkJobId(id))}${tail}`;
}

function typePath(type: unknown): string {
  return `/v1/types/${encodeURIComponent(checkTypeName(type))}`;
}

/** The type a job target names: a type name, or a definition's (its type is all that is sent). */
function typeOf(where: string, job: unknown): string {
  if (typeof job === "string") return checkTypeName(job);
  if (typeof job === "object" && job !== null && typeof (job as { type?: unknown }).type === "string") {
    return checkTypeName((job as { type: string }).type);
  }
  throw new ErrandError(
    "INVALID_OPTION",
    `${where}: job must be a type name or a definition, got ${describe(job)}`,
  );
}

/** `value` as the list a call takes, refused as the Queue refuses it when it is none. */
function listOf<T>(
  where: string,
  what: string,
  value: unknown,
  code: ErrandErrorCode = "INVALID_OPTION",
): readonly T[] {
  if (!Array.isArray(value))
    throw new ErrandError(code, `${where}: ${what} must be an array, got ${describe(value)}`);
  return value;
}

/** Whether `job` is a definition with a payload schema, which a Queue would run first. */
function hasSchema(job: unknown): boolean {
  return typeof job === "object" && job !== null && (job as { schema?: unknown }).schema != null;
}

/**
 * A payload as a Queue takes it: through the definition's schema when `job` is one with a schema
 * (what the schema makes of it is what is sent, as a Queue stores it), then checked as below.
 * @throws ErrandError `INVALID_PAYLOAD`
 */
async function payloadOf(job: unknown, payload: unknown): Promise<unknown> {
  return checkPayload(hasSchema(job) ? await validatePayload(job as AnyJobDefinition, payload) : payload);
}

/**
 * A payload checked as a Queue checks it: what JSON.stringify would drop or mangle (undefined, a
 * function, a bigint, NaN, a cycle) is refused here, not stored as null or as something else.
 * The byte bound is the server's to hold.
 * @throws ErrandError `INVALID_PAYLOAD`
 */
function checkPayload<P>(payload: P): P {
  toJsonText("payload", payload);
  return payload;
}

/**
 * A result or checkpoint checked as the Queue checks it before it is sent: JSON.stringify of the
 * body would turn NaN into null and drop a function (a job completed with a result it never had,
 * a checkpoint lost), and a BigInt would fail the whole request.
 * @throws ErrandError `INVALID_PAYLOAD`
 */
function checkJson<T>(field: string, value: T): T {
  toJsonText(field, value);
  return value;
}

function checkOptions(where: string, options: unknown): EnqueueOptions {
  checkObject(where, "options", options);
  if (typeof (options as EnqueueOptions).backoff === "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: a function backoff cannot be sent to a server; set the type's backoff there`,
    );
  }
  // A database connection cannot travel over HTTP (JSON.stringify would throw on it, or the server
  // would refuse the field): say so plainly instead.
  if ((options as EnqueueOptions).db !== undefined) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: db (a transactional enqueue) needs a local queue on PostgreSQL, not a client`,
    );
  }
  // Checked as a Queue's enqueue checks them, with its codes: JSON would turn a NaN priority into
  // null and drop an undefined one, and the server's schema would answer only INVALID_REQUEST.
  planEnqueue("", undefined, options as EnqueueOptions, Date.now(), false);
  return options as EnqueueOptions;
}
