import { EventEmitter } from "node:events";
import { type Clock, systemClock } from "./clock.js";
import { type AnyJobDefinition, isJobDefinition, type JobDefinition } from "./define-job.js";
import { type Duration, toMs } from "./duration.js";
import {
  instant,
  jobTarget,
  type PlannedJobs,
  type Planner,
  planBatch,
  planEnqueue,
  planMany,
} from "./enqueue-plan.js";
import { ErrandError } from "./errors.js";
import type { QueueEvents } from "./events.js";
import { type AttemptOutcome, failureWrite } from "./failure-rule.js";
import { type FlowNode, planFlow } from "./flow-plan.js";
import { defaultWorkerId, uuidv7 } from "./id.js";
import {
  type EnqueuedJob,
  type FinishedState,
  JOB_STATES,
  type Job,
  type JobDependency,
  type JobState,
  toJob,
} from "./job.js";
import { checkKnownKeys } from "./known-keys.js";
import { fireDueSchedules } from "./maintenance/cron-firing.js";
import { DuePass } from "./maintenance/due-pass.js";
import { expireJobs } from "./maintenance/expiry.js";
import { recoverLeases } from "./maintenance/lease-recovery.js";
import { pruneFinished, resolveRetention } from "./maintenance/pruner.js";
import { openStore } from "./open-store.js";
import {
  type AttemptFailure,
  DEFAULT_RETENTION,
  type EnqueueOptions,
  type FailOptions,
  type FlowResult,
  type JobPage,
  type LeaseOptions,
  type ListOptions,
  type OpenQueueOptions,
  type QueueStats,
  type RetentionOptions,
  type Schedule,
  type ScheduleOptions,
  type SweepResult,
} from "./queue-options.js";
import { toQueueWeights } from "./queue-weights.js";
import { planSchedule, toSchedule } from "./schedule-plan.js";
import { type Completion, StoreDoor } from "./store/instrument.js";
import type { AttemptRef, ClaimParams, HeartbeatManyParams, NewJob, Store } from "./store/store.js";
import { TypeRegistry, type TypeSettings } from "./type-registry.js";
import {
  addToDate,
  checkAttempt,
  checkInt,
  checkJobId,
  checkOwnerName,
  checkQueueName,
  checkScheduleName,
  checkText,
  checkTypeName,
  describe,
  MAX_COUNT,
  MAX_KEY_LENGTH,
  MAX_LIMIT,
  MAX_PAYLOAD_BYTES,
  MAX_PRIORITY,
  MIN_PRIORITY,
  toJsonText,
} from "./validation.js";

export { defaultWorkerId } from "./id.js";
export { openStore } from "./open-store.js";
export type {
  AttemptFailure,
  EnqueueOptions,
  FailOptions,
  FlowResult,
  JobPage,
  LeaseOptions,
  ListOptions,
  OpenQueueOptions,
  QueueStats,
  RetentionOptions,
  Schedule,
  ScheduleOptions,
  SweepResult,
} from "./queue-options.js";
export { DEFAULT_RETENTION } from "./queue-options.js";
export { toQueueWeights } from "./queue-weights.js";
export type { TypeSettings } from "./type-registry.js";
export type { EnqueuedJob, QueueEvents };

