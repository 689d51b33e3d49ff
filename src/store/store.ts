import type {
  Delivery,
  DependencyFailurePolicy,
  FinishedState,
  JobErrorEntry,
  JobRecord,
  JobState,
} from "../job.js";
import { isFinished } from "../job.js";
import type { LimitStatsParams, TypeLimitStats } from "./held-back.js";

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
  /**
   * `enqueue(…, { db })` can insert through the caller's own connection, inside the caller's
   * transaction. Stores without it refuse the option (the queue checks, before anything is stored).
   */
  readonly transactionalEnqueue: boolean;
  /**
   * The most jobs a Worker asks for in one claim; more free room is filled by further claims in
   * the same loop. A store-specific trade between round trips and memory: everything one claim
   * brings is alive until its completions are written, and hundreds of short jobs alive at once
   * make V8 grow its young generation (worker RSS, issue 16). Measured at concurrency 300: 64
   * costs PostgreSQL ~27% of its drain rate (a commit per claim) and Redis nothing measurable;
   * 150 costs PostgreSQL ~4% and keeps its worker under 80 MB (bench/RESULTS.md, session 8).
   */
  readonly claimChunk: number;
  /**
   * The most jobs one claim asks for when the Worker claims ahead (`prefetch` > 0): it then asks
   * for up to `min(prefetchChunk, prefetch)` jobs at once (never fewer than {@link claimChunk}).
   * Those jobs wait in the worker's buffer anyway, so claimChunk's bound on what is alive at once
   * buys nothing there, and fewer, larger claims cost the store less per job: on PostgreSQL a
   * claim is a transaction and a commit, and claims of 450 rather than 150 drained ×1.30 faster
   * with less CPU per job in the worker (−20%) and the server (−12%) (bench/RESULTS.md, session 17).
   */
  readonly prefetchChunk: number;
  /**
   * A Worker with room for more than one chunk sends its next claim while the last is under way
   * (a second claim in flight), so the store has work in hand while the worker takes the last
   * claim's jobs. Worth it where one server thread runs claims and completions in turn and the
   * worker's round trip left it idle: Redis (a prefetching drain ×1.43, 30,000 → 42,900 jobs/s).
   * A store that sets it answers one worker's claims in the order sent (Redis: one connection, one
   * script at a time), so jobs still start in claim order. PostgreSQL's two claims would run side
   * by side on two connections, interleave, and walk past each other's locked rows; SQLite's run
   * in the thread that runs the jobs: neither gained, measured (bench/RESULTS.md, session 12).
   */
  readonly claimAhead: boolean;
  /**
   * Ids (Redis: candidates) a filtered `list` page reads at most from each table or index it
   * walks: {@link LIST_SCAN} on the SQL stores; a fifth of it on Redis, which runs one script at a
   * time for every client, workers' claims included (a key filter held it 41 ms a call at
   * LIST_SCAN, 8.7 ms at 2,000). Always more than a page of 1,000 and the row more, so a page
   * whose filter every row it reads matches is full.
   */
  readonly listScan: number;
}

/**
 * The boundary between errand and a datastore: job-queue semantics, not SQL, since Redis is one
 * of the stores (Oban's `Engine`, BullMQ's `IQueueBackend`). Every method is atomic, takes one
 * params object (River's driver interface), takes its time as `now` from the caller's Clock, and
 * reports an expected miss (a stale attempt, an unknown id) as a return value; only faults throw.
 *
 * Methods that change a job's state are called through the Queue's one door
 * (`src/store/instrument.ts`), which emits the events and wake-ups that follow each change; call
 * them on a Store directly only in a store's own tests. Every store passes the one conformance
 * suite in `test/conformance/`, which is the definition of these semantics.
 * @remarks Implemented by errand's stores; may change in any minor release.
 * @internal
 */
export interface Store {
  /** What this store can do beyond the contract; read by code and tests, never a store's name. */
  readonly capabilities: StoreCapabilities;

