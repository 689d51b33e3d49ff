/**
 * A reference model of the job state machine (src/job.ts, DESIGN.md's semantics 1 to 10), small
 * enough to be obviously right: plain objects in a Map, one function per operation, time as a
 * number. The model-based test (model.test.ts) drives it and a real store with the same commands
 * and compares them after each one.
 *
 * Rules, as the conformance suite states them:
 * - claim: pending jobs of the queue (and types) whose runAt has come and whose expiresAt has not,
 *   by priority desc, runAt, id; each becomes active with attempt + 1 and a lease.
 * - complete, fail, heartbeat, checkpoint, release: only for the current attempt of an active job
 *   (fencing); otherwise false and nothing changes. A lease that ran out but was not yet swept is
 *   still current.
 * - fail: at_least_once with attempts left and retryable → pending at now + backoff, in its retry
 *   queue if it has one; otherwise dead.
 * - release: pending at once; the attempt is given back (maxAttempts + 1).
 * - sweep: first every active job whose lease ran out (leaseExpiresAt ≤ now) fails as above, and
 *   counts a lease expiration (the third makes it dead); then every pending job whose expiresAt
 *   has come (≤ now) is expired.
 * - cancel: pending or active → cancelled; a cancelled job is returned as it is; others refused.
 * - retry: dead, cancelled or expired → pending now, no expiry, at least one attempt left.
 * - replay: a finished job → a new pending job (attempt 0, no errors, no checkpoint); the
 *   original's expiry rule is kept (a replay of an expired job never runs).
 * - reschedule: pending only.
 * - a unique key is held by a pending or active job: enqueue returns the holder, retry and
 *   replay are refused while another job holds it; a holder pending past its expiresAt holds it
 *   no longer (the enqueue, retry or replay that meets it expires it, and goes ahead).
 */
import type { Delivery, JobState } from "../../src/job.js";

