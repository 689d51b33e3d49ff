import type { Logger } from "pino";
import { type BackoffFunction, type BackoffOptions, toStoredBackoff } from "./backoff.js";
import { type Duration, toTimerMs } from "./duration.js";
import { ErrandError } from "./errors.js";
import type { Delivery, DependencyFailurePolicy, Job, JobDependency, StoredBackoff } from "./job.js";
import { JOB_DEFAULTS } from "./job-fields.js";
import { checkKnownKeys } from "./known-keys.js";
import type { Snooze } from "./snooze.js";
import {
  checkInt,
  checkQueueName,
  checkTypeName,
  describe,
  MAX_COUNT,
  MAX_PRIORITY,
  MIN_PRIORITY,
} from "./validation.js";

/**
 * The Standard Schema interface (https://standardschema.dev), which zod, valibot, arktype and
 * others implement. errand only calls `~standard.validate`.
 * @since 0.1.0
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties; errand calls only `validate`. */
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** What a Standard Schema validation returns. */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<unknown> }> };

/**
 * What a handler gets besides its payload.
 * @since 0.1.0
 */
export interface JobContext<P = unknown> {
  /** The job as claimed: `attempt`, `checkpoint` from an earlier attempt, `errors` so far. */
  readonly job: Job<P>;
  /** The current attempt, 1-based. */
  readonly attempt: number;
  /**
   * Aborted when the job is cancelled, times out, loses its lease or the worker shuts down past
   * its grace period. A handler should pass it to its I/O and stop when it fires; its result is
   * ignored after that.
   */
  readonly signal: AbortSignal;
  /**
   * Extends the lease now. The worker already heartbeats every running job about every third of
   * the lease; call this inside a long synchronous stretch. Resolves `false` (and aborts
   * `signal`) when the attempt is no longer current.
   */
  heartbeat(): Promise<boolean>;
  /**
   * Saves progress; a retry of this job sees it as `ctx.job.checkpoint` and can resume.
   * Resolves `false` when the attempt is no longer current.
   */
  checkpoint(data: unknown): Promise<boolean>;
  /**
   * The jobs this one waited for (`dependsOn`), in the order given, each with its state and, when
   * completed, its result. Empty for a job without dependencies.
   * @example
   * ```ts
   * const pages = (await ctx.dependencies()).map((d) => d.result as string);
   * ```
   */
  dependencies(): Promise<JobDependency[]>;
  /**
   * Puts the job back for later without spending an attempt: return what it gives. The job is
   * pending again at now + `delay`, its errors untouched; `job.snoozes` counts the snoozes.
   * @example `if (!(await partner.ready())) return ctx.snooze("30s");`
   * @throws ErrandError `INVALID_DURATION` for a bad delay.
   */
  snooze(delay: Duration): Snooze;
  /** A logger bound to this job's id, type and attempt. */
  readonly log: Logger;
}

/** Runs one job. Return a JSON-serialisable result; throw to fail the attempt. */
export type JobHandler<P, R> = (payload: P, ctx: JobContext<P>) => Promise<R> | R;

/**
 * Defaults every job of a type gets; each can be overridden per enqueue.
 * @since 0.1.0
 */
export interface JobDefaults {
  /**
   * The queue jobs of this type go to.
   * @defaultValue "default"
   */
  queue?: string;
  /**
   * Higher runs first within a queue. Any safe integer, {@link MIN_PRIORITY} to {@link MAX_PRIORITY}.
   * @defaultValue 0
   */
  priority?: number;
  /**
   * How much of a worker's `concurrency` a running job takes, 1 to {@link MAX_COUNT}. A job heavier
   * than a whole worker still runs, alone, on an idle one.
   * @defaultValue 1
   */
  weight?: number;
  /**
   * Attempts before the job is `dead`, the first included: 1 to {@link MAX_COUNT}.
   * @defaultValue 5
   */
  maxAttempts?: number;
  /**
   * Wait between attempts.
   * @defaultValue exponential from 1 s, doubling, capped at 1 h, jittered
   */
  backoff?: BackoffOptions;
  /** Retries go to this queue instead of the job's own (say, a slower "retries" lane). */
  retryQueue?: string;
  /**
   * The handler's signal aborts and the attempt fails after this long. None by default. At most
   * {@link MAX_TIMER_MS} (about 24.8 days), the longest timer Node can set; longer is refused
   * (`INVALID_DURATION`).
   * @remarks A handler that ignores its signal keeps running in the background, no longer counted.
   */
  timeoutMs?: Duration;
  /**
   * `"at_least_once"` retries after crashes; `"at_most_once"` never starts a job twice.
   * @defaultValue "at_least_once"
   */
  delivery?: Delivery;
  /**
   * What a blocked job does when one of its dependencies ends `dead`, `cancelled` or `expired`:
   * `"cancel"` ends it cancelled (and its own dependents after it); `"run"` runs it anyway once
   * every dependency has finished, and `ctx.dependencies()` shows which did not succeed.
   * @defaultValue "cancel"
   */
  onDependencyFailure?: DependencyFailurePolicy;
}