  // ---- jobs in -----------------------------------------------------------------------------

  /**
   * Inserts jobs in one round trip, skipping each whose id (of any job, finished or not) or unique
   * key (of a blocked, pending or active job) is taken: one result per job, in order. All or none:
   * the call is one transaction (one script).
   *
   * Dependencies (`NewJob.dependsOn`): each id names a stored job or a job earlier in the same
   * call. An earlier job of the call that was skipped stands for the existing job returned in its
   * place (so re-running a flow with the same ids, or a node whose unique key is taken, points at
   * the stored job). A job whose dependencies are all `completed` (or, under `"run"`, finished in
   * any state) is inserted `pending`; one with unfinished dependencies `blocked`, with `blockedBy`
   * counting them; one with a dependency already `dead`, `cancelled` or `expired` under
   * `"cancel"` is inserted `cancelled`, with a `dependency_failed` error entry naming it.
   *
   * Debounce (`NewJob.debounceKey`): while a job holding the debounce key is `pending` and was
   * never started (attempt 0), a new job with the key is not inserted: that job's payload and
   * `runAt` become the new job's, and it is returned as `{ inserted: false, existing }` (its new
   * state). Otherwise the new job is inserted and holds the key until it is first claimed. A
   * holder of another type or owner is not debounced onto: the call is refused (`INVALID_KEY`).
   *
   * Expiry frees keys: a blocked or pending job past its `expiresAt` that holds a new job's unique
   * or debounce key (one no claim can take, not yet swept) holds it no longer. The call expires it
   * first, as {@link Store.expirePending} would (its dependents settled), and returns it in the
   * new job's result (`expired`), with the dependents that expiry cancelled (`cascaded`); the new
   * job is then inserted, or debounced, as if the key were free. Otherwise the enqueue would answer with a job that can never run. Only a job the call
   * inserts frees a key (one whose id is stored already is that job, and changes nothing). Every
   * answer is the job as the call left it: a job of the call that waits for a holder a later job
   * expired is answered settled, and a job of the call that was itself such a holder (enqueued
   * past its expiresAt, then met by a later job with its key) is answered expired.
   * @throws ErrandError `DEPENDENCY_NOT_FOUND` (details `{ id }`) when a dependency names no job;
   *   nothing of the call is stored.
   * @throws ErrandError `INVALID_KEY` when a debounce key is held by a waiting job of another
   *   type or owner; nothing of the call is stored or expired.
   */
  enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]>;

  // ---- attempts: claim, report, keep ---------------------------------------------------------

  /**
   * Leases up to `limit` ready jobs (pending, due, not expired, queue not paused, type under its
   * cap): priority desc, runAt, id within a queue; queues chosen by weight. Each claimed job is
   * `active` with `attempt + 1`, the claimer's `workerId` and `leaseExpiresAt = now + leaseMs`.
   */
  claim(params: ClaimParams): Promise<JobRecord[]>;
  /**
   * Completes attempts: `true` for each item whose attempt was current and is now `completed`
   * with its result; `false` for a stale one (nothing changed). Exactly one complete per attempt
   * returns `true`. In the same transaction each blocked dependent of a completed job counts one
   * dependency fewer, and one with none left becomes `pending` (claimers are woken).
   */
  completeMany(params: CompleteManyParams): Promise<boolean[]>;
  /**
   * Records failed attempts: each current one goes back to pending at its `retryAt` or, with
   * `retryAt` null, to dead. One result per item, in order; null for a stale attempt (nothing
   * changed). When two items name the same attempt, the first is applied and the second is stale.
   * A job that ends dead settles its blocked dependents in the same transaction (see
   * {@link Store.cancel}); those it cancelled come back as the answer's `cascaded`.
   */
  failMany(params: FailManyParams): Promise<FailManyResult>;
  /** Extends leases; `false` for an attempt that is no longer current (lost, cancelled, finished). */
  heartbeatMany(params: HeartbeatManyParams): Promise<boolean[]>;
  /** Saves an active attempt's progress; `false` when the attempt is not current. */
  checkpoint(params: CheckpointParams): Promise<boolean>;
  /** Gives an active attempt back at once (graceful shutdown). It does not use up an attempt. */
  release(params: ReleaseParams): Promise<boolean>;
  /**
   * Ends a current attempt without failing it (`ctx.snooze`): the job is pending again at
   * `runAt`, `snoozes + 1` and `maxAttempts + 1` (the snooze does not use up an attempt), its
   * errors untouched, its lease and holder cleared. `false` when the attempt is not current.
   */
  snooze(params: SnoozeParams): Promise<boolean>;

  // ---- jobs by id ----------------------------------------------------------------------------

  /** The job with this id in any state; null when there is none (or it was pruned). */
  get(params: GetParams): Promise<JobRecord | null>;
  /** A page of jobs, newest (highest id) first, filtered. */
  list(params: ListParams): Promise<ListResult>;
  /** A page of the jobs whose `dependsOn` names this id, in id order, in any state. */
  dependents(params: DependentsParams): Promise<ListResult>;
  /** The jobs with these ids, in order; null for each id that names no job. */
  getMany(params: GetManyParams): Promise<Array<JobRecord | null>>;
  /**
   * Blocked, pending or active → cancelled. Finished jobs are returned unchanged.
   *
   * Whenever a job ends `dead`, `cancelled` or `expired` (here, in failMany, in expirePending), in
   * the same transaction its blocked dependents are settled: under `"cancel"` each becomes
   * `cancelled` with a `dependency_failed` error entry naming the job, and its own blocked
   * dependents are settled in turn; under `"run"` each counts one dependency fewer and becomes
   * `pending` when none is left. The jobs so cancelled come back in the answer's `cascaded`
   * ({@link Cascade}), so the Queue can announce them.
   */
  cancel(params: CancelParams): Promise<JobMutation>;
  /** Blocked or pending only (for a blocked job, what applies once it is unblocked); other states are returned unchanged. */
  reschedule(params: RescheduleParams): Promise<JobMutation>;
  /**
   * Dead, cancelled or expired → pending, with at least one more attempt; `blocked` instead when
   * some of its own dependencies are unfinished (blockedBy counts them). Its blocked dependents
   * (those under `"run"` that had counted it finished) count it unfinished again; dependents it
   * cancelled stay cancelled.
   *
   * Its unique key, when another blocked or pending job past its `expiresAt` holds it (one no
   * claim can take, not yet swept), is freed as {@link Store.enqueueMany} frees it: that holder is
   * expired first (its dependents settled) and returned in `expired`, with the dependents its
   * expiry cancelled in `cascaded` ({@link RequeueResult}).
   * @throws ErrandError `INVALID_STATE` when another blocked, pending or active job holds its
   *   unique key (and is not such a holder); nothing changes.
   */
  retry(params: RetryParams): Promise<RequeueResult>;
  /**
   * A finished job copied under `newId` as a fresh pending job; null when the source is missing.
   * The copy keeps the expiry rule: `expiresAt = now + (expiresAt − createdAt)` of the source, and
   * the copy of an `expired` job is stored `expired` at once (finishedAt and expiresAt `now`).
   * The copy's unique key is freed from a holder past its `expiresAt` as in {@link Store.retry}.
   * @throws ErrandError `INVALID_STATE` when another blocked, pending or active job holds the
   *   copy's unique key (and is not such a holder), or `newId` is taken; nothing changes.
   */
  replay(params: ReplayParams): Promise<RequeueResult>;

  // ---- maintenance ---------------------------------------------------------------------------

  /** Active jobs whose lease ran out by `now`; the caller fails each with `leaseExpired`. */
  expiredLeases(params: SweepParams): Promise<JobRecord[]>;
  /**
   * Pending and blocked jobs whose `expiresAt` passed → expired (their dependents settled as in
   * {@link Store.cancel}). Returns them, with the dependents so cancelled as `cascaded`.
   */
  expirePending(params: SweepParams): Promise<ExpirePendingResult>;
  /**
   * Deletes finished jobs past retention, at most `limit`; returns how many. A job some blocked
   * job still waits for is kept.
   */
  prune(params: PruneParams): Promise<number>;
  /**
   * Counts by state, queue and type; the cost does not grow with finished history. With
   * `params.limits`, also each of its types' held-back ready jobs and busiest keys
   * (`held-back.ts`), reading at most `sampleLimit` ready jobs per type.
   */
  stats(params: StatsParams): Promise<StoreStats>;

  // ---- schedules -----------------------------------------------------------------------------

  /** Creates or replaces a schedule (by name). */
  putSchedule(params: PutScheduleParams): Promise<void>;
  /** `false` when there was no such schedule. */
  deleteSchedule(params: DeleteScheduleParams): Promise<boolean>;
  /** The schedule with this name, or null. */
  getSchedule(params: GetScheduleParams): Promise<ScheduleRecord | null>;
  /**
   * A page of schedules by name in byte order (UTF-8, as `COLLATE "C"` compares): those named
   * after `params.after` (every one when null), at most `params.limit`.
   */
  listSchedules(params: ListSchedulesParams): Promise<ScheduleRecord[]>;
  /** Schedules whose `nextRunAt` is due by `now`, at most `limit`. */
  dueSchedules(params: SweepParams): Promise<ScheduleRecord[]>;
  /**
   * Advances the schedule to `nextRunAt` and inserts the tick's job, as {@link enqueueMany} would
   * (its id or unique key taken, or its debounce key held: not inserted), in one transaction, only
   * if the stored next tick is still `expectedRunAt`. The tick's job's result, or null when the
   * tick was not this call's to fire (another scheduler fired it, or the schedule changed). With
   * `job` null the schedule only moves on (and the answer is null).
   */
  fireSchedule(params: FireScheduleParams): Promise<EnqueueResult | null>;

  // ---- job types -----------------------------------------------------------------------------

  /**
   * Creates or replaces a job type's settings; `true` when the type was new. A replace keeps the
   * stored `createdAt` and takes the rest from the params.
   */
  putJobType(params: PutJobTypeParams): Promise<boolean>;
  /** The type's stored settings, or null. */
  getJobType(params: GetJobTypeParams): Promise<JobTypeRecord | null>;
  /** Every stored job type, by name (byte order). */
  listJobTypes(): Promise<JobTypeRecord[]>;
  /** `false` when there was no such type. */
  deleteJobType(params: DeleteJobTypeParams): Promise<boolean>;

  // ---- queues --------------------------------------------------------------------------------

  /**
   * Pauses a queue: from the moment this returns, no claim in any process sharing the store takes
   * its jobs (active ones run on). `true` when it was not paused already.
   */
  pauseQueue(params: PauseQueueParams): Promise<boolean>;
  /** Makes a paused queue's jobs claimable again; `true` when it was paused. Wakes no one (the caller does). */
  resumeQueue(params: ResumeQueueParams): Promise<boolean>;
  /** The paused queues' names, in byte order. */
  pausedQueues(): Promise<string[]>;

  // ---- wake-ups and lifecycle ----------------------------------------------------------------

  /**
   * Calls `listener` when jobs may have become ready (enqueue, retry, release), in this process
   * or, where the store can tell ({@link StoreCapabilities.listen}), another. Returns an
   * unsubscribe function.
   */
  onWake(listener: () => void): () => void;
  /**
   * Tells claimers in every process sharing the store to look again, as when a job under a
   * cluster-wide cap finishes and frees room that no enqueue will announce.
   */
  wake(): void;
  /** Closes the store's connections; pending writes are flushed first. */
  close(): Promise<void>;
}

