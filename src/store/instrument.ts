/**
 * The one door to the Store. Every change of a job's state (enqueue, claim, complete, fail,
 * heartbeat, checkpoint, release, cancel, and what maintenance does) passes through a
 * {@link StoreDoor}, which wraps the Queue's store once and does, in one place, what must follow
 * each change:
 *
 * - the Queue's events (`enqueued`, `active`, `completed`, `failed`, `retrying`, `dead`,
 *   `expired`, `cancelled`), which feed metrics, the server's history and users' listeners, the
 *   same for local Workers, the server's lease protocol, push delivery and remote completions;
 * - wake-ups after a job of a capped type leaves `active`: the cap freed room that no enqueue
 *   will announce, so claimers held back by it in every process must look again.
 *
 * Reads (get, list, stats, schedules, job types) do not need the door; the Queue calls the store
 * for them. Oban's `Engine` dispatch is the model: the engines stay plain, the cross-cutting
 * concerns are wrapped once at the boundary.
 * @internal
 * @module
 */
import type { EventSink } from "../events.js";
import {
  type EnqueuedJob,
  type Job,
  type JobRecord,
  jobDate,
  NO_DEPENDENCIES,
  NO_ERRORS,
  parseBackoff,
  type StoredBackoff,
  sharedJobDates,
  toJob,
  withErrorEntry,
} from "../job.js";
import { isShared } from "./new-jobs.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  EnqueueManyParams,
  FailItem,
  FireScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  NewJob,
  PruneParams,
  ReleaseParams,
  ReplayParams,
  RequeueResult,
  RescheduleParams,
  RetryParams,
  SnoozeParams,
  Store,
  SweepParams,
} from "./store.js";

/**
 * One completion through the door. It is also the store's completion item (`id`, `attempt`,
 * `result`), so a batch goes to the store without a copy per job.
 */
export interface Completion {
  id: string;
  attempt: number;
  /** The handler's result as JSON text, as stored. */
  result: string;
  /** The handler's result, as given (for the `completed` event). */
  value: unknown;
  /**
   * The job as it was handed out, when the caller has it (a Worker, push delivery, the server's
   * lease protocol). Without it the door reads the job back, only when someone needs it: a
   * `completed` listener, or a cap that may have been freed (unless `type` says which).
   */
  job?: Job;
  /**
   * The job's type, from a caller that leaves `job` out while no one listens for `completed`
   * (a Worker: the job need not stay alive through the write): enough to wake claimers when a
   * capped type's job ends.
   */
  type?: string;
}

/** One failed attempt through the door: the job as handed out, what it threw, and the write. */
export interface Failure {
  job: Job;
  error: unknown;
  /** What the failure rule decided (see `failure-rule.ts`). */
  write: FailItem;
}

/** @internal See the module doc. */
export class StoreDoor {
  readonly #store: Store;
  readonly #events: EventSink;
  readonly #capped: (type: string) => boolean;
  readonly #anyCapped: () => boolean;

  /**
   * @param capped - whether a type has a cluster-wide cap (its end frees room to announce).
   * @param anyCapped - whether any known type has one; when none does, a completion without its
   *   job needs no read-back for the cap's sake.
   */
  constructor(store: Store, events: EventSink, capped: (type: string) => boolean, anyCapped: () => boolean) {
    this.#store = store;
    this.#events = events;
    this.#capped = capped;
    this.#anyCapped = anyCapped;
  }

  // ---- into the store ------------------------------------------------------------------------

