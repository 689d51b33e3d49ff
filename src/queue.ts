import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { type BackoffOptions, backoffDelay } from "./backoff.js";
import { type Clock, systemClock } from "./clock.js";
import { checkTimezone, nextCronTick } from "./cron.js";
import {
  type AnyJobDefinition,
  defineJob,
  type JobDefaults,
  type JobDefinition,
  type JobDefinitionOptions,
  resolveDefaults,
  validatePayload,
} from "./define-job.js";
import { type Duration, toMs } from "./duration.js";
import { ErrandError, isNonRetryable } from "./errors.js";
import type { QueueEvents } from "./events.js";
import { uuidv7 } from "./id.js";
import {
  type EnqueuedJob,
  FINISHED_STATES,
  type FinishedState,
  JOB_STATES,
  type Job,
  type JobErrorEntry,
  type JobRecord,
  type JobState,
  toJob,
} from "./job.js";
import { checkKnownKeys } from "./known-keys.js";
import { type Completion, StoreDoor } from "./store/instrument.js";
import type {
  AttemptRef,
  ClaimParams,
  FailItem,
  HeartbeatManyParams,
  JobTypeRecord,
  NewJob,
  QueueWeight,
  ScheduleRecord,
  Store,
} from "./store/store.js";
import {
  checkAttempt,
  checkInt,
  checkJobId,
  checkOwnerName,
  checkQueueName,
  checkScheduleName,
  checkTypeName,
  toEpochMs,
  toJsonText,
} from "./validation.js";

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
  /** While a job with this key is pending or active, enqueueing the key again returns that job. */
  uniqueKey?: string;
  /**
   * Who the job belongs to: a name (like a queue name: letters, digits, `_ . : -`, up to 128),
   * kept with the job, shown as `job.owner` and filterable in {@link Queue.list}. errand's server
   * sets it to the name of the token that enqueued the job, and its `producer` tokens read only
   * their own jobs.
   * @defaultValue null (no owner)
   */
  owner?: string;
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
   * leaves no job behind it.
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

const ENQUEUE_KEYS = new Set([
  "id",
  "uniqueKey",
  "owner",
  "delayMs",
  "runAt",
  "expiresAt",
  "expiresInMs",
  "queue",
  "priority",
  "weight",
  "maxAttempts",
  "backoff",
  "retryQueue",
  "timeoutMs",
  "delivery",
  "db",
]);

export type { EnqueuedJob, QueueEvents };

/** Filters and paging for {@link Queue.list}. */
export interface ListOptions {
  state?: JobState;
  queue?: string;
  type?: string;
  /** Only jobs with this owner (see {@link EnqueueOptions.owner}). */
  owner?: string;
  /** Page size, 1 to 1000. @defaultValue 50 */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string;
}

/** A page of {@link Queue.list}, newest first. */
export interface JobPage {
  jobs: Job[];
  /** Pass as `cursor` for the next page; null on the last page. */
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
  /** Per queue, jobs in each state. */
  queues: Record<string, Partial<Record<JobState, number>>>;
  /** Per job type, jobs in each state. */
  types: Record<string, Partial<Record<JobState, number>>>;
  /** How long the oldest ready job has waited; 0 when none is ready. */
  oldestPendingAgeMs: number;
  /** The paused queues (see {@link Queue.pauseQueue}), in byte order. */
  paused: string[];
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
  payload: P;
  /** Enqueue options for each job (no `id`: each tick's id is derived from the schedule). */
  options?: Omit<EnqueueOptions, "id" | "delayMs" | "runAt" | "db">;
}

/** A stored schedule. */
export interface Schedule {
  name: string;
  cron: string;
  timezone: string;
  type: string;
  payload: unknown;
  options: Record<string, unknown>;
  nextRunAt: Date;
}

/** Options for the low-level {@link Queue.lease}. */
export interface LeaseOptions {
  /** Only these types. All types when absent. */
  types?: string[];
  /** Queues with weights, or names (weight 1). @defaultValue the queues of the registered types, or ["default"] */
  queues?: string[] | Record<string, number>;
  /** @defaultValue 1 */
  limit?: number;
  /** @defaultValue 30_000 */
  leaseMs?: Duration;
  /** Identifies the holder in `job.workerId`. */
  workerId?: string;
  /** Total weight the caller has room for. */
  maxWeight?: number;
  /** A job counts as at most this much weight. */
  weightCap?: number;
}

/** Options for {@link Queue.fail}. */
export interface FailOptions {
  /** `false` sends the job straight to `dead`. Errors with `retryable: false` do the same. */
  retryable?: boolean;
}

/**
 * One failed attempt for {@link Queue.failAttempts}: the job as it was handed out, what it threw,
 * and the options of {@link Queue.failAttempt}.
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
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue {@link DEFAULT_RETENTION} */
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
}

const MAX_LIST = 1000;
const SWEEP_BATCH = 500;
const POISON_PILL_LEASES = 3;
const MAX_STACK = 4000;

type AnyDefinition = AnyJobDefinition;

/** A type's settings from outside its code: {@link defineJob}'s options but the type and handler. */
export type TypeSettings = Omit<JobDefinitionOptions<unknown, unknown>, "type" | "handler" | "schema">;