// ---- params and results, in the order of the methods above ---------------------------------

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
  /** Who enqueued the job (a name), or null. */
  owner: string | null;
  /** JSON text of the ids this job waits for (no duplicates, not its own), or null for none. */
  dependsOn: string | null;
  onDependencyFailure: DependencyFailurePolicy;
  /** The job's key (a name), or null. */
  key: string | null;
  /**
   * With a debounce key, the enqueue replaces the payload and `runAt` of the pending, never
   * started job holding the key, if any, instead of inserting (see {@link Store.enqueueMany}).
   */
  debounceKey: string | null;
}

/**
 * Jobs that share every field but the id and the payload, given as those two per job beside the
 * one job they share (whose own `id` and `payload` mean nothing): what an `enqueueMany` of one type
 * makes when errand generates the ids and nothing ties a job to another (no unique key,
 * dependencies or debounce key, see `standsAlone` in job-fields.ts), and the type is not fair. A
 * store inserts them as it would the same jobs one NewJob each; the form only spares building,
 * and comparing, a NewJob per job (a 20,000-job call's first planning 18–21 ms; see
 * bench/RESULTS.md, session 22). `ids` and `payloads` have one entry per job, in order.
 */
export interface SharedJobs {
  readonly shared: NewJob;
  readonly ids: readonly string[];
  readonly payloads: readonly string[];
}

