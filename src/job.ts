/**
 * Terminology
 *
 * - **job**: one unit of work: a `type` (routes to a handler), a JSON `payload`, and its
 *   scheduling fields. Identified by `id`, client-chosen or a generated UUIDv7.
 * - **queue**: a named lane jobs wait in. Workers list queues with weights.
 * - **attempt**: how many times the job has been claimed. It is also the *fencing token*: every
 *   report about a running job (complete, fail, heartbeat, checkpoint) names the attempt it is
 *   about, and a report for any attempt but the current one changes nothing.
 * - **lease**: the time a claimed job belongs to one worker (`leaseExpiresAt`). Heartbeats extend
 *   it; when it runs out the attempt counts as failed and the job goes back (or dies).
 * - **hot set**: blocked, pending and active jobs. Finished jobs (completed, dead, cancelled,
 *   expired) leave the hot set so claim cost does not grow with history.
 * - **dependency**: a job another waits for (`dependsOn`). A job with unfinished dependencies is
 *   `blocked`: claims never see it. The completion of its last dependency makes it `pending` in
 *   the same transaction. A dependency that ends `dead`, `cancelled` or `expired` cancels its
 *   blocked dependents, and theirs in turn, unless a dependent says `onDependencyFailure: "run"`
 *   (then a dependency that finished in any state counts as done).
 *
 * The state machine:
 *
 * ```
 *   enqueue with unfinished dependencies ─▶ blocked ──(last dependency done)──┐
 *            enqueue                            └─ cancel, expiry, a dependency │
 *               │                                  failed ─▶ cancelled/expired  │
 *               ▼         claim            complete  ◀──────────────────────────┘
 *  retry ──▶ pending ─────────────▶ active ─────────▶ completed
 *  (manual)   │  ▲ ▲                │  │ │
 *             │  │ └─ fail, retries │  │ └─ fail, no retries left / non-retryable /
 *             │  │    left (backoff)┘  │    at_most_once / lease lost 3× ──▶ dead
 *             │  └─ release (shutdown)─┘
 *             │  ▲ └─ snooze (ctx.snooze: back at now + delay, not counted as an attempt)
 *             ├─ cancel ─▶ cancelled   (active jobs too: their signal aborts)
 *             └─ expiresAt passes ─▶ expired
 * ```
 * @module
 */
import { MAX_ERROR_HISTORY } from "./validation.js";

/** Where a job is in its life. See the module doc for the transitions. */
export type JobState = "blocked" | "pending" | "active" | "completed" | "dead" | "cancelled" | "expired";

/** The states a job never leaves on its own. */
export type FinishedState = "completed" | "dead" | "cancelled" | "expired";

/** Every state, in lifecycle order. */
export const JOB_STATES: readonly JobState[] = [
  "blocked",
  "pending",
  "active",
  "completed",
  "dead",
  "cancelled",
  "expired",
];

/** The finished states. */
export const FINISHED_STATES: readonly FinishedState[] = ["completed", "dead", "cancelled", "expired"];

/**
 * `at_least_once` (the default): a job whose worker dies runs again. `at_most_once`: a job is
 * never started twice; any failure, lost lease or shutdown sends it to `dead`.
 */
export type Delivery = "at_least_once" | "at_most_once";

/**
 * What a blocked job does when a dependency ends `dead`, `cancelled` or `expired`: `"cancel"` (the
 * default) ends it `cancelled`, with the dependency named in its error history, and so on down to
 * its own dependents; `"run"` lets it run once every dependency has finished, in whatever state.
 */
export type DependencyFailurePolicy = "cancel" | "run";

/** How a job waits between failed attempts, in the serialisable form stored with the job. */
export type StoredBackoff =
  | {
      /** The same wait before every retry. */
      type: "fixed";
      /** The wait before each retry, in ms. */
      delayMs: number;
    }
  | {
      /** `baseMs × factor^(attempt-1)`, capped at `maxMs`. */
      type: "exponential";
      /** The wait after the first failed attempt, in ms. */
      baseMs: number;
      /** The longest wait, in ms. */
      maxMs: number;
      /** What each further failed attempt multiplies the wait by. */
      factor: number;
      /** Whether each wait is drawn from the upper half of its value. */
      jitter: boolean;
    }
  /** A function policy lives in the job definition; stores keep this marker and a fallback. */
  | {
      /** The backoff function of the job's definition decides. */
      type: "custom";
      /**
       * The policy used where the definition's function is not at hand (a process that recovers
       * the job without the definition), or when the function throws.
       */
      fallback: { type: "exponential"; baseMs: number; maxMs: number; factor: number; jitter: boolean };
    };

