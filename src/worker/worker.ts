import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { defaultLogger } from "../default-logger.js";
import type { AnyJobDefinition } from "../define-job.js";
import { type Duration, MAX_TIMER_MS, toTimerMs } from "../duration.js";
import { emitIsolated } from "../emit-isolated.js";
import type { Job } from "../job.js";
import { Maintainer } from "../maintenance/maintainer.js";
import { type Repeating, repeat } from "../maintenance/repeat.js";
import { defaultWorkerId, type Queue } from "../queue.js";
import { checkQueueArgument } from "../queue-checks.js";
import type { QueueWeight } from "../store/store.js";
import { checkFlagOption, checkInt, MAX_COUNT } from "../validation.js";
import { OutcomeBatcher } from "./outcome-batcher.js";
import { RunCore } from "./run-core.js";
import { interval, resolveRunnerOptions } from "./runner-options.js";

/**
 * Options for a {@link Worker}. Every duration here becomes a timer, so each is at most
 * {@link MAX_TIMER_MS} (about 24.8 days); longer is refused (`INVALID_DURATION`).
 * @since 0.1.0
 */
export interface WorkerOptions {
  /** The job types this worker runs, as `defineJob` made them, each type once; it claims only these. */
  jobs: AnyJobDefinition[];
  /**
   * Queues to take from, with weights: `{ critical: 6, default: 1 }` takes about six critical
   * jobs for each default one while both have work, and all of either when the other is empty.
   * @defaultValue every queue named by `jobs` (as `queue` or `retryQueue`), weight 1
   */
  queues?: string[] | Record<string, number>;
  /**
   * Total weight of jobs running at once (a job of weight 3 takes 3), 1 to {@link MAX_COUNT}.
   * @defaultValue 10
   */
  concurrency?: number;
  /**
   * Claim more when the running weight falls to this, so claims come in batches rather than one
   * per finished job. A wake-up (a new job) claims whenever there is any room.
   * @defaultValue half of `concurrency`
   */
  minConcurrency?: number;
  /**
   * Jobs to claim ahead of free capacity, 0 to 10,000, kept in a local buffer and started in claim
   * order as running jobs finish: fewer, larger claims (a drain of no-op jobs on PostgreSQL at
   * `concurrency: 50` ran ~1.5× faster with `prefetch: 450`; see bench/RESULTS.md).
   * With `prefetch`, the worker claims again when the weight it holds (running and buffered)
   * falls to `minConcurrency` plus half of `prefetch`; a wake-up (a new job) claims at once only
   * when a slot is idle with nothing buffered for it, and otherwise waits for that mark.
   *
   * A buffered job is claimed: its lease is held and heartbeated like a running job's, so no
   * other worker takes it while this one lives; close() gives buffered jobs back at once without
   * spending their attempt; after a crash their leases run out and they are recovered like
   * running jobs, the expired lease counted as their attempt (the store cannot tell they never
   * started), and an at-most-once job goes to `dead` unrun, as it would if the crash came between
   * its claim and its handler. The cost is order: a job enqueued after a claim, even of
   * higher priority, waits behind the jobs already buffered, and buffered jobs count against
   * caps and key concurrency while they wait.
   *
   * A worker whose types include one with a `rateLimit` or `keyRateLimit` does not claim ahead
   * while it does: the limit counts a start when a job is claimed, and jobs claimed a window
   * apart and started together from the buffer would break it; jobs buffered before their type
   * gained such a rule are given back unstarted. Run rate-limited types on a worker of their own
   * to keep prefetch for the rest.
   * @defaultValue 0
   */
  prefetch?: number;
  /**
   * How long a claimed job is leased before another worker may take it.
   * @remarks Longer leases ride out GC pauses but delay crash recovery; heartbeats extend them.
   * @defaultValue 30_000
   */
  leaseMs?: Duration;
  /** How often running jobs' leases are extended. @defaultValue a third of `leaseMs` */
  heartbeatMs?: Duration;
  /**
   * Fallback poll interval: wake-ups are pushed by the store, polling finds delayed jobs
   * coming due and covers lost wake-ups.
   * @defaultValue 1000
   */
  pollIntervalMs?: Duration;
  /**
   * Run maintenance in this worker: lease recovery, expiry and cron every `sweepIntervalMs`,
   * retention pruning every `pruneIntervalMs`. Safe to run in every worker (all compare-and-set).
   * @defaultValue true
   */
  maintenance?: boolean;
  /** How often this worker sweeps (lease recovery, expiry, cron), with `maintenance`. @defaultValue 1000 */
  sweepIntervalMs?: Duration;
  /** How often this worker prunes jobs past retention, with `maintenance`. @defaultValue 60_000 */
  pruneIntervalMs?: Duration;
  /**
   * Names the holder in `job.workerId`: 1 to 255 characters, without U+0000 or lone surrogates.
   * @defaultValue `host:pid:random`
   */
  workerId?: string;
  /**
   * Where the worker logs its faults. Any pino-compatible logger: callable `error`, `warn`,
   * `info`, `debug` and `child`; anything else is refused when the worker is made.
   * @defaultValue pino at level "warn"
   */
  logger?: Logger;
}