export interface EnqueueManyParams {
  /** One NewJob per job, or the shared form (helpers in new-jobs.ts). */
  jobs: NewJob[] | SharedJobs;
  now: number;
  /**
   * Every id was just generated by errand (UUIDv7: time-ordered, 62 random-start counter bits),
   * so none can belong to a finished job: a store may skip that lookup. Unique keys and live ids
   * are still checked.
   */
  idsGenerated?: boolean;
  /**
   * The fair types among these jobs' (see {@link KeyRules.fair}): each such job gets a turn number
   * in its type, `max(its key's next turn, the type's turn now)` (jobs without a key are one
   * group); its key's next turn is one more. A claim taking a job advances its type's turn to the
   * job's. So a key that enqueues late starts level with the others, not behind their backlog.
   */
  fairTypes?: readonly string[];
  /**
   * The caller's own database connection, inside the caller's transaction (`enqueue(…, { db })`):
   * the store inserts through it, so the jobs exist only if that transaction commits. Opaque here;
   * a store that cannot enlist in a caller's transaction refuses it with `INVALID_OPTION`.
   */
  connection?: unknown;
}

/**
 * One per job given to {@link Store.enqueueMany}, in the same order. When `inserted` is false the
 * id or the unique key matched a job already stored, and `existing` is that job. An inserted job
 * with dependencies comes back as stored (`record`: blocked, pending or cancelled); one without
 * is pending exactly as given, and `record` is absent. `expired`: the jobs that held this job's
 * unique or debounce key past their `expiresAt`, expired by this call to free it (see
 * {@link Store.enqueueMany}), for the caller to report as a sweep's.
 */