  /**
   * Inserts resolved jobs; the inserted ones are emitted as `enqueued`, the ones whose id or
   * unique key was taken come back as the existing job with `duplicate: true`.
   * @param values - each job's payload as given, so the returned job needs no parse.
   */
  async enqueue(params: EnqueueManyParams, values: readonly unknown[]): Promise<EnqueuedJob[]> {
    const results = await this.#store.enqueueMany(params);
    const emit = this.#events.listenerCount("enqueued") > 0;
    const dateAt = sharedJobDates();
    const { jobs } = params;
    const shared = isShared(jobs) ? jobs : null;
    const sharedBackoff = shared && parseBackoff(shared.shared.backoff);
    return results.map((r, i) => {
      if (r.expired !== undefined) this.#emitExpired(r.expired, r.cascaded);
      if (!r.inserted) return { ...toJob(r.existing), duplicate: true };
      let job: EnqueuedJob;
      if (r.record !== undefined) job = { ...toJob(r.record), duplicate: false };
      else if (shared) {
        job = jobFromNew(shared.shared, shared.ids[i]!, values[i], sharedBackoff!, params.now, dateAt);
      } else {
        const n = (jobs as NewJob[])[i]!;
        job = jobFromNew(n, n.id, values[i], parseBackoff(n.backoff), params.now, dateAt);
      }
      if (emit) this.#events.emit("enqueued", job);
      return job;
    });
  }

  /**
   * {@link enqueue}, answering only each job's id: the new job's, or for one that was not inserted
   * the id of the job that stood in its place. No job is built unless someone listens for
   * `enqueued` (then {@link enqueue} builds them for the events anyway).
   */
  async enqueueIds(params: EnqueueManyParams, values: readonly unknown[]): Promise<string[]> {
    if (this.#events.listenerCount("enqueued") > 0)
      return (await this.enqueue(params, values)).map((job) => job.id);
    const results = await this.#store.enqueueMany(params);
    const { jobs } = params;
    const ids = isShared(jobs) ? jobs.ids : jobs.map((j) => j.id);
    const out: string[] = new Array(results.length);
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      if (r.expired !== undefined) this.#emitExpired(r.expired, r.cascaded);
      out[i] = r.inserted ? ids[i]! : r.existing.id;
    }
    return out;
  }

