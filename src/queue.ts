import { EventEmitter } from "node:events";
import { Attempts } from "./attempts.js";
import { type Clock, checkedClock, systemClock } from "./clock.js";
import { type AnyJobDefinition, checkJobDefinition } from "./define-job.js";
import { dependenciesOf } from "./dependency-reads.js";
import type { Duration } from "./duration.js";
import { emitIsolated, ignoreError } from "./emit-isolated.js";
import type { BatchItem } from "./enqueue-plan.js";
import { Enqueuer, type JobTarget } from "./enqueuer.js";
import { ErrandError } from "./errors.js";
import type { QueueEvents } from "./events.js";
import type { FlowNode } from "./flow-plan.js";
import { uuidv7 } from "./id.js";
import {
  type EnqueuedJob,
  type FinishedState,
  type Job,
  type JobDependency,
  type JobState,
  toJob,
  toJobSummary,
} from "./job.js";
import { checkKnownKeys } from "./known-keys.js";
import { fireDueSchedules } from "./maintenance/cron-firing.js";
import { DuePass } from "./maintenance/due-pass.js";
import { expireJobs } from "./maintenance/expiry.js";
import { recoverLeases } from "./maintenance/lease-recovery.js";
import { pruneFinished, resolveRetention } from "./maintenance/pruner.js";
import { nameRecord } from "./name-record.js";
import { openStore } from "./open-store.js";
import {
  checkDependents,
  checkLeaseOptions,
  checkListOptions,
  checkOpenQueueTarget,
  checkReschedule,
  checkSchedulePage,
  leaseNow,
  resolveQueueOptions,
} from "./queue-checks.js";
import type {
  DependentsOptions,
  EnqueueOptions,
  FailOptions,
  FlowResult,
  JobPage,
  JobSummaryPage,
  LeaseOptions,
  ListOptions,
  ListViewOptions,
  OpenQueueOptions,
  QueueStats,
  RetentionOptions,
  Schedule,
  ScheduleOptions,
  SchedulePage,
  SchedulePageOptions,
  SweepResult,
} from "./queue-options.js";
import { planSchedule, toSchedule } from "./schedule-plan.js";
import { SharedRead } from "./shared-read.js";
import { StoreDoor } from "./store/instrument.js";
import type { AttemptRef, Store } from "./store/store.js";
import { TypeRegistry, type TypeSettings } from "./type-registry.js";
import { checkJobId, checkQueueName, checkScheduleName } from "./validation.js";

export { defaultWorkerId } from "./id.js";
export { openStore } from "./open-store.js";
export type * from "./queue-options.js";
export { DEFAULT_RETENTION } from "./queue-options.js";
export { toQueueWeights } from "./queue-weights.js";
export type { TypeSettings } from "./type-registry.js";
export type { EnqueuedJob, QueueEvents };

const SWEEP_BATCH = 500;

/** {@link Queue.prune}'s options. */
const PRUNE_KEYS: ReadonlySet<string> = new Set(["retention"]);
/** Schedules per store call when {@link Queue.schedules} reads them all. */
const SCHEDULE_PAGE = 1_000;

/**
 * How `stats()` spaces its counts: after one that took `d` ms, 20 ms or more, the next begins no
 * sooner than `4 × d` after it, so counting keeps the store busy at most a fifth of the time
 * however many callers poll (a count of 1,000,000 waiting jobs takes PostgreSQL ~0.35 s, SQLite's
 * reader thread ~0.5 s). A count of a small backlog (~1–5 ms) earns no wait: a caller polling
 * stats() in a test or a loop is not slowed, and costs the store little. At most five seconds:
 * an HTTP caller (`/v1/stats`, a Prometheus scrape of `/metrics`, whose timeout is 10 s by
 * default) waits no longer than that for its turn, and beside a backlog of many millions counts
 * then take more than a fifth of the store's time.
 */
