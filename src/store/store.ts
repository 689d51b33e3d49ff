import type { Delivery, FinishedState, JobErrorEntry, JobRecord, JobState } from "../job.js";

/**
 * What a store can do beyond the contract every store keeps. Code branches on these, never on a
 * store's name.
 * @internal
 */
export interface StoreCapabilities {
  /** The store pushes wake-ups ({@link Store.onWake}) when jobs become ready. */
  readonly listen: boolean;
  /** Several processes may open the same store at once. */
  readonly multiProcess: boolean;
}

/** A job ready to insert: every default resolved, JSON fields serialised. */
export interface NewJob {
  id: string;
  type: string;
  queue: string;
  payload: string;
  priority: number;
  weight: number;
  runAt: number;
  expiresAt: number | null;
  maxAttempts: number;
  backoff: string;
  retryQueue: string | null;
  delivery: Delivery;
  timeoutMs: number | null;
  uniqueKey: string | null;
}

export interface EnqueueManyParams {
  jobs: NewJob[];
  now: number;
}

/**
 * One per job given to {@link Store.enqueueMany}, in the same order. When `inserted` is false the
 * id or the unique key matched a job already stored, and `existing` is that job.
 */
export type EnqueueResult = { inserted: true } | { inserted: false; existing: JobRecord };

/** A queue a claimer takes from, and its share when several have ready jobs. */
export interface QueueWeight {
  name: string;
  weight: number;
}

export interface ClaimParams {
  now: number;
  workerId: string;
  /** Queues to take from, with weights (see {@link planClaim}). At least one. */
  queues: QueueWeight[];
  /** Only these job types; all types when absent. */
  types?: string[];
  /** At most this many jobs. */
  limit: number;
  /** Total weight the claimer has room for; jobs are taken in order while they fit. Default: no bound. */
  maxWeight?: number;
  /** A job counts as `min(weight, weightCap)`, so a job heavier than a whole worker still runs on an idle one. */
  weightCap?: number;
  leaseMs: number;
  /** Cluster-wide caps: at most this many active jobs of a type, across every claimer. */
  concurrencyLimits?: Record<string, number>;
  /** Random source in [0, 1) for weighted queue choice; injectable for tests. */
  random?: () => number;
}

/** A claimed attempt, named by the job and its fencing token. */
export interface AttemptRef {
  id: string;
  attempt: number;
}

export interface CompleteManyParams {
  now: number;
  /** `result` is JSON text. */
  items: Array<AttemptRef & { result: string }>;
}

export interface FailParams extends AttemptRef {
  now: number;
  error: JobErrorEntry;
  /** When to run again; `null` sends the job to `dead`. */
  retryAt: number | null;
  /** Move the retry to this queue. */
  retryQueue?: string | null;
  /** Only when the lease has run out by `now` (the sweeper's compare-and-set). Also counts a lease expiration. */
  leaseExpired?: boolean;
}

/** What a fail did: the job's new state, or null when the attempt was stale and nothing changed. */
export type FailResult = "pending" | "dead" | null;

export interface HeartbeatManyParams {
  now: number;
  leaseMs: number;
  items: AttemptRef[];
}

export interface CheckpointParams extends AttemptRef {
  now: number;
  /** JSON text. */
  checkpoint: string;
}

export interface ReleaseParams extends AttemptRef {
  now: number;
}

/** Result of an operation on one job by id: null when no such job. */
export type JobMutation = { record: JobRecord; changed: boolean } | null;

export interface CancelParams {
  id: string;
  now: number;
}

export interface RescheduleParams {
  id: string;
  now: number;
  runAt?: number;
  priority?: number;
  queue?: string;
}

export interface RetryParams {
  id: string;
  now: number;
}

export interface ReplayParams {
  id: string;
  newId: string;
  now: number;
}