export type EnqueueResult = (
  | { inserted: true; record?: JobRecord }
  | { inserted: false; existing: JobRecord }
) & { expired?: JobRecord[] } & Cascade;

/**
 * The blocked dependents a call cancelled because a job it ended (dead, cancelled or expired) was
 * among their dependencies, and theirs in turn (see {@link Store.cancel}): each as the call left
 * it (`cancelled`, its `dependency_failed` entry last), once each, for the Queue to announce. Absent when the call cancelled none: a call whose jobs nothing depends on reads and
 * builds nothing for it. On an {@link EnqueueResult}, the dependents of the key holders the call
 * expired, on a result that carries `expired`.
 */
export interface Cascade {
  cascaded?: JobRecord[];
}

/**
 * Puts the dependents an enqueue's expiries of key holders cancelled ({@link Cascade}) on the
 * results, by the index of the job whose insert expired the holders: a copy, since one result
 * object may be shared by many jobs. Run after anything that makes a result anew.
 * @internal
 */
export function attachCascaded(
  results: EnqueueResult[],
  by: ReadonlyMap<number, readonly JobRecord[]> | undefined,
): void {
  if (by === undefined) return;
  for (const [i, cascaded] of by) {
    const r = results[i];
    if (r !== undefined && cascaded.length > 0)
      results[i] = { ...r, cascaded: [...(r.cascaded ?? []), ...cascaded] };
  }
}

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
  /**
   * Cluster-wide caps: at most this many active jobs of a type, across every claimer. Read only
   * through its own keys (`Object.keys`/`entries`), never by looking a job's type up in it, so a
   * type named `toString` finds no cap unless it has one; the Queue builds it without a prototype.
   */
  concurrencyLimits?: Record<string, number>;
  /**
   * Per-key rules by type, read as `concurrencyLimits` is (own keys only, null prototype): a job
   * with a key is taken only while its type's `keyConcurrency` leaves room for that key, and, under
   * `ordered`, only when it is the key's earliest job (by createdAt, then id) still in the hot set
   * (blocked, pending or active) — so the key's jobs start one at a time, in enqueue order.
   */
  keyRules?: Record<string, KeyRules>;
  /**
   * Type-wide rate limits, read as `concurrencyLimits` is: a job of such a type is taken only while
   * fewer than `limit` jobs of the type started in `(now - periodMs, now]`, counting every claimer
   * sharing the store and the jobs taken earlier in the same claim; each job taken is a start at
   * `now`. (`KeyRules.keyRateLimit` is the same per type and key.)
   */
  rateLimits?: Record<string, RateRule>;
  /**
   * Filled in by the store when a ready job was held back by a rate limit (type or key): the
   * earliest time one of those limits has room again, so the caller can claim again then rather
   * than poll. Left as given otherwise.
   */
  held?: { until: number | null };
  /** Random source in [0, 1) for weighted queue choice; injectable for tests. */
  random?: () => number;
}