/**
 * One failed attempt, kept in the job's error history ({@link Job.errors}, the most recent
 * {@link MAX_ERROR_HISTORY} of them).
 * @since 0.1.0
 */
export interface JobErrorEntry {
  /**
   * The attempt that failed, 1-based (0 for a job a dependency's failure cancelled before it ran).
   * Once the history is full it no longer starts at attempt 1: this says which attempts are kept.
   */
  attempt: number;
  /** The error's message, shortened to {@link MAX_ERROR_TEXT_LENGTH} characters. */
  message: string;
  /** The error's `name` or `code`, when it had one. */
  name?: string;
  /**
   * The error's stack trace, when it had one, shortened to {@link MAX_ERROR_STACK_LENGTH}
   * characters (a remote worker's as well as a handler's own).
   */
  stack?: string;
  /** Epoch milliseconds. */
  at: number;
  /**
   * Why the attempt failed when no handler threw: `"lease_expired"`, `"timeout"`, `"shutdown"`;
   * `"dependency_failed"` when a blocked job was cancelled because a dependency did not succeed.
   */
  kind?: string;
  /** With `kind: "dependency_failed"`: the id of the dependency that ended dead, cancelled or expired. */
  dependency?: string;
}

/**
 * A job as errand shows it: payload parsed, times as `Date`s. A Job is a snapshot: its Dates are
 * read-only (their setters throw a TypeError; `new Date(job.runAt)` makes one to change), and the
 * jobs one call returns may share them.
 * @typeParam P - the payload type.
 * @typeParam R - the result type.
 * @since 0.1.0
 */
export interface Job<P = unknown, R = unknown> {
  /** Unique in the store: the `id` enqueue option, or a generated UUIDv7. */
  readonly id: string;
  /** The job type's name, which routes the job to its handler. */
  readonly type: string;
  /** The queue the job waits in; a retry moves it to `retryQueue` when that is set. */
  readonly queue: string;
  /** Where the job is in its life (see {@link JobState}). */
  readonly state: JobState;
  /** The payload it was enqueued with, parsed from JSON. */
  readonly payload: P;
  /** What the last attempt saved with `ctx.checkpoint()`; a retry resumes from it. */
  readonly checkpoint: unknown;
  /** What the handler returned, once `completed`. */
  readonly result: R | null;
  /** Higher runs first within a queue. */
  readonly priority: number;
  /** How much of a worker's concurrency the job takes while it runs. */
  readonly weight: number;
  /** When the job is due: no claim takes it sooner. Retries, snoozes and `reschedule` move it. */
  readonly runAt: Date;
  /** A job not started by this time becomes `expired`; null for never. */
  readonly expiresAt: Date | null;
  /** Times claimed so far; the fencing token of the current attempt. */
  readonly attempt: number;
  /** Attempts before the job is `dead`, the first included. */
  readonly maxAttempts: number;
  /** How long the job waits between failed attempts. */
  readonly backoff: StoredBackoff;
  /** Where retries go, when not to `queue`. */
  readonly retryQueue: string | null;
  /** Whether the job may run again after a crash (see {@link Delivery}). */
  readonly delivery: Delivery;
  /** Each attempt's time limit in ms: its signal aborts and it fails after this long; null for none. */
  readonly timeoutMs: number | null;
  /** The `uniqueKey` it was enqueued with: while it holds, enqueueing the key again returns this job. */
  readonly uniqueKey: string | null;
  /** While `active`: when the current attempt's lease runs out unless a heartbeat extends it. */
  readonly leaseExpiresAt: Date | null;
  /** While `active`: the worker holding the job (the `workerId` its claim gave). */
  readonly workerId: string | null;
  /**
   * The error history: one entry per failed attempt (and per dependency failure that cancelled
   * it), oldest first, the most recent {@link MAX_ERROR_HISTORY} kept. The failure that would make
   * one more drops the oldest; each entry's `attempt` says which attempt it was.
   */
  readonly errors: readonly JobErrorEntry[];
  /** When the job was enqueued. */
  readonly createdAt: Date;
  /** When the latest attempt started. */
  readonly startedAt: Date | null;
  /** When the job reached a finished state (see {@link FinishedState}); null until then. */
  readonly finishedAt: Date | null;
  /**
   * Who enqueued the job, when known: the `owner` enqueue option, or on the server the name of the
   * token that enqueued it. A server's `producer` tokens read only the jobs they own.
   */
  readonly owner: string | null;
  /** The ids of the jobs this one waits for, in the order given; empty for most jobs. */
  readonly dependsOn: readonly string[];
  /** How many of {@link dependsOn} are still unfinished while the job is `blocked`; 0 otherwise. */
  readonly blockedBy: number;
  /** See {@link DependencyFailurePolicy}. */
  readonly onDependencyFailure: DependencyFailurePolicy;
  /**
   * The job's key (the `key` enqueue option): a tenant, customer or account the job belongs to.
   * Per-key caps, rate limits, fairness and order of its type apply by it.
   */
  readonly key: string | null;
  /** The debounce key it was enqueued with, while later enqueues with the key may replace it. */
  readonly debounceKey: string | null;
  /** Times the handler snoozed it (`ctx.snooze`): attempts that did not count toward `maxAttempts`. */
  readonly snoozes: number;
}