/** `settings` over `code` (or over the defaults, with a handler that refuses to run in this process). */
function overlay(code: AnyDefinition | undefined, type: string, settings: TypeSettings): AnyDefinition {
  const base: TypeSettings = code
    ? {
        queue: code.queue,
        priority: code.priority,
        weight: code.weight,
        maxAttempts: code.maxAttempts,
        backoff: code.backoffFn ?? (code.backoff as BackoffOptions),
        ...(code.retryQueue !== null ? { retryQueue: code.retryQueue } : {}),
        ...(code.timeoutMs !== null ? { timeoutMs: code.timeoutMs } : {}),
        delivery: code.delivery,
        ...(code.concurrency !== null ? { concurrency: code.concurrency } : {}),
      }
    : {};
  return defineJob({
    ...base,
    ...settings,
    ...(code?.schema ? { schema: code.schema } : {}),
    type,
    handler:
      code?.handler ??
      (() => {
        throw new ErrandError("UNKNOWN_JOB_TYPE", `job type "${type}" is run by remote workers`);
      }),
  });
}
type JobTarget<P> = JobDefinition<P, unknown> | string;

/**
 * The handle on a store: enqueue, inspect, change and (for custom runners) lease jobs.
 * Open one with {@link openQueue}; share it between a producer and any number of {@link Worker}s.
 * @since 0.1.0
 */
export class Queue extends EventEmitter<QueueEvents> {
  /**
   * The store, for reads and for errand's own tests. Every change of a job's state goes through
   * the Queue (its one door to the store, `src/store/instrument.ts`), so that events, metrics and
   * wake-ups follow every change: do not change jobs through it.
   * @internal
   */
  readonly store: Store;
  readonly #door: StoreDoor;
  readonly clock: Clock;
  readonly #retainMs: Record<FinishedState, number>;
  readonly #maxPayloadBytes: number;
  readonly #random: () => number;
  /** What every lookup reads: each type's code definition with its settings laid over it. */
  readonly #definitions = new Map<string, AnyDefinition>();
  /** Definitions registered by code (workers, `jobs`), with their handlers. */
  readonly #code = new Map<string, AnyDefinition>();
  /** Settings from outside the code (a server's job types), by type. */
  readonly #settings = new Map<string, TypeSettings>();
  readonly #ownsStore: boolean;
  #closed = false;