/** Options for {@link Worker.close}. */
export interface CloseOptions {
  /**
   * How long running jobs may finish. Jobs still running then have their signal aborted and are
   * released back to pending at once (at-most-once jobs go to `dead`).
   * @defaultValue 10_000
   */
  graceMs?: Duration;
}

/**
 * Events a {@link Worker} (or a `RemoteWorker`) emits about the jobs it runs.
 *
 * Each listener is called on its own: a listener that throws, or returns a promise that rejects,
 * does not keep the listeners after it from hearing the event and does not disturb the job (it
 * runs, and its outcome is written, as if no one listened). Its fault is emitted as `error`, which
 * the worker logs.
 */
export interface WorkerEvents {
  /** This worker started a job's handler (a job claimed ahead starts later than its claim). */
  active: [job: Job];
  /** A job this worker ran completed, with what its handler returned. */
  completed: [job: Job, result: unknown];
  /**
   * An attempt this worker ran failed (its handler threw or timed out, say). `retrying` or `dead`
   * follows with the same arguments.
   */
  failed: [job: Job, error: unknown];
  /** After `failed`: the job is pending again at `job.runAt`, after its backoff. */
  retrying: [job: Job, error: unknown];
  /** After `failed`: the job is `dead` and will not run again. */
  dead: [job: Job, error: unknown];
  /**
   * A job this worker was running, or had claimed ahead, was cancelled through the worker's own
   * Queue; a running one's signal aborts (at once, during close()'s grace period too). A cancel
   * made elsewhere (another process, the server) reaches the worker at its next heartbeat, which
   * aborts the signal as for a lost lease, without this event: listen on that Queue, or the
   * server's, for every cancel.
   */
  cancelled: [job: Job];
  /** The handler snoozed the job: pending again at `job.runAt`, no attempt spent. */
  snoozed: [job: Job];
  /**
   * A fault the worker survived: a store error during claim, heartbeat or sweep, or the fault of a
   * listener of another event. The worker logs each (its `logger`) besides emitting it.
   */
  error: [error: unknown];
  /** Nothing running and the last claim came back empty. */
  idle: [];
}

export { MAX_PREFETCH } from "./runner-options.js";

const WORKER_KEYS = new Set([
  "jobs",
  "queues",
  "concurrency",
  "minConcurrency",
  "prefetch",
  "leaseMs",
  "heartbeatMs",
  "pollIntervalMs",
  "maintenance",
  "sweepIntervalMs",
  "pruneIntervalMs",
  "workerId",
  "logger",
]);

/**
 * Runs jobs: claims in batches up to its free capacity, runs each handler with a signal, a
 * heartbeat and a checkpoint, reports outcomes (completions batched into one write), and shuts
 * down gracefully.
 *
 * States: `new` → `start()` → `running` → `close()` → `closing` (no new claims; waits up to
 * `graceMs`) → `closed`.
 * @example
 * ```ts
 * const worker = new Worker(queue, { jobs: [sendEmail], queues: { critical: 6, default: 1 }, concurrency: 50 });
 * worker.on("failed", (job, error) => console.error(job.id, error));
 * await worker.start();
 * process.on("SIGTERM", () => worker.close({ graceMs: 10_000 }));
 * ```
 * @since 0.1.0
 */