/**
 * A {@link Job} without the fields whose size its callers decide: `payload`, `checkpoint` and
 * `result` (up to the queue's `maxPayloadBytes` each), `errors` (up to {@link MAX_ERROR_HISTORY}
 * messages and stacks) and `dependsOn` (up to `MAX_DEPENDENCIES` ids). What a list of jobs shows or filters
 * by, a few hundred bytes a job whatever the jobs carry: what `GET /v1/jobs?view=summary` answers
 * and `ErrandClient.list({ view: "summary" })` returns. Every Job is one. `blockedBy` tells whether
 * a job still waits for dependencies, and `attempt` how many tries it has had.
 * @since 0.3.0
 */
export type JobSummary = Omit<Job, (typeof SUMMARY_LEAVES_OUT)[number]>;

/**
 * The fields of a job a {@link JobSummary} leaves out, those whose size its callers decide (the
 * server's schema and the stores' summary reads are made from it). @internal
 */
export const SUMMARY_LEAVES_OUT = ["payload", "checkpoint", "result", "errors", "dependsOn"] as const;

/** `job` as a {@link JobSummary}: a new object without the five fields a summary leaves out. @internal */
export function toJobSummary(job: Job): JobSummary {
  const { payload: _p, checkpoint: _c, result: _r, errors: _e, dependsOn: _d, ...summary } = job;
  return summary;
}

/**
 * One of a job's dependencies as its handler sees it (`ctx.dependencies()`): `state`, `type` and
 * `result` are null when the dependency was pruned by retention.
 * @since 0.2.0
 */
export interface JobDependency<R = unknown> {
  /** The dependency's id, as given in `dependsOn`. */
  readonly id: string;
  /** The dependency's job type; null once it was pruned. */
  readonly type: string | null;
  /** The dependency's state now; null once it was pruned. */
  readonly state: JobState | null;
  /** What the dependency returned, once `completed`. */
  readonly result: R | null;
}

/** A job just enqueued; `duplicate` tells whether its id or unique key matched an existing job. */
export type EnqueuedJob<P = unknown, R = unknown> = Job<P, R> & {
  /** `true` when the enqueue met an existing job (by id, unique key or debounce key) and returned it. */
  readonly duplicate: boolean;
};

/**
 * A job as stores keep it: times in epoch milliseconds, JSON fields as text. Stores never parse
 * payloads; the core does, once, in {@link toJob}.
 * @internal
 */
export interface JobRecord {
  id: string;
  type: string;
  queue: string;
  state: JobState;
  /** JSON text. */
  payload: string;
  /** JSON text or null. */
  checkpoint: string | null;
  /** JSON text or null. */
  result: string | null;
  priority: number;
  weight: number;
  runAt: number;
  expiresAt: number | null;
  attempt: number;
  maxAttempts: number;
  /** JSON text of a {@link StoredBackoff}. */
  backoff: string;
  retryQueue: string | null;
  delivery: Delivery;
  timeoutMs: number | null;
  uniqueKey: string | null;
  leaseExpiresAt: number | null;
  workerId: string | null;
  /** JSON text of a {@link JobErrorEntry} array. */
  errors: string;
  /** Leases that ran out without an outcome; three make a poison pill `dead`. */
  leaseExpirations: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  owner: string | null;
  /** JSON text of an id array, or null for none. */
  dependsOn: string | null;
  /** Unfinished dependencies while blocked; null in the done table (read as 0). */
  blockedBy: number | null;
  onDependencyFailure: DependencyFailurePolicy;
  key: string | null;
  debounceKey: string | null;
  snoozes: number;
}