/** One job as the model sees it. Times are epoch ms; JSON fields are JSON text. */
export interface ModelJob {
  id: string;
  type: string;
  queue: string;
  state: JobState;
  priority: number;
  runAt: number;
  expiresAt: number | null;
  attempt: number;
  maxAttempts: number;
  delivery: Delivery;
  /** The fixed backoff every model job uses. */
  backoffMs: number;
  retryQueue: string | null;
  uniqueKey: string | null;
  leaseExpiresAt: number | null;
  workerId: string | null;
  leaseExpirations: number;
  /** How many failed attempts are recorded, and the `kind` of the last. */
  errors: number;
  lastErrorKind: string | null;
  result: string | null;
  checkpoint: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface JobModel {
  now: number;
  jobs: Map<string, ModelJob>;
  /** Ids in the order the model learnt of them, so a command can pick "the 3rd job". */
  order: string[];
}

/** Leases that ran out this many times without an outcome make a job dead (a poison pill). */
export const POISON_PILL_LEASES = 3;

export function newModel(now: number): JobModel {
  return { now, jobs: new Map(), order: [] };
}

function add(m: JobModel, job: ModelJob): void {
  m.jobs.set(job.id, job);
  m.order.push(job.id);
}

const isLive = (j: ModelJob) => j.state === "pending" || j.state === "active";
const isFinished = (j: ModelJob) => !isLive(j);

/** The pending or active job holding `key`, if any (other than `except`). */
export function uniqueHolder(m: JobModel, key: string | null, except?: string): ModelJob | undefined {
  if (key === null) return undefined;
  for (const j of m.jobs.values()) if (j.uniqueKey === key && isLive(j) && j.id !== except) return j;
  return undefined;
}

/**
 * The job that holds `key` (other than `except`) and keeps it: a holder pending past its
 * expiresAt holds it no longer, and is expired here (as an enqueue, a retry or a replay that meets
 * it does); undefined when none holds it.
 */
function keptHolder(m: JobModel, key: string | null, except?: string): ModelJob | undefined {
  const holder = uniqueHolder(m, key, except);
  if (holder?.state === "pending" && holder.expiresAt !== null && holder.expiresAt <= m.now) {
    finish(m, holder, "expired");
    return undefined;
  }
  return holder;
}

export interface NewModelJob {
  id: string;
  type: string;
  queue: string;
  priority: number;
  delayMs: number;
  expiresInMs: number | null;
  maxAttempts: number;
  delivery: Delivery;
  backoffMs: number;
  retryQueue: string | null;
  uniqueKey: string | null;
}

/**
 * Enqueue: the job stored, or the existing job its id or unique key names (a duplicate). A key
 * holder pending past its expiresAt holds it no longer: it is expired, and the job stored.
 */
export function enqueue(m: JobModel, n: NewModelJob): { job: ModelJob; duplicate: boolean } {
  const byId = m.jobs.get(n.id);
  if (byId) return { job: byId, duplicate: true };
  const holder = keptHolder(m, n.uniqueKey);
  if (holder) return { job: holder, duplicate: true };
  const job: ModelJob = {
    id: n.id,
    type: n.type,
    queue: n.queue,
    state: "pending",
    priority: n.priority,
    runAt: m.now + n.delayMs,
    expiresAt: n.expiresInMs === null ? null : m.now + n.expiresInMs,
    attempt: 0,
    maxAttempts: n.maxAttempts,
    delivery: n.delivery,
    backoffMs: n.backoffMs,
    retryQueue: n.retryQueue,
    uniqueKey: n.uniqueKey,
    leaseExpiresAt: null,
    workerId: null,
    leaseExpirations: 0,
    errors: 0,
    lastErrorKind: null,
    result: null,
    checkpoint: null,
    startedAt: null,
    finishedAt: null,
  };
  add(m, job);
  return { job, duplicate: false };
}

/** Claim: the jobs leased, in claim order. */
export function claim(
  m: JobModel,
  p: { queue: string; types: string[] | null; limit: number; leaseMs: number; workerId: string },
): ModelJob[] {
  const ready = [...m.jobs.values()]
    .filter(
      (j) =>
        j.state === "pending" &&
        j.queue === p.queue &&
        j.runAt <= m.now &&
        (j.expiresAt === null || j.expiresAt > m.now) &&
        (p.types === null || p.types.includes(j.type)),
    )
    .sort((a, b) =>
      a.priority !== b.priority
        ? b.priority - a.priority
        : a.runAt !== b.runAt
          ? a.runAt - b.runAt
          : a.id < b.id
            ? -1
            : a.id > b.id
              ? 1
              : 0,
    )
    .slice(0, p.limit);
  for (const j of ready) {
    j.state = "active";
    j.attempt += 1;
    j.leaseExpiresAt = m.now + p.leaseMs;
    j.workerId = p.workerId;
    j.startedAt = m.now;
  }
  return ready;
}

/** Whether `attempt` is the current attempt of an active job. */
function current(m: JobModel, id: string, attempt: number): ModelJob | undefined {
  const j = m.jobs.get(id);
  return j && j.state === "active" && j.attempt === attempt ? j : undefined;
}

function endLease(j: ModelJob): void {
  j.leaseExpiresAt = null;
  j.workerId = null;
}

function finish(m: JobModel, j: ModelJob, state: JobState): void {
  j.state = state;
  j.finishedAt = m.now;
  endLease(j);
}

export function complete(m: JobModel, id: string, attempt: number, result: string): boolean {
  const j = current(m, id, attempt);
  if (!j) return false;
  finish(m, j, "completed");
  j.result = result;
  return true;
}

/** The retry rule, for a failed attempt and an expired lease alike. */
function failAttempt(m: JobModel, j: ModelJob, retryable: boolean, kind: string | null): void {
  j.errors += 1;
  j.lastErrorKind = kind;
  if (retryable && j.delivery === "at_least_once" && j.attempt < j.maxAttempts) {
    j.state = "pending";
    j.runAt = m.now + j.backoffMs;
    if (j.retryQueue !== null) j.queue = j.retryQueue;
    endLease(j);
  } else finish(m, j, "dead");
}

export function fail(m: JobModel, id: string, attempt: number, retryable: boolean): boolean {
  const j = current(m, id, attempt);
  if (!j) return false;
  failAttempt(m, j, retryable, null);
  return true;
}

export function heartbeat(m: JobModel, id: string, attempt: number, leaseMs: number): boolean {
  const j = current(m, id, attempt);
  if (!j) return false;
  j.leaseExpiresAt = m.now + leaseMs;
  return true;
}

export function checkpoint(m: JobModel, id: string, attempt: number, data: string): boolean {
  const j = current(m, id, attempt);
  if (!j) return false;
  j.checkpoint = data;
  return true;
}

export function release(m: JobModel, id: string, attempt: number): boolean {
  const j = current(m, id, attempt);
  if (!j) return false;
  j.state = "pending";
  j.runAt = m.now;
  j.maxAttempts += 1;
  endLease(j);
  return true;
}

/** What a by-id operation gives: the job, or the error code it is refused with. */
export type ByIdResult = { job: ModelJob } | { code: "JOB_NOT_FOUND" | "INVALID_STATE" };

export function cancel(m: JobModel, id: string): ByIdResult {
  const j = m.jobs.get(id);
  if (!j) return { code: "JOB_NOT_FOUND" };
  if (isLive(j)) finish(m, j, "cancelled");
  else if (j.state !== "cancelled") return { code: "INVALID_STATE" };
  return { job: j };
}

export function retry(m: JobModel, id: string): ByIdResult {
  const j = m.jobs.get(id);
  if (!j) return { code: "JOB_NOT_FOUND" };
  if (j.state !== "dead" && j.state !== "cancelled" && j.state !== "expired")
    return { code: "INVALID_STATE" };
  if (keptHolder(m, j.uniqueKey, j.id)) return { code: "INVALID_STATE" };
  j.state = "pending";
  j.runAt = m.now;
  j.expiresAt = null;
  j.maxAttempts = Math.max(j.maxAttempts, j.attempt + 1);
  j.leaseExpirations = 0;
  j.finishedAt = null;
  endLease(j);
  return { job: j };
}

/**
 * Replay: a copy under `newId`. Its expiry follows the original's rule, which the issue leaves to
 * the store to compute: the model takes `expiry` from the store (checked by the caller: null
 * exactly when the original had none) and, for an original that ended `expired`, takes the
 * state too (`expired` at once, or pending past its expiry, to be expired by the next sweep).
 */
export function replay(
  m: JobModel,
  id: string,
  newId: string,
  expiry: { expiresAt: number | null; state: JobState },
): ByIdResult {
  const src = m.jobs.get(id);
  if (!src) return { code: "JOB_NOT_FOUND" };
  if (!isFinished(src)) return { code: "INVALID_STATE" };
  // A copy of a job that ended expired and is stored expired at once never holds its unique key,
  // so a live job holding that key does not refuse it.
  const expiredAtOnce = src.state === "expired" && expiry.state === "expired";
  if (!expiredAtOnce && keptHolder(m, src.uniqueKey)) return { code: "INVALID_STATE" };
  const job: ModelJob = {
    ...src,
    id: newId,
    state: "pending",
    runAt: m.now,
    expiresAt: src.expiresAt === null ? null : expiry.expiresAt,
    attempt: 0,
    leaseExpiresAt: null,
    workerId: null,
    leaseExpirations: 0,
    errors: 0,
    lastErrorKind: null,
    result: null,
    checkpoint: null,
    startedAt: null,
    finishedAt: null,
  };
  if (expiredAtOnce) finish(m, job, "expired");
  add(m, job);
  return { job };
}

export function reschedule(
  m: JobModel,
  id: string,
  change: { runAt?: number; priority?: number; queue?: string },
): ByIdResult {
  const j = m.jobs.get(id);
  if (!j) return { code: "JOB_NOT_FOUND" };
  if (j.state !== "pending") return { code: "INVALID_STATE" };
  if (change.runAt !== undefined) j.runAt = change.runAt;
  if (change.priority !== undefined) j.priority = change.priority;
  if (change.queue !== undefined) j.queue = change.queue;
  return { job: j };
}

/** Sweep: expired leases recovered (retry or dead), then pending jobs past expiresAt expired. */
export function sweep(m: JobModel): { recovered: number; expired: number } {
  let recovered = 0;
  for (const j of m.jobs.values()) {
    if (j.state !== "active" || j.leaseExpiresAt === null || j.leaseExpiresAt > m.now) continue;
    j.leaseExpirations += 1;
    failAttempt(m, j, j.leaseExpirations < POISON_PILL_LEASES, "lease_expired");
    recovered++;
  }
  let expired = 0;
  for (const j of m.jobs.values()) {
    if (j.state === "pending" && j.expiresAt !== null && j.expiresAt <= m.now) {
      finish(m, j, "expired");
      expired++;
    }
  }
  return { recovered, expired };
}

/** Jobs of `queue` in each state (states without jobs left out), as `stats().queues` counts them. */
export function countsByState(m: JobModel, queue: string): Partial<Record<JobState, number>> {
  const counts: Partial<Record<JobState, number>> = {};
  for (const j of m.jobs.values()) if (j.queue === queue) counts[j.state] = (counts[j.state] ?? 0) + 1;
  return counts;
}