  /**
   * Key holders an enqueue, retry or replay expired to free their keys: `expired`, as a sweep's;
   * then `cancelled` for the dependents their expiry cancelled.
   */
  #emitExpired(records: readonly JobRecord[], cascaded: readonly JobRecord[] | undefined): void {
    for (const r of records) this.#events.emit("expired", toJob(r));
    if (cascaded !== undefined) this.#emitCascaded(cascaded);
  }

  /**
   * `cancelled` for each dependent a store cancelled because a job the call ended (dead,
   * cancelled or expired) was among its dependencies (`Cascade` in store.ts): a change through
   * the Queue like any other, though the caller named only the job that ended. They were
   * blocked, holding no cap's room, so none is freed.
   */
  #emitCascaded(cascaded: readonly JobRecord[]): void {
    for (const r of cascaded) this.#events.emit("cancelled", toJob(r));
  }

  /**
   * Fires a schedule's tick (exactly once per tick, cluster-wide): `true`, and `enqueued`, when
   * its job was stored. A tick that fired without storing a job (its unique key held by the last
   * tick's job still waiting or running, say) moves the schedule on all the same, announcing
   * nothing.
   */
  async fireSchedule(params: FireScheduleParams, payload: unknown): Promise<boolean> {
    const result = await this.#store.fireSchedule(params);
    if (result?.expired !== undefined) this.#emitExpired(result.expired, result.cascaded);
    const { job } = params;
    if (result === null || !result.inserted || job === null) return false;
    if (this.#events.listenerCount("enqueued") > 0) {
      this.#events.emit(
        "enqueued",
        result.record !== undefined
          ? toJob(result.record)
          : jobFromNew(job, job.id, payload, parseBackoff(job.backoff), params.now, jobDate),
      );
    }
    return true;
  }

  /**
   * A finished job copied as a fresh one; `enqueued` for the copy, or `expired` for the copy of an
   * expired job, which is stored expired at once (it keeps the original's expiry rule). Before it,
   * `expired` for a holder of the copy's unique key past its expiresAt that the replay expired to
   * free the key, and `cancelled` for the dependents that expiry cancelled (Store.replay).
   */
  async replay(params: ReplayParams): Promise<RequeueResult> {
    const m = await this.#store.replay(params);
    if (m?.expired !== undefined) this.#emitExpired(m.expired, m.cascaded);
    if (m?.changed) {
      const job = toJob(m.record);
      this.#events.emit(job.state === "expired" ? "expired" : "enqueued", job);
    }
    return m;
  }

  // ---- attempts ------------------------------------------------------------------------------

  /** Leases ready jobs; each is emitted as `active`. */
  async claim(params: ClaimParams): Promise<Job[]> {
    const records = await this.#store.claim(params);
    const at = sharedJobDates();
    const jobs = records.map((r) => toJob(r, at));
    if (jobs.length > 0 && this.#events.listenerCount("active") > 0) {
      for (const job of jobs) this.#events.emit("active", job);
    }
    return jobs;
  }

  /**
   * Completes attempts in one write. `true` for each that was current and is now completed (and
   * emitted as `completed`); `false` for a stale one, which changed nothing. With `discard`,
   * completed jobs nothing depends on are deleted rather than kept ({@link CompleteManyParams}).
   */
  async complete(now: number, items: readonly Completion[], discard = false): Promise<boolean[]> {
    if (items.length === 0) return [];
    const listening = this.#events.listenerCount("completed") > 0;
    // A discarded job cannot be read back after the write: the completions that will need their
    // job and came without it are read before it, in one read for the batch.
    const wanted = discard ? this.#wantedBeforeDiscard(items, listening) : null;
    const before = wanted === null ? null : await this.#readBefore(items, wanted);
    const oks = await this.#store.completeMany(discard ? { now, items, discard } : { now, items });
    const settled = { next: 0, freed: false };
    for (;;) {
      this.#announceCompleted(now, items, oks, listening, settled, before);
      if (settled.next === items.length) break;
      // A completion that came without its job (a remote worker after a server restart, a
      // Worker that had no listener when it wrote): read it back, now completed, only because
      // someone needs it.
      const c = items[settled.next++]!;
      const record = await this.#store.get({ id: c.id });
      const job = record ? toJob(record) : undefined;
      // Discarded on completion: its type is unknown, so any cap may have room now.
      if (!job && discard && this.#anyCapped()) settled.freed = true;
      if (this.#announceOne(now, c, job, listening)) settled.freed = true;
    }
    if (settled.freed) this.#store.wake();
    return oks;
  }

  /**
   * Whether a completion that came without its job needs it, to announce it (`listening`) or to
   * learn whether its end frees a capped type's room.
   */
  #needsJob(c: Completion, listening: boolean): boolean {
    return !c.job && (listening || (c.type === undefined && this.#anyCapped()));
  }

  /**
   * The indexes of the completions a discarding write would leave nothing to read back for,
   * though they need their job ({@link #needsJob}); null when none does (a Worker gives its jobs,
   * or their types, so it reads nothing).
   */
  #wantedBeforeDiscard(items: readonly Completion[], listening: boolean): number[] | null {
    let wanted: number[] | null = null;
    for (let i = 0; i < items.length; i++) {
      if (this.#needsJob(items[i]!, listening)) (wanted ??= []).push(i);
    }
    return wanted;
  }

  /**
   * The jobs at `wanted`, as stored before the write (active, under the attempt being completed
   * unless the completion is stale), by item index; one getMany for them all.
   */
  async #readBefore(
    items: readonly Completion[],
    wanted: readonly number[],
  ): Promise<Array<Job | undefined>> {
    const records = await this.#store.getMany({ ids: wanted.map((i) => items[i]!.id) });
    const before: Array<Job | undefined> = new Array(items.length);
    records.forEach((r, k) => {
      if (r !== null) before[wanted[k]!] = toJob(r);
    });
    return before;
  }

  /**
   * Announces the completed items from `at.next` on, in order, up to the first whose job must be
   * read back (left at `at.next`; the end when none), and notes in `at.freed` whether a capped
   * type's job was among them. `before`: jobs read before a discarding write, by item index. A
   * loop of its own, outside the async {@link complete}: run for every completed job, it would
   * otherwise have V8 optimise the whole async method in every worker process.
   */
  #announceCompleted(
    now: number,
    items: readonly Completion[],
    oks: readonly boolean[],
    listening: boolean,
    at: { next: number; freed: boolean },
    before: ReadonlyArray<Job | undefined> | null,
  ): void {
    for (; at.next < items.length; at.next++) {
      if (!oks[at.next]) continue;
      const c = items[at.next]!;
      const job = c.job ?? before?.[at.next];
      if (!job && this.#needsJob(c, listening)) return;
      if (this.#announceOne(now, c, job, listening)) at.freed = true;
    }
  }

  /** Emits `completed` for a listener; true when the job's type is capped (its end frees room). */
  #announceOne(now: number, c: Completion, job: Job | undefined, listening: boolean): boolean {
    const type = job?.type ?? c.type;
    if (type === undefined) return false;
    if (listening && job) {
      this.#events.emit(
        "completed",
        { ...job, state: "completed", result: c.value, finishedAt: jobDate(now) },
        c.value,
      );
    }
    return this.#capped(type);
  }

  /**
   * Records failed attempts in one write. Per item, the job as it now is (pending again, or
   * dead), emitted as `failed` and then `retrying` or `dead`; null for a stale attempt. Then the
   * dependents the dead ones' ends cancelled, each as `cancelled`.
   */
  async fail(now: number, items: readonly Failure[]): Promise<Array<Job | null>> {
    if (items.length === 0) return [];
    const states = await this.#store.failMany({ now, items: items.map((f) => f.write) });
    let freed = false;
    const out = items.map(({ job, error, write }, i) => {
      const state = states[i];
      if (!state) return null;
      const retryAt = write.retryAt;
      const failed: Job = {
        ...job,
        state,
        errors: withErrorEntry(job.errors, write.error),
        runAt: retryAt === null ? job.runAt : jobDate(retryAt),
        queue: retryAt !== null && write.retryQueue ? write.retryQueue : job.queue,
        leaseExpiresAt: null,
        workerId: null,
        finishedAt: state === "dead" ? jobDate(now) : null,
      };
      if (this.#capped(job.type)) freed = true;
      this.#events.emit("failed", failed, error);
      this.#events.emit(state === "dead" ? "dead" : "retrying", failed, error);
      return failed;
    });
    if (states.cascaded !== undefined) this.#emitCascaded(states.cascaded);
    if (freed) this.#store.wake();
    return out;
  }

  /** Extends leases; `false` for an attempt that is no longer current. */
  heartbeat(params: HeartbeatManyParams): Promise<boolean[]> {
    return this.#store.heartbeatMany(params);
  }

  checkpoint(params: CheckpointParams): Promise<boolean> {
    return this.#store.checkpoint(params);
  }

  /** Gives an attempt back; the store wakes claimers (the job is ready again). */
  release(params: ReleaseParams): Promise<boolean> {
    return this.#store.release(params);
  }

  /**
   * Snoozes an attempt; `snoozed` is emitted with the job as it is now (built from `job` when the
   * caller has it, else read back), and a capped type's claimers are woken (it left `active`).
   */
  async snooze(params: SnoozeParams, job?: Job): Promise<boolean> {
    const ok = await this.#store.snooze(params);
    if (!ok) return false;
    if (this.#events.listenerCount("snoozed") > 0) {
      const record = job ? null : await this.#store.get({ id: params.id });
      const snoozed: Job | null = job
        ? {
            ...job,
            state: "pending",
            runAt: jobDate(params.runAt),
            snoozes: job.snoozes + 1,
            maxAttempts: job.maxAttempts + 1,
            leaseExpiresAt: null,
            workerId: null,
          }
        : record && toJob(record);
      if (snoozed) this.#events.emit("snoozed", snoozed);
    }
    const type = job?.type;
    if (type === undefined || this.#capped(type)) this.#store.wake();
    return true;
  }

  // ---- by id ---------------------------------------------------------------------------------

  /**
   * Cancels; a change is emitted as `cancelled` (a local worker running it aborts its signal), and
   * so is each dependent the cancel cancelled with it.
   */
  async cancel(params: CancelParams): Promise<JobMutation> {
    const m = await this.#store.cancel(params);
    if (m?.changed) {
      const job = toJob(m.record);
      this.#events.emit("cancelled", job);
      if (m.cascaded !== undefined) this.#emitCascaded(m.cascaded);
      if (this.#capped(job.type)) this.#store.wake();
    }
    return m;
  }

  reschedule(params: RescheduleParams): Promise<JobMutation> {
    return this.#store.reschedule(params);
  }

  /**
   * Puts a finished job back; `expired` for a holder of its unique key past its expiresAt that the
   * retry expired to free the key, and `cancelled` for the dependents that expiry cancelled
   * (Store.retry), as an enqueue announces them.
   */
  async retry(params: RetryParams): Promise<RequeueResult> {
    const m = await this.#store.retry(params);
    if (m?.expired !== undefined) this.#emitExpired(m.expired, m.cascaded);
    return m;
  }

  // ---- maintenance ---------------------------------------------------------------------------

  /** Active jobs whose lease ran out; the caller fails each through {@link fail}. */
  expiredLeases(params: SweepParams) {
    return this.#store.expiredLeases(params);
  }

  /** Schedules whose tick is due; each is fired through {@link fireSchedule}. */
  dueSchedules(params: SweepParams) {
    return this.#store.dueSchedules(params);
  }

  /** Deletes finished jobs past retention (no events: they left the job's life already). */
  prune(params: PruneParams): Promise<number> {
    return this.#store.prune(params);
  }

  /**
   * Pending jobs past `expiresAt` → expired, each emitted as `expired`, then the dependents their
   * expiry cancelled as `cancelled`. Returns the expired jobs.
   */
  async expire(params: SweepParams): Promise<Job[]> {
    const expired = await this.#store.expirePending(params);
    const jobs = expired.map((r) => toJob(r));
    for (const job of jobs) this.#events.emit("expired", job);
    if (expired.cascaded !== undefined) this.#emitCascaded(expired.cascaded);
    return jobs;
  }

  // ---- wake-ups ------------------------------------------------------------------------------

  /** See {@link Store.onWake}. */
  onWake(listener: () => void): () => void {
    return this.#store.onWake(listener);
  }

  /** See {@link Store.wake}. */
  wake(): void {
    this.#store.wake();
  }
}

/**
 * The job a just-inserted {@link NewJob} without dependencies is, without reading it back (a job
 * with dependencies comes back from the store as stored), under `id` (the NewJob's own, or one of
 * {@link SharedJobs}' ids). A literal, not a loop over JOB_FIELDS: this runs per enqueued job;
 * test/unit/job-fields.test.ts checks its keys. `dateAt` gives its instants' Dates, shared by the
 * jobs of one call ({@link sharedJobDates}).
 * @internal
 */
export function jobFromNew<P>(
  n: NewJob,
  id: string,
  payload: P,
  backoff: StoredBackoff,
  now: number,
  dateAt: (ms: number) => Date,
): EnqueuedJob<P> {
  return {
    id,
    type: n.type,
    queue: n.queue,
    state: "pending",
    payload,
    checkpoint: null,
    result: null,
    priority: n.priority,
    weight: n.weight,
    runAt: dateAt(n.runAt),
    expiresAt: n.expiresAt === null ? null : dateAt(n.expiresAt),
    attempt: 0,
    maxAttempts: n.maxAttempts,
    backoff,
    retryQueue: n.retryQueue,
    delivery: n.delivery,
    timeoutMs: n.timeoutMs,
    uniqueKey: n.uniqueKey,
    leaseExpiresAt: null,
    workerId: null,
    errors: NO_ERRORS,
    createdAt: dateAt(now),
    startedAt: null,
    finishedAt: null,
    owner: n.owner,
    dependsOn: n.dependsOn === null ? NO_DEPENDENCIES : (JSON.parse(n.dependsOn) as string[]),
    blockedBy: 0,
    onDependencyFailure: n.onDependencyFailure,
    key: n.key,
    debounceKey: n.debounceKey,
    snoozes: 0,
    duplicate: false,
  };
}