/** A type's per-key rules, as a claim enforces them cluster-wide. */
export interface KeyRules {
  /** At most this many active jobs of the type per key. */
  keyConcurrency?: number;
  /** One at a time per key, in enqueue order. */
  ordered?: boolean;
  /**
   * Keys take turns: a claim that meets a ready job of the type takes, in its place, the type's
   * ready job with the lowest turn number (`EnqueueManyParams.fairTypes`) in the same queue, among
   * those of the highest priority; jobs without a turn number are taken as they come.
   */
  fair?: boolean;
  /** At most `limit` starts per key in any `periodMs`. */
  keyRateLimit?: RateRule;
}

/** A rate limit as a claim keeps it: at most `limit` starts in any interval of `periodMs` ms. */
export interface RateRule {
  limit: number;
  periodMs: number;
}

/**
 * How long a start is kept after it left a claim's window. A claim's `now` is read before it
 * waits for the store (a lock, the network), so claims can be counted out of their `now`s' order:
 * a claimer with an earlier `now` than one already counted still needs the starts that left the
 * later one's window. Forgotten at once, they let it start past the limit (four processes on
 * SQLite did, by a claim 35 ms behind another). A claim whose `now` is more than this behind
 * another's could still; the stores count only the starts in the window, so the starts kept
 * longer cost storage, not time. Redis's rate-limits.lua keeps the same margin.
 * @internal
 */
export const RATE_FORGET_LAG_MS = 10_000;

/**
 * A rate limit's scope, as every store names its window of starts: the type, or `type|key` for a
 * key's (names cannot contain `|`).
 * @internal
 */
export const rateScope = (type: string, key: string | null): string =>
  key === null ? type : `${type}|${key}`;

/**
 * Tells a claim's caller ({@link ClaimParams.held}) that held-back jobs can start at `at`, unless it
 * was told a sooner time already; `at` null: nothing to tell.
 * @internal
 */
export function holdUntil(held: { until: number | null } | undefined, at: number | null): void {
  if (held && at !== null && (held.until === null || at < held.until)) held.until = at;
}