export class Worker extends EventEmitter<WorkerEvents> {
  /** The Queue this worker claims from and reports to. */
  readonly queue: Queue;
  /** Names this worker in `job.workerId` of the jobs it holds: the `workerId` option, or generated. */
  readonly workerId: string;
  readonly #jobs: Map<string, AnyJobDefinition>;
  readonly #types: string[];
  readonly #queues: QueueWeight[];
  readonly #concurrency: number;
  readonly #minConcurrency: number;
  readonly #prefetch: number;
  /** Claim again (with a backlog) when the held weight falls to this. */
  readonly #lowWater: number;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #pollMs: number;
  readonly #maintenance: boolean;
  readonly #sweepMs: number;
  readonly #pruneMs: number;
  readonly #logger: Logger | undefined;
  #childLogger: Logger | undefined;
  /** Runs the jobs this worker claims; the worker keeps only the claiming. */
  readonly #core: RunCore;
  #claiming = false;
  #claimAgain = false;
  #backlog = false;
  /** Polls and heartbeats while running. */
  #timers: Repeating[] = [];
  #maintainer: Maintainer | null = null;
  #unsubscribe: (() => void) | null = null;
  /** A claim held back by a rate limit: when its window has room again, and the timer for it. */
  #held: { at: number; cancel: () => void } | null = null;
  /** Settles when the claim loop under way, if any, has ended; close() waits for it. */
  #filling: Promise<void> | null = null;
  readonly #onCancelled = (job: Job) => this.#core.abandon(job.id, "cancelled", new Error("job cancelled"));
  readonly #onPaused = (queue: string) => this.#core.giveBackWaiting((job) => job.queue === queue);

  /**
   * Emits as `EventEmitter` does, except that each listener runs on its own: one that throws, or
   * returns a promise that rejects, neither stops the listeners after it nor reaches the job it
   * heard about (the job runs and its outcome is written all the same). Its fault goes to this
   * worker's `error` event (which the worker logs). `error` itself is emitted as `EventEmitter`
   * does.
   */
  override emit<K extends keyof WorkerEvents>(event: K, ...args: WorkerEvents[K]): boolean {
    return event === "error"
      ? super.emit("error", ...(args as WorkerEvents["error"]))
      : emitIsolated(this, event, args);
  }

