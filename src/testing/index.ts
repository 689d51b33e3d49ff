/**
 * `errand/testing`: helpers for testing your own jobs without sleeping.
 *
 * - {@link ManualClock}: time moves when you say.
 * - {@link drain}: runs a worker until nothing is due, and tells what happened.
 * - {@link runJob}: runs one handler through a JSON round trip, as a worker would.
 * - {@link expectEnqueued}: asserts that a job of a type (and payload) is waiting.
 * @packageDocumentation
 */
import { isDeepStrictEqual } from "node:util";
import pino from "pino";
import { ManualClock } from "../clock.js";
import {
  type AnyJobDefinition,
  checkJobDefinition,
  type JobContext,
  type JobDefinition,
  validatePayload,
} from "../define-job.js";
import { ErrandError } from "../errors.js";
import type { Job, JobDependency, JobState } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import type { Queue } from "../queue.js";
import { checkObject, checkQueueArgument } from "../queue-checks.js";
import { Snooze } from "../snooze.js";
import { checkAttempt, checkJobId, checkJobKey, checkTypeName, describe, toJsonText } from "../validation.js";
import { Worker, type WorkerOptions } from "../worker/worker.js";

export { ManualClock };

/** What {@link drain} saw. */
export interface DrainResult {
  /** Jobs that completed. */
  completed: number;
  /** Failed attempts, retried or not. */
  failed: number;
  /** Failed attempts whose job will be retried (it may not be due yet: see {@link drain}). */
  retried: number;
  /** Failed attempts whose job went to `dead`. */
  dead: number;
  /** Every job that ran, in start order (a retried job appears once per attempt). */
  jobs: Job[];
}

/**
 * Runs a worker for `jobs` until no job is due and none is running, then closes it. Jobs
 * scheduled in the future (by the queue's clock) stay pending: advance a {@link ManualClock} and
 * drain again.
 * @example
 * ```ts
 * await queue.enqueue(sendEmail, { to: "a@b.c" });
 * const { completed } = await drain(queue, { jobs: [sendEmail] });
 * ```
 */
export async function drain(queue: Queue, options: WorkerOptions): Promise<DrainResult> {
  checkObject("drain", "options", options);
  const worker = new Worker(queue, { pollIntervalMs: 3_600_000, sweepIntervalMs: 3_600_000, ...options });
  const result: DrainResult = { completed: 0, failed: 0, retried: 0, dead: 0, jobs: [] };
  worker.on("active", (job) => result.jobs.push(job));
  worker.on("completed", () => result.completed++);
  worker.on("failed", () => result.failed++);
  worker.on("retrying", () => result.retried++);
  worker.on("dead", () => result.dead++);
  const idle = new Promise<void>((resolve) => worker.once("idle", resolve));
  await worker.start();
  await idle;
  await worker.close({ graceMs: 0 });
  return result;
}

/** Options for {@link runJob}. */
export interface RunJobOptions {
  /** The attempt the handler sees (`ctx.attempt`, `ctx.job.attempt`). @defaultValue 1 */
  attempt?: number;
  /** What an earlier attempt checkpointed. */
  checkpoint?: unknown;
  /** The handler's `ctx.signal`: abort it to test cancellation. @defaultValue a signal that never aborts */
  signal?: AbortSignal;
  /** Called with each `ctx.checkpoint(data)`. */
  onCheckpoint?: (data: unknown) => void;
  /** What `ctx.dependencies()` returns (and so `ctx.job.dependsOn`). @defaultValue [] */
  dependencies?: JobDependency[];
  /** The job's key (`ctx.job.key`). @defaultValue null */
  key?: string;
}

/**
 * Runs a handler once, as a worker would: the payload is validated by the type's schema and
 * round-tripped through JSON (so a `Date` arrives as a string, as in production), and the result
 * must be JSON-serialisable; it comes back round-tripped too.
 * @throws whatever the handler throws; ErrandError `INVALID_PAYLOAD` for a bad payload or result.
 */