/** The empty error history and dependency list every such job shares (frozen). @internal */
export const NO_ERRORS: readonly JobErrorEntry[] = Object.freeze([]);
/**
 * `errors` with `entry` appended as every store appends it, the oldest dropped past
 * {@link MAX_ERROR_HISTORY}: the history a failure's events carry, which no read of the store made.
 * @internal
 */
export function withErrorEntry(errors: readonly JobErrorEntry[], entry: JobErrorEntry): JobErrorEntry[] {
  return [...errors.slice(Math.max(0, errors.length - MAX_ERROR_HISTORY + 1)), entry];
}
/** @internal */
export const NO_DEPENDENCIES: readonly string[] = Object.freeze([]);

/**
 * The Date a {@link Job} carries: a Date in every way (`instanceof Date`, `getTime`, `toJSON`),
 * except that its setters throw. A Job is a snapshot and its instants are as read-only as the
 * rest of it, so jobs handed out together can share one: the 20,000 jobs of one `enqueueMany`
 * hold one `runAt` and one `createdAt` rather than 40,000 Dates, which the young generation would
 * copy and promote (a cold 20,000-job call spent ~60 ms more on them, see bench/RESULTS.md).
 */
class JobDate extends Date {}
for (const name of Object.getOwnPropertyNames(Date.prototype)) {
  if (!name.startsWith("set")) continue;
  Object.defineProperty(JobDate.prototype, name, {
    value(): never {
      throw new TypeError(
        `a job's dates are read-only (Date.prototype.${name}); copy it first: new Date(date)`,
      );
    },
  });
}
Object.freeze(JobDate.prototype);

/** A read-only Date for a job's instant (see JobDate). @internal */
export function jobDate(ms: number): Date {
  return new JobDate(ms);
}

/**
 * One read-only Date per instant for the jobs of one call: the jobs of an enqueueMany share their
 * run and creation times (and their expiry, when it is given as a span). @internal
 */
export function sharedJobDates(): (ms: number) => Date {
  const dates = new Map<number, Date>();
  return (ms) => {
    let d = dates.get(ms);
    if (d === undefined) {
      d = new JobDate(ms);
      dates.set(ms, d);
    }
    return d;
  };
}

const backoffs = new Map<string, StoredBackoff>();

/** Jobs share a handful of policies: parse each once and share it, frozen. */
export function parseBackoff(text: string): StoredBackoff {
  let policy = backoffs.get(text);
  if (!policy) {
    policy = Object.freeze(JSON.parse(text) as StoredBackoff);
    if (backoffs.size < 256) backoffs.set(text, policy);
  }
  return policy;
}

/**
 * Converts a store record to the public {@link Job}.
 * @param at - how an instant becomes a Date: one per call by default; {@link sharedJobDates} for
 *   jobs read together (a claim's share its lease and start, and often their run and creation times).
 */
export function toJob<P = unknown, R = unknown>(r: JobRecord, at: (ms: number) => Date = jobDate): Job<P, R> {
  return {
    id: r.id,
    type: r.type,
    queue: r.queue,
    state: r.state,
    payload: JSON.parse(r.payload) as P,
    checkpoint: r.checkpoint === null ? null : JSON.parse(r.checkpoint),
    result: r.result === null ? null : (JSON.parse(r.result) as R),
    priority: r.priority,
    weight: r.weight,
    runAt: at(r.runAt),
    expiresAt: r.expiresAt === null ? null : at(r.expiresAt),
    attempt: r.attempt,
    maxAttempts: r.maxAttempts,
    backoff: parseBackoff(r.backoff),
    retryQueue: r.retryQueue,
    delivery: r.delivery,
    timeoutMs: r.timeoutMs,
    uniqueKey: r.uniqueKey,
    leaseExpiresAt: r.leaseExpiresAt === null ? null : at(r.leaseExpiresAt),
    workerId: r.workerId,
    errors: r.errors === "[]" ? NO_ERRORS : (JSON.parse(r.errors) as JobErrorEntry[]),
    createdAt: at(r.createdAt),
    startedAt: r.startedAt === null ? null : at(r.startedAt),
    finishedAt: r.finishedAt === null ? null : at(r.finishedAt),
    owner: r.owner,
    dependsOn: r.dependsOn === null ? NO_DEPENDENCIES : (JSON.parse(r.dependsOn) as string[]),
    blockedBy: r.blockedBy ?? 0,
    onDependencyFailure: r.onDependencyFailure,
    key: r.key,
    debounceKey: r.debounceKey,
    snoozes: r.snoozes,
  };
}

/** True for completed, dead, cancelled and expired. */
export function isFinished(state: JobState): state is FinishedState {
  return state !== "pending" && state !== "active" && state !== "blocked";
}
