/**
 * The Queue's public option and result types, in one place for readers of the API.
 * @module
 */
import type { Clock } from "./clock.js";
import type { AnyJobDefinition, JobDefaults, JobDefinition } from "./define-job.js";
import type { Duration } from "./duration.js";
import type { EnqueuedJob, FinishedState, Job, JobState, JobSummary } from "./job.js";
import type { HeldBack, TypeLimitStats } from "./store/held-back.js";
import type { Store } from "./store/store.js";

/**
 * Per-enqueue options; each overrides the job type's default.
 * @since 0.1.0
 */
export interface EnqueueOptions extends JobDefaults {
  /**
   * Your own id. Enqueueing an id that exists returns the existing job and changes nothing
   * (idempotent, whatever that job's state). Generated (UUIDv7) when absent.
   */
  id?: string;
  /**
   * While a job with this key is blocked, pending or active, enqueueing the key again returns that
   * job. A waiting job past its `expiresAt` holds it no longer (no claim could take it): the
   * enqueue expires it, emitted as `expired`, and inserts the new job.
   */
  uniqueKey?: string;
  /**
   * Who the job belongs to: a name (like a queue name: letters, digits, `_ . : -`, up to 128),
   * kept with the job, shown as `job.owner` and filterable in {@link Queue.list}. errand's server
   * sets it to the name of the token that enqueued the job, and its `producer` tokens read only
   * their own jobs.
   * @defaultValue null (no owner)
   */
  owner?: string;
  /**
   * Ids of jobs this one waits for (up to 10 000, `MAX_DEPENDENCIES`; in any state; no
   * duplicates). Until every one has completed the job is `blocked`: never claimed. When the last
   * completes it becomes `pending`, and its `runAt`, priority and the rest apply from then on. A
   * dependency that ends dead, cancelled or expired cancels it, unless `onDependencyFailure` is
   * `"run"`. Its handler reads them with `ctx.dependencies()`.
   * @throws ErrandError `DEPENDENCY_NOT_FOUND` when an id names no job; nothing is stored.
   * @example
   * ```ts
   * const c = await queue.enqueue(merge, {}, { dependsOn: [a.id, b.id] }); // c.state === "blocked"
   * ```
   */
  dependsOn?: string[];
  /**
   * The job's key: the tenant, customer or account it belongs to (a name, like `owner`). Its
   * type's `keyConcurrency`, `keyRateLimit`, `fair` and `ordered` apply per key; `list` filters by it.
   * @defaultValue null (no key)
   */
  key?: string;
  /**
   * Collapse bursts: while a job with this debounce `key` is still pending and not started, this
   * enqueue replaces its payload, pushes its `runAt` to now + `delayMs` and gives it this
   * enqueue's expiry (its `expiresAt` or `expiresInMs`, or none when it sets neither), and returns
   * that job (same id, `duplicate: true`); otherwise it enqueues a new job due at now + `delayMs`,
   * which holds the key until it starts. The last enqueue of a burst decides payload, runAt and
   * expiry, so a pushed runAt never outlives an earlier enqueue's expiry. A holder past its
   * `expiresAt` is expired (emitted as `expired`) rather than debounced onto. A key held by a
   * waiting job of another type or `owner` is refused (`INVALID_KEY`). Not with `runAt`/`delayMs`,
   * `uniqueKey` or `dependsOn`.
   * @remarks Several items of one `enqueueMany` with the same key are each answered with the
   * job as the call left it (the last item's payload, runAt and expiry).
   * @example `await queue.enqueue(reindex, { doc: 9 }, { debounce: { key: "reindex:9", delayMs: "5s" } })`
   */
  debounce?: { key: string; delayMs: Duration };
  /** Run no sooner than this long from now. Not with `runAt`. */
  delayMs?: Duration;
  /** Run no sooner than this time. Not with `delayMs`. */
  runAt?: Date | string | number;
  /** Never start after this time; the job becomes `expired`. */
  expiresAt?: Date | string | number;
  /** Never start later than this long from now. Not with `expiresAt`. */
  expiresInMs?: Duration;
  /**
   * Transactional enqueue: your own database connection, inside your own transaction. The job is
   * inserted through it, so it exists only if your transaction commits, and workers hear of it
   * when it does. PostgreSQL only: a `pg` `Client` or `PoolClient` after `BEGIN`. Other stores
   * refuse it (`INVALID_OPTION`).
   * @remarks The `enqueued` event fires when the insert returns, before your commit; a rollback
   * leaves no job behind it. So does `expired` for a key holder past its `expiresAt` that the
   * insert expired to take its key: after a rollback that holder is unchanged, and the sweep that
   * later expires it announces it again.
   * @example
   * ```ts
   * await client.query("BEGIN");
   * await client.query("INSERT INTO orders …");
   * await queue.enqueue(sendReceipt, { orderId }, { db: client });
   * await client.query("COMMIT");
   * ```
   */
  db?: unknown;
}

