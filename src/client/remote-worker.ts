import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { type Clock, systemClock } from "../clock.js";
import { defaultLogger } from "../default-logger.js";
import type { AnyJobDefinition, JobContext } from "../define-job.js";
import { toMs } from "../duration.js";
import { ErrandError, type ErrandErrorCode, isNonRetryable, JobTimeoutError } from "../errors.js";
import type { Job } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import { checkLogger } from "../logger.js";
import { SlotMap } from "../slot-map.js";
import type { CloseOptions, WorkerEvents } from "../worker/worker.js";
import type { ErrandClient } from "./client.js";

/**
 * Options for a {@link RemoteWorker}: the local {@link Worker}'s, less what the server does
 * (maintenance), plus how long a lease request waits.
 * @since 0.1.0
 */
export interface RemoteWorkerOptions {
  /** The job types this worker runs; it leases only these. */
  jobs: AnyJobDefinition[];
  /** Queues with weights, or names. @defaultValue every queue named by `jobs` */
  queues?: string[] | Record<string, number>;
  /** Total weight of jobs running at once. @defaultValue 10 */
  concurrency?: number;
  /** @defaultValue 30_000 */
  leaseMs?: number;
  /** How often running jobs' leases are extended. @defaultValue a third of `leaseMs` */
  heartbeatMs?: number;
  /**
   * How long one lease request waits on the server for a job (long poll). A new job reaches an
   * idle worker as soon as it is enqueued, whatever this is.
   * @defaultValue 30_000
   */
  waitMs?: number;
  /** Wait after a failed lease request (server down) before the next. @defaultValue 1000 */
  retryDelayMs?: number;
  /** @defaultValue `remote:host:pid:random` */
  workerId?: string;
  /**
   * Where the worker logs its faults. Any pino-compatible logger: callable `error`, `warn`,
   * `info`, `debug` and `child`; anything else is refused when the worker is made.
   * @defaultValue pino at level "warn"
   */
  logger?: Logger;
  /** Timers (heartbeats, timeouts, grace). @defaultValue the system clock */
  clock?: Clock;
}

const KEYS = new Set([
  "jobs",
  "queues",
  "concurrency",
  "leaseMs",
  "heartbeatMs",
  "waitMs",
  "retryDelayMs",
  "workerId",
  "logger",
  "clock",
]);

interface Run {
  job: Job;
  weight: number;
  controller: AbortController;
  settled: boolean;
  cancelTimeout?: () => void;
}

/**
 * A {@link Worker} whose store is an errand server: the same job definitions, concurrency by
 * weight, weighted queues, automatic heartbeats, events and graceful close, over long-poll leases.
 * Moving a worker out of process changes one line:
 * ```ts
 * const worker = new RemoteWorker(new ErrandClient({ url, token }), { jobs: [sendEmail], concurrency: 50 });
 * await worker.start();
 * ```
 * A job cancelled on the server aborts its handler's signal at the next heartbeat.
 * @since 0.1.0
 */
export class RemoteWorker extends EventEmitter<WorkerEvents> {
  readonly client: ErrandClient;
  readonly workerId: string;
  readonly #jobs = new Map<string, AnyJobDefinition>();
  readonly #queues: string[] | Record<string, number>;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #waitMs: number;
  readonly #retryDelayMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  /** By job id; a SlotMap, so finished runs do not outlive their scavenge (see SlotMap). */
  readonly #running = new SlotMap<string, Run>();
  readonly #reports = new Set<Promise<void>>();
  #runningWeight = 0;
  #state: "new" | "running" | "closing" | "closed" = "new";
  #leaseAbort = new AbortController();
  #loop: Promise<void> | null = null;
  #roomFreed: () => void = () => {};
  #stopHeartbeat: () => void = () => {};
  #closePromise: Promise<void> | null = null;
  #keepAlive: NodeJS.Timeout | null = null;

