/**
 * The API's shapes as they arrive over the wire (times as ISO strings). The server's own types
 * live in src/; the dashboard is compiled on its own for the browser, so it keeps these copies.
 */

export type JobState = "blocked" | "pending" | "active" | "completed" | "dead" | "cancelled" | "expired";

export const JOB_STATES: readonly JobState[] = [
  "blocked",
  "pending",
  "active",
  "completed",
  "dead",
  "cancelled",
  "expired",
];

export interface JobError {
  attempt: number;
  message: string;
  name?: string;
  stack?: string;
  /** Epoch milliseconds. */
  at: number;
  kind?: string;
  /** With `kind: "dependency_failed"`: the dependency that did not succeed. */
  dependency?: string;
}

export interface Job {
  id: string;
  type: string;
  queue: string;
  state: JobState;
  payload: unknown;
  checkpoint: unknown;
  result: unknown;
  priority: number;
  weight: number;
  runAt: string;
  expiresAt: string | null;
  attempt: number;
  maxAttempts: number;
  backoff: Record<string, unknown>;
  retryQueue: string | null;
  delivery: string;
  timeoutMs: number | null;
  uniqueKey: string | null;
  leaseExpiresAt: string | null;
  workerId: string | null;
  errors: JobError[];
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Ids of the jobs this one waits for. */
  dependsOn: string[];
  /** Dependencies still unfinished while blocked. */
  blockedBy: number;
  onDependencyFailure: string;
  /** The job's key (a tenant, an account), or null. */
  key: string | null;
  /** The debounce key it holds while pending and not started. */
  debounceKey: string | null;
  /** Times its handler snoozed it (attempts not counted toward maxAttempts). */
  snoozes: number;
}

/**
 * A job as the jobs list reads it (`GET v1/jobs?view=summary`): without the fields a job's callers
 * may make large (payload, checkpoint, result, error history, dependency ids).
 */
export type JobSummary = Omit<Job, "payload" | "checkpoint" | "result" | "errors" | "dependsOn">;

/** One of a job's dependencies (`GET v1/jobs/{id}/dependencies`); nulls for a pruned one. */
export interface JobDependency {
  id: string;
  type: string | null;
  state: JobState | null;
  result: unknown;
}

export type Counts = Partial<Record<JobState, number>>;

export interface Stats {
  states: Record<JobState, number>;
  scheduled: number;
  retrying: number;
  queues: Record<string, Counts>;
  types: Record<string, Counts>;
  oldestPendingAgeMs: number;
  /** Paused queues: no worker takes their jobs until they are resumed. */
  paused: string[];
  /** Per type with rate limits or per-key rules: its held-back ready jobs and busiest keys. */
  limits: Record<string, TypeLimits>;
}

/** Ready jobs a claim now would not take, by the rule that holds them (each counted once). */
export interface HeldBack {
  rateLimit: number;
  keyConcurrency: number;
  order: number;
  /** False when the server read only part of the backlog: the counts are lower bounds. */
  exact: boolean;
}

export interface TypeLimits {
  heldBack: HeldBack;
  busiestKeys: Array<{ key: string; ready: number; active: number }>;
}

export interface History {
  intervalMs: number;
  times: number[];
  enqueued: number[];
  completed: number[];
  failed: number[];
}

export interface JobPage {
  jobs: Job[];
  nextCursor: string | null;
}

export interface JobSummaryPage {
  jobs: JobSummary[];
  nextCursor: string | null;
}

export interface Schedule {
  name: string;
  cron: string;
  timezone: string;
  type: string;
  payload: unknown;
  options: Record<string, unknown>;
  nextRunAt: string;
}

export interface JobType {
  type: string;
  queue?: string;
  priority?: number;
  weight?: number;
  maxAttempts?: number;
  backoff?: Record<string, unknown>;
  retryQueue?: string;
  timeoutMs?: number | string;
  delivery?: string;
  onDependencyFailure?: string;
  concurrency?: number;
  push?: { url: string; timeoutMs?: number };
}