const STATS_SPACING = { factor: 4, maxWaitMs: 5_000, fromMs: 20 } as const;

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
  /**
   * Where the queue reads the time (the `clock` option): a custom clock's `now()` is checked on
   * every read to stay within the dates a store keeps.
   */
  readonly clock: Clock;
  readonly #retainMs: Record<FinishedState, number>;
  readonly #maxPayloadBytes: number;
  readonly #random: () => number;
  readonly #types = new TypeRegistry();
  /**
   * stats(): one count at a time, shared by the callers who ask meanwhile, and spaced by what the
   * last one took ({@link STATS_SPACING}).
   */
  readonly #stats: SharedRead<QueueStats>;
  readonly #ownsStore: boolean;
  /** The lease API's own maintenance (see {@link OpenQueueOptions.maintenance}); null when off. */
  readonly #duePass: DuePass | null;
  /**
   * What happens to leased attempts, for the Worker, the server and push delivery, which claim
   * and report through it (one turn's outcomes in one write); the lease API delegates to it.
   * @internal
   */
  readonly attempts: Attempts;
  readonly #enqueuer: Enqueuer;
  #closed = false;

  /**
   * Emits as `EventEmitter` does, except that each listener runs on its own: one that throws, or
   * returns a promise that rejects, neither stops the listeners after it nor reaches the call that
   * changed the job (the change is written already). Its fault goes to this queue's `error` event
   * (which a Queue ignores unless someone listens: see {@link QueueEvents}), or, with every `error`
   * listener removed, is thrown on the next tick as an uncaught exception. `error` itself is
   * emitted as `EventEmitter` does.
   */
  override emit<K extends keyof QueueEvents>(event: K, ...args: QueueEvents[K]): boolean {
    return event === "error"
      ? super.emit("error", ...(args as QueueEvents["error"]))
      : emitIsolated(this, event, args);
  }

  /** Prefer {@link openQueue}. */
  constructor(store: Store, options: Omit<OpenQueueOptions, "store"> & { ownsStore?: boolean } = {}) {
    super();
    const resolved = resolveQueueOptions(store, options);
    this.store = store;
    this.#door = new StoreDoor(
      store,
      this,
      (type) => this.#types.capped(type),
      () => this.#types.limits(undefined) !== undefined || this.#types.keyRules(undefined) !== undefined,
    );
    this.clock = checkedClock(options.clock ?? systemClock);
    // Spaced in real time, whatever the queue's clock: what it protects is the store's time (a
    // ManualClock moved on during a count would otherwise hold the next until it moved again).
    this.#stats = new SharedRead(() => this.#readStats(), { clock: systemClock, ...STATS_SPACING });
    // Read once here: a clock that gives no date at all is refused where it is given.
    this.clock.now();
    this.#random = options.random ?? Math.random;
    this.#ownsStore = options.ownsStore ?? false;
    this.#maxPayloadBytes = resolved.maxPayloadBytes;
    this.#retainMs = resolved.retainMs;
    this.#duePass =
      options.maintenance === false
        ? null
        : new DuePass(
            this.clock,
            resolved.sweepMs,
            // One chunk of each: a lease call must not wait out a whole backlog (sweep() does).
            async () => {
              this.#checkOpen();
              await this.#sweepJobs(this.clock.now(), 1);
            },
            (error) => this.emit("error", error),
          );
    this.#enqueuer = new Enqueuer({
      door: this.#door,
      clock: this.clock,
      types: this.#types,
      maxPayloadBytes: this.#maxPayloadBytes,
      canEnlist: store.capabilities.transactionalEnqueue,
    });
    this.attempts = new Attempts({
      door: this.#door,
      clock: this.clock,
      random: this.#random,
      types: this.#types,
      maxPayloadBytes: this.#maxPayloadBytes,
      discardCompleted: this.#retainMs.completed === 0,
      get: (id) => this.get(id),
    });
    for (const def of options.jobs ?? []) this.register(def);
    // An unhandled "error" event would crash the process; the default is to log nothing and go on
    // (a listener's own fault is a warning, emit-isolated.ts).
    this.on("error", ignoreError);
  }

  /**
   * Tells the queue about job types, so that leases respect their cluster-wide `concurrency` and
   * sweeps use their custom backoff. Workers register their jobs themselves.
   * @throws ErrandError `INVALID_OPTION` for anything defineJob did not make; none is registered then.
   */
  register(...defs: AnyJobDefinition[]): this {
    // All checked before any is registered: a refusal registers none.
    defs.forEach((def, i) => {
      checkJobDefinition(`register: definitions[${i}]`, def);
    });
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
    return this.#enqueuer.many(job, payloads, options);
  }

  /**
   * {@link enqueueMany} for bulk loads: the same checks, the same single transaction and the same
   * `enqueued` events, but it answers only each job's id, in payload order, instead of every job
   * whole. For a new job that is its own id; for one that was not stored because its `id`,
   * `uniqueKey` or debounce key was already held, the id of the job that holds it (as
   * `enqueueMany`'s `duplicate: true` job). Building the jobs is a quarter to a third of a large
   * call on SQLite: prefer this when the jobs are not read back (River's `InsertManyFast` answers
   * with a count for the same reason).
   * @example `const ids = await queue.enqueueManyIds(resize, uploads.map((u) => ({ key: u.key })));`
   * @throws ErrandError on invalid input, as `enqueueMany`; nothing is stored then.
   * @since 0.2.0
   */
  async enqueueManyIds<P>(
    job: JobTarget<P>,
    payloads: readonly P[],
    options: EnqueueOptions = {},
  ): Promise<string[]> {
    this.#checkOpen();
    return this.#enqueuer.manyIds(job, payloads, options);
  }

  /**
   * Adds jobs of any types, each with its own options, in one transaction and one round trip
   * (the server's bulk enqueue). Either every job is valid and all are stored, or none is.
   * @since 0.1.0
   */
  async enqueueBatch(items: ReadonlyArray<BatchItem>): Promise<EnqueuedJob[]> {
    this.#checkOpen();
    return this.#enqueuer.batch(items);
  }

  /**
   * {@link enqueueBatch} for bulk loads of several types: the same checks, transaction,
   * idempotency and `enqueued` events, answering each item's id in order (for a duplicate, the id
   * of the job that holds its `id`, `uniqueKey` or debounce key) instead of every job whole, as
   * {@link enqueueManyIds} does for one type.
   * @example `const ids = await queue.enqueueBatchIds(orders.map((o) => ({ job: o.kind, payload: o })));`
   * @throws ErrandError on invalid input, as `enqueueBatch`; nothing is stored then.
   * @since 0.2.0
   */
  async enqueueBatchIds(items: ReadonlyArray<BatchItem>): Promise<string[]> {
    this.#checkOpen();
    return this.#enqueuer.batchIds(items);
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
    return this.#enqueuer.flow(nodes);
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** The job with this id, whatever its state; null when there is none (or it was pruned). */
  async get<P = unknown, R = unknown>(id: string): Promise<Job<P, R> | null> {
    const record = await this.store.get({ id: checkJobId(id) });
    return record ? toJob<P, R>(record) : null;
  }

  /**
   * A page of jobs, newest first. A state, queue, type or key filter is checked job by job, so a
   * filtered page reads at most the store's `capabilities.listScan` jobs of each table or index it
   * walks (`LIST_SCAN`, 10,000, on SQLite and PostgreSQL; 2,000 on Redis): when few jobs match,
   * the page may hold fewer than `limit`, even none, and still have a `nextCursor`.
   * Page on until `nextCursor` is null to see every match; no call holds the store long.
   * `view: "summary"` gives each job as a `JobSummary`, which the store reads without the
   * fields a summary leaves out (a list of large jobs' states and times).
   * @example
   * ```ts
   * for (let cursor: string | undefined; ; ) {
   *   const page = await queue.list({ state: "dead", cursor });
   *   for (const job of page.jobs) console.log(job.id);
   *   if (page.nextCursor === null) break;
   *   cursor = page.nextCursor;
   * }
   * ```
   */
  async list(options: ListOptions & { view: "summary" }): Promise<JobSummaryPage>;
  /** A page of jobs, newest first, each whole. */
  async list(options?: ListOptions & { view?: "full" }): Promise<JobPage>;
  /** A page of jobs, newest first, as `options.view` asks. */
  async list(options?: ListViewOptions): Promise<JobPage | JobSummaryPage>;
  async list(options: ListViewOptions = {}): Promise<JobPage | JobSummaryPage> {
    const params = checkListOptions(options);
    const page = await this.store.list(params);
    // A summary's record carries placeholders for what it leaves out (ListParams.summary).
    const jobs = params.summary
      ? page.jobs.map((r) => toJobSummary(toJob(r)))
      : page.jobs.map((r) => toJob(r));
    return { jobs, nextCursor: page.nextCursor };
  }

  /**
   * The jobs `id` waits for, in its `dependsOn` order, each with its state and result (null
   * fields for one pruned by retention). What `ctx.dependencies()` returns.
   * @throws ErrandError `JOB_NOT_FOUND` when there is no such job.
   * @since 0.2.0
   */
  async dependencies(id: string): Promise<JobDependency[]> {
    return dependenciesOf(this.store, checkJobId(id));
  }

  /**
   * A page of the jobs waiting on `id` (whose `dependsOn` names it), in any state, in id order.
   * @throws ErrandError `JOB_NOT_FOUND` when there is no such job and nothing names it (a
   *   mistyped id is not an empty page; the dependents of a job retention removed still are).
   * @since 0.2.0
   */
  async dependents(id: string, options: DependentsOptions = {}): Promise<JobPage> {
    const params = checkDependents(id, options);
    const page = await this.store.dependents(params);
    if (
      page.jobs.length === 0 &&
      params.cursor === undefined &&
      (await this.store.get({ id: params.id })) === null
    )
      throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(params.id)}`);
    return { jobs: page.jobs.map((r) => toJob(r)), nextCursor: page.nextCursor };
  }

  /**
   * Counts by state, queue and type, the oldest ready job's wait, {@link QueueStats.limits}. The
   * counts read every waiting and running job (every store keeps the history's counts as it
   * changes), so callers who ask while a count runs share the next one (each answer still counts what was written before it was asked for): ten
   * dashboard tabs polling keep at most one count running. After a count that took 20 ms or
   * more, the next also waits four times as long as that one took (in real time, at most five
   * seconds), and callers who ask meanwhile share it: counting a large backlog keeps the store
   * busy at most a fifth of the time however often it is asked for. A count beside a small
   * backlog (~1–5 ms) earns no wait.
   * Callers who share a count share its object: read it, do not change it.
   */
  stats(): Promise<QueueStats> {
    return this.#stats.get();
  }

  async #readStats(): Promise<QueueStats> {
    const now = this.clock.now();
    const limits = this.#types.limitStats();
    const [s, paused] = await Promise.all([this.store.stats({ now, limits }), this.store.pausedQueues()]);
    return {
      states: s.states,
      scheduled: s.scheduled,
      retrying: s.retrying,
      queues: s.queues,
      types: s.types,
      oldestPendingAgeMs: s.oldestReadyAt === null ? 0 : Math.max(0, now - s.oldestReadyAt),
      paused,
      // A store of another maker may not know `limits` yet: none, rather than a hole.
      limits: s.limits ?? nameRecord(),
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
    const queue = checkQueueName(name);
    const changed = await this.store.pauseQueue({ name: queue, now: this.clock.now() });
    // This process's workers give back the queue's prefetched jobs at once (others at a heartbeat).
    this.emit("paused", queue);
    return changed;
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
    this.#checkOpen();
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
    this.#checkOpen();
    const m = await this.#door.reschedule(checkReschedule(id, options, this.clock.now()));
    return this.#mutated(id, m, [], "reschedule");
  }

  /**
   * Puts a dead, cancelled or expired job back to pending under the same id, with at least one
   * more attempt. Its error history is kept.
   *
   * A job with a `uniqueKey` takes its key again. A waiting job past its `expiresAt` that no sweep
   * has reached holds the key no longer: the retry expires it (emitted as `expired`, its
   * dependents settled as a sweep would) and goes ahead, as an enqueue would.
   * @throws ErrandError `JOB_NOT_FOUND`; `INVALID_STATE` for a blocked, pending, active or
   *   completed job (`details.state`), or when another blocked, pending or active job holds its
   *   `uniqueKey`. Nothing changes then.
   */
  async retry(id: string): Promise<Job> {
    this.#checkOpen();
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
   *
   * Any other copy keeps the original's `uniqueKey` and holds it. A waiting job past its
   * `expiresAt` that no sweep has reached holds the key no longer: the replay expires it (emitted
   * as `expired`, its dependents settled as a sweep would) and stores the copy, as an enqueue would.
   * @throws ErrandError `JOB_NOT_FOUND`; `INVALID_STATE` for a blocked, pending or active job
   *   (`details.state`), or when another blocked, pending or active job holds its `uniqueKey`.
   *   Nothing is stored then.
   */
  async replay(id: string): Promise<Job> {
    this.#checkOpen();
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
      plan: (type, def, jobOptions, at) => this.#enqueuer.plan(type, def, jobOptions, at),
      existing: (n) => this.store.getSchedule({ name: n }),
      maxPayloadBytes: this.#maxPayloadBytes,
    });
    await this.store.putSchedule(record);
    return toSchedule(record);
  }

  /** Removes a schedule; jobs it already enqueued stay. Returns whether it existed. */
  async unschedule(name: string): Promise<boolean> {
    this.#checkOpen();
    return this.store.deleteSchedule({ name: checkScheduleName(name) });
  }

  /**
   * One schedule by name; null when there is none. One read, whatever the number of schedules.
   * @throws ErrandError `INVALID_SCHEDULE_NAME`
   * @since 0.2.0
   */
  async getSchedule(name: string): Promise<Schedule | null> {
    const record = await this.store.getSchedule({ name: checkScheduleName(name) });
    return record === null ? null : toSchedule(record);
  }

  /**
   * Every schedule, by name (byte order), read a page of 1,000 at a time; see
   * {@link Queue.schedulePage} to read them a page at a time yourself.
   */
  async schedules(): Promise<Schedule[]> {
    const out: Schedule[] = [];
    for (let after: string | null = null; ; ) {
      const page = await this.store.listSchedules({ after, limit: SCHEDULE_PAGE });
      for (const record of page) out.push(toSchedule(record));
      if (page.length < SCHEDULE_PAGE) return out;
      after = page[page.length - 1]!.name;
    }
  }

  /**
   * A page of schedules by name (byte order): at most `limit` (default 50, up to 1,000), after
   * `cursor` (the previous page's `nextCursor`). `nextCursor` is null once a page is short; a full
   * page's may lead to an empty one.
   * @throws ErrandError `INVALID_OPTION` for a bad limit or an unknown option,
   * `INVALID_SCHEDULE_NAME` for a cursor that is not a schedule name
   * @since 0.3.0
   */
  async schedulePage(options: SchedulePageOptions = {}): Promise<SchedulePage> {
    const params = checkSchedulePage(options);
    const page = await this.store.listSchedules(params);
    return {
      schedules: page.map(toSchedule),
      nextCursor: page.length < params.limit ? null : page[page.length - 1]!.name,
    };
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
    let fault: { error: unknown } | undefined;
    const { recovered, expired } = await this.#sweepJobs(now).catch((error: unknown) => {
      // Due schedules fire all the same; the fault is reported once the pass is done.
      fault = { error };
      return { recovered: 0, expired: 0 };
    });
    const fired = await fireDueSchedules(
      this.#door,
      (s, at) =>
        this.#enqueuer.plan(s.type, this.#types.get(s.type), JSON.parse(s.options) as EnqueueOptions, at),
      now,
      SWEEP_BATCH,
      (error) => this.emit("error", error),
    ).catch((error: unknown) => {
      // Both steps failed: the jobs' fault is thrown below, this one reported beside it.
      if (fault === undefined) throw error;
      this.emit("error", error);
      return 0;
    });
    if (fault) throw fault.error;
    return { recovered, expired, fired };
  }

  /**
   * The jobs' part of {@link Queue.sweep}, without schedules: recovers jobs whose lease ran out and
   * expires pending jobs past `expiresAt`, in chunks until one comes back short. {@link Queue.lease}
   * runs one chunk of each when its pass is due, so a lease never waits out a whole backlog.
   * @internal For whatever runs maintenance (workers, servers, a maintainer).
   */
  async sweepJobs(): Promise<Omit<SweepResult, "fired">> {
    this.#checkOpen();
    return this.#sweepJobs(this.clock.now());
  }

  /** Recovers and expires in chunks until one comes back short, or `chunks` of each. */
  async #sweepJobs(now: number, chunks = Number.POSITIVE_INFINITY): Promise<Omit<SweepResult, "fired">> {
    // Whoever sweeps, the lease API's next pass is due an interval from here.
    this.#duePass?.ran(now);
    let recovered: number;
    try {
      recovered = await recoverLeases(
        this.#door,
        (outcomes) => this.attempts.failOutcomes(outcomes),
        now,
        SWEEP_BATCH,
        chunks,
      );
    } catch (error) {
      // A lease the store cannot recover must not stop expiry for every other job: expire, then
      // report the recovery's fault (the next pass tries it again).
      await expireJobs(this.#door, now, SWEEP_BATCH, chunks).catch(() => {});
      throw error;
    }
    const expired = await expireJobs(this.#door, now, SWEEP_BATCH, chunks);
    return { recovered, expired };
  }

  /**
   * Deletes finished jobs older than their retention (see {@link OpenQueueOptions.retention}),
   * in chunks. Returns how many were deleted.
   */
  async prune(options: { retention?: RetentionOptions } = {}): Promise<number> {
    this.#checkOpen();
    checkKnownKeys("prune", options, PRUNE_KEYS);
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
   *
   * @param held When given and a ready job was held back by a rate limit (`rateLimit`,
   * `keyRateLimit`), `held.until` is set to the earliest time one of those windows has room
   * again, so a caller that found nothing can lease again then instead of polling.
   */
  async lease(options: LeaseOptions = {}, held?: { until: number | null }): Promise<Job[]> {
    this.#checkOpen();
    const { ahead, ...asked } = checkLeaseOptions(options, this.clock, (types) => this.#types.queues(types));
    // After the checks: a refused lease changes nothing.
    if (options.maintenance !== false) await this.#duePass?.run();
    const claim = leaseNow(asked, ahead, ahead > 0 && this.#types.rateRuled(asked.types));
    if (claim === null) return [];
    return this.attempts.claim({
      ...claim,
      ...this.#types.claimRules(claim.types),
      ...(held ? { held } : {}),
    });
  }

  /**
   * Completes an attempt. `true` exactly once per attempt; `false` when the attempt is stale
   * (lease lost, job cancelled or re-claimed, already reported) and then nothing changed.
   * @throws ErrandError `INVALID_PAYLOAD` when the result is not JSON-serialisable.
   */
  async complete(job: AttemptRef | Job, result?: unknown): Promise<boolean> {
    return this.attempts.complete(job, result);
  }

  /**
   * Fails an attempt: the job retries after its backoff or, when its attempts are spent, it is
   * not retryable, or it is `at_most_once`, goes to `dead`. `false` when the attempt is stale.
   */
  async fail(job: AttemptRef | Job, error: unknown, options: FailOptions = {}): Promise<boolean> {
    return this.attempts.fail(job, error, options);
  }

  /** Extends a lease. `false` when the attempt is no longer current. */
  async heartbeat(job: AttemptRef | Job, options: { leaseMs?: Duration } = {}): Promise<boolean> {
    return this.attempts.heartbeat(job, options);
  }

  /** Saves progress for the attempt; a retry sees it as `job.checkpoint`. `false` when stale. */
  async checkpoint(job: AttemptRef | Job, data: unknown): Promise<boolean> {
    return this.attempts.checkpoint(job, data);
  }

  /** Gives an attempt back without using it up (the job is pending again at once). `false` when stale. */
  async release(job: AttemptRef | Job): Promise<boolean> {
    return this.attempts.release(job);
  }

  /**
   * Ends the attempt without failing it: the job is pending again after `delay`, its errors
   * untouched, and the attempt does not count toward `maxAttempts` (what `ctx.snooze` does for a
   * Worker's handler). `false` when the attempt is no longer current.
   * @since 0.2.0
   */
  async snooze(job: AttemptRef | Job, delay: Duration): Promise<boolean> {
    return this.attempts.snooze(job, delay);
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
    // Not stats(): that counts the whole history, ~0.2-1 s a million jobs, and a readiness
    // probe gives up after a second. The paused queues are a table (a hash) of a few rows.
    await this.store.pausedQueues();
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /** Closes the store if this queue opened it (from a URL). Double close is harmless. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stats.hurry(true);
    if (this.#ownsStore) await this.store.close();
  }

  /**
   * Lets a `stats()` count waiting for its turn (see {@link Queue.stats}) begin now: a closing
   * server answers its waiting requests rather than cut them off. `close()` does it for every count after too.
   * @internal
   */
  hurryReads(): void {
    this.#stats.hurry();
  }

  /** Largest payload, result or checkpoint accepted, in bytes of JSON. */
  get maxPayloadBytes(): number {
    return this.#maxPayloadBytes;
  }

  /**
   * Whether {@link Queue.close} has been called. Every change it would make after that throws
   * ErrandError `CLOSED`: enqueues, leases, cancel, reschedule, retry, replay, `schedule`,
   * `unschedule`, pausing, resuming and maintenance. Reads and the outcomes of attempts already
   * leased still reach a store the queue does not own (other queues may share it); a store it
   * owns is closed with it, and answers every call with `CLOSED`.
   */
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
  const options = checkOpenQueueTarget(target);
  if (typeof options.store !== "string") return new Queue(options.store, options);
  const store = await openStore(options.store);
  return new Queue(store, { ...options, ownsStore: true });
}