export async function runJob<P, R>(
  def: JobDefinition<P, R>,
  payload: P,
  options: RunJobOptions = {},
): Promise<R> {
  checkJobDefinition("runJob: def", def);
  checkObject("runJob", "options", options);
  checkKnownKeys("runJob", options, RUN_JOB_KEYS);
  const attempt = checkAttempt(options.attempt ?? 1);
  const key = options.key === undefined ? null : checkJobKey(options.key);
  const dependencies = checkDependencies(options.dependencies);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `runJob: signal must be an AbortSignal, got ${describe(options.signal)}`,
    );
  }
  if (options.onCheckpoint !== undefined && typeof options.onCheckpoint !== "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      `runJob: onCheckpoint must be a function, got ${describe(options.onCheckpoint)}`,
    );
  }
  const valid = await validatePayload(def, payload);
  const wire = JSON.parse(toJsonText("payload", valid)) as P;
  const now = new Date();
  const job: Job<P> = {
    id: "test-job",
    type: def.type,
    queue: def.queue,
    state: "active",
    payload: wire,
    checkpoint:
      options.checkpoint === undefined ? null : JSON.parse(toJsonText("checkpoint", options.checkpoint)),
    result: null,
    priority: def.priority,
    weight: def.weight,
    runAt: now,
    expiresAt: null,
    attempt,
    maxAttempts: def.maxAttempts,
    backoff: def.backoff,
    retryQueue: def.retryQueue,
    delivery: def.delivery,
    timeoutMs: def.timeoutMs,
    uniqueKey: null,
    leaseExpiresAt: null,
    workerId: "test",
    errors: [],
    createdAt: now,
    startedAt: now,
    finishedAt: null,
    owner: null,
    dependsOn: dependencies.map((d) => d.id),
    blockedBy: 0,
    onDependencyFailure: def.onDependencyFailure,
    key,
    debounceKey: null,
    snoozes: 0,
  };
  const ctx: JobContext<P> = {
    job,
    attempt,
    signal: options.signal ?? new AbortController().signal,
    heartbeat: async () => true,
    checkpoint: async (data) => {
      options.onCheckpoint?.(JSON.parse(toJsonText("checkpoint", data)));
      return true;
    },
    dependencies: async () => dependencies,
    snooze: (delay) => new Snooze(delay),
    log: pino({ level: "silent" }),
  };
  const result = await def.handler(wire, ctx);
  return JSON.parse(toJsonText("result", result === undefined ? null : result)) as R;
}

const RUN_JOB_KEYS: ReadonlySet<string> = new Set([
  "attempt",
  "checkpoint",
  "signal",
  "onCheckpoint",
  "dependencies",
  "key",
]);

/** runJob's `dependencies`: a list of objects naming a job each, as `ctx.dependencies()` gives. */
function checkDependencies(value: unknown): JobDependency[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `runJob: dependencies must be a list of { id, type, state, result }, got ${describe(value)}`,
    );
  }
  value.forEach((d, i) => {
    checkObject("runJob", `dependencies[${i}]`, d);
    checkJobId((d as { id?: unknown }).id);
  });
  return value as JobDependency[];
}

/**
 * Asserts that a job of `type` (with exactly `payload`, when given) is in `state` (pending by
 * default), and returns it.
 * @throws ErrandError `JOB_NOT_FOUND` listing what was there instead.
 */
export async function expectEnqueued<P>(
  queue: Queue,
  expected: { type: string | AnyJobDefinition; payload?: P; queue?: string; state?: JobState },
): Promise<Job<P>> {
  checkQueueArgument("expectEnqueued", queue);
  checkObject("expectEnqueued", "expected", expected);
  const type =
    typeof expected.type === "object" && expected.type !== null
      ? checkJobDefinition("expectEnqueued: type", expected.type).type
      : checkTypeName(expected.type);
  const seen: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({
      type,
      state: expected.state ?? "pending",
      queue: expected.queue,
      limit: 1000,
      cursor,
    });
    for (const job of page.jobs) {
      if (expected.payload === undefined || isDeepStrictEqual(job.payload, expected.payload))
        return job as Job<P>;
      seen.push(job.payload);
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  throw new ErrandError(
    "JOB_NOT_FOUND",
    `expected a ${expected.state ?? "pending"} "${type}" job${expected.payload === undefined ? "" : ` with payload ${JSON.stringify(expected.payload)}`}; found ${seen.length === 0 ? "none" : JSON.stringify(seen.slice(0, 5))}`,
  );
}
