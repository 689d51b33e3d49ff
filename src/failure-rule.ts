/**
 * The failure rule: what a failed attempt comes to. A retryable failure of an at-least-once job
 * with attempts left is retried after its backoff (in its `retryQueue`, if any); anything else
 * (attempts spent, a non-retryable error, an at-most-once job, a backoff that says stop) sends the
 * job to `dead`. Every failure is recorded in the job's error history, which keeps the most recent
 * {@link MAX_ERROR_HISTORY} entries.
 * @module
 */
import { backoffDelay, DEFAULT_BACKOFF } from "./backoff.js";
import type { AnyJobDefinition } from "./define-job.js";
import { isNonRetryable } from "./errors.js";
import type { Job, JobErrorEntry, JobRecord } from "./job.js";
import type { FailItem } from "./store/store.js";
import {
  describe,
  MAX_DATE_MS,
  MAX_ERROR_NAME_LENGTH,
  MAX_ERROR_STACK_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  sanitizeText,
} from "./validation.js";

/** Leases that may run out without an outcome before a job counts as a poison pill (`dead`). */
export const POISON_PILL_LEASES = 3;

/** How one attempt failed, as the failure rule takes it. */
export interface AttemptOutcome {
  job: Job;
  error: unknown;
  /** `false` sends the job straight to `dead`. */
  retryable?: boolean;
  /** Why the attempt failed when no handler threw (`"timeout"`, `"shutdown"`, …). */
  kind?: string;
  /** The sweeper's compare-and-set: only while the lease has run out. */
  leaseExpired?: boolean;
}

/** The store write for one failed attempt: retry at a time, or dead (`retryAt: null`). */
export function failureWrite(
  { job, error, retryable, kind, leaseExpired }: AttemptOutcome,
  def: AnyJobDefinition | undefined,
  now: number,
  random: () => number,
): FailItem {
  let retryAt: number | null = null;
  if (
    retryable !== false &&
    !read(() => isNonRetryable(error), false) &&
    job.delivery === "at_least_once" &&
    job.attempt < job.maxAttempts
  ) {
    const delay = backoffDelay(job.backoff, def?.backoffFn, error, job.attempt, random);
    // A backoff may be longer than any date left (a custom one, a huge fixed one): the retry
    // waits until the latest date a store keeps rather than overflow it. Never lose a failure.
    // A delay that is not a number (a bug in any policy) must not reach a store as NaN.
    if (delay !== false)
      retryAt = Math.min(now + (Number.isNaN(delay) ? DEFAULT_BACKOFF.baseMs : delay), MAX_DATE_MS);
  }
  return {
    id: job.id,
    attempt: job.attempt,
    error: errorEntry(error, job.attempt, now, kind),
    retryAt,
    retryQueue: retryAt === null ? null : job.retryQueue,
    leaseExpired,
  };
}

/**
 * The failure of an attempt whose lease ran out with no outcome (its worker crashed, hung or lost
 * its connection). The third such lease in a row makes the job a poison pill: not retried.
 */
export function leaseExpiryError(record: JobRecord): Error {
  const poison = record.leaseExpirations + 1 >= POISON_PILL_LEASES;
  const message = poison
    ? `lease expired ${POISON_PILL_LEASES} times without an outcome; the job may be killing its worker`
    : "lease expired without an outcome (worker crashed, hung or lost its connection)";
  return Object.assign(new Error(message), { retryable: !poison });
}

/**
 * The history entry for a failure. It never throws, whatever a handler threw (a null-prototype
 * object, a BigInt code, a throwing getter, a Proxy): a throw here would lose the failure and
 * leave the job active.
 */
function errorEntry(error: unknown, attempt: number, at: number, kind?: string): JobErrorEntry {
  const e = read(() => (error instanceof Error ? error : undefined), undefined);
  const message = read(() => {
    const m = e ? e.message : (error as { message?: unknown } | null | undefined)?.message;
    if (typeof m === "string") return m;
    if (typeof error === "string") return error;
    return jsonOf(error);
  }, describe(error));
  // What a handler threw is recorded, never refused (that would lose the failure): text no store
  // keeps as given (U+0000, lone surrogates) is replaced, and overlong text cut.
  const entry: JobErrorEntry = { attempt, message: sanitizeText(message, MAX_ERROR_TEXT_LENGTH), at };
  const code = read(() => (error as { code?: unknown } | null | undefined)?.code, undefined);
  // A numeric code (database drivers use them) is no name: keep the error's own name then.
  const name = typeof code === "string" ? code : read(() => e?.name, undefined);
  if (typeof name === "string") entry.name = sanitizeText(name, MAX_ERROR_NAME_LENGTH);
  const stack = read(() => e?.stack, undefined);
  // A remote worker's stack (up to MAX_ERROR_TEXT_LENGTH) comes through here too: one bound.
  if (typeof stack === "string" && stack) entry.stack = sanitizeText(stack, MAX_ERROR_STACK_LENGTH);
  if (kind) entry.kind = kind;
  return entry;
}

/**
 * Whether `entry` records `error` as the failure of its attempt: the same message, name and stack
 * once shortened and cleaned as {@link errorEntry} keeps them. How a repeat of a failure report
 * whose answer was lost is told from a report of another failure.
 */
export function recordsFailure(entry: JobErrorEntry, error: unknown): boolean {
  const again = errorEntry(error, entry.attempt, entry.at);
  return (
    entry.kind === undefined &&
    again.message === entry.message &&
    again.name === entry.name &&
    again.stack === entry.stack
  );
}

/** `get()`, or `fallback` when reading the thrown value throws (a getter, a Proxy trap). */
function read<T>(get: () => T, fallback: T): T {
  try {
    return get();
  } catch {
    return fallback;
  }
}

/** The thrown value as JSON when JSON can say it, else {@link describe}'s words for it. */
export function jsonOf(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return typeof text === "string" ? text : describe(value);
  } catch {
    return describe(value);
  }
}