/** A claimed attempt, named by the job and its fencing token. */
export interface AttemptRef {
  /** The job's id. */
  id: string;
  /** The attempt as it was handed out (`job.attempt`); a report for any other changes nothing. */
  attempt: number;
}

export interface CompleteManyParams {
  now: number;
  /** `result` is JSON text. */
  items: ReadonlyArray<AttemptRef & { result: string }>;
  /**
   * Delete completed jobs instead of keeping them in history (the Queue's `retention.completed`
   * is 0), as if pruned at once. A job some other job depends on is kept all the same: its
   * dependents read its result, and retention keeps it while one of them is blocked.
   */
  discard?: boolean;
}

/** One failed attempt given to {@link Store.failMany}. */
export interface FailItem extends AttemptRef {
  error: JobErrorEntry;
  /** When to run again; `null` sends the job to `dead`. */
  retryAt: number | null;
  /** Move the retry to this queue. */
  retryQueue?: string | null;
  /** Only when the lease has run out by `now` (the sweeper's compare-and-set). Also counts a lease expiration. */
  leaseExpired?: boolean;
}

export interface FailManyParams {
  now: number;
  items: FailItem[];
}

/** What a fail did: the job's new state, or null when the attempt was stale and nothing changed. */
export type FailResult = "pending" | "dead" | null;

/**
 * {@link Store.failMany}'s answer: one {@link FailResult} per item, in order; `cascaded` when a job
 * that ended dead cancelled dependents ({@link Cascade}). An array, so a batch of jobs nothing
 * depends on is answered as before, with nothing more made.
 */
export type FailManyResult = FailResult[] & Cascade;

/** {@link Store.expirePending}'s answer: the jobs it expired; `cascaded`, see {@link Cascade}. */
export type ExpirePendingResult = JobRecord[] & Cascade;

/**
 * An array answer with the cascade put on it, when there is one (`cascaded` undefined or empty:
 * the array as it is).
 * @internal
 */
export function withCascade<T>(answer: T[], cascaded: JobRecord[] | undefined): T[] & Cascade {
  return cascaded === undefined || cascaded.length === 0 ? answer : Object.assign(answer, { cascaded });
}

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

export interface SnoozeParams extends AttemptRef {
  now: number;
  /** When the job is due again. */
  runAt: number;
}

/**
 * Result of an operation on one job by id: null when no such job. A cancel's carries the
 * dependents it cancelled as `cascaded` ({@link Cascade}).
 */
export type JobMutation = ({ record: JobRecord; changed: boolean } & Cascade) | null;

/**
 * {@link Store.retry}'s and {@link Store.replay}'s answer: a {@link JobMutation} whose `expired`
 * lists the jobs that held the job's unique key past their `expiresAt`, expired by this call to
 * free it (as an {@link EnqueueResult}'s), and whose `cascaded` lists the dependents their expiry
 * cancelled; both absent when the call expired none. The caller reports them as a sweep's.
 */
export type RequeueResult = (NonNullable<JobMutation> & { expired?: JobRecord[] }) | null;

/**
 * A retry's or replay's answer for the job it stored: `changed`, with the key holders it expired
 * and the dependents their expiry cancelled when there were any ({@link RequeueResult}).
 * @internal
 */
export function requeued(
  record: JobRecord,
  expired: JobRecord[] | undefined,
  cascaded: JobRecord[] | undefined,
): NonNullable<RequeueResult> {
  if (expired === undefined || expired.length === 0) return { record, changed: true };
  return cascaded === undefined || cascaded.length === 0
    ? { record, changed: true, expired }
    : { record, changed: true, expired, cascaded };
}

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
  /** Only jobs with this owner. */
  owner?: string;
  /** Only jobs with this key. */
  key?: string;
  /** Newest first. */
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /**
   * Records for summaries (`list({ view: "summary" })`): the store need not read the fields a
   * JobSummary leaves out (SUMMARY_LEAVES_OUT), and gives them as placeholders (payload `'null'`,
   * errors `'[]'`, checkpoint, result and dependsOn null) that the Queue then drops.
   */
  summary?: boolean;
}