  constructor(client: ErrandClient, options: RemoteWorkerOptions) {
    super();
    checkKnownKeys("RemoteWorker", options, KEYS);
    if (!Array.isArray(options.jobs) || options.jobs.length === 0) {
      throw new ErrandError("INVALID_OPTION", "RemoteWorker: jobs must list at least one job definition");
    }
    this.client = client;
    for (const def of options.jobs) this.#jobs.set(def.type, def);
    this.#queues = options.queues ?? [...new Set(options.jobs.map((d) => d.queue))];
    this.#concurrency = positive("concurrency", options.concurrency ?? 10);
    this.#leaseMs = positive("leaseMs", options.leaseMs ?? 30_000);
    this.#heartbeatMs = positive("heartbeatMs", options.heartbeatMs ?? Math.floor(this.#leaseMs / 3));
    this.#waitMs = options.waitMs ?? 30_000;
    this.#retryDelayMs = options.retryDelayMs ?? 1000;
    this.#clock = options.clock ?? systemClock;
    this.#logger = checkLogger("RemoteWorker: logger", options.logger);
    this.workerId = options.workerId ?? `remote:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
    this.on("error", (error) => this.#log.error({ err: error }, "remote worker error"));
  }

  get #log(): Logger {
    return this.#logger ?? defaultLogger();
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Begins leasing. Resolves at once; jobs start as the server hands them out. */
  async start(): Promise<void> {
    if (this.#state !== "new") {
      throw new ErrandError("INVALID_STATE", `worker is ${this.#state}; start() runs once`);
    }
    this.#state = "running";
    this.#keepAlive = setInterval(() => {}, 1 << 30);
    const beat = () => {
      this.#stopHeartbeat = this.#clock.setTimer(this.#heartbeatMs, () => {
        void this.#heartbeatAll();
        beat();
      });
    };
    beat();
    this.#loop = this.#leaseLoop();
  }

  async #leaseLoop(): Promise<void> {
    while (this.#state === "running") {
      const free = this.#concurrency - this.#runningWeight;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.#roomFreed = resolve;
        });
        continue;
      }
      let jobs: Job[];
      try {
        jobs = await this.client.lease({
          types: [...this.#jobs.keys()],
          queues: this.#queues,
          limit: free,
          maxWeight: free,
          weightCap: this.#concurrency,
          leaseMs: this.#leaseMs,
          waitMs: this.#running.size > 0 ? Math.min(this.#waitMs, this.#heartbeatMs) : this.#waitMs,
          workerId: this.workerId,
          signal: this.#leaseAbort.signal,
        });
      } catch (error) {
        if (this.#state !== "running") break;
        this.emit("error", error);
        await new Promise<void>((resolve) => this.#clock.setTimer(this.#retryDelayMs, resolve));
        continue;
      }
      for (const job of jobs) this.#start(job);
      if (jobs.length === 0 && this.#running.size === 0 && this.#reports.size === 0) this.emit("idle");
    }
  }

  #start(job: Job): void {
    if (this.#state !== "running") {
      void this.#track(this.client.release(job).then(() => {}));
      return;
    }
    const weight = Math.min(job.weight, this.#concurrency);
    const run: Run = { job, weight, controller: new AbortController(), settled: false };
    this.#running.set(job.id, run);
    this.#runningWeight += weight;
    this.emit("active", job);
    void this.#execute(run);
  }

  async #execute(run: Run): Promise<void> {
    const { job } = run;
    const def = this.#jobs.get(job.type)!;
    if (job.timeoutMs !== null) {
      run.cancelTimeout = this.#clock.setTimer(job.timeoutMs, () => {
        const error = new JobTimeoutError(job.timeoutMs!);
        if (this.#abandon(run, error)) void this.#track(this.#fail(job, error));
      });
    }
    const base = this.#log;
    const ctx: JobContext = {
      job,
      attempt: job.attempt,
      signal: run.controller.signal,
      heartbeat: async () => {
        if (run.settled) return false;
        const ok = await this.client.heartbeat(job, { leaseMs: this.#leaseMs });
        if (!ok) this.#lost(run);
        return ok;
      },
      checkpoint: async (data) => (run.settled ? false : this.client.checkpoint(job, data)),
      get log() {
        return base.child({ jobId: job.id, type: job.type, attempt: job.attempt });
      },
    };
    let result: unknown;
    try {
      result = await def.handler(job.payload, ctx);
    } catch (error) {
      if (run.settled) return;
      this.#settle(run);
      await this.#track(this.#fail(job, error));
      return;
    }
    if (run.settled) return;
    this.#settle(run);
    await this.#track(
      (async () => {
        const ok = await this.#completeBatched(job, result);
        if (ok) {
          this.emit(
            "completed",
            { ...job, state: "completed", result, finishedAt: new Date(this.#clock.now()) },
            result,
          );
        }
      })(),
    );
  }

  #completions: Array<{
    job: Job;
    result: unknown;
    resolve: (ok: boolean) => void;
    reject: (error: unknown) => void;
  }> = [];

  /**
   * Completes through the batch report endpoint: the completions of one event-loop turn go in one
   * request (at concurrency 50, one round trip instead of fifty). Resolves false for a stale attempt.
   */
  #completeBatched(job: Job, result: unknown): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (this.#completions.push({ job, result, resolve, reject }) > 1) return;
      setImmediate(() => {
        const batch = this.#completions;
        this.#completions = [];
        this.client
          .report(
            batch.map((c) => ({
              id: c.job.id,
              attempt: c.job.attempt,
              outcome: "complete",
              result: c.result,
            })),
          )
          .then(
            (results) =>
              batch.forEach((c, i) => {
                const r = results[i];
                if (r?.ok) c.resolve(true);
                else if (r?.code === "STALE_ATTEMPT") c.resolve(false);
                else
                  c.reject(
                    new ErrandError(
                      (r?.code ?? "INTERNAL") as ErrandErrorCode,
                      `complete ${c.job.id} failed`,
                    ),
                  );
              }),
            (error) => {
              for (const c of batch) c.reject(error);
            },
          );
      });
    });
  }

  async #fail(job: Job, error: unknown): Promise<void> {
    const state = await this.client.failWithState(
      job,
      error,
      isNonRetryable(error) ? { retryable: false } : {},
    );
    if (state === null) return;
    const failed: Job = { ...job, state, leaseExpiresAt: null, workerId: null };
    this.emit("failed", failed, error);
    this.emit(state === "dead" ? "dead" : "retrying", failed, error);
  }

  /** Runs an outcome report, turning its failure into an `error` event; close() waits for it. */
  #track(p: Promise<void>): Promise<void> {
    const tracked = p.catch((error) => {
      this.emit("error", error);
    });
    this.#reports.add(tracked);
    void tracked.finally(() => this.#reports.delete(tracked));
    return tracked;
  }

  #settle(run: Run): void {
    if (run.settled) return;
    run.settled = true;
    run.cancelTimeout?.();
    if (this.#running.get(run.job.id) === run) this.#running.delete(run.job.id);
    this.#runningWeight -= run.weight;
    const freed = this.#roomFreed;
    this.#roomFreed = () => {};
    freed();
    if (this.#running.size === 0) this.#drained?.();
  }

  /** Aborts a run's signal and frees its slot; false when it had already settled. */
  #abandon(run: Run, reason: Error): boolean {
    if (run.settled) return false;
    run.controller.abort(reason);
    this.#settle(run);
    return true;
  }

  /** The server refused a heartbeat: the job was cancelled or taken over. */
  #lost(run: Run): void {
    if (this.#abandon(run, new Error("lease lost: the job was cancelled or taken over"))) {
      void this.client
        .get(run.job.id)
        .then((job) => {
          if (job?.state === "cancelled") this.emit("cancelled", job);
        })
        .catch(() => {});
    }
  }

  async #heartbeatAll(): Promise<void> {
    const runs = this.#running.values().filter((r) => !r.settled);
    await Promise.all(
      runs.map(async (run) => {
        try {
          if (!(await this.client.heartbeat(run.job, { leaseMs: this.#leaseMs }))) this.#lost(run);
        } catch (error) {
          if (error instanceof ErrandError && error.code === "JOB_NOT_FOUND") this.#lost(run);
          else this.emit("error", error);
        }
      }),
    );
  }

  #drained: (() => void) | null = null;

  /**
   * Stops leasing, lets running jobs finish for up to `graceMs`, then aborts the rest and releases
   * them to the server (at-most-once jobs go to `dead`). Resolves when every outcome is reported.
   */
  close(options: CloseOptions = {}): Promise<void> {
    this.#closePromise ??= this.#close(toMs("graceMs", options.graceMs ?? 10_000));
    return this.#closePromise;
  }

  async #close(graceMs: number): Promise<void> {
    if (this.#state === "new") {
      this.#state = "closed";
      return;
    }
    this.#state = "closing";
    this.#leaseAbort.abort(new Error("worker closing"));
    this.#roomFreed();
    // The grace period runs from the call, on the worker's clock.
    let cancelGrace = () => {};
    const graceOver = new Promise<void>((resolve) => {
      cancelGrace = this.#clock.setTimer(graceMs, resolve);
    });
    await this.#loop;
    try {
      if (this.#running.size > 0) {
        await Promise.race([
          new Promise<void>((resolve) => {
            this.#drained = resolve;
          }),
          graceOver,
        ]);
      }
      cancelGrace();
      for (const run of this.#running.values()) {
        if (!this.#abandon(run, new Error("worker shut down"))) continue;
        void this.#track(
          run.job.delivery === "at_most_once"
            ? this.client
                .fail(run.job, new Error("worker shut down during an at-most-once job"), { retryable: false })
                .then(() => {})
            : this.client.release(run.job).then(() => {}),
        );
      }
      while (this.#reports.size > 0) await Promise.all([...this.#reports]);
    } finally {
      this.#stopHeartbeat();
      if (this.#keepAlive) clearInterval(this.#keepAlive);
      this.#state = "closed";
    }
  }
}

function positive(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ErrandError("INVALID_OPTION", `${field} must be an integer ≥ 1, got ${String(value)}`);
  }
  return value;
}