/**
 * What {@link Queue.enqueueFlow} returns: every node's job by its ref (a record without a
 * prototype, so any ref is an own key).
 * @since 0.2.0
 */
export interface FlowResult {
  /** Each node's job (or the existing job its id or unique key matched), keyed by the node's ref. */
  jobs: Record<string, EnqueuedJob>;
}

/** Paging for {@link Queue.dependents}. */
export interface DependentsOptions {
  /** Page size, 1 to 1000. @defaultValue 50 */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string;
}

/** Filters and paging for {@link Queue.list}. */
export interface ListOptions {
  /** Only jobs in this state. */
  state?: JobState;
  /** Only jobs in this queue. */
  queue?: string;
  /** Only jobs of this type. */
  type?: string;
  /** Only jobs with this owner (see {@link EnqueueOptions.owner}). */
  owner?: string;
  /** Only jobs with this key (see {@link EnqueueOptions.key}). */
  key?: string;
  /** Page size, 1 to 1000. @defaultValue 50 */
  limit?: number;
  /**
   * `nextCursor` from the previous page: where it ended, which holds even if that page's last job
   * has since moved or gone. At most {@link MAX_LIST_CURSOR_LENGTH} characters, else
   * `INVALID_OPTION`.
   */
  cursor?: string;
}

/**
 * {@link ListOptions} and the form the jobs come in: what {@link Queue.list} and
 * `ErrandClient.list` take. A `ListOptions` alone lists whole jobs.
 * @since 0.3.0
 */
export interface ListViewOptions extends ListOptions {
  /**
   * `"summary"` gives each job as a {@link JobSummary}: without its payload, checkpoint, result,
   * error history and dependency ids, which its callers may make large. The store then reads none
   * of them, so a page costs a few hundred bytes a job whatever the jobs carry (25 jobs with 1 MB
   * payloads: ~220 ms whole on SQLite, ~14 ms as summaries; 1-2 ms on PostgreSQL and Redis). The
   * filters, `limit` and cursors work the same. For lists of jobs' states and times; {@link Queue.get} reads a job whole.
   * @defaultValue "full"
   * @since 0.3.0
   */
  view?: "full" | "summary";
}

/**
 * A page of {@link Queue.list} (or `ErrandClient.list`) with `view: "summary"`, newest first.
 * @since 0.3.0
 */
export interface JobSummaryPage {
  /** This page's jobs, newest first, each as a {@link JobSummary}. */
  jobs: JobSummary[];
  /**
   * Pass as `cursor` for the next page; null on the last page. A filtered page may be short, even
   * empty, and still have one (see {@link Queue.list}).
   */
  nextCursor: string | null;
}

/** A page of {@link Queue.list}, newest first. */
export interface JobPage {
  /** This page's jobs, newest first. */
  jobs: Job[];
  /**
   * Pass as `cursor` for the next page; null on the last page. A filtered page may be short, even
   * empty, and still have one (see {@link Queue.list}).
   */
  nextCursor: string | null;
}