/**
 * A job type: its name, its handler and its defaults.
 * @since 0.1.0
 */
export interface JobDefinitionOptions<P, R> extends JobDefaults {
  /** The name jobs are routed by. Matches {@link NAME_PATTERN}. */
  type: string;
  /** Runs each job of this type: throw to fail the attempt, return its JSON-serialisable result. */
  handler: JobHandler<P, R>;
  /**
   * At most this many jobs of this type run at once across every worker sharing the store (1 to
   * {@link MAX_COUNT}). No cap by default.
   */
  concurrency?: number;
  /**
   * At most this many jobs of this type and one key (the `key` enqueue option) run at once,
   * across every worker sharing the store (1 to {@link MAX_COUNT}). Jobs without a key are not
   * limited by it. Composes with `concurrency`: both hold.
   */
  keyConcurrency?: number;
  /**
   * Jobs of this type with the same key start one at a time, in enqueue order: a later one never
   * starts before an earlier one has finished. A retrying job holds its key until it completes or
   * ends dead; a dead, cancelled or expired job releases it, and one retried by hand is its key's
   * earliest again once the key's running job has finished. Jobs without a key are not ordered.
   * @defaultValue false
   */
  ordered?: boolean;
  /**
   * When several keys (the `key` enqueue option) have ready jobs of this type, claims take them
   * round-robin across keys, so a key with a large backlog does not hold back a key that enqueued
   * later; priority still orders within a key (a higher-priority job goes before any lower one).
   * Jobs without a key take their turns as one "no key" group. A job takes its place in the turns
   * when it is enqueued, so the process enqueuing it must know the type is fair (this definition
   * registered, or the type's setting on the server it enqueues through); a job enqueued without
   * it is taken in the usual order.
   * @defaultValue false
   */
  fair?: boolean;
  /**
   * At most `limit` jobs of this type start in any interval of `periodMs`, counted across every
   * worker and server sharing the store. A job held back stays pending and is taken as soon as
   * the window allows (workers set a timer for it; no busy polling); other types are not slowed.
   * `limit` 1 to {@link MAX_COUNT}; `periodMs` 1 ms to about 24.8 days ({@link MAX_TIMER_MS}).
   * @example `rateLimit: { limit: 100, periodMs: "1m" }`
   */
  rateLimit?: RateLimit;
  /** As `rateLimit`, per key (the `key` enqueue option): each key has its own window. */
  keyRateLimit?: RateLimit;
  /** Validates payloads at enqueue (and at {@link runJob}); invalid ones are refused. */
  schema?: StandardSchemaV1<unknown, P>;
}

/**
 * A validated job type, made by {@link defineJob}.
 * @since 0.1.0
 */
export interface JobDefinition<P = unknown, R = unknown> {
  /** The type's name, which jobs are routed by. */
  readonly type: string;
  /** The handler that runs each job. */
  readonly handler: JobHandler<P, R>;
  /** The queue the type's jobs go to unless an enqueue says otherwise. */
  readonly queue: string;
  /** The type's default priority; higher runs first within a queue. */
  readonly priority: number;
  /** How much of a worker's `concurrency` each running job takes. */
  readonly weight: number;
  /** Attempts before a job is `dead`, the first included. */
  readonly maxAttempts: number;
  /** `backoff` in its stored form; a function is stored as `custom` with a fallback. */
  readonly backoff: StoredBackoff;
  /** Set when `backoff` was a function. */
  readonly backoffFn: BackoffFunction | undefined;
  /** Where retries go; null for the job's own queue. */
  readonly retryQueue: string | null;
  /** Each attempt's time limit in ms; null for none. */
  readonly timeoutMs: number | null;
  /** Whether a job may run again after a crash (`at_least_once`) or never starts twice. */
  readonly delivery: Delivery;
  /** What a blocked job does when a dependency does not succeed. */
  readonly onDependencyFailure: DependencyFailurePolicy;
  /** How many of the type's jobs may run at once across every worker; null for no cap. */
  readonly concurrency: number | null;
  /** How many of the type's jobs with one key may run at once; null for no cap. */
  readonly keyConcurrency: number | null;
  /** Whether jobs with the same key start one at a time, in enqueue order. */
  readonly ordered: boolean;
  /** Whether claims take ready jobs round-robin across keys. */
  readonly fair: boolean;
  /** `rateLimit`, its period resolved to ms; null for none. */
  readonly rateLimit: Rate | null;
  /** `keyRateLimit`, its period resolved to ms; null for none. */
  readonly keyRateLimit: Rate | null;
  /** The schema payloads are validated by, when one was given. */
  readonly schema: StandardSchemaV1<unknown, P> | undefined;
}