  /**
   * Checks every option now and registers `options.jobs` with the queue; nothing is claimed until
   * {@link Worker.start}.
   * @throws ErrandError `INVALID_OPTION` or `INVALID_DURATION`, naming the option.
   */
  constructor(queue: Queue, options: WorkerOptions) {
    super();
    this.queue = checkQueueArgument("Worker", queue);
    const settings = resolveRunnerOptions("Worker", options, WORKER_KEYS, MAX_TIMER_MS);
    this.#jobs = settings.jobs;
    this.#types = [...this.#jobs.keys()];
    this.#queues = settings.queues;
    this.#concurrency = settings.concurrency;
    this.#minConcurrency = checkInt(
      "minConcurrency",
      options.minConcurrency ?? Math.floor(this.#concurrency / 2),
      0,
      this.#concurrency - 1,
    );
    this.#prefetch = settings.prefetch;
    this.#lowWater = this.#minConcurrency + Math.floor(this.#prefetch / 2);
    this.#leaseMs = settings.leaseMs;
    this.#heartbeatMs = settings.heartbeatMs;
    this.#pollMs = interval("pollIntervalMs", options.pollIntervalMs ?? 1000);
    this.#maintenance = checkFlagOption("maintenance", options.maintenance, true);
    this.#sweepMs = interval("sweepIntervalMs", options.sweepIntervalMs ?? 1000);
    this.#pruneMs = interval("pruneIntervalMs", options.pruneIntervalMs ?? 60_000);
    this.workerId = settings.workerId ?? `${defaultWorkerId()}:${Math.random().toString(36).slice(2, 6)}`;
    this.#logger = settings.logger;
    this.#core = new RunCore({
      sink: new OutcomeBatcher(queue, this.#leaseMs, (error) => this.#error(error)),
      clock: queue.clock,
      jobs: this.#jobs,
      concurrency: this.#concurrency,
      leaseMs: this.#leaseMs,
      events: this,
      logger: () => this.#log,
      onSettled: () => {
        if (
          this.#core.state === "running" &&
          (this.#backlog || this.#claimAgain) &&
          this.#core.heldWeight <= this.#lowWaterNow()
        ) {
          void this.#fill();
        }
      },
      // An idle worker looks again after an outcome is written, since a retry may be ready now.
      onReported: () => this.#wake(),
      // A type that gained a rate rule after its jobs were claimed ahead: they go back unstarted.
      ...(this.#prefetch > 0 ? { holdsBack: (job: Job) => this.queue.attempts.rateRuledType(job.type) } : {}),
    });
    queue.register(...this.#jobs.values());
    // An unhandled "error" event would crash the process; errors are logged instead.
    this.on("error", (error) => this.#log.error({ err: error }, "worker error"));
  }

  /** The worker's logger, made on first use: most workers never log, and pino costs ~9 MB to load. */
  get #log(): Logger {
    this.#childLogger ??= (this.#logger ?? defaultLogger()).child({ workerId: this.workerId });
    return this.#childLogger;
  }

  /** Jobs running now. */
  get running(): number {
    return this.#core.running;
  }

  /** Jobs claimed ahead of free capacity (`prefetch`), waiting here to start. */
  get prefetched(): number {
    return this.#core.waiting;
  }

  /** Begins claiming. Resolves once the first claim has been made. */
  async start(): Promise<void> {
    this.#core.begin();
    this.#unsubscribe = this.queue.onWake(() => this.#wake());
    this.queue.on("cancelled", this.#onCancelled);
    this.queue.on("paused", this.#onPaused);
    const { clock } = this.queue;
    const onError = (error: unknown) => this.#error(error);
    this.#timers = [
      repeat(clock, this.#pollMs, () => this.#wake(), onError),
      repeat(clock, this.#heartbeatMs, () => this.#beat(), onError),
    ];
    if (this.#maintenance) {
      this.#maintainer = new Maintainer(this.queue, {
        sweepIntervalMs: this.#sweepMs,
        pruneIntervalMs: this.#pruneMs,
        onError,
      });
      await this.#maintainer.start();
    }
    await this.#fill();
    // A wake-up during the maintainer's start may have begun the first claim: that one, then.
    await this.#filling;
  }

  /**
   * A heartbeat: every lease held is extended and, with jobs waiting in the prefetch buffer, those
   * of a queue paused since (in any process) are given back rather than started later.
   */
  async #beat(): Promise<void> {
    // Asked beside the heartbeat, not after it; a fault is the worker's error, like any beat's.
    const paused =
      this.#core.waiting > 0
        ? this.queue.pausedQueues().catch((error: unknown) => {
            this.#error(error);
            return [];
          })
        : null;
    await this.#core.heartbeatAll();
    this.#giveBackRateRuled();
    if (paused === null) return;
    const names = new Set(await paused);
    if (names.size > 0) this.#core.giveBackWaiting((job) => names.has(job.queue));
  }

  #wake(): void {
    if (this.#core.state !== "running") return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    if (this.#wantsJobs()) void this.#fill();
  }

  /**
   * Whether a claim now is worth its round trip: a slot is idle with nothing buffered to fill it,
   * or what the worker holds has fallen to its low-water mark. (Without `prefetch`: a slot is
   * free.) A wake-up while the buffer is fuller waits for that mark, so a stream of enqueues does
   * not become a stream of one-job claims.
   */
  #wantsJobs(): boolean {
    const core = this.#core;
    return (
      (core.waiting === 0 && core.runningWeight < this.#concurrency) || core.heldWeight <= this.#lowWaterNow()
    );
  }

  /**
   * The prefetch a claim may use now: none while a type this worker runs has a rate limit or a
   * per-key rate limit (set in code, or by a server at any time). Its limit counts a start at
   * the claim; jobs claimed a window apart and held in the buffer would start together.
   */
  #prefetchNow(): number {
    return this.#prefetch > 0 && this.queue.attempts.rateRuled(this.#types) ? 0 : this.#prefetch;
  }

  /**
   * Gives back, unstarted, the buffered jobs of a type that gained a rate rule after they were
   * claimed (a server's `PUT /v1/types`): started later, they would break it.
   */
  #giveBackRateRuled(): void {
    if (this.#core.waiting === 0 || !this.queue.attempts.rateRuled(this.#types)) return;
    this.#core.giveBackWaiting((job) => this.queue.attempts.rateRuledType(job.type));
  }

  /** Claim again when the weight held falls to this ({@link WorkerOptions.prefetch}). */
  #lowWaterNow(): number {
    return this.#prefetchNow() === this.#prefetch ? this.#lowWater : this.#minConcurrency;
  }

