import type { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { snoozeUntil } from "../attempts.js";
import type { Clock } from "../clock.js";
import type { AnyJobDefinition } from "../define-job.js";
import { ErrandError, JobTimeoutError } from "../errors.js";
import { type Job, type JobDependency, jobDate } from "../job.js";
import { SlotMap } from "../slot-map.js";
import { Snooze } from "../snooze.js";
import { JobRun, type RunHooks } from "./job-run.js";
import type { FailedAttempt } from "./outcome-batcher.js";
import { WaitLine } from "./wait-line.js";
import type { WorkerEvents } from "./worker.js";

/** How a failed attempt is recorded: `retryable: false` sends it to dead; `kind` labels the error. */
export interface FailAttemptOptions {
  retryable?: boolean;
  kind?: string;
}

/**
 * Where a {@link RunCore} writes what its runs come to: the Queue for a local worker (batched by
 * the {@link OutcomeBatcher}), the server for a remote one.
 *
 * `complete` and `fail` report their own write faults (the worker's `error` event), once per
 * write however many callers share it; the core only waits for them. Every other fault is the
 * core's to report. @internal
 */
export interface RunSink {
  /**
   * `true` when the attempt is now completed, `false` when it was stale.
   * @throws ErrandError `INVALID_PAYLOAD` when the result cannot be stored: the attempt fails instead.
   */
  complete(job: Job, result: unknown): Promise<boolean>;
  /**
   * `complete` throws `INVALID_PAYLOAD` when called, never by rejecting: the core then need not
   * keep the job through the write.
   */
  readonly checksResultsAtOnce?: boolean;
  /** Records a failed attempt; null when it was stale. */
  fail(job: Job, error: unknown, options?: FailAttemptOptions): Promise<FailedAttempt>;
  /** Extends one lease; `false` when the attempt is no longer current. */
  heartbeat(job: Job): Promise<boolean>;
  /** Extends many leases; one result per job, in order. */
  heartbeatMany(jobs: Job[]): Promise<boolean[]>;
  checkpoint(job: Job, data: unknown): Promise<boolean>;
  /** Ends the attempt without failing it: pending again in `delayMs`; `false` when it was stale. */
  snooze(job: Job, delayMs: number): Promise<boolean>;
  /** The job's dependencies with their states and results (`ctx.dependencies()`). */
  dependencies(job: Job): Promise<JobDependency[]>;
  /** Gives an attempt back without using it up. */
  release(job: Job): Promise<unknown>;
  /** A heartbeat found the lease gone; a remote worker asks the server whether it was a cancel. */
  lost?(job: Job): void;
  /** Writes whatever is gathered; close() calls it last. */
  flush?(): Promise<void>;
}

/** What a {@link RunCore} needs from the worker that owns it. @internal */
export interface RunCoreOptions {
  sink: RunSink;
  clock: Clock;
  /** Handlers by job type. */
  jobs: ReadonlyMap<string, AnyJobDefinition>;
  concurrency: number;
  /** The lease each claim and heartbeat grants: how long a job claimed ahead may wait unheard. */
  leaseMs: number;
  /** Receives `active`, `completed`, `failed`, `retrying`, `dead`, `cancelled` and `error`. */
  events: EventEmitter<WorkerEvents>;
  /** Made on first use: most workers never log. */
  logger: () => Logger;
  /**
   * A run settled and freed its weight, or jobs left the wait line unstarted: the worker may take
   * more jobs.
   */
  onSettled: () => void;
  /** The last outcome write under way ended with nothing running: a retry may be ready now. */
  onReported: () => void;
  /**
   * A buffered job this says `true` for is given back, unstarted, when its turn to start comes (its
   * type gained a rate rule after it was claimed ahead).
   */
  holdsBack?: (job: Job) => boolean;
}

/**
 * What a worker does around the core's part of close(). @internal
 */
export interface ShutdownSteps {
  /** Stops taking jobs; returns what settles when jobs still arriving have been handed over. */
  stopTaking(): Promise<unknown> | null;
  /** After every outcome is written (or close failed): stop the worker's own timers. */
  stopped(): Promise<void> | void;
}

/** A job's attempt as one string, for sets of attempts ({@link RunCore.heldAttempts}). */
export const attemptKey = (id: string, attempt: number): string => `${attempt}:${id}`;

/** `new` → start() → `running` → close() → `closing` (takes no jobs, grace period) → `closed`. */
export type WorkerState = "new" | "running" | "closing" | "closed";

type AbandonReason = "timeout" | "cancelled" | "lost" | "shutdown";

/**
 * The part of a worker that runs jobs, shared by the local {@link Worker} and the remote one; each
 * keeps only how jobs arrive. It owns the running attempts by job id and their weight, runs each
 * handler with its context, timeout and abort, settles or abandons it once, heartbeats them all,
 * and on close lets them finish for the grace period before giving the rest back.
 *
 * Per job it makes one {@link JobRun} (with its context) and nothing else: the hooks are one
 * object shared by every run, and the AbortController is made only if the handler asks.
 * @internal
 */
export class RunCore {
  readonly #sink: RunSink;
  readonly #clock: Clock;
  readonly #jobs: ReadonlyMap<string, AnyJobDefinition>;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #events: EventEmitter<WorkerEvents>;
  readonly #onSettled: () => void;
  readonly #holdsBack: ((job: Job) => boolean) | undefined;
  readonly #onReported: () => void;
  /** By job id; a SlotMap, so finished runs do not outlive their scavenge (see SlotMap). */
  readonly #running = new SlotMap<string, JobRun>();
  #runningWeight = 0;
  /**
   * Jobs claimed ahead of free capacity (the worker's `prefetch`): leased and heartbeated like
   * running jobs, started in claim order as weight frees, given back unstarted on close.
   */
  readonly #waiting = new WaitLine();
  /** Outcome writes under way; the worker is idle only when none are. */
  #reports = 0;
  #drained: Array<() => void> = [];
  #reported: Array<() => void> = [];
  #state: WorkerState = "new";
  #closing: Promise<void> | null = null;
  /** Clock timers never hold the process open; a running worker does, like a server. */
  #keepAlive: NodeJS.Timeout | null = null;
  /** What every running job's context calls back into; one object, shared. */
  readonly #hooks: RunHooks;

  constructor(options: RunCoreOptions) {
    this.#sink = options.sink;
    this.#clock = options.clock;
    this.#jobs = options.jobs;
    this.#concurrency = options.concurrency;
    this.#leaseMs = options.leaseMs;
    this.#events = options.events;
    this.#onSettled = options.onSettled;
    this.#holdsBack = options.holdsBack;
    this.#onReported = options.onReported;
    const sink = this.#sink;
    this.#hooks = {
      heartbeat: async (run) => {
        if (run.settled) return false;
        const ok = await sink.heartbeat(run.job);
        if (!ok) this.#lost(run);
        return ok;
      },
      checkpoint: async (run, data) => (run.settled ? false : sink.checkpoint(run.job, data)),
      dependencies: (run) => sink.dependencies(run.job),
      logger: options.logger,
    };
  }

  get state(): WorkerState {
    return this.#state;
  }

  /** For the worker's start(): it runs once. */
  begin(): void {
    if (this.#state !== "new")
      throw new ErrandError("INVALID_STATE", `worker is ${this.#state}; start() runs once`);
    this.#state = "running";
    this.#keepAlive = setInterval(() => {}, 1 << 30);
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Their total weight. */
  get runningWeight(): number {
    return this.#runningWeight;
  }

  /** The weight of jobs running and of jobs claimed ahead, waiting for room. */
  get heldWeight(): number {
    return this.#runningWeight + this.#waiting.weight;
  }

  /** Jobs claimed ahead, waiting for room. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Nothing running or waiting, and no outcome write under way. */
  get idle(): boolean {
    return this.#running.size === 0 && this.#waiting.size === 0 && this.#reports === 0;
  }

  /**
   * The attempts running or waiting here, each as `attemptKey(id, attempt)`: a store never hands
   * an attempt out twice, but a RemoteWorker's server might, and one must not run twice.
   */
  heldAttempts(): Set<string> {
    const held = new Set<string>();
    for (const run of this.#running.values()) held.add(attemptKey(run.job.id, run.job.attempt));
    for (const { job } of this.#waiting.toArray()) held.add(attemptKey(job.id, job.attempt));
    return held;
  }

  /** Takes claimed jobs in claim order: each starts or waits, or goes straight back when closing. */
  take(jobs: readonly Job[]): void {
    for (const job of jobs) {
      if (this.#state === "running") this.start(job);
      else this.releaseUnstarted(job);
    }
  }

  /**
   * Takes a job handed to this worker: starts it when its weight fits and no job claimed before
   * it is waiting, and otherwise keeps it, in order, until it does.
   */
  start(job: Job): void {
    const weight = Math.min(job.weight, this.#concurrency);
    if (this.#waiting.size > 0 || this.#runningWeight + weight > this.#concurrency) {
      const leaseUntil = job.leaseExpiresAt?.getTime() ?? this.#clock.now() + this.#leaseMs;
      this.#waiting.push({ job, weight, leaseUntil });
      return;
    }
    this.#run(job, weight);
  }

  /**
   * Starts the waiting jobs that fit now, first claimed first. One whose lease may have run out
   * (no heartbeat reached the store in time) is given back instead: another worker may hold it
   * already, and a job is never started on a lease this worker cannot vouch for.
   */
  #startWaiting(): void {
    for (let next = this.#waiting.peek(); next && this.#state === "running"; next = this.#waiting.peek()) {
      if (this.#runningWeight + next.weight > this.#concurrency) break;
      this.#waiting.shift();
      if (next.leaseUntil <= this.#clock.now() || this.#holdsBack?.(next.job) === true) {
        this.releaseUnstarted(next.job);
      } else this.#run(next.job, next.weight);
    }
  }

  #run(job: Job, weight: number): void {
    const run = new JobRun(job, weight, this.#hooks);
    // An earlier attempt of this job still running here has lost its lease (the job was recovered
    // and handed out again): give it up, so it neither reports nor takes the new attempt's slot.
    const earlier = this.#running.get(job.id);
    if (earlier) {
      this.#abandonRun(earlier, "lost", new Error("lease lost: the job was taken over by a newer attempt"));
    }
    this.#running.set(job.id, run);
    this.#runningWeight += weight;
    this.#events.emit("active", job);
    void this.#execute(run);
  }

  /**
   * Gives back, unstarted, the waiting jobs `test` holds for (a paused queue's): pending again,
   * their attempt not spent.
   */
  giveBackWaiting(test: (job: Job) => boolean): void {
    const removed = this.#waiting.removeWhere(test);
    for (const { job } of removed) this.releaseUnstarted(job);
    // A heavy job at the head may have gone: what waited behind it may fit now.
    if (removed.length > 0) this.#afterRemoval();
  }

  /** Gives back a job handed over while closing; close() waits for it. */
  releaseUnstarted(job: Job): void {
    void this.#report(this.#sink.release(job), true);
  }

  async #execute(run: JobRun): Promise<void> {
    const { job } = run;
    const def = this.#jobs.get(job.type);
    if (!def) {
      this.#settle(run);
      await this.#fail(job, new ErrandError("UNKNOWN_JOB_TYPE", `no handler for job type "${job.type}"`), {
        retryable: true,
      });
      return;
    }
    if (job.timeoutMs !== null) {
      run.cancelTimeout = this.#clock.setTimer(job.timeoutMs, () =>
        this.#abandonRun(run, "timeout", new JobTimeoutError(job.timeoutMs!)),
      );
    }
    let result: unknown;
    try {
      result = await def.handler(job.payload as never, run.context);
    } catch (error) {
      if (run.settled) return;
      this.#settle(run);
      await this.#fail(job, error);
      return;
    }
    if (run.settled || run.aborted) return;
    this.#settle(run);
    if (result instanceof Snooze) {
      await this.#snooze(job, result.delayMs);
      return;
    }
    // Not awaited: this frame (the run, its job and context) ends here, and what waits for the
    // write keeps the job only when it will need it.
    this.#complete(job, result);
  }

  /**
   * Writes a completion. The job stays alive through the write only for a `completed` listener
   * or a sink that may refuse the result late: otherwise, with hundreds of short jobs in flight,
   * every job waiting on its write survived young-generation scavenges, and that survival is what
   * grew V8's new space and the worker's RSS (issue 16). A listener added while the write is
   * under way hears the jobs completed after it, not that one.
   */
  #complete(job: Job, result: unknown): void {
    this.#reports++;
    let keep = this.#sink.checksResultsAtOnce !== true || this.#events.listenerCount("completed") > 0;
    let write: Promise<boolean>;
    try {
      write = this.#sink.complete(job, result);
    } catch (error) {
      // A result refused when called: the job is needed to fail the attempt.
      write = Promise.reject(error);
      keep = true;
    }
    void this.#completed(write, keep ? job : null, result);
  }

  /** Waits for a completion's write; `job` only when the rest needs it (see #complete). */
  async #completed(write: Promise<boolean>, job: Job | null, result: unknown): Promise<void> {
    let ok: boolean;
    try {
      ok = await write;
    } catch (error) {
      if (job && error instanceof ErrandError && error.code === "INVALID_PAYLOAD") {
        // A result that cannot be stored (not JSON, too large) fails the attempt instead.
        await this.#fail(job, error, { retryable: false });
      }
      // Otherwise the write failed (the sink reported it), and the completion may or may not have
      // been written: the attempt is left as it is. If it was not written, the lease runs out and
      // the job runs again, as after a crash; it must not go to dead for a lost reply.
      return;
    } finally {
      this.#reportEnded();
    }
    if (ok && job && this.#events.listenerCount("completed") > 0) {
      const done: Job = { ...job, state: "completed", result, finishedAt: jobDate(this.#clock.now()) };
      this.#events.emit("completed", done, result);
    }
  }

  /** Records a snooze and re-emits it as the worker's `snoozed` event. */
  async #snooze(job: Job, delayMs: number): Promise<void> {
    this.#reports++;
    let ok = false;
    try {
      ok = await this.#sink.snooze(job, delayMs);
    } catch (error) {
      // The write failed (neither sink reports a snooze's fault itself, as they do a batched
      // completion's): said once here; as for a lost completion, the lease runs out and the job
      // runs again.
      this.#events.emit("error", error);
      return;
    } finally {
      this.#reportEnded();
    }
    if (ok && this.#events.listenerCount("snoozed") > 0) {
      const runAt = jobDate(snoozeUntil(this.#clock.now(), delayMs));
      this.#events.emit("snoozed", {
        ...job,
        state: "pending",
        runAt,
        snoozes: job.snoozes + 1,
        maxAttempts: job.maxAttempts + 1,
      });
    }
  }

  /** Records a failed attempt and re-emits the outcome as the worker's event. */
  async #fail(job: Job, error: unknown, options: FailAttemptOptions = {}): Promise<void> {
    this.#reports++;
    try {
      const out = await this.#sink.fail(job, error, options);
      if (out) {
        this.#events.emit("failed", out.job, out.error);
        this.#events.emit(out.job.state === "dead" ? "dead" : "retrying", out.job, out.error);
      }
    } catch {
      // The write failed (the sink reported it): the attempt is left as it is, and its lease runs
      // out and it is recovered, as after a crash.
    } finally {
      this.#reportEnded();
    }
  }

  /** Waits for a write, counted as under way; `reportFault`: the sink did not report it itself. */
  async #report(write: Promise<unknown>, reportFault: boolean): Promise<void> {
    this.#reports++;
    try {
      await write;
    } catch (error) {
      if (reportFault) this.#events.emit("error", error);
    } finally {
      this.#reportEnded();
    }
  }

  #reportEnded(): void {
    this.#reports--;
    if (this.#reports !== 0) return;
    if (this.#reported.length > 0) for (const resolve of this.#reported.splice(0)) resolve();
    if (this.#running.size === 0) this.#onReported();
  }

  /** Frees the job's slot and stops its timers; the outcome is decided from here on. */
  #settle(run: JobRun): void {
    if (run.settled) return;
    run.settled = true;
    run.cancelTimeout?.();
    if (this.#running.get(run.job.id) === run) this.#running.delete(run.job.id);
    this.#runningWeight -= run.weight;
    this.#startWaiting();
    if (this.#running.size === 0 && this.#drained.length > 0) {
      for (const resolve of this.#drained.splice(0)) resolve();
    }
    this.#onSettled();
  }

  /**
   * Gives up on the running attempt of a job: aborts its signal and frees its slot. A timeout
   * fails the attempt; a cancel or lost lease needs no report (the store already moved on).
   */
  abandon(id: string, why: AbandonReason, reason: Error): void {
    const run = this.#running.get(id);
    if (run) {
      this.#abandonRun(run, why, reason);
      return;
    }
    // Claimed ahead and not started: only a cancel reaches one (the store moved on already).
    const waiting = this.#waiting.remove(id);
    if (waiting && why === "cancelled") this.#events.emit("cancelled", waiting.job);
    if (waiting) this.#afterRemoval();
  }

  /**
   * Jobs left the wait line unstarted: start what fits now, and say room was freed (a worker
   * holding off its claims until then claims again).
   */
  #afterRemoval(): void {
    this.#startWaiting();
    this.#onSettled();
  }

  /** False when the run had already settled. */
  #abandonRun(run: JobRun, why: AbandonReason, reason: Error): boolean {
    if (run.settled) return false;
    run.abort(reason);
    this.#settle(run);
    if (why === "timeout") {
      void this.#fail(run.job, reason, { kind: "timeout" });
    } else if (why === "cancelled") {
      this.#events.emit("cancelled", run.job);
    }
    return true;
  }

  /** A heartbeat was refused: the job was cancelled or taken over. */
  #lost(run: JobRun): void {
    if (this.#abandonRun(run, "lost", new Error("lease lost: the job was cancelled or taken over"))) {
      this.#sink.lost?.(run.job);
    }
  }

  /**
   * Extends the lease of every running and waiting job in one call, and gives up those whose
   * lease is gone: a job claimed ahead holds its lease as honestly as a running one.
   */
  async heartbeatAll(): Promise<void> {
    const runs = this.#running.values().filter((r) => !r.settled);
    const waiting = this.#waiting.toArray();
    if (runs.length === 0 && waiting.length === 0) return;
    // The lease a heartbeat grants runs from when the store takes it, after this: a safe bound.
    const sent = this.#clock.now();
    let results: boolean[];
    try {
      results = await this.#sink.heartbeatMany([...runs.map((r) => r.job), ...waiting.map((w) => w.job)]);
    } catch (error) {
      this.#events.emit("error", error);
      return;
    }
    results.forEach((ok, i) => {
      if (i < runs.length) {
        if (!ok) this.#lost(runs[i]!);
        return;
      }
      const entry = waiting[i - runs.length]!;
      if (ok) entry.leaseUntil = sent + this.#leaseMs;
      // Refused while still waiting: out of the line; the store has moved on (a cancel elsewhere).
      else this.#waiting.remove(entry.job.id, entry);
    });
  }

  /**
   * The worker's close(): once (a second call gets the same promise, and `graceMs` is read only
   * by the first). Stops taking jobs, waits for the jobs still arriving, lets running jobs finish
   * until `graceMs` after the call, then aborts the rest and gives them back at once (at-most-once
   * jobs, already started, go to `dead`). Resolves when every outcome is written. Heartbeats are
   * the worker's to keep going meanwhile.
   */
  close(graceMs: () => number, steps: ShutdownSteps): Promise<void> {
    this.#closing ??= this.#close(graceMs(), steps);
    return this.#closing;
  }

  async #close(graceMs: number, steps: ShutdownSteps): Promise<void> {
    if (this.#state === "new") {
      this.#state = "closed";
      return;
    }
    this.#state = "closing";
    try {
      await this.#drain(graceMs, steps.stopTaking());
    } finally {
      await steps.stopped();
      if (this.#keepAlive) clearInterval(this.#keepAlive);
      this.#keepAlive = null;
      this.#state = "closed";
    }
  }

  async #drain(graceMs: number, arrivals: Promise<unknown> | null): Promise<void> {
    // The grace period runs from the call, on the worker's clock.
    let cancelGrace = () => {};
    const graceOver = new Promise<void>((resolve) => {
      cancelGrace = this.#clock.setTimer(graceMs, resolve);
    });
    try {
      // Jobs claimed ahead never started: back to pending at once, their attempt not spent.
      for (const { job } of this.#waiting.clear()) this.releaseUnstarted(job);
      // Jobs a take under way hands over now are given straight back: wait for it to end.
      await arrivals;
      if (this.#running.size > 0) {
        await Promise.race([new Promise<void>((resolve) => this.#drained.push(resolve)), graceOver]);
      }
    } finally {
      cancelGrace();
    }
    const left = this.#running.values();
    for (const run of left) this.#abandonRun(run, "shutdown", new Error("worker shut down"));
    for (const run of left) {
      void this.#report(
        run.job.delivery === "at_most_once"
          ? this.#sink.fail(
              run.job,
              new Error("worker shut down during an at-most-once job; it will not run again"),
              { retryable: false, kind: "shutdown" },
            )
          : this.#sink.release(run.job),
        run.job.delivery !== "at_most_once",
      );
    }
    while (this.#reports > 0) await new Promise<void>((resolve) => this.#reported.push(resolve));
    await this.#sink.flush?.();
  }
}