/** Payload type of a definition. */
export type PayloadOf<D> = D extends JobDefinition<infer P, unknown> ? P : never;
/** Result type of a definition. */
export type ResultOf<D> = D extends JobDefinition<unknown, infer R> ? R : never;

/** The definitions {@link defineJob} made: only these have had their options checked. */
const MADE = new WeakSet<object>();

/** The options of {@link JobDefaults}: a type's defaults, which each enqueue may override. */
export const JOB_DEFAULT_KEYS: readonly (keyof JobDefaults)[] = [
  "queue",
  "priority",
  "weight",
  "maxAttempts",
  "backoff",
  "retryQueue",
  "timeoutMs",
  "delivery",
  "onDependencyFailure",
];

const DEFINITION_KEYS = new Set([
  "type",
  "handler",
  ...JOB_DEFAULT_KEYS,
  "concurrency",
  "keyConcurrency",
  "ordered",
  "fair",
  "rateLimit",
  "keyRateLimit",
  "schema",
]);

/**
 * Defines a job type. Options are checked now, so a typo fails at startup, not at 3 a.m.
 * @example
 * ```ts
 * const sendEmail = defineJob({
 *   type: "send-email",
 *   queue: "emails",
 *   maxAttempts: 5,
 *   handler: async (payload: { to: string }, ctx) => {
 *     await mailer.send(payload.to, { signal: ctx.signal });
 *     return { sent: true };
 *   },
 * });
 * ```
 * @throws ErrandError with the offending field named.
 * @since 0.1.0
 */
export function defineJob<P, R>(options: JobDefinitionOptions<P, R>): JobDefinition<P, R> {
  checkKnownKeys("defineJob", options as object, DEFINITION_KEYS);
  const type = checkTypeName(options.type);
  if (typeof options.handler !== "function") {
    throw new ErrandError("INVALID_OPTION", `defineJob({ type: "${type}" }): handler must be a function`);
  }
  const defaults = resolveDefaults(options);
  const def = Object.freeze({
    type,
    handler: options.handler,
    ...defaults,
    concurrency:
      options.concurrency === undefined ? null : checkInt("concurrency", options.concurrency, 1, MAX_COUNT),
    keyConcurrency:
      options.keyConcurrency === undefined
        ? null
        : checkInt("keyConcurrency", options.keyConcurrency, 1, MAX_COUNT),
    ordered: checkFlag("ordered", options.ordered),
    fair: checkFlag("fair", options.fair),
    rateLimit: options.rateLimit === undefined ? null : checkRate("rateLimit", options.rateLimit),
    keyRateLimit: options.keyRateLimit === undefined ? null : checkRate("keyRateLimit", options.keyRateLimit),
    schema: options.schema,
  });
  MADE.add(def);
  return def;
}

/**
 * Whether `value` is a definition made by {@link defineJob}, whose options were checked then. An
 * object that only looks like one (`{ type: "__proto__" }`) was checked by nothing.
 * @since 0.1.0
 */
export function isJobDefinition(value: unknown): value is AnyJobDefinition {
  return typeof value === "object" && value !== null && MADE.has(value);
}

/**
 * `value` when it is a definition made by {@link defineJob}; refused otherwise (`field` names it
 * in the message: `jobs[2]`).
 * @throws ErrandError `INVALID_OPTION`
 */