/** What {@link Queue.stats} reports. */
export interface QueueStats {
  /** Jobs in each state. */
  states: Record<JobState, number>;
  /** Pending jobs not yet due. */
  scheduled: number;
  /** Pending jobs waiting after a failed attempt. */
  retrying: number;
  /**
   * Per queue, jobs in each state.
   * @remarks A record with a null prototype, so every queue name is an own key or absent: a queue
   * named `toString` is `queues.toString` only when it has jobs, never `Object.prototype.toString`.
   * Use `Object.hasOwn(stats.queues, name)` (it has no `hasOwnProperty`). It serialises to JSON as
   * a plain object.
   */
  queues: Record<string, Partial<Record<JobState, number>>>;
  /** Per job type, jobs in each state. A null-prototype record, as {@link QueueStats.queues}. */
  types: Record<string, Partial<Record<JobState, number>>>;
  /** How long the oldest ready job has waited; 0 when none is ready. */
  oldestPendingAgeMs: number;
  /** The paused queues (see {@link Queue.pauseQueue}), in byte order. */
  paused: string[];
  /**
   * Per job type with a rate limit or a per-key rule (`rateLimit`, `keyRateLimit`,
   * `keyConcurrency`, `ordered`) known to this Queue (registered, or a server's type settings):
   * how many of its ready jobs a claim now would hold back, and why ({@link HeldBack}), and its
   * busiest keys. Stats reads at most 1,000 ready jobs per type for it ({@link HeldBack.exact}).
   * A null-prototype record, as {@link QueueStats.queues}.
   * @since 0.2.0
   */
  limits: Record<string, TypeLimitStats>;
}

/** How long finished jobs are kept before {@link Queue.prune} deletes them. */
export type RetentionOptions = Partial<Record<FinishedState, Duration>>;

/** One day for completed, cancelled and expired jobs; a week for dead ones, so someone can look. */
export const DEFAULT_RETENTION: Record<FinishedState, number> = {
  completed: 86_400_000,
  cancelled: 86_400_000,
  expired: 86_400_000,
  dead: 7 * 86_400_000,
};

/** A recurring job. */
export interface ScheduleOptions<P = unknown> {
  /** 5 fields (minute precision) or 6 (with seconds), croner syntax. */
  cron: string;
  /** IANA zone the cron is read in. @defaultValue "UTC" */
  timezone?: string;
  /** The job type to enqueue each tick: a definition or its name. */
  job: JobDefinition<P, unknown> | string;
  /** The payload of each tick's job, checked now against the type's schema when the definition is known. */
  payload: P;
  /**
   * Enqueue options for each tick's job: no `id` (each tick's id is derived from the schedule), no
   * `delayMs`, `runAt` or `db`, no `expiresAt` (one instant for every tick: give `expiresInMs`),
   * and no `dependsOn` (every tick would wait on the same fixed jobs, and fail to enqueue once they
   * are pruned). A `uniqueKey` makes a tick that comes while the last tick's job still waits or
   * runs enqueue nothing.
   */
  options?: Omit<EnqueueOptions, "id" | "delayMs" | "runAt" | "db" | "expiresAt" | "dependsOn">;
}

/** A stored schedule. */
export interface Schedule {
  /** The schedule's name, which {@link Queue.schedule} and {@link Queue.unschedule} take. */
  name: string;
  /** The cron expression, as given. */
  cron: string;
  /** The IANA zone the cron is read in. */
  timezone: string;
  /** The job type each tick enqueues. */
  type: string;
  /** The payload of each tick's job. */
  payload: unknown;
  /** The enqueue options of each tick's job, as given ({@link ScheduleOptions.options}). */
  options: Record<string, unknown>;
  /** When the next tick is due. */
  nextRunAt: Date;
}

/** Paging for {@link Queue.schedulePage}. */
export interface SchedulePageOptions {
  /** Page size, 1 to 1000. @defaultValue 50 */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string;
}

/**
 * Options of a page of a server's job types (`GET /v1/types?limit=&cursor=`, the client's
 * `typePage`).
 */
export interface TypePageOptions {
  /** Page size, 1 to 1000. @defaultValue 50 */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string;
}