export interface ListParams {
  state?: JobState;
  queue?: string;
  type?: string;
  /** Newest first. */
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface ListResult {
  jobs: JobRecord[];
  nextCursor: string | null;
}

export interface SweepParams {
  now: number;
  limit: number;
}

export interface PruneParams {
  now: number;
  /** Finished jobs older than this many ms (by `finishedAt`) are deleted, per state. */
  retainMs: Record<FinishedState, number>;
  /** Delete at most this many per call, so one sweep never holds the write lock long. */
  limit: number;
}

/** Counts for humans and autoscalers. */
export interface StoreStats {
  states: Record<JobState, number>;
  /** Pending with runAt in the future. */
  scheduled: number;
  /** Pending after a failed attempt. */
  retrying: number;
  queues: Record<string, Partial<Record<JobState, number>>>;
  types: Record<string, Partial<Record<JobState, number>>>;
  /** Earliest runAt among ready pending jobs; null when none are ready. */
  oldestReadyAt: number | null;
}

/** A recurring job as stored. */
export interface ScheduleRecord {
  name: string;
  cron: string;
  timezone: string;
  type: string;
  /** JSON text. */
  payload: string;
  /** JSON text of the enqueue options for each fired job. */
  options: string;
  /** The tick the schedule fires next. */
  nextRunAt: number;
  createdAt: number;
  updatedAt: number;
}

export interface FireScheduleParams {
  name: string;
  now: number;
  /** Compare-and-set: only fires when the stored `nextRunAt` is still this. */
  expectedRunAt: number;
  nextRunAt: number;
  /** The job for this tick; its id is derived from the schedule and tick, so it is unique per tick. */
  job: NewJob;
}

/**
 * The boundary between errand and a datastore. Every method is atomic, takes its time as `now`
 * from the caller's Clock, and reports an expected miss (a stale attempt, an unknown id) as a
 * return value; only faults throw.
 * @remarks Implemented by errand's stores; may change in any minor release.
 * @internal
 */
export interface Store {
  readonly capabilities: StoreCapabilities;

  /** Inserts jobs in one round trip, skipping ones whose id or unique key is taken. */
  enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]>;
  /** Leases up to `limit` ready jobs: priority desc, runAt, id within a queue. */
  claim(params: ClaimParams): Promise<JobRecord[]>;
  /** `true` for each item whose attempt was current and is now `completed`. */
  completeMany(params: CompleteManyParams): Promise<boolean[]>;
  fail(params: FailParams): Promise<FailResult>;
  /** Extends leases; `false` for an attempt that is no longer current (lost, cancelled, finished). */
  heartbeatMany(params: HeartbeatManyParams): Promise<boolean[]>;
  checkpoint(params: CheckpointParams): Promise<boolean>;
  /** Gives an active attempt back at once (graceful shutdown). It does not use up an attempt. */
  release(params: ReleaseParams): Promise<boolean>;

  get(id: string): Promise<JobRecord | null>;
  list(params: ListParams): Promise<ListResult>;
  /** Pending or active → cancelled. Finished jobs are returned unchanged. */
  cancel(params: CancelParams): Promise<JobMutation>;
  /** Pending only; other states are returned unchanged. */
  reschedule(params: RescheduleParams): Promise<JobMutation>;
  /** Dead, cancelled or expired → pending, with at least one more attempt. */
  retry(params: RetryParams): Promise<JobMutation>;
  /** A finished job copied under `newId` as a fresh pending job; null when the source is missing. */
  replay(params: ReplayParams): Promise<JobMutation>;

  /** Active jobs whose lease ran out by `now`; the caller fails each with `leaseExpired`. */
  expiredLeases(params: SweepParams): Promise<JobRecord[]>;
  /** Pending jobs whose `expiresAt` passed → expired. Returns them. */
  expirePending(params: SweepParams): Promise<JobRecord[]>;
  /** Deletes finished jobs past retention; returns how many. */
  prune(params: PruneParams): Promise<number>;
  stats(params: { now: number }): Promise<StoreStats>;

  upsertSchedule(record: ScheduleRecord): Promise<void>;
  deleteSchedule(name: string): Promise<boolean>;
  getSchedule(name: string): Promise<ScheduleRecord | null>;
  listSchedules(): Promise<ScheduleRecord[]>;
  dueSchedules(params: SweepParams): Promise<ScheduleRecord[]>;
  /** Inserts the tick's job and advances the schedule, only if no one else fired this tick. */
  fireSchedule(params: FireScheduleParams): Promise<boolean>;

  /**
   * Calls `listener` when jobs may have become ready (enqueue, retry, release), in this process
   * or, where the store can tell, another. Returns an unsubscribe function.
   */
  onWake(listener: () => void): () => void;
  /**
   * Tells claimers in every process sharing the store to look again, as when a job under a
   * cluster-wide cap finishes and frees room that no enqueue will announce.
   */
  wake(): void;
  close(): Promise<void>;
}