/**
 * Ids a filtered {@link Store.list} page reads at most from each table or index it walks, so a
 * filter few jobs match (a rare type in a long history) answers in bounded time: the page may then
 * hold fewer than `limit` jobs, even none, and still have a `nextCursor`; paging on finds every
 * match. Pages without a state, queue, type or key filter are always full but for the last.
 * The SQL stores' {@link StoreCapabilities.listScan}; Redis reads a fifth of it.
 * @defaultValue 10,000
 * @since 0.2.0
 */
export const LIST_SCAN = 10_000;

/**
 * The Redis store's {@link StoreCapabilities.listScan}: a fifth of {@link LIST_SCAN}, since Redis
 * runs one script at a time for every client.
 */
export const REDIS_LIST_SCAN = LIST_SCAN / 5;

/** Whether a list page checks a filter row by row, and so reads at most `listScan` ids. */
export function scansList(p: ListParams): boolean {
  return p.state !== undefined || p.queue !== undefined || p.type !== undefined || p.key !== undefined;
}

/** The tables (SQL stores) a list page reads: the hot one unless its state is finished, the history unless it is not. */
export function listTables(p: ListParams): { hot: boolean; done: boolean } {
  return {
    hot: p.state === undefined || !isFinished(p.state),
    done: p.state === undefined || isFinished(p.state),
  };
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
  /** Pending with runAt in the future (blocked jobs are counted in `states.blocked` only). */
  scheduled: number;
  /** Pending after a failed attempt. */
  retrying: number;
  /** Per queue name. A null-prototype record (see `nameRecord`): any name is an own key or absent. */
  queues: Record<string, Partial<Record<JobState, number>>>;
  /** Per job type name. A null-prototype record, as `queues`. */
  types: Record<string, Partial<Record<JobState, number>>>;
  /** Earliest runAt among ready pending jobs; null when none are ready. */
  oldestReadyAt: number | null;
  /** Per type of `StatsParams.limits` (each of them; a null-prototype record). */
  limits?: Record<string, TypeLimitStats>;
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

/**
 * A job type's settings as stored: the HTTP server's defaults, cap and push target for one type
 * (see errand/server's `JobTypeRegistry`), shared by every server on the store.
 */
export interface JobTypeRecord {
  /** The type's name. */
  name: string;
  /** JSON text of the settings; the store keeps it exactly as given and never parses it. */
  config: string;
  createdAt: number;
  updatedAt: number;
}

export interface FireScheduleParams {
  name: string;
  now: number;
  /** Compare-and-set: only fires when the stored `nextRunAt` is still this. */
  expectedRunAt: number;
  nextRunAt: number;
  /**
   * The job for this tick; its id is derived from the schedule and tick, so it is unique per tick.
   * Null for a tick whose stored options make no job: the schedule moves on without one rather
   * than stay due, failing at every sweep and holding up the schedules due after it.
   */
  job: NewJob | null;
}

export interface GetParams {
  id: string;
}

export interface GetManyParams {
  ids: string[];
}

export interface DependentsParams {
  id: string;
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface StatsParams {
  now: number;
  /** The types whose held-back jobs and busiest keys to report, with their rules; none when absent. */
  limits?: LimitStatsParams;
}

/** The schedule as it is to be stored. */
export type PutScheduleParams = ScheduleRecord;

export interface GetScheduleParams {
  name: string;
}

export interface ListSchedulesParams {
  /** Only schedules named after this one (byte order); null: from the first. */
  after: string | null;
  /** At most this many. */
  limit: number;
}

export interface DeleteScheduleParams {
  name: string;
}

/** The type's settings as they are to be stored. */
export type PutJobTypeParams = JobTypeRecord;

export interface GetJobTypeParams {
  name: string;
}

export interface DeleteJobTypeParams {
  name: string;
}

export interface PauseQueueParams {
  name: string;
  now: number;
}

export interface ResumeQueueParams {
  name: string;
}