const MAX_LIST = MAX_LIMIT;
const SWEEP_BATCH = 500;

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
  readonly #types = new TypeRegistry();
  readonly #ownsStore: boolean;
  /** The lease API's own maintenance (see {@link OpenQueueOptions.maintenance}); null when off. */
  readonly #duePass: DuePass | null;
  #closed = false;

  /** Prefer {@link openQueue}. */
  constructor(store: Store, options: Omit<OpenQueueOptions, "store"> & { ownsStore?: boolean } = {}) {
    super();
    checkQueueOptions(store, options);
    this.store = store;
    this.#door = new StoreDoor(
      store,
      this,
      (type) => this.#types.capped(type),
      () => this.#types.limits(undefined) !== undefined,
    );
    this.clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#ownsStore = options.ownsStore ?? false;
    this.#maxPayloadBytes = checkInt(
      "maxPayloadBytes",
      options.maxPayloadBytes ?? 1_048_576,
      1,
      MAX_PAYLOAD_BYTES,
    );
    this.#retainMs = resolveRetention(DEFAULT_RETENTION, options.retention);
    if (options.maintenance !== undefined && typeof options.maintenance !== "boolean") {
      throw new ErrandError(
        "INVALID_OPTION",
        `maintenance must be true or false, got ${typeof options.maintenance}`,
      );
    }
    const sweepMs = toMs("sweepIntervalMs", options.sweepIntervalMs ?? 1000);
    this.#duePass =
      options.maintenance === false
        ? null
        : new DuePass(
            this.clock,
            sweepMs,
            () => this.sweepJobs(),
            (error) => this.emit("error", error),
          );
    for (const def of options.jobs ?? []) this.register(def);
    // An unhandled "error" event would crash the process; the default is to log nothing and go on.
    this.on("error", () => {});
  }

  /**
   * Tells the queue about job types, so that leases respect their cluster-wide `concurrency` and
   * sweeps use their custom backoff. Workers register their jobs themselves.
   */
  register(...defs: AnyJobDefinition[]): this {
    for (const def of defs) this.#types.register(def);
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
    this.#types.setSettings(type, settings);
  }

  /** The registered definition of a type, if any. */
  definition(type: string): AnyJobDefinition | undefined {
    return this.#types.get(type);
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
    const { type, def } = jobTarget("enqueue", job, (t) => this.#types.get(t));
    if (!Array.isArray(payloads))
      throw new ErrandError("INVALID_OPTION", "enqueueMany: payloads must be an array");
    checkObject("enqueue", "options", options);
    if (payloads.length === 0) return [];
    if (options.id !== undefined && payloads.length > 1) {
      throw new ErrandError(
        "INVALID_OPTION",
        "enqueueMany: options.id names one job; give each job its own enqueue",
      );
    }
    const now = this.clock.now();
    const plan = await planMany(this.#planner(now), type, def, payloads, options);
    return this.#insert(plan, now, options.db) as Promise<EnqueuedJob<P>[]>;
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
    const plan = await planBatch(this.#planner(now), items);
    return this.#insert(plan, now, undefined);
  }

  /**
   * Adds a DAG of jobs in one transaction (one script): every node or none. A node's `dependsOn`
   * names other nodes by `ref`, or stored jobs as `{ id }`; a node waits, `blocked`, until they
   * have completed. Nodes with their own `options.id` make re-running the flow a no-op that
   * returns the same jobs.
   * @example
   * ```ts
   * const flow = await queue.enqueueFlow([
   *   { ref: "a", job: fetchPage, payload: { url: u1 } },
   *   { ref: "b", job: fetchPage, payload: { url: u2 } },
   *   { ref: "c", job: merge, payload: {}, dependsOn: ["a", "b"] },
   * ]);
   * flow.jobs.c.state; // "blocked"
   * ```
   * @throws ErrandError `INVALID_FLOW` for a cycle, a duplicate ref or a ref to nothing;
   *   `DEPENDENCY_NOT_FOUND` for an `{ id }` that names no job; nothing is stored then.
   * @since 0.2.0
   */
  async enqueueFlow(nodes: readonly FlowNode[]): Promise<FlowResult> {
    this.#checkOpen();
    const now = this.clock.now();
    const plan = await planFlow(this.#planner(now), nodes);
    const enqueued = await this.#insert(plan, now, undefined);
    const jobs: Record<string, EnqueuedJob> = Object.create(null);
    plan.refs.forEach((ref, k) => {
      jobs[ref] = enqueued[k]!;
    });
    return { jobs };
  }

  /** Stores resolved jobs in one call and turns the store's answers into jobs (emitting `enqueued`). */
  #insert(
    { jobs, values, idsGenerated }: PlannedJobs,
    now: number,
    connection: unknown,
  ): Promise<EnqueuedJob[]> {
    return this.#door.enqueue({ jobs, now, idsGenerated, connection }, values);
  }

  #planner(now: number): Planner {
    return {
      now,
      definition: (type) => this.#types.get(checkTypeName(type)),
      plan: (type, def, options) => this.#plan(type, def, options, now),
      maxPayloadBytes: this.#maxPayloadBytes,
    };
  }

  #plan(type: string, def: AnyJobDefinition | undefined, o: EnqueueOptions, now: number): NewJob {
    return planEnqueue(type, def, o, now, this.store.capabilities.transactionalEnqueue);
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** The job with this id, whatever its state; null when there is none (or it was pruned). */
  async get<P = unknown, R = unknown>(id: string): Promise<Job<P, R> | null> {
    const record = await this.store.get({ id: checkJobId(id) });
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

  /**
   * The jobs `id` waits for, in its `dependsOn` order, each with its state and result (null
   * fields for one pruned by retention). What `ctx.dependencies()` returns.
   * @throws ErrandError `JOB_NOT_FOUND` when there is no such job.
   * @since 0.2.0
   */
  async dependencies(id: string): Promise<JobDependency[]> {
    const job = await this.get(id);
    if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
    if (job.dependsOn.length === 0) return [];
    const records = await this.store.getMany({ ids: [...job.dependsOn] });
    return job.dependsOn.map((depId, i) => {
      const r = records[i];
      if (!r) return { id: depId, type: null, state: null, result: null };
      return {
        id: depId,
        type: r.type,
        state: r.state,
        result: r.result === null ? null : JSON.parse(r.result),
      };
    });
  }

  /**
   * A page of the jobs waiting on `id` (whose `dependsOn` names it), in any state, in id order.
   * @since 0.2.0
   */
  async dependents(id: string, options: { limit?: number; cursor?: string } = {}): Promise<JobPage> {
    checkKnownKeys("dependents", options, new Set(["limit", "cursor"]));
    const page = await this.store.dependents({
      id: checkJobId(id),
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
    const runAt = instant(
      "reschedule",
      ["runAt", options.runAt, "at"],
      ["delayMs", options.delayMs, "after"],
      now,
    );
    const m = await this.#door.reschedule({
      id: checkJobId(id),
      now,
      runAt,
      priority:
        options.priority === undefined
          ? undefined
          : checkInt("priority", options.priority, MIN_PRIORITY, MAX_PRIORITY),
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
   *
   * The copy keeps the original's expiry rule. When the original had an `expiresAt`, the copy has
   * as long to start as the original had: `expiresAt = now + (original.expiresAt −
   * original.createdAt)`. A copy of a job that ended `expired` is stored `expired` at once and
   * never runs (as in Rickover), and `expired` is emitted instead of `enqueued`; to run an expired
   * job anyway, {@link Queue.retry} it (retry drops the expiry).
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
    const now = this.clock.now();
    const record = await planSchedule(name, options, now, {
      definition: (type) => this.#types.get(type),
      plan: (type, def, jobOptions) => this.#plan(type, def, jobOptions, now),
      existing: (n) => this.store.getSchedule({ name: n }),
      maxPayloadBytes: this.#maxPayloadBytes,
    });
    await this.store.putSchedule(record);
    return toSchedule(record);
  }

  /** Removes a schedule; jobs it already enqueued stay. Returns whether it existed. */
  async unschedule(name: string): Promise<boolean> {
    return this.store.deleteSchedule({ name: checkScheduleName(name) });
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
    const { recovered, expired } = await this.#sweepJobs(now);
    const fired = await fireDueSchedules(
      this.#door,
      (s, at) => this.#plan(s.type, this.#types.get(s.type), JSON.parse(s.options) as EnqueueOptions, at),
      now,
      SWEEP_BATCH,
      (error) => this.emit("error", error),
    );
    return { recovered, expired, fired };
  }

  /**
   * The jobs' part of {@link Queue.sweep}, without schedules: recovers jobs whose lease ran out and
   * expires pending jobs past `expiresAt`. What {@link Queue.lease} runs when it is due.
   * @internal For whatever runs maintenance (workers, servers, a maintainer).
   */
  async sweepJobs(): Promise<Omit<SweepResult, "fired">> {
    this.#checkOpen();
    return this.#sweepJobs(this.clock.now());
  }

  async #sweepJobs(now: number): Promise<Omit<SweepResult, "fired">> {
    // Whoever sweeps, the lease API's next pass is due an interval from here.
    this.#duePass?.ran(now);
    const recovered = await recoverLeases(
      this.#door,
      (outcomes) => this.#failMany(outcomes),
      now,
      SWEEP_BATCH,
    );
    const expired = await expireJobs(this.#door, now, SWEEP_BATCH);
    return { recovered, expired };
  }

  /**
   * Deletes finished jobs older than their retention (see {@link OpenQueueOptions.retention}),
   * in chunks. Returns how many were deleted.
   */
  async prune(options: { retention?: RetentionOptions } = {}): Promise<number> {
    this.#checkOpen();
    const retainMs = resolveRetention(this.#retainMs, options.retention);
    return pruneFinished(this.#door, this.clock, retainMs, SWEEP_BATCH);
  }

  // ---- the lease API -------------------------------------------------------------------------

  /**
   * Leases up to `limit` ready jobs for a custom runner. Report each with {@link complete} or
   * {@link fail} naming the attempt you were given, and {@link heartbeat} to keep long ones.
   *
   * Before it claims, it runs the maintenance that is due (at most once per `sweepIntervalMs`):
   * jobs whose lease ran out go back to pending (or dead) and can be leased again, and pending jobs
   * past `expiresAt` become `expired`, with no Worker or {@link sweep} needed. A fault in that pass
   * is emitted as `error` and does not fail the lease. See {@link OpenQueueOptions.maintenance}.
   */
  async lease(options: LeaseOptions = {}): Promise<Job[]> {
    this.#checkOpen();
    checkKnownKeys(
      "lease",
      options,
      new Set(["types", "queues", "limit", "leaseMs", "workerId", "maxWeight", "weightCap", "maintenance"]),
    );
    if (options.types !== undefined && !Array.isArray(options.types)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `lease: types must be a list of type names, got ${describe(options.types)}`,
      );
    }
    if (options.queues !== undefined && (typeof options.queues !== "object" || options.queues === null)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `lease: queues must be a list of queue names or a map of weights, got ${describe(options.queues)}`,
      );
    }
    const types = options.types?.map((t) => checkTypeName(t));
    const queues = toQueueWeights(options.queues ?? this.#types.queues(types));
    const limit = checkInt("limit", options.limit ?? 1, 1, MAX_LIST);
    const leaseMs = leaseMsFrom(this.clock.now(), options.leaseMs ?? 30_000);
    const workerId =
      options.workerId === undefined
        ? defaultWorkerId()
        : checkText("workerId", options.workerId, MAX_KEY_LENGTH);
    const maxWeight =
      options.maxWeight === undefined ? undefined : checkInt("maxWeight", options.maxWeight, 1, MAX_COUNT);
    const weightCap =
      options.weightCap === undefined ? undefined : checkInt("weightCap", options.weightCap, 1, MAX_COUNT);
    // After the checks: a refused lease changes nothing.
    if (options.maintenance !== false) await this.#duePass?.run();
    return this.#door.claim({
      now: this.clock.now(),
      workerId,
      queues,
      types,
      limit,
      maxWeight,
      weightCap,
      leaseMs,
      concurrencyLimits: this.#types.limits(types),
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

  /** @internal Used by {@link Worker}, which leases with its own cap list. */
  claimLimits(types: string[]): Record<string, number> | undefined {
    return this.#types.limits(types);
  }

  /**
   * Completes an attempt. `true` exactly once per attempt; `false` when the attempt is stale
   * (lease lost, job cancelled or re-claimed, already reported) and then nothing changed.
   * @throws ErrandError `INVALID_PAYLOAD` when the result is not JSON-serialisable.
   */
  async complete(job: AttemptRef | Job, result?: unknown): Promise<boolean> {
    const ref = checkRef("complete", job);
    const [ok] = await this.completeAttempts([
      {
        ...ref,
        result: this.resultText(result),
        value: result,
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
    checkRef("fail", job);
    checkObject("fail", "options", options);
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

  async #failMany(outcomes: readonly AttemptOutcome[]): Promise<Array<Job | null>> {
    if (outcomes.length === 0) return [];
    const now = this.clock.now();
    return this.#door.fail(
      now,
      outcomes.map((o) => ({
        job: o.job,
        error: o.error,
        write: failureWrite(o, this.#types.get(o.job.type), now, this.#random),
      })),
    );
  }

  /** Extends a lease. `false` when the attempt is no longer current. */
  async heartbeat(job: AttemptRef | Job, options: { leaseMs?: Duration } = {}): Promise<boolean> {
    const ref = checkRef("heartbeat", job);
    checkObject("heartbeat", "options", options);
    const [ok] = await this.heartbeatAttempts({
      leaseMs: leaseMsFrom(this.clock.now(), options.leaseMs ?? 30_000),
      items: [ref],
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
      ...checkRef("checkpoint", job),
      now: this.clock.now(),
      checkpoint: toJsonText("checkpoint", data, this.#maxPayloadBytes),
    });
  }

  /** Gives an attempt back without using it up (the job is pending again at once). `false` when stale. */
  async release(job: AttemptRef | Job): Promise<boolean> {
    return this.#door.release({
      ...checkRef("release", job),
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
    return this.store;
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
  if (!isPlainObject(options)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `openQueue: give a store URL or an options object, got ${describe(options)}`,
    );
  }
  checkKnownKeys(
    "openQueue",
    options,
    new Set([
      "store",
      "clock",
      "retention",
      "maxPayloadBytes",
      "jobs",
      "random",
      "maintenance",
      "sweepIntervalMs",
    ]),
  );
  if (options.store === undefined) {
    throw new ErrandError("INVALID_STORE_URL", "openQueue: store is required (a store URL or a store)");
  }
  if (typeof options.store !== "string") return new Queue(options.store, options);
  const store = await openStore(options.store);
  return new Queue(store, { ...options, ownsStore: true });
}

/**
 * A lease taken through the lease API: a date to store, not a timer here (a Worker bounds its own
 * `leaseMs` by its heartbeat timer), so it may run up to the latest date a store keeps.
 * @throws ErrandError `INVALID_DURATION`
 */
function leaseMsFrom(now: number, value: Duration): number {
  const ms = toMs("leaseMs", value);
  addToDate("leaseMs", now, ms);
  return ms;
}

/** Refuses an options (or reference) argument that is not an object, before any of it is read. */
function checkObject(where: string, what: string, value: unknown): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ErrandError("INVALID_OPTION", `${where}: ${what} must be an object, got ${describe(value)}`);
  }
}

/**
 * The id and attempt of a report's reference (a {@link Job} or an {@link AttemptRef}), checked.
 * @throws ErrandError `INVALID_OPTION` when it is not an object, `INVALID_JOB_ID`, `INVALID_ATTEMPT`
 */
function checkRef(where: string, job: unknown): AttemptRef {
  if (typeof job !== "object" || job === null || Array.isArray(job)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: the attempt must be a job or { id, attempt }, got ${describe(job)}`,
    );
  }
  const { id, attempt } = job as { id?: unknown; attempt?: unknown };
  return { id: checkJobId(id), attempt: checkAttempt(attempt) };
}

/** An object literal's kind (or `Object.create(null)`): not a Map, an array or a class instance. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Refuses what a Queue could not work with, when it is made rather than at its first call: the
 * store, the clock, `random` and `jobs` are used later, where a wrong one would crash far from its
 * cause. The other options are checked where they are read.
 * @throws ErrandError `INVALID_OPTION`, naming the option.
 */
function checkQueueOptions(store: unknown, options: unknown): void {
  if (!isPlainObject(options)) {
    throw new ErrandError("INVALID_OPTION", `Queue: options must be an object, got ${describe(options)}`);
  }
  const s = store as Partial<Store> | null;
  if (
    typeof s !== "object" ||
    s === null ||
    typeof s.capabilities !== "object" ||
    s.capabilities === null ||
    typeof s.enqueueMany !== "function" ||
    typeof s.claim !== "function"
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `store must be a store URL or a store (openStore), got ${describe(store)}`,
    );
  }
  const { clock, random, jobs } = options as Partial<OpenQueueOptions>;
  if (
    clock !== undefined &&
    (typeof clock !== "object" ||
      clock === null ||
      typeof clock.now !== "function" ||
      typeof clock.setTimer !== "function")
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `clock must have now() and setTimer() (a Clock such as ManualClock), got ${describe(clock)}`,
    );
  }
  if (random !== undefined && typeof random !== "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      `random must be a function returning [0, 1), got ${describe(random)}`,
    );
  }
  if (jobs !== undefined) {
    if (!Array.isArray(jobs)) {
      throw new ErrandError("INVALID_OPTION", `jobs must be a list of definitions, got ${describe(jobs)}`);
    }
    jobs.forEach((def, i) => {
      if (!isJobDefinition(def)) {
        throw new ErrandError(
          "INVALID_OPTION",
          `jobs[${i}] must be a definition made by defineJob, got ${describe(def)}`,
        );
      }
    });
  }
}