export function checkJobDefinition(field: string, value: unknown): AnyJobDefinition {
  if (!isJobDefinition(value)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${field} must be a definition made by defineJob, got ${describe(value)}`,
    );
  }
  return value;
}

/** Validates and fills {@link JobDefaults}, a field not given taking its {@link JOB_DEFAULTS} value. */
export function resolveDefaults(
  o: JobDefaults,
): Omit<
  JobDefinition,
  | "type"
  | "handler"
  | "concurrency"
  | "keyConcurrency"
  | "ordered"
  | "fair"
  | "rateLimit"
  | "keyRateLimit"
  | "schema"
> {
  const delivery = o.delivery ?? JOB_DEFAULTS.delivery;
  if (delivery !== "at_least_once" && delivery !== "at_most_once") {
    throw new ErrandError(
      "INVALID_OPTION",
      `delivery must be "at_least_once" or "at_most_once", got ${describe(delivery)}`,
    );
  }
  const onDependencyFailure = o.onDependencyFailure ?? JOB_DEFAULTS.onDependencyFailure;
  if (onDependencyFailure !== "cancel" && onDependencyFailure !== "run") {
    throw new ErrandError(
      "INVALID_OPTION",
      `onDependencyFailure must be "cancel" or "run", got ${describe(onDependencyFailure)}`,
    );
  }
  return {
    queue: checkQueueName(o.queue ?? JOB_DEFAULTS.queue),
    priority: checkInt("priority", o.priority ?? JOB_DEFAULTS.priority, MIN_PRIORITY, MAX_PRIORITY),
    weight: checkInt("weight", o.weight ?? JOB_DEFAULTS.weight, 1, MAX_COUNT),
    maxAttempts: checkInt("maxAttempts", o.maxAttempts ?? JOB_DEFAULTS.maxAttempts, 1, MAX_COUNT),
    backoff: toStoredBackoff(o.backoff),
    backoffFn: typeof o.backoff === "function" ? o.backoff : undefined,
    retryQueue: o.retryQueue === undefined ? JOB_DEFAULTS.retryQueue : checkQueueName(o.retryQueue),
    timeoutMs: o.timeoutMs === undefined ? JOB_DEFAULTS.timeoutMs : toTimerMs("timeoutMs", o.timeoutMs),
    delivery,
    onDependencyFailure,
  };
}

/** A rate limit as given: at most `limit` starts in any `periodMs`. @since 0.2.0 */
export interface RateLimit {
  /** Most starts in any one window, 1 to {@link MAX_COUNT}. */
  limit: number;
  /** The window's length: 1 ms to {@link MAX_TIMER_MS}. */
  periodMs: Duration;
}

/** A rate limit resolved: `periodMs` in ms. @since 0.2.0 */
export interface Rate {
  /** Most starts in any one window. */
  readonly limit: number;
  /** The window's length in ms. */
  readonly periodMs: number;
}

const RATE_KEYS = new Set(["limit", "periodMs"]);

/**
 * A rate limit, checked and resolved.
 * @throws ErrandError `INVALID_RATE_LIMIT` naming the field and the bound.
 */
export function checkRate(name: string, value: unknown): Rate {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ErrandError(
      "INVALID_RATE_LIMIT",
      `${name} must be { limit, periodMs }, got ${describe(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (!RATE_KEYS.has(key)) {
      throw new ErrandError(
        "INVALID_RATE_LIMIT",
        `${name} has an unknown field ${JSON.stringify(key)}; give { limit, periodMs }`,
      );
    }
  }
  const { limit, periodMs } = value as { limit: unknown; periodMs: unknown };
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_COUNT) {
    throw new ErrandError(
      "INVALID_RATE_LIMIT",
      `${name}.limit must be an integer from 1 to ${MAX_COUNT}, got ${describe(limit)}`,
    );
  }
  let ms: number;
  try {
    ms = toTimerMs(`${name}.periodMs`, periodMs as Duration);
  } catch (e) {
    throw new ErrandError("INVALID_RATE_LIMIT", (e as Error).message, { cause: e });
  }
  if (ms < 1) throw new ErrandError("INVALID_RATE_LIMIT", `${name}.periodMs must be at least 1 ms`);
  return Object.freeze({ limit, periodMs: ms });
}

/** An optional boolean option. @throws ErrandError `INVALID_OPTION` for anything but a boolean. */
function checkFlag(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") {
    throw new ErrandError("INVALID_OPTION", `${name} must be true or false, got ${describe(value)}`);
  }
  return value;
}

/**
 * Runs a payload through a definition's schema, if any.
 * @throws ErrandError `INVALID_PAYLOAD` with the schema's issues as `details`.
 */
export async function validatePayload<P>(
  def: Pick<JobDefinition<P>, "type" | "schema">,
  payload: unknown,
): Promise<P> {
  if (!def.schema) return payload as P;
  const result = await def.schema["~standard"].validate(payload);
  if (result.issues) {
    const summary = result.issues
      .slice(0, 3)
      .map((i) =>
        i.path && i.path.length > 0 ? `${i.path.map(pathKey).join(".")}: ${i.message}` : i.message,
      )
      .join("; ");
    throw new ErrandError("INVALID_PAYLOAD", `invalid payload for job type "${def.type}": ${summary}`, {
      details: result.issues,
    });
  }
  return result.value;
}

function pathKey(segment: unknown): string {
  if (typeof segment === "object" && segment !== null && "key" in segment) return String(segment.key);
  return String(segment);
}

/** Any job definition, whatever its payload and result types (for lists of mixed types). */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list needs both variances.
export type AnyJobDefinition = JobDefinition<any, any>;
