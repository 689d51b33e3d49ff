/**
 * The failure rule: what a failed attempt comes to. A retryable failure of an at-least-once job
 * with attempts left is retried after its backoff (in its `retryQueue`, if any); anything else
 * (attempts spent, a non-retryable error, an at-most-once job, a backoff that says stop) sends the
 * job to `dead`. Every failure is recorded in the job's error history.
 * @module
 */
import { backoffDelay } from "./backoff.js";
import type { AnyJobDefinition } from "./define-job.js";
import { isNonRetryable } from "./errors.js";
import type { Job, JobErrorEntry, JobRecord } from "./job.js";
import type { FailItem } from "./store/store.js";
import { MAX_DATE_MS, MAX_ERROR_NAME_LENGTH, MAX_ERROR_TEXT_LENGTH, sanitizeText } from "./validation.js";

/** Leases that may run out without an outcome before a job counts as a poison pill (`dead`). */
export const POISON_PILL_LEASES = 3;
const MAX_STACK = 4000;

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
    !isNonRetryable(error) &&
    job.delivery === "at_least_once" &&
    job.attempt < job.maxAttempts
  ) {
    const delay = backoffDelay(job.backoff, def?.backoffFn, error, job.attempt, random);
    // A backoff may be longer than any date left (a custom one, a huge fixed one): the retry
    // waits until the latest date a store keeps rather than overflow it. Never lose a failure.
    if (delay !== false) retryAt = Math.min(now + delay, MAX_DATE_MS);
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

function errorEntry(error: unknown, attempt: number, at: number, kind?: string): JobErrorEntry {
  const e = error instanceof Error ? error : undefined;
  const message = e
    ? e.message
    : typeof (error as { message?: unknown } | null)?.message === "string"
      ? (error as { message: string }).message
      : typeof error === "string"
        ? error
        : safeJson(error);
  // What a handler threw is recorded, never refused (that would lose the failure): text no store
  // keeps as given (U+0000, lone surrogates) is replaced, and overlong text cut.
  const entry: JobErrorEntry = { attempt, message: sanitizeText(String(message), MAX_ERROR_TEXT_LENGTH), at };
  const code = (error as { code?: unknown } | null | undefined)?.code;
  // A numeric code (database drivers use them) is no name: keep the error's own name then.
  const name = typeof code === "string" ? code : e?.name;
  if (typeof name === "string") entry.name = sanitizeText(name, MAX_ERROR_NAME_LENGTH);
  if (typeof e?.stack === "string" && e.stack) entry.stack = sanitizeText(e.stack, MAX_STACK);
  if (kind) entry.kind = kind;
  return entry;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