  /** Prefer {@link openQueue}. */
  constructor(store: Store, options: Omit<OpenQueueOptions, "store"> & { ownsStore?: boolean } = {}) {
    super();
    this.store = store;
    this.#door = new StoreDoor(
      store,
      this,
      (type) => this.#definitions.get(type)?.concurrency != null,
      () => this.#limits(undefined) !== undefined,
    );
    this.clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#ownsStore = options.ownsStore ?? false;
    this.#maxPayloadBytes = checkInt("maxPayloadBytes", options.maxPayloadBytes ?? 1_048_576, 1);
    const retention = { ...DEFAULT_RETENTION };
    for (const [state, d] of Object.entries(options.retention ?? {})) {
      if (!FINISHED_STATES.includes(state as FinishedState)) {
        throw new ErrandError(
          "INVALID_OPTION",
          `retention.${state}: not a finished state (${FINISHED_STATES.join(", ")})`,
        );
      }
      retention[state as FinishedState] = toMs(`retention.${state}`, d as Duration);
    }
    this.#retainMs = retention;
    for (const def of options.jobs ?? []) this.register(def);
    // An unhandled "error" event would crash the process; the default is to log nothing and go on.
    this.on("error", () => {});
  }

  /**
   * Tells the queue about job types, so that leases respect their cluster-wide `concurrency` and
   * sweeps use their custom backoff. Workers register their jobs themselves.
   */
  register(...defs: AnyJobDefinition[]): this {
    for (const def of defs) {
      this.#code.set(def.type, def);
      this.#define(def.type);
    }
    return this;
  }

  /**
   * Lays settings from outside the code over a type (a server's job types: defaults, cap), or
   * removes them (`null`). What the settings name wins over the registered definition's values,
   * whichever came first; the rest, the handler and the payload schema stay the code's. A type with
   * settings and no code has a handler that refuses to run here (remote workers run it).
   * @throws ErrandError naming the field, when a setting is invalid; nothing changes then.
   * @internal
   */
  setTypeSettings(type: string, settings: TypeSettings | null): void {
    if (settings) {
      overlay(this.#code.get(type), type, settings); // validates before anything changes
      this.#settings.set(type, settings);
    } else this.#settings.delete(type);
    this.#define(type);
  }

  #define(type: string): void {
    const code = this.#code.get(type);
    const settings = this.#settings.get(type);
    if (settings) this.#definitions.set(type, overlay(code, type, settings));
    else if (code) this.#definitions.set(type, code);
    else this.#definitions.delete(type);
  }

  /** The registered definition of a type, if any. */
  definition(type: string): AnyJobDefinition | undefined {
    return this.#definitions.get(type);
  }

  // ---- enqueue -------------------------------------------------------------------------------

  /**
   * Adds one job.
   * @example `await queue.enqueue(sendEmail, { to: "a@b.c" }, { delayMs: "2h" })`
   * @throws ErrandError on invalid input; nothing is stored then.
   */
  async enqueue<P>(job: JobTarget<P>, payload: P, options: EnqueueOptions = {}): Promise<EnqueuedJob<P>> {
    const [enqueued] = await this.enqueueMany(job, [payload], options);
    return enqueued!;
  }

  /**
   * Adds many jobs of one type with the same options in one transaction and one round trip.
   * Either every payload is valid and all are stored, or none is.
   */
  async enqueueMany<P>(
    job: JobTarget<P>,
    payloads: readonly P[],
    options: EnqueueOptions = {},
  ): Promise<EnqueuedJob<P>[]> {
    this.#checkOpen();
    if (!Array.isArray(payloads))
      throw new ErrandError("INVALID_OPTION", "enqueueMany: payloads must be an array");
    if (payloads.length === 0) return [];
    if (options.id !== undefined && payloads.length > 1) {
      throw new ErrandError(
        "INVALID_OPTION",
        "enqueueMany: options.id names one job; give each job its own enqueue",
      );
    }
    const def = typeof job === "string" ? this.#definitions.get(checkTypeName(job)) : job;
    const type = typeof job === "string" ? job : job.type;
    const now = this.clock.now();
    const base = this.#resolve(type, def, options, now);
    const news: NewJob[] = new Array(payloads.length);
    const values: unknown[] = new Array(payloads.length);
    for (let i = 0; i < payloads.length; i++) {
      const value = def?.schema ? await validatePayload(def, payloads[i]) : payloads[i];
      values[i] = value;
      news[i] = withPayload(
        base,
        options.id === undefined ? uuidv7(now) : base.id,
        toJsonText("payload", value, this.#maxPayloadBytes),
      );
    }
    return this.#insert(news, values, now, options.id === undefined, options.db) as Promise<EnqueuedJob<P>[]>;
  }

  /**
   * Adds jobs of any types, each with its own options, in one transaction and one round trip
   * (the server's bulk enqueue). Either every job is valid and all are stored, or none is.
   * @since 0.1.0
   */
  async enqueueBatch(
    items: ReadonlyArray<{ job: JobTarget<unknown>; payload: unknown; options?: EnqueueOptions }>,
  ): Promise<EnqueuedJob[]> {
    this.#checkOpen();
    if (!Array.isArray(items))
      throw new ErrandError("INVALID_OPTION", "enqueueBatch: items must be an array");
    if (items.length === 0) return [];
    const now = this.clock.now();
    const news: NewJob[] = new Array(items.length);
    const values: unknown[] = new Array(items.length);
    let idsGenerated = true;
    for (let i = 0; i < items.length; i++) {
      const { job, payload, options = {} } = items[i]!;
      const def = typeof job === "string" ? this.#definitions.get(checkTypeName(job)) : job;
      const type = typeof job === "string" ? job : job.type;
      if (options.db !== undefined) {
        throw new ErrandError(
          "INVALID_OPTION",
          `enqueueBatch: jobs[${i}].db is not supported; use enqueueMany`,
        );
      }
      const base = this.#resolve(type, def, options, now);
      const value = def?.schema ? await validatePayload(def, payload) : payload;
      if (options.id !== undefined) idsGenerated = false;
      values[i] = value;
      news[i] = withPayload(
        base,
        options.id === undefined ? uuidv7(now) : base.id,
        toJsonText(`jobs[${i}].payload`, value, this.#maxPayloadBytes),
      );
    }
    return this.#insert(news, values, now, idsGenerated, undefined);
  }

  /** Stores resolved jobs in one call and turns the store's answers into jobs (emitting `enqueued`). */
  async #insert(
    news: NewJob[],
    values: unknown[],
    now: number,
    idsGenerated: boolean,
    connection: unknown,
  ): Promise<EnqueuedJob[]> {
    return this.#door.enqueue({ jobs: news, now, idsGenerated, connection }, values);
  }

  #resolve(type: string, def: AnyDefinition | undefined, o: EnqueueOptions, now: number): NewJob {
    checkKnownKeys("enqueue", o, ENQUEUE_KEYS);
    if (o.db !== undefined && !this.store.capabilities.transactionalEnqueue) {
      throw new ErrandError(
        "INVALID_OPTION",
        "enqueue: this store cannot enqueue inside your own transaction (the db option needs the PostgreSQL store)",
      );
    }
    if (typeof o.backoff === "function") {
      // It would be stored as "custom" and never called: retries would silently use the default.
      throw new ErrandError(
        "INVALID_OPTION",
        "enqueue: a function backoff cannot be stored with a job; set it on the job type (defineJob)",
      );
    }
    const d = def ?? {
      queue: "default",
      priority: 0,
      weight: 1,
      maxAttempts: 5,
      backoff: undefined,
      retryQueue: null,
      timeoutMs: null,
      delivery: "at_least_once" as const,
    };
    const own = resolveDefaults({
      queue: o.queue ?? d.queue,
      priority: o.priority ?? d.priority,
      weight: o.weight ?? d.weight,
      maxAttempts: o.maxAttempts ?? d.maxAttempts,
      retryQueue: o.retryQueue ?? d.retryQueue ?? undefined,
      timeoutMs: o.timeoutMs ?? d.timeoutMs ?? undefined,
      delivery: o.delivery ?? d.delivery,
      backoff: o.backoff,
    });
    if (o.delayMs !== undefined && o.runAt !== undefined) {
      throw new ErrandError("INVALID_OPTION", "enqueue: give delayMs or runAt, not both");
    }
    if (o.expiresAt !== undefined && o.expiresInMs !== undefined) {
      throw new ErrandError("INVALID_OPTION", "enqueue: give expiresAt or expiresInMs, not both");
    }
    const runAt =
      o.runAt !== undefined
        ? toEpochMs("runAt", o.runAt)
        : o.delayMs !== undefined
          ? now + toMs("delayMs", o.delayMs)
          : now;
    const expiresAt =
      o.expiresAt !== undefined
        ? toEpochMs("expiresAt", o.expiresAt)
        : o.expiresInMs !== undefined
          ? now + toMs("expiresInMs", o.expiresInMs)
          : null;
    const backoff = o.backoff !== undefined ? own.backoff : (def?.backoff ?? own.backoff);
    return {
      id: o.id === undefined ? "" : checkJobId(o.id),
      type,
      queue: own.queue,
      payload: "",
      priority: own.priority,
      weight: own.weight,
      runAt,
      expiresAt,
      maxAttempts: own.maxAttempts,
      backoff: JSON.stringify(backoff),
      retryQueue: own.retryQueue,
      delivery: own.delivery,
      timeoutMs: own.timeoutMs,
      uniqueKey: o.uniqueKey === undefined ? null : checkUniqueKey(o.uniqueKey),
      owner: o.owner === undefined ? null : checkOwnerName(o.owner),
    };
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** The job with this id, whatever its state; null when there is none (or it was pruned). */
  async get<P = unknown, R = unknown>(id: string): Promise<Job<P, R> | null> {
    const record = await this.store.get(checkJobId(id));
    return record ? toJob<P, R>(record) : null;
  }

  /** A page of jobs, newest first. */
  async list(options: ListOptions = {}): Promise<JobPage> {
    checkKnownKeys("list", options, new Set(["state", "queue", "type", "owner", "limit", "cursor"]));
    if (options.state !== undefined && !JOB_STATES.includes(options.state)) {
      throw new ErrandError("INVALID_OPTION", `list: state must be one of ${JOB_STATES.join(", ")}`);
    }
    const page = await this.store.list({
      state: options.state,
      queue: options.queue === undefined ? undefined : checkQueueName(options.queue),
      type: options.type === undefined ? undefined : checkTypeName(options.type),
      owner: options.owner === undefined ? undefined : checkOwnerName(options.owner),
      limit: checkInt("limit", options.limit ?? 50, 1, MAX_LIST),
      cursor: options.cursor === undefined ? undefined : checkJobId(options.cursor),
    });
    return { jobs: page.jobs.map((r) => toJob(r)), nextCursor: page.nextCursor };
  }

  /** Counts by state, queue and type, and how long the oldest ready job has waited. */
  async stats(): Promise<QueueStats> {
    const now = this.clock.now();
    const [s, paused] = await Promise.all([this.store.stats({ now }), this.store.pausedQueues()]);
    return {
      states: s.states,
      scheduled: s.scheduled,
      retrying: s.retrying,
      queues: s.queues,
      types: s.types,
      oldestPendingAgeMs: s.oldestReadyAt === null ? 0 : Math.max(0, now - s.oldestReadyAt),
      paused,
    };
  }

  // ---- paused queues -------------------------------------------------------------------------

  /**
   * Pauses a queue for every process sharing the store: no claim hands out its jobs until
   * {@link Queue.resumeQueue}. Jobs already running finish; enqueue, cancel, reschedule and reads
   * work as usual. The queue need not exist yet.
   * @returns `true` when the queue was not paused already.
   * @throws ErrandError `INVALID_QUEUE_NAME`
   */
  async pauseQueue(name: string): Promise<boolean> {
    this.#checkOpen();
    return this.store.pauseQueue({ name: checkQueueName(name), now: this.clock.now() });
  }

  /**
   * Makes a paused queue's jobs claimable again, and wakes idle workers in every process so they
   * take them at once.
   * @returns `true` when the queue was paused.
   * @throws ErrandError `INVALID_QUEUE_NAME`
   */
  async resumeQueue(name: string): Promise<boolean> {
    this.#checkOpen();
    const changed = await this.store.resumeQueue({ name: checkQueueName(name) });
    if (changed) this.#door.wake();
    return changed;
  }

  /** The paused queues' names, in byte order. */
  async pausedQueues(): Promise<string[]> {
    return this.store.pausedQueues();
  }

  // ---- changes by id -------------------------------------------------------------------------

  /**
   * Cancels a pending or active job. An active job's handler sees its signal abort (at once in this
   * process; at its next heartbeat elsewhere) and its late result is ignored. Cancelling a
   * cancelled job returns it unchanged.
   * @throws ErrandError `JOB_NOT_FOUND`, or `INVALID_STATE` for a completed, dead or expired job.
   */
  async cancel(id: string): Promise<Job> {
    const m = await this.#door.cancel({ id: checkJobId(id), now: this.clock.now() });
    return this.#mutated(id, m, ["cancelled"], "cancel");
  }

  /**
   * Moves a pending job in time, priority or queue.
   * @throws ErrandError `JOB_NOT_FOUND`, or `INVALID_STATE` when the job is not pending.
   */
  async reschedule(
    id: string,
    options: { runAt?: Date | string | number; delayMs?: Duration; priority?: number; queue?: string },
  ): Promise<Job> {
    checkKnownKeys("reschedule", options, new Set(["runAt", "delayMs", "priority", "queue"]));
    const now = this.clock.now();
    if (options.runAt !== undefined && options.delayMs !== undefined) {
      throw new ErrandError("INVALID_OPTION", "reschedule: give runAt or delayMs, not both");
    }
    const runAt =
      options.runAt !== undefined
        ? toEpochMs("runAt", options.runAt)
        : options.delayMs !== undefined
          ? now + toMs("delayMs", options.delayMs)
          : undefined;
    const m = await this.#door.reschedule({
      id: checkJobId(id),
      now,
      runAt,
      priority:
        options.priority === undefined
          ? undefined
          : checkInt("priority", options.priority, Number.MIN_SAFE_INTEGER),
      queue: options.queue === undefined ? undefined : checkQueueName(options.queue),
    });
    return this.#mutated(id, m, [], "reschedule");
  }

  /**
   * Puts a dead, cancelled or expired job back to pending under the same id, with at least one
   * more attempt. Its error history is kept.
   * @throws ErrandError `JOB_NOT_FOUND`, or `INVALID_STATE` for a pending, active or completed job.
   */
  async retry(id: string): Promise<Job> {
    const m = await this.#door.retry({ id: checkJobId(id), now: this.clock.now() });
    return this.#mutated(id, m, [], "retry");
  }

  /**
   * Enqueues a finished job's type and payload again as a new job (new id, fresh attempts).
   * @throws ErrandError `JOB_NOT_FOUND`, or `INVALID_STATE` for a pending or active job.
   */
  async replay(id: string): Promise<Job> {
    const now = this.clock.now();
    const m = await this.#door.replay({ id: checkJobId(id), newId: uuidv7(now), now });
    return this.#mutated(id, m, [], "replay");
  }

  #mutated(id: string, m: Awaited<ReturnType<Store["cancel"]>>, okUnchanged: JobState[], op: string): Job {
    if (!m) throw new ErrandError("JOB_NOT_FOUND", `${op}: no job with id ${JSON.stringify(id)}`);
    if (!m.changed && !okUnchanged.includes(m.record.state)) {
      throw new ErrandError("INVALID_STATE", `${op}: job ${id} is ${m.record.state}`, {
        details: { state: m.record.state },
      });
    }
    return toJob(m.record);
  }

  // ---- schedules -----------------------------------------------------------------------------

  /**
   * Creates or replaces a recurring job. However many processes run sweeps, each tick enqueues
   * exactly one job (its id is `schedule:<name>:<tick ms>`). Missed ticks are not caught up: after
   * downtime the schedule fires once and moves to the next future tick.
   * @throws ErrandError `INVALID_SCHEDULE_NAME`, `INVALID_CRON`, `INVALID_TIMEZONE`, `INVALID_PAYLOAD`
   */
  async schedule<P>(name: string, options: ScheduleOptions<P>): Promise<Schedule> {
    this.#checkOpen();
    checkKnownKeys("schedule", options, new Set(["cron", "timezone", "job", "payload", "options"]));
    checkScheduleName(name);
    const timezone = checkTimezone(options.timezone ?? "UTC");
    const now = this.clock.now();
    const nextRunAt = nextCronTick(options.cron, timezone, now);
    const def =
      typeof options.job === "string" ? this.#definitions.get(checkTypeName(options.job)) : options.job;
    const type = typeof options.job === "string" ? options.job : options.job.type;
    const jobOptions = { ...(options.options ?? {}) } as EnqueueOptions;
    if ("id" in jobOptions || "delayMs" in jobOptions || "runAt" in jobOptions || "db" in jobOptions) {
      throw new ErrandError("INVALID_OPTION", "schedule: options may not set id, delayMs, runAt or db");
    }
    if (typeof jobOptions.backoff === "function") {
      throw new ErrandError(
        "INVALID_OPTION",
        "schedule: a function backoff cannot be stored; set it on the job type",
      );
    }
    this.#resolve(type, def, jobOptions, now); // validates the options now, not at 3 a.m.
    const value = def ? await validatePayload(def, options.payload) : options.payload;
    const existing = await this.store.getSchedule(name);
    const record: ScheduleRecord = {
      name,
      cron: options.cron,
      timezone,
      type,
      payload: toJsonText("payload", value, this.#maxPayloadBytes),
      options: toJsonText("options", jobOptions),
      nextRunAt:
        existing && existing.cron === options.cron && existing.timezone === timezone
          ? existing.nextRunAt
          : nextRunAt,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await this.store.upsertSchedule(record);
    return toSchedule(record);
  }

  /** Removes a schedule; jobs it already enqueued stay. Returns whether it existed. */
  async unschedule(name: string): Promise<boolean> {
    return this.store.deleteSchedule(checkScheduleName(name));
  }

  /** Every schedule, by name. */
  async schedules(): Promise<Schedule[]> {
    return (await this.store.listSchedules()).map(toSchedule);
  }

  // ---- maintenance ---------------------------------------------------------------------------

  /**
   * One maintenance pass: recovers jobs whose lease ran out (retry or dead, by the same rule as a
   * failure), expires pending jobs past `expiresAt`, and fires due schedules. Workers run this
   * every `sweepIntervalMs`; every step is compare-and-set, so any number may run at once.
   */
  async sweep(): Promise<SweepResult> {
    this.#checkOpen();
    const now = this.clock.now();
    const lapsed = (await this.#door.expiredLeases({ now, limit: SWEEP_BATCH })).map((record) => {
      const poison = record.leaseExpirations + 1 >= POISON_PILL_LEASES;
      const message = poison
        ? `lease expired ${POISON_PILL_LEASES} times without an outcome; the job may be killing its worker`
        : "lease expired without an outcome (worker crashed, hung or lost its connection)";
      const error = Object.assign(new Error(message), { retryable: !poison });
      return { job: toJob(record), error, kind: "lease_expired", leaseExpired: true };
    });
    const recovered = (await this.#failMany(lapsed)).filter((job) => job !== null).length;
    const expired = await this.#door.expire({ now, limit: SWEEP_BATCH });
    let fired = 0;
    for (const s of await this.store.dueSchedules({ now, limit: SWEEP_BATCH })) {
      try {
        if (await this.#fire(s, now)) fired++;
      } catch (error) {
        this.emit("error", error);
      }
    }
    return { recovered, expired: expired.length, fired };
  }

  async #fire(s: ScheduleRecord, now: number): Promise<boolean> {
    const nextRunAt = nextCronTick(s.cron, s.timezone, Math.max(now, s.nextRunAt));
    const def = this.#definitions.get(s.type);
    const base = this.#resolve(s.type, def, JSON.parse(s.options) as EnqueueOptions, now);
    const job: NewJob = { ...base, id: `schedule:${s.name}:${s.nextRunAt}`, payload: s.payload };
    return this.#door.fireSchedule(
      { name: s.name, now, expectedRunAt: s.nextRunAt, nextRunAt, job },
      JSON.parse(s.payload),
    );
  }

  /**
   * Deletes finished jobs older than their retention (see {@link OpenQueueOptions.retention}),
   * in chunks. Returns how many were deleted.
   */
  async prune(options: { retention?: RetentionOptions } = {}): Promise<number> {
    this.#checkOpen();
    const retainMs = { ...this.#retainMs };
    for (const [state, d] of Object.entries(options.retention ?? {})) {
      retainMs[state as FinishedState] = toMs(`retention.${state}`, d as Duration);
    }
    let total = 0;
    for (;;) {
      const n = await this.store.prune({ now: this.clock.now(), retainMs, limit: SWEEP_BATCH });
      total += n;
      if (n < SWEEP_BATCH) return total;
    }
  }

  // ---- the lease API -------------------------------------------------------------------------

  /**
   * Leases up to `limit` ready jobs for a custom runner. Report each with {@link complete} or
   * {@link fail} naming the attempt you were given, and {@link heartbeat} to keep long ones.
   */
  async lease(options: LeaseOptions = {}): Promise<Job[]> {
    this.#checkOpen();
    checkKnownKeys(
      "lease",
      options,
      new Set(["types", "queues", "limit", "leaseMs", "workerId", "maxWeight", "weightCap"]),
    );
    const types = options.types?.map(checkTypeName);
    const queues = toQueueWeights(options.queues ?? this.#defaultQueues(types));
    return this.#door.claim({
      now: this.clock.now(),
      workerId: options.workerId ?? defaultWorkerId(),
      queues,
      types,
      limit: checkInt("limit", options.limit ?? 1, 1, MAX_LIST),
      maxWeight: options.maxWeight,
      weightCap: options.weightCap,
      leaseMs: toMs("leaseMs", options.leaseMs ?? 30_000),
      concurrencyLimits: this.#limits(types),
      random: this.#random,
    });
  }

  /**
   * Leases for a {@link Worker}, which checks its own options once and claims with its own caps.
   * @internal
   */
  claim(params: Omit<ClaimParams, "now" | "random">): Promise<Job[]> {
    return this.#door.claim({ ...params, now: this.clock.now(), random: this.#random });
  }

  #defaultQueues(types: string[] | undefined): string[] {
    const names = new Set<string>(["default"]);
    for (const def of this.#definitions.values()) {
      if (!types || types.includes(def.type)) names.add(def.queue);
    }
    return [...names];
  }

  /** Cluster-wide caps of the registered types among `types` (all when undefined). */
  #limits(types: string[] | undefined): Record<string, number> | undefined {
    let limits: Record<string, number> | undefined;
    for (const def of this.#definitions.values()) {
      if (def.concurrency === null || (types && !types.includes(def.type))) continue;
      (limits ??= {})[def.type] = def.concurrency;
    }
    return limits;
  }

  /** @internal Used by {@link Worker}, which leases with its own cap list. */
  claimLimits(types: string[]): Record<string, number> | undefined {
    return this.#limits(types);
  }

  /**
   * Completes an attempt. `true` exactly once per attempt; `false` when the attempt is stale
   * (lease lost, job cancelled or re-claimed, already reported) and then nothing changed.
   * @throws ErrandError `INVALID_PAYLOAD` when the result is not JSON-serialisable.
   */
  async complete(job: AttemptRef | Job, result?: unknown): Promise<boolean> {
    const [ok] = await this.completeAttempts([
      {
        id: checkJobId(job.id),
        attempt: checkAttempt(job.attempt),
        result,
        resultText: this.resultText(result),
        ...("state" in job ? { job } : {}),
      },
    ]);
    return ok === true;
  }

  /** A result as the JSON text stored. @throws ErrandError `INVALID_PAYLOAD` @internal */
  resultText(result: unknown): string {
    return toJsonText("result", result === undefined ? null : result, this.#maxPayloadBytes);
  }

  /**
   * Completes attempts in one store write, with their `completed` events and wake-ups.
   * @internal Used by the worker (a turn's completions), push delivery and the server.
   */
  completeAttempts(items: readonly Completion[]): Promise<boolean[]> {
    return this.#door.complete(this.clock.now(), items);
  }

  /**
   * Fails an attempt: the job retries after its backoff or, when its attempts are spent, it is
   * not retryable, or it is `at_most_once`, goes to `dead`. `false` when the attempt is stale.
   */
  async fail(job: AttemptRef | Job, error: unknown, options: FailOptions = {}): Promise<boolean> {
    checkJobId(job.id);
    checkAttempt(job.attempt);
    const full = "state" in job ? job : await this.get(job.id);
    if (!full || full.attempt !== job.attempt || full.state !== "active") return false;
    const [failed] = await this.#failMany([{ job: full, error, retryable: options.retryable }]);
    return failed != null;
  }

  /**
   * Applies the retry rule to a failed attempt and records it. Returns the job as it now is and
   * the error, or null when the attempt was stale.
   * @internal
   */
  async failAttempt(
    job: Job,
    error: unknown,
    options: { retryable?: boolean; kind?: string } = {},
  ): Promise<{ job: Job; error: unknown } | null> {
    const [out] = await this.failAttempts([{ job, error, ...options }]);
    return out ?? null;
  }

  /**
   * {@link failAttempt} for many attempts at once, recorded in one store write
   * (`Store.failMany`). One result per item, in order; events go out as for each alone.
   * @internal Used by the worker (a turn's failures) and the server (a batch report).
   */
  async failAttempts(items: readonly AttemptFailure[]): Promise<Array<{ job: Job; error: unknown } | null>> {
    const failed = await this.#failMany(items);
    return failed.map((job, i) => job && { job, error: items[i]!.error });
  }

  async #failMany(
    items: ReadonlyArray<AttemptFailure & { leaseExpired?: boolean }>,
  ): Promise<Array<Job | null>> {
    if (items.length === 0) return [];
    const now = this.clock.now();
    const writes = items.map(({ job, error, retryable, kind, leaseExpired }): FailItem => {
      const def = this.#definitions.get(job.type);
      let retryAt: number | null = null;
      if (
        retryable !== false &&
        !isNonRetryable(error) &&
        job.delivery === "at_least_once" &&
        job.attempt < job.maxAttempts
      ) {
        const delay = backoffDelay(job.backoff, def?.backoffFn, error, job.attempt, this.#random);
        if (delay !== false) retryAt = now + delay;
      }
      return {
        id: job.id,
        attempt: job.attempt,
        error: errorEntry(error, job.attempt, now, kind),
        retryAt,
        retryQueue: retryAt === null ? null : job.retryQueue,
        leaseExpired,
      };
    });
    return this.#door.fail(
      now,
      items.map(({ job, error }, i) => ({ job, error, write: writes[i]! })),
    );
  }

  /** Extends a lease. `false` when the attempt is no longer current. */
  async heartbeat(job: AttemptRef | Job, options: { leaseMs?: Duration } = {}): Promise<boolean> {
    const [ok] = await this.heartbeatAttempts({
      leaseMs: toMs("leaseMs", options.leaseMs ?? 30_000),
      items: [{ id: checkJobId(job.id), attempt: checkAttempt(job.attempt) }],
    });
    return ok === true;
  }

  /** Extends many leases in one write. @internal Used by the worker. */
  heartbeatAttempts(params: Omit<HeartbeatManyParams, "now">): Promise<boolean[]> {
    return this.#door.heartbeat({ ...params, now: this.clock.now() });
  }

  /** Saves progress for the attempt; a retry sees it as `job.checkpoint`. `false` when stale. */
  async checkpoint(job: AttemptRef | Job, data: unknown): Promise<boolean> {
    return this.#door.checkpoint({
      id: checkJobId(job.id),
      attempt: checkAttempt(job.attempt),
      now: this.clock.now(),
      checkpoint: toJsonText("checkpoint", data, this.#maxPayloadBytes),
    });
  }

  /** Gives an attempt back without using it up (the job is pending again at once). `false` when stale. */
  async release(job: AttemptRef | Job): Promise<boolean> {
    return this.#door.release({
      id: checkJobId(job.id),
      attempt: checkAttempt(job.attempt),
      now: this.clock.now(),
    });
  }

  // ---- wake-ups and stored job types ---------------------------------------------------------

  /**
   * Calls `listener` when jobs may have become ready, in this process or (where the store can
   * tell) another. Returns an unsubscribe function.
   * @internal Used by workers, the server's long polls and push delivery.
   */
  onWake(listener: () => void): () => void {
    return this.#door.onWake(listener);
  }

  /** Tells claimers in every process sharing the store to look again. @internal */
  wake(): void {
    this.#door.wake();
  }

  /**
   * The job types' settings kept in the store (the server's `PUT /v1/types`), for errand/server's
   * registry. Settings are not job state: they pass straight to the store.
   * @internal
   */
  get typeRecords(): Pick<Store, "putJobType" | "getJobType" | "listJobTypes" | "deleteJobType"> {
    const store = this.store;
    return {
      putJobType: (record: JobTypeRecord) => store.putJobType(record),
      getJobType: (name: string) => store.getJobType(name),
      listJobTypes: () => store.listJobTypes(),
      deleteJobType: (name: string) => store.deleteJobType(name),
    };
  }

  /**
   * Whether the store answers: one cheap read (the server's `/readyz`).
   * @throws the store's error when it does not.
   * @internal
   */
  async ping(): Promise<void> {
    await this.store.stats({ now: this.clock.now() });
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /** Closes the store if this queue opened it (from a URL). Double close is harmless. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsStore) await this.store.close();
  }

  /** Largest payload, result or checkpoint accepted, in bytes of JSON. */
  get maxPayloadBytes(): number {
    return this.#maxPayloadBytes;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #checkOpen(): void {
    if (this.#closed) throw new ErrandError("CLOSED", "the queue is closed");
  }
}

/**
 * Opens a queue on a store given by URL (`"sqlite:./errand.db"`, `"sqlite::memory:"`) or by object.
 * @example
 * ```ts
 * const queue = await openQueue("sqlite:./errand.db");
 * const queue = await openQueue({ store: "sqlite:./errand.db", clock: new ManualClock() });
 * ```
 * @throws ErrandError `INVALID_STORE_URL`
 * @since 0.1.0
 */
export async function openQueue(target: string | OpenQueueOptions): Promise<Queue> {
  const options = typeof target === "string" ? { store: target } : target;
  checkKnownKeys(
    "openQueue",
    options,
    new Set(["store", "clock", "retention", "maxPayloadBytes", "jobs", "random"]),
  );
  if (typeof options.store !== "string") return new Queue(options.store, options);
  const store = await openStore(options.store);
  return new Queue(store, { ...options, ownsStore: true });
}

/**
 * Opens a store from its URL.
 * - `sqlite:./path.db`, `sqlite:/abs/path.db`, `sqlite:///abs/path.db`, `sqlite::memory:`;
 *   `?synchronous=full` for power-loss durability.
 * - `redis://[[user]:password@]host[:port][/db]`, `rediss://…` (TLS); `?prefix=name` for the key
 *   prefix (default `errand`). Needs `ioredis`; options beyond the URL: `RedisStore` in `errand/redis`.
 * - `postgres://user:password@host:5432/db`, `postgresql://…`; `?schema=name` for the schema
 *   errand's tables live in (default `errand`), migrated on open; any other parameter goes to
 *   `pg` (`sslmode`, `application_name`, …). Needs `pg`; options beyond the URL: `PostgresStore`
 *   in `errand/postgres`.
 * @throws ErrandError `INVALID_STORE_URL`
 * @since 0.1.0
 */
export async function openStore(url: string): Promise<Store> {
  const match = /^([a-z]+):(.*)$/i.exec(url);
  const scheme = match?.[1]?.toLowerCase();
  if (scheme === "sqlite" || scheme === "file") {
    const [pathPart, query = ""] = match![2]!.split("?", 2) as [string, string?];
    const filename = pathPart.startsWith("//") ? pathPart.slice(2) : pathPart;
    if (!filename)
      throw new ErrandError("INVALID_STORE_URL", `store URL ${JSON.stringify(url)} names no file`);
    const params = new URLSearchParams(query);
    const synchronous = params.get("synchronous") ?? "normal";
    if (synchronous !== "normal" && synchronous !== "full") {
      throw new ErrandError(
        "INVALID_STORE_URL",
        `synchronous must be "normal" or "full", got ${JSON.stringify(synchronous)}`,
      );
    }
    const { SqliteStore } = await import("./store/sqlite/sqlite-store.js");
    return SqliteStore.open({ filename, synchronous });
  }
  if (scheme === "redis" || scheme === "rediss") {
    // Loaded on demand: `import "errand"` stays free of ioredis.
    const { RedisStore } = await import("./store/redis/redis-store.js");
    return RedisStore.open({ url });
  }
  if (scheme === "postgres" || scheme === "postgresql") {
    return openPostgres(url);
  }
  throw new ErrandError(
    "INVALID_STORE_URL",
    `unknown store URL ${JSON.stringify(url)}; expected sqlite:./file.db (or sqlite::memory:)`,
  );
}

async function openPostgres(url: string): Promise<Store> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new ErrandError("INVALID_STORE_URL", `store URL ${JSON.stringify(url)} is not a valid URL`, {
      cause,
    });
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  parsed.searchParams.delete("schema");
  // Loaded on demand: `import "errand"` stays free of pg.
  let module: typeof import("./store/postgres/postgres-store.js");
  try {
    module = await import("./store/postgres/postgres-store.js");
  } catch (cause) {
    throw new ErrandError("INVALID_STORE_URL", "the PostgreSQL store needs the pg package: npm install pg", {
      cause,
    });
  }
  try {
    return await module.PostgresStore.open({ connectionString: parsed.toString(), schema });
  } catch (error) {
    if (error instanceof ErrandError && error.code === "INVALID_OPTION") {
      throw new ErrandError("INVALID_STORE_URL", `store URL: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

function checkUniqueKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0 || key.length > 255) {
    throw new ErrandError("INVALID_OPTION", "uniqueKey must be a string of 1 to 255 characters");
  }
  return key;
}

/** Normalises queue names or a weight map to {@link QueueWeight}s, validating both. */
export function toQueueWeights(queues: string[] | Record<string, number>): QueueWeight[] {
  const entries = Array.isArray(queues) ? queues.map((q) => [q, 1] as const) : Object.entries(queues);
  if (entries.length === 0) throw new ErrandError("INVALID_OPTION", "queues must name at least one queue");
  return entries.map(([name, weight]) => ({
    name: checkQueueName(name),
    weight: checkInt(`queues.${name}`, weight, 1),
  }));
}

let processWorkerId: string | undefined;
/** `host:pid:random`, so `job.workerId` says where a job runs. */
export function defaultWorkerId(): string {
  processWorkerId ??= `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  return processWorkerId;
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
  const entry: JobErrorEntry = { attempt, message, at };
  const code = (error as { code?: unknown } | null | undefined)?.code;
  // A numeric code (database drivers use them) is no name: keep the error's own name then.
  const name = typeof code === "string" ? code : e?.name;
  if (typeof name === "string") entry.name = name;
  if (e?.stack) entry.stack = e.stack.length > MAX_STACK ? e.stack.slice(0, MAX_STACK) : e.stack;
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

/** A resolved job with its own id and payload; a literal, not a spread: this runs per bulk job. */
function withPayload(base: NewJob, id: string, payload: string): NewJob {
  return {
    id,
    type: base.type,
    queue: base.queue,
    payload,
    priority: base.priority,
    weight: base.weight,
    runAt: base.runAt,
    expiresAt: base.expiresAt,
    maxAttempts: base.maxAttempts,
    backoff: base.backoff,
    retryQueue: base.retryQueue,
    delivery: base.delivery,
    timeoutMs: base.timeoutMs,
    uniqueKey: base.uniqueKey,
    owner: base.owner,
  };
}

function toSchedule(r: ScheduleRecord): Schedule {
  return {
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    type: r.type,
    payload: JSON.parse(r.payload),
    options: JSON.parse(r.options),
    nextRunAt: new Date(r.nextRunAt),
  };
}

export type { JobRecord };