/** A page of {@link Queue.schedulePage}, by name. */
export interface SchedulePage {
  /** This page's schedules, by name in byte order. */
  schedules: Schedule[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** Options for the low-level {@link Queue.lease}. */
export interface LeaseOptions {
  /** Only these types. All types when absent. */
  types?: string[];
  /** Queues with weights, or names (weight 1). @defaultValue the queues of the registered types (their retry queues too) and "default" */
  queues?: string[] | Record<string, number>;
  /** Most jobs to claim in this call, 1 to {@link MAX_LIMIT}. @defaultValue 1 */
  limit?: number;
  /**
   * How long each claimed job is held before another worker may take it, unless a heartbeat
   * extends the lease.
   * @defaultValue 30_000
   */
  leaseMs?: Duration;
  /** Identifies the holder in `job.workerId`. */
  workerId?: string;
  /** Total weight the caller has room for. */
  maxWeight?: number;
  /** A job counts as at most this much weight. */
  weightCap?: number;
  /**
   * Of the room asked for (`maxWeight`, or `limit` without it), how much is for a buffer: jobs
   * the caller holds before it can start them (a prefetch). A type with a `rateLimit` or
   * `keyRateLimit` is never leased ahead: its limit counts a start at the lease, and jobs leased a
   * window apart and started together from a buffer would break it. So when a type leased has
   * one, the lease takes at most the room less `ahead`, and nothing when that leaves none.
   * @defaultValue 0
   * @since 0.2.0
   */
  ahead?: number;
  /**
   * `false` skips the maintenance pass this call would run when one is due (see
   * {@link OpenQueueOptions.maintenance}), as a server with `maintenance: false` does.
   * @defaultValue the queue's `maintenance`
   */
  maintenance?: boolean;
}

/** Options for {@link Queue.fail}. */
export interface FailOptions {
  /** `false` sends the job straight to `dead`. Errors with `retryable: false` do the same. */
  retryable?: boolean;
}

/**
 * One failed attempt for `Attempts.failMany` (src/attempts.ts): the job as it was handed out,
 * what it threw, and how it failed.
 * @internal
 */
export interface AttemptFailure {
  job: Job;
  error: unknown;
  /** `false` sends the job straight to `dead`. */
  retryable?: boolean;
  /** Why the attempt failed when no handler threw (`"timeout"`, `"shutdown"`, …). */
  kind?: string;
}

/** What one {@link Queue.sweep} did. */
export interface SweepResult {
  /** Active jobs whose lease ran out, now retried or dead. */
  recovered: number;
  /** Pending jobs past `expiresAt`, now expired. */
  expired: number;
  /** Schedule ticks that enqueued a job. */
  fired: number;
}

/** Options for {@link openQueue} when not given a URL. */
export interface OpenQueueOptions {
  /** A store, or a store URL (`sqlite:./errand.db`). */
  store: Store | string;
  /**
   * Where the Queue reads the time: due dates, leases, expiry and retention all follow it (a
   * {@link ManualClock} in tests).
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * How long finished jobs are kept, per state, before pruning deletes them. `completed: 0` keeps
   * no completed job at all: each is deleted in the write that completes it (as graphile-worker
   * and BullMQ's `removeOnComplete` do), which is also the cheaper completion; a job another job
   * depends on is kept until its dependents no longer wait, so they can read its result.
   * @defaultValue {@link DEFAULT_RETENTION}
   */
  retention?: RetentionOptions;
  /**
   * Largest accepted payload, in bytes of JSON.
   * @defaultValue 1_048_576
   */
  maxPayloadBytes?: number;
  /** Job types to know from the start (for caps and custom backoff in lease/sweep). */
  jobs?: AnyJobDefinition[];
  /** Random source for backoff jitter and weighted queue choice. @defaultValue Math.random */
  random?: () => number;
  /**
   * Lets {@link Queue.lease} do the maintenance its jobs need: before it claims, when the last
   * pass in this queue began `sweepIntervalMs` ago or more, it recovers jobs whose lease ran out
   * and expires pending jobs past `expiresAt` ({@link Queue.sweepJobs}). So a program that only
   * leases and completes, with no Worker or server anywhere, gets expired leases back and sees
   * expired jobs end `expired`. Enqueueing never runs it: producers pay nothing.
   * @remarks Cheap (two indexed queries, at most once per interval) and safe in every process (all
   * compare-and-set). Turn it off when something else sweeps and leases should not wait for it;
   * cron schedules and pruning are not part of it (Workers, servers or {@link Queue.sweep} and
   * {@link Queue.prune} do those).
   * @defaultValue true
   * @since 0.1.0
   */
  maintenance?: boolean;
  /**
   * The least time between two maintenance passes run by {@link Queue.lease}; a
   * {@link Queue.sweep} counts as one.
   * @defaultValue 1000
   */
  sweepIntervalMs?: Duration;
}
