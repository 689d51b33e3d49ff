import type { Logger } from "pino";
import { type AnyJobDefinition, checkJobDefinition } from "../define-job.js";
import { type Duration, MAX_TIMER_MS, toMs } from "../duration.js";
import { ErrandError } from "../errors.js";
import { checkKnownKeys } from "../known-keys.js";
import { checkLogger } from "../logger.js";
import { toQueueWeights } from "../queue-weights.js";
import type { QueueWeight } from "../store/store.js";
import { queuesOf } from "../type-registry.js";
import { checkInt, checkText, MAX_COUNT, MAX_KEY_LENGTH } from "../validation.js";
import type { WorkerOptions } from "./worker.js";

/** The shortest lease a worker takes: shorter ones run out under an ordinary GC pause. */
export const MIN_LEASE_MS = 100;
/** The longest lease an errand server grants a remote worker (its `POST /v1/lease` bound). */
export const MAX_REMOTE_LEASE_MS = 86_400_000;
/** The longest an errand server holds a lease request waiting for a job (`waitMs`). */
export const MAX_LEASE_WAIT_MS = 120_000;

/** The options a {@link Worker} and a {@link RemoteWorker} share, as given. */
export type RunnerOptionsGiven = Pick<
  WorkerOptions,
  "jobs" | "queues" | "concurrency" | "prefetch" | "leaseMs" | "heartbeatMs" | "workerId" | "logger"
>;

/** {@link RunnerOptionsGiven}, checked, with their defaults. */
export interface RunnerSettings {
  /** The definitions by type: each made by defineJob, no type twice. */
  jobs: Map<string, AnyJobDefinition>;
  /** As given, or every queue the definitions name (their retryQueue too), weight 1. */
  queues: QueueWeight[];
  concurrency: number;
  prefetch: number;
  leaseMs: number;
  heartbeatMs: number;
  /** Undefined: the runner names itself. */
  workerId: string | undefined;
  logger: Logger | undefined;
}

/** The most jobs a worker may claim ahead of its capacity (`prefetch`). */
export const MAX_PREFETCH = 10_000;

/**
 * Checks what a local and a remote worker both take, when the worker is made: a value refused
 * later, at a claim or a lease, would fail every claim for as long as the worker ran.
 * @param where - "Worker" or "RemoteWorker", for messages.
 * @param keys - every option the worker takes (shared or its own): any other key is refused.
 * @param maxLeaseMs - the longest lease the worker's store takes.
 * @throws ErrandError `INVALID_OPTION` or `INVALID_DURATION`, naming the option.
 */
export function resolveRunnerOptions(
  where: string,
  options: RunnerOptionsGiven,
  keys: ReadonlySet<string>,
  maxLeaseMs: number,
): RunnerSettings {
  // Also refuses options that are no object.
  checkKnownKeys(where, options, keys);
  const jobs = checkJobList(where, options.jobs);
  // A type's retries wait in its retryQueue: a worker left to find its queues runs them too.
  const queues = toQueueWeights(options.queues ?? queuesOf(jobs.values()));
  const concurrency = checkInt("concurrency", options.concurrency ?? 10, 1, MAX_COUNT);
  const prefetch = checkInt("prefetch", options.prefetch ?? 0, 0, MAX_PREFETCH);
  const leaseMs = toMs("leaseMs", options.leaseMs ?? 30_000, maxLeaseMs);
  if (leaseMs < MIN_LEASE_MS) {
    throw new ErrandError("INVALID_OPTION", `leaseMs must be ≥ ${MIN_LEASE_MS}, got ${leaseMs}`);
  }
  const heartbeatMs = toMs("heartbeatMs", options.heartbeatMs ?? Math.floor(leaseMs / 3), MAX_TIMER_MS);
  if (heartbeatMs <= 0 || heartbeatMs >= leaseMs) {
    throw new ErrandError("INVALID_OPTION", `heartbeatMs must be > 0 and < leaseMs (${leaseMs})`);
  }
  if (options.workerId !== undefined) checkText("workerId", options.workerId, MAX_KEY_LENGTH);
  const logger = checkLogger(`${where}: logger`, options.logger);
  return { jobs, queues, concurrency, prefetch, leaseMs, heartbeatMs, workerId: options.workerId, logger };
}

/**
 * The definitions a worker runs, by type: a non-empty list of definitions made by defineJob
 * (whose names and options were checked then; a look-alike object was checked by nothing), no
 * type twice.
 */
function checkJobList(where: string, jobs: unknown): Map<string, AnyJobDefinition> {
  if (!Array.isArray(jobs) || jobs.length === 0) {
    throw new ErrandError("INVALID_OPTION", `${where}: jobs must list at least one job definition`);
  }
  const byType = new Map<string, AnyJobDefinition>();
  jobs.forEach((value: unknown, i) => {
    const def = checkJobDefinition(`${where}: jobs[${i}]`, value);
    if (byType.has(def.type)) {
      throw new ErrandError("INVALID_OPTION", `${where}: jobs: type "${def.type}" is listed twice`);
    }
    byType.set(def.type, def);
  });
  return byType;
}

/**
 * A repeating timer's period, or a wait between tries: 1 ms to {@link MAX_TIMER_MS}. Zero would
 * re-arm the timer at once, forever, and spin the worker.
 * @throws ErrandError `INVALID_DURATION`
 */
export function interval(field: string, value: Duration): number {
  const ms = toMs(field, value, MAX_TIMER_MS);
  if (ms < 1) throw new ErrandError("INVALID_DURATION", `${field} must be at least 1 ms, got ${ms}`);
  return ms;
}