  async #fill(): Promise<void> {
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = true;
    let filled = () => {};
    this.#filling = new Promise<void>((resolve) => {
      filled = resolve;
    });
    /** A claim sent while the one awaited was under way (see below). */
    let ahead: Claim | null = null;
    try {
      /** The last claim filled its chunk with room left: claim again rather than wait. */
      let more = false;
      const { claimChunk, prefetchChunk, claimAhead: pipelined } = this.queue.store.capabilities;
      const prefetch = this.#prefetchNow();
      // Claiming ahead, the worker holds its buffer's jobs anyway: claim them in larger chunks.
      const chunk = prefetch > 0 ? Math.max(claimChunk, Math.min(prefetchChunk, prefetch)) : claimChunk;
      do {
        // With jobs running, let the ones finishing this turn settle first: the claim then asks
        // for all the room they free, in one round trip, instead of a trickle of small claims.
        // (An idle worker claims at once: that is the wake-up latency.) A claim sent ahead is
        // under way already: nothing to wait for.
        if (ahead === null && this.#core.heldWeight > 0) {
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        // A full chunk keeps filling; anything else waits for room worth a claim (a wake-up's
        // claimAgain stays set, and the low-water refill takes it up).
        if (ahead === null && !more && !this.#wantsJobs()) break;
        this.#claimAgain = false;
        const room = this.#concurrency + prefetch - this.#core.heldWeight;
        let claim: Claim;
        if (ahead !== null) {
          claim = ahead;
          ahead = null;
        } else {
          if (room <= 0 || this.#core.state !== "running") break;
          // Pipelined (below): this claim then leaves a chunk's weight for the next.
          claim = this.#claim(
            Math.min(room, chunk),
            pipelined && more && room >= 2 * chunk ? chunk : room,
            room,
          );
        }
        // While a full chunk is under way with room for another beyond it, the next claim goes
        // now, not once this one has answered and its jobs started: the store has the next claim
        // in hand while this process takes the last one's jobs, rather than idling a round trip
        // per chunk. Each such claim reserves a chunk's weight, so what is held and claimed stays
        // within concurrency + prefetch; jobs heavier than 1 fill a chunk by weight first, which
        // ends the run of full chunks and with it the pipelining.
        const after = room - claim.maxWeight;
        if (pipelined && more && this.#core.state === "running" && after >= chunk) {
          ahead = this.#claim(chunk, chunk, after);
        }
        const jobs = await claim.jobs;
        if (jobs === null) break;
        this.#backlog = jobs.length > 0;
        more = jobs.length === claim.limit && claim.limit < claim.room;
        this.#core.take(jobs);
        // Not idle if a wake-up came during the claim (an outcome just written may have made a
        // retry ready): with a networked store the claim can answer before that write committed.
        if (jobs.length === 0 && ahead === null && !this.#claimAgain && this.#core.idle) {
          this.emit("idle");
        }
      } while (
        ahead !== null ||
        this.#claimAgain ||
        more ||
        (this.#backlog && this.#core.heldWeight <= this.#lowWaterNow())
      );
    } finally {
      // A claim sent ahead and not awaited (the one before it failed): its jobs start, or go back
      // when the worker is closing.
      if (ahead !== null) {
        const jobs = await ahead.jobs;
        if (jobs !== null) this.#core.take(jobs);
      }
      this.#claiming = false;
      this.#filling = null;
      filled();
    }
  }

  /**
   * Sends one claim of up to `limit` jobs within `maxWeight`, with `room` the weight the worker
   * could take when it was sent (a full chunk below that calls for more). Its jobs are null when
   * it failed (the fault goes to the worker's error event), so a claim sent ahead never rejects
   * unheard.
   */
  #claim(limit: number, maxWeight: number, room: number): Claim {
    const held = { until: null as number | null };
    const jobs = this.queue.attempts
      .claim({
        workerId: this.workerId,
        queues: this.#queues,
        types: this.#types,
        limit,
        maxWeight,
        weightCap: this.#concurrency,
        leaseMs: this.#leaseMs,
        ...this.queue.attempts.claimRules(this.#types),
        held,
      })
      .then(
        (claimed) => {
          if (held.until !== null) this.#wakeAt(held.until);
          return claimed;
        },
        (error: unknown) => {
          this.#error(error);
          return null;
        },
      );
    return { jobs, limit, maxWeight, room };
  }

  /** Claims again at `at` (a rate limit's window opens), unless a sooner such wake-up is set. */
  #wakeAt(at: number): void {
    if (this.#held && this.#held.at <= at) return;
    this.#held?.cancel();
    const cancel = this.queue.clock.setTimer(Math.max(0, at - this.queue.clock.now()), () => {
      this.#held = null;
      this.#wake();
    });
    this.#held = { at, cancel };
  }

  #error(error: unknown): void {
    this.emit("error", error);
  }

  /**
   * Stops claiming, lets running jobs finish for up to `graceMs`, then aborts the rest and
   * releases them back to pending at once (at-most-once jobs, already started, go to `dead`).
   * A job cancelled through this worker's Queue during the grace period is aborted at once, as
   * before close (`cancelled` event). Resolves when every outcome is written and any maintenance
   * pass under way (the first sweep of a `start()` not awaited too) has ended, so the store may be
   * closed next. Calling it again returns the same promise.
   */
  close(options: CloseOptions = {}): Promise<void> {
    let stopping: Promise<unknown> = Promise.resolve();
    let graceBeat: Repeating | null = null;
    return this.#core.close(() => toTimerMs("graceMs", options.graceMs ?? 10_000), {
      stopTaking: () => {
        // Polls, heartbeats and maintenance stop now; a pass under way is waited for at the end,
        // since the caller may close the store next (and the grace-period heartbeats start at once).
        stopping = Promise.all([...this.#timers, this.#maintainer].map((t) => t?.stop()));
        this.#timers = [];
        this.#held?.cancel();
        this.#held = null;
        this.#unsubscribe?.();
        // The cancel listener stays until every run has settled (stopped(), below): a job
        // cancelled through this Queue during the grace period is aborted at once, as any other.
        this.queue.off("paused", this.#onPaused);
        // Jobs keep their leases while they finish (on the queue's clock, like every worker timer).
        graceBeat = repeat(
          this.queue.clock,
          this.#heartbeatMs,
          () => this.#core.heartbeatAll(),
          (error) => this.#error(error),
        );
        // A claim under way gives its jobs straight back: the core waits for it.
        return this.#filling;
      },
      stopped: async () => {
        this.queue.off("cancelled", this.#onCancelled);
        await graceBeat?.stop();
        await stopping;
      },
    });
  }
}

/** A claim sent by {@link Worker}: its jobs to come and what it was sent with. */
interface Claim {
  jobs: Promise<Job[] | null>;
  limit: number;
  maxWeight: number;
  room: number;
}
