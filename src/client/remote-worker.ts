import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { type Clock, checkClock, systemClock } from "../clock.js";
import { defaultLogger } from "../default-logger.js";
import type { AnyJobDefinition } from "../define-job.js";
import { type Duration, toMs, toTimerMs } from "../duration.js";
import { emitIsolated } from "../emit-isolated.js";
import { ErrandError, type ErrandErrorCode, isNonRetryable } from "../errors.js";
import { type Job, type JobDependency, jobDate } from "../job.js";
import { describe, toJsonText } from "../validation.js";
import type { FailedAttempt } from "../worker/outcome-batcher.js";
import { attemptKey, type FailAttemptOptions, RunCore, type RunSink } from "../worker/run-core.js";
import {
  interval,
  MAX_LEASE_WAIT_MS,
  MAX_REMOTE_LEASE_MS,
  resolveRunnerOptions,
} from "../worker/runner-options.js";
import { TurnBatch } from "../worker/turn-batch.js";
import type { CloseOptions, WorkerEvents } from "../worker/worker.js";
import type { ErrandClient, ReportItem } from "./client.js";

/** One item's answer in `client.report()`. */
type ReportResult = Awaited<ReturnType<ErrandClient["report"]>>[number];

/**
 * Options for a {@link RemoteWorker}: the local {@link Worker}'s, less what the server does
 * (maintenance), plus how long a lease request waits. They are checked as a local worker's are,
 * when the worker is made, and within the server's bounds: a value the server would refuse is
 * refused here (`INVALID_OPTION`, `INVALID_DURATION`), not by every lease request.
 * @since 0.1.0
 */
export interface RemoteWorkerOptions {
  /** The job types this worker runs, as `defineJob` made them, each type once; it leases only these. */
  jobs: AnyJobDefinition[];
  /** Queues with weights, or names. @defaultValue every queue named by `jobs` */
  queues?: string[] | Record<string, number>;
  /** Total weight of jobs running at once. @defaultValue 10 */
  concurrency?: number;
  /**
   * Jobs to lease ahead of free capacity, 0 to 10,000, held in a local buffer as the local
   * {@link Worker}'s `prefetch` holds them (heartbeated, given back at close, never started on a
   * lease that may have run out, given back when its queue is paused: the server names the paused
   * queues in each heartbeat's answer). The worker leases again once half of it is free.
   * @defaultValue 0
   */
  prefetch?: number;
  /**
   * How long a leased job is held before another worker may take it: 100 ms to 1 day (the
   * server's bound, {@link MAX_REMOTE_LEASE_MS}).
   * @defaultValue 30_000
   */
  leaseMs?: Duration;
  /** How often running jobs' leases are extended, below `leaseMs`. @defaultValue a third of `leaseMs` */
  heartbeatMs?: Duration;
  /**
   * How long one lease request waits on the server for a job (long poll), 0 to 2 minutes (the
   * server's bound). A new job reaches an idle worker as soon as it is enqueued, whatever this is.
   * @defaultValue 30_000
   */
  waitMs?: Duration;
  /**
   * Wait after a failed lease request (server down) before the next, at least 1 ms; also the
   * longest wait between two sends of a report (see `reportRetryMs`). Lease requests failing in a
   * row wait twice as long each time, up to 30 s (or `retryDelayMs` if longer), each wait after the
   * second drawn between half and all of that (so workers that lost a server together do not
   * return together), so a worker whose token was revoked or whose server is down for long neither
   * hammers it nor logs an error every second; the first lease that succeeds resets the wait. A
   * failure with a `Retry-After` (429) waits that instead and is not counted. `close()` cuts
   * either wait short.
   * @defaultValue 1000
   */
  retryDelayMs?: Duration;
  /**
   * How long a report that failed on the way is sent again: a completion, failure, release or
   * snooze whose request met a connection fault (refused, reset, timed out: `UNAVAILABLE`) or a
   * 502, 503 or 504 answer (`STORE_ERROR`, `CLOSED`: a server restarting or draining), counted
   * from its first failure, at waits from 100 ms doubling up to `retryDelayMs`. A 429 answer
   * (`RATE_LIMITED`, a proxy throttling) is sent again too, no sooner than its `Retry-After`. Safe because
   * every report names its attempt: a resend of one that did land the first time changes nothing,
   * and is not an error (a completion the server finds already recorded with the same result is
   * answered as completed, and a failure recorded with the same error as failed, each with its
   * event once; a release or snooze already recorded is answered as stale, and the worker emits no
   * event for it). `close()` stops resending when its grace period ends.
   * A report still failing then is emitted as an `error` and left undone: the job's lease runs
   * out and it is recovered, as after a crash (run again, or `dead` if at most once). Heartbeats
   * and checkpoints are not resent (the next heartbeat is the retry; a checkpoint's fault goes to
   * its handler). 0 sends each report once.
   * @defaultValue `leaseMs`
   */
  reportRetryMs?: Duration;
  /** Names the holder in `job.workerId`: 1 to 255 characters. @defaultValue `remote:pid:random` */
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
  "prefetch",
  "leaseMs",
  "heartbeatMs",
  "waitMs",
  "retryDelayMs",
  "reportRetryMs",
  "workerId",
  "logger",
  "clock",
]);

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
  /** The client this worker leases through and reports to. */
  readonly client: ErrandClient;
  /** Names this worker in `job.workerId` of the jobs it holds: the `workerId` option, or generated. */
  readonly workerId: string;
  readonly #jobs: Map<string, AnyJobDefinition>;
  readonly #queues: string[] | Record<string, number>;
  readonly #concurrency: number;
  readonly #prefetch: number;
  /** Whether the server lets this worker's types be leased ahead (no rate rule among them). */
  #leasesAhead = true;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #waitMs: number;
  readonly #retryDelayMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  /** Runs the jobs this worker leases; the worker keeps only the leasing. */
  readonly #core: RunCore;
  /** Aborted by close(): ends a lease still waiting for its answer, and the wait between leases. */
  #leaseAbort = new AbortController();
  /** Aborted when close()'s grace period ends: no report is sent again after it. */
  readonly #closeOver = new AbortController();
  #stopCloseTimer: () => void = () => {};
  #loop: Promise<void> | null = null;
  #roomFreed: () => void = () => {};
  #stopHeartbeat: () => void = () => {};
  /** The heartbeat under way, if any: close() waits for it, so none is left in flight. */
  #beating: Promise<void> = Promise.resolve();
  /**
   * The attempts this worker took lately, the oldest first, at most {@link RECENT_ATTEMPTS}: one a
   * server names again after it ran here is not run again (errand's never does; a proxy replaying
   * an answer, or a server that lost the report, might).
   */
  readonly #taken = new Set<string>();

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
   * Checks every option now; nothing is leased until {@link RemoteWorker.start}.
   * @throws ErrandError `INVALID_OPTION` or `INVALID_DURATION`, naming the option (or the client,
   *   when it is not an {@link ErrandClient}).
   */
  constructor(client: ErrandClient, options: RemoteWorkerOptions) {
    super();
    checkClient(client);
    const settings = resolveRunnerOptions("RemoteWorker", options, KEYS, MAX_REMOTE_LEASE_MS);
    this.client = client;
    this.#jobs = settings.jobs;
    // Names alone when every weight is 1: what the server reads as equal weights anyway.
    this.#queues = settings.queues.every((q) => q.weight === 1)
      ? settings.queues.map((q) => q.name)
      : Object.fromEntries(settings.queues.map((q) => [q.name, q.weight]));
    this.#concurrency = settings.concurrency;
    this.#prefetch = settings.prefetch;
    this.#leaseMs = settings.leaseMs;
    this.#heartbeatMs = settings.heartbeatMs;
    this.#waitMs = toMs("waitMs", options.waitMs ?? 30_000, MAX_LEASE_WAIT_MS);
    this.#retryDelayMs = interval("retryDelayMs", options.retryDelayMs ?? 1000);
    const reportRetryMs = toTimerMs("reportRetryMs", options.reportRetryMs ?? this.#leaseMs);
    this.#clock = checkClock(options.clock) ?? systemClock;
    this.#logger = settings.logger;
    this.workerId = settings.workerId ?? `remote:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
    this.#core = new RunCore({
      sink: new RemoteSink(
        client,
        this.#leaseMs,
        this,
        (queues) => {
          // Jobs leased ahead and not started go back rather than start in a paused queue.
          const paused = new Set(queues);
          this.#core.giveBackWaiting((job) => paused.has(job.queue));
        },
        {
          clock: this.#clock,
          forMs: reportRetryMs,
          maxDelayMs: this.#retryDelayMs,
          until: this.#closeOver.signal,
        },
      ),
      clock: this.#clock,
      jobs: this.#jobs,
      concurrency: this.#concurrency,
      leaseMs: this.#leaseMs,
      events: this,
      logger: () => this.#log,
      onSettled: () => {
        const freed = this.#roomFreed;
        this.#roomFreed = () => {};
        freed();
      },
      onReported: () => {},
      // Told a type it runs is rate-ruled: nothing leased ahead starts (the server names no type).
      holdsBack: () => !this.#leasesAhead,
    });
    this.on("error", (error) => this.#log.error({ err: error }, "remote worker error"));
  }

  get #log(): Logger {
    return this.#logger ?? defaultLogger();
  }

  /** Jobs running now. */
  get running(): number {
    return this.#core.running;
  }

  /** Jobs claimed ahead of free capacity (`prefetch`), waiting here to start. */
  get prefetched(): number {
    return this.#core.waiting;
  }

  /** Begins leasing. Resolves at once; jobs start as the server hands them out. */
  async start(): Promise<void> {
    this.#core.begin();
    const beat = () => {
      this.#stopHeartbeat = this.#clock.setTimer(this.#heartbeatMs, () => {
        this.#beating = this.#core.heartbeatAll();
        beat();
      });
    };
    beat();
    this.#loop = this.#leaseLoop();
  }

  async #leaseLoop(): Promise<void> {
    /** Lease requests failed in a row (not counting a draining server's 503s). */
    let failures = 0;
    while (this.#core.state === "running") {
      // The server said a type leased is rate-ruled: lease no further ahead than a free slot.
      const prefetch = this.#leasesAhead ? this.#prefetch : 0;
      const free = this.#concurrency + prefetch - this.#core.heldWeight;
      // With a buffer, lease once half of it is free (fewer, larger leases), or at once when a
      // slot is idle with nothing buffered to fill it.
      const idleSlot = this.#core.waiting === 0 && this.#core.runningWeight < this.#concurrency;
      if (free <= 0 || (free < Math.ceil(prefetch / 2) && !idleSlot)) {
        await new Promise<void>((resolve) => {
          this.#roomFreed = resolve;
        });
        continue;
      }
      // What could not start at once: behind jobs waiting here, or past the free slots.
      const startable = this.#core.waiting > 0 ? 0 : Math.max(0, this.#concurrency - this.#core.heldWeight);
      // Told to lease nothing ahead, with nothing that could start: a lease would come back empty
      // at once, again and again. Wait for room (a run settles, or the wait line loses a job).
      if (!this.#leasesAhead && startable === 0) {
        await new Promise<void>((resolve) => {
          this.#roomFreed = resolve;
        });
        continue;
      }
      let jobs: Job[];
      try {
        const sentAt = this.#clock.now();
        const leased = await this.client.leaseAhead({
          types: [...this.#jobs.keys()],
          queues: this.#queues,
          limit: Math.min(free, MAX_LEASE_LIMIT),
          maxWeight: free,
          weightCap: this.#concurrency,
          ...(free > startable ? { ahead: free - startable } : {}),
          leaseMs: this.#leaseMs,
          waitMs: this.#core.running > 0 ? Math.min(this.#waitMs, this.#heartbeatMs) : this.#waitMs,
          workerId: this.workerId,
          signal: this.#leaseAbort.signal,
        });
        jobs = onOurClock(leased.jobs, sentAt, this.#clock.now(), this.#leaseMs);
        failures = 0;
        // Newly told a type it runs is rate-ruled: what it leased ahead goes back unstarted (the
        // server cannot say which type, and starting them later would break the limit).
        if (this.#leasesAhead && !leased.ahead) this.#core.giveBackWaiting(() => true);
        this.#leasesAhead = leased.ahead;
      } catch (error) {
        // Closing: the lease was cut while it waited, before any answer (the server gives back
        // what its claim took for a connection gone), or its answer failed to arrive whole, and
        // the jobs it carried, unknown here, come back when their leases run out.
        if (this.#core.state !== "running") break;
        // A server shutting down says when to come back: expected, so no error event, and the
        // wait is the server's (another server behind the same address may answer then).
        const after = shuttingDownRetryAfterMs(error);
        const told = retryAfterMs(error);
        if (after === undefined) {
          this.emit("error", error);
          // A 429's or a proxy's 503's Retry-After is its own wait, not a failure to back off from.
          if (told === undefined) failures++;
        }
        // close() cuts the wait short. Failures in a row back off, so a revoked token or a long
        // outage is not a request (and an error event) every retryDelayMs for ever; from the
        // second, by half to all of the doubled wait, so that workers a server lost together do
        // not come back together.
        const doubled = Math.min(
          this.#retryDelayMs * 2 ** Math.min(Math.max(failures - 1, 0), 30),
          Math.max(this.#retryDelayMs, LEASE_BACKOFF_MAX_MS),
        );
        const backoff = failures <= 1 ? doubled : doubled / 2 + (Math.random() * doubled) / 2;
        const wait = after ?? Math.max(backoff, Math.min(told ?? 0, 60_000));
        await pause(this.#clock, wait, this.#leaseAbort.signal);
        continue;
      }
      // An attempt already here, or run here lately, named again by a server (in this answer,
      // 6db417b, or an earlier one), is not taken twice: it would run twice.
      if (jobs.length > 0) {
        const held = this.#core.running + this.#core.waiting > 0 ? this.#core.heldAttempts() : null;
        jobs = jobs.filter((j) => {
          if (held?.has(attemptKey(j.id, j.attempt))) return false;
          // With the job's creation time: an id is free again once its job is pruned (or at
          // once with completed jobs not kept), and a new job of it starts again at attempt 1.
          // (A lease answer is held to the fields a worker runs a job by: createdAt may be absent.)
          const created = j.createdAt instanceof Date ? j.createdAt.getTime() : Number.NaN;
          const taken = `${attemptKey(j.id, j.attempt)}@${created}`;
          if (this.#taken.has(taken)) return false;
          this.#taken.add(taken);
          return true;
        });
        // A Set iterates in insertion order: the first are the oldest.
        for (const key of this.#taken) {
          if (this.#taken.size <= RECENT_ATTEMPTS) break;
          this.#taken.delete(key);
        }
      }
      // Leased while closing (close() does not cut an answer already arriving): given straight back.
      this.#core.take(jobs);
      if (jobs.length === 0 && this.#core.idle) this.emit("idle");
    }
  }

  /**
   * Stops leasing, lets running jobs finish for up to `graceMs`, then aborts the rest and releases
   * them to the server (at-most-once jobs go to `dead`). Resolves when every outcome is reported.
   *
   * A lease request still waiting is cut (the server gives back what it claimed for it); one whose
   * answer has begun is read whole and its jobs given back at once, their attempts unspent.
   * Reports that fail on the way are sent again (`reportRetryMs`) until the grace period ends; so
   * close resolves by `graceMs`, plus the requests then under way (each bounded by the client's
   * `timeoutMs`; a lease answer being read, by `timeoutMs` + `waitMs`). What is still unreported
   * then is emitted as an `error` and left to its lease (run again, or `dead` if at most once).
   */
  close(options: CloseOptions = {}): Promise<void> {
    return this.#core.close(
      () => {
        const graceMs = toMs("graceMs", options.graceMs ?? 10_000);
        if (graceMs === 0) this.#closeOver.abort();
        else if (this.#core.state === "running") {
          this.#stopCloseTimer = this.#clock.setTimer(graceMs, () => this.#closeOver.abort());
        }
        return graceMs;
      },
      {
        stopTaking: () => {
          this.#leaseAbort.abort(new Error("worker closing"));
          this.#roomFreed();
          // A lease under way gives its jobs straight back: the core waits for the loop to end.
          return this.#loop;
        },
        stopped: async () => {
          this.#stopHeartbeat();
          this.#stopCloseTimer();
          await this.#beating;
        },
      },
    );
  }
}

/** The most jobs one lease request asks for (the server's bound on `limit`). */
const MAX_LEASE_LIMIT = 1000;

/** The attempts a RemoteWorker remembers taking, to run none of them twice: ~400 KB (~1.2 MB with 255-character ids). */
const RECENT_ATTEMPTS = 4096;

/**
 * The wait a server that drains or closes asks of a lease (503 `UNAVAILABLE` with
 * `details.retryAfterMs`, sent as `Retry-After` too), within 1 ms to a minute; undefined for any
 * other failure.
 */
function shuttingDownRetryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ErrandError) || error.code !== "UNAVAILABLE") return undefined;
  const outer = error.details as { status?: unknown; details?: { retryAfterMs?: unknown } } | null;
  const after = outer?.status === 503 ? outer.details?.retryAfterMs : undefined;
  if (typeof after !== "number" || !Number.isFinite(after)) return undefined;
  return Math.min(Math.max(Math.ceil(after), 1), 60_000);
}

/**
 * A lease's jobs with `leaseExpiresAt` on this worker's clock, which decides when a job leased
 * ahead may no longer start. The server set it on its own clock, `leaseMs` after its claim, and
 * the claim happened between `sentAt` and `receivedAt` here: an expiry outside `[sentAt + leaseMs,
 * receivedAt + leaseMs]` says the clocks disagree, and is moved to the nearest end. With clocks
 * in step it is kept as it is; a server behind would otherwise have every job leased ahead given
 * back unstarted as expired, one ahead would have them started after their leases ran out.
 */
function onOurClock(jobs: Job[], sentAt: number, receivedAt: number, leaseMs: number): Job[] {
  const earliest = sentAt + leaseMs;
  const latest = receivedAt + leaseMs;
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i]!;
    const at = job.leaseExpiresAt?.getTime() ?? earliest;
    if (at < earliest || at > latest) {
      jobs[i] = { ...job, leaseExpiresAt: jobDate(at < earliest ? earliest : latest) };
    }
  }
  return jobs;
}

/**
 * The wait an answer asks for in `Retry-After` (a 429, a proxy's 503) or errand's
 * `details.retryAfterMs`, in ms; undefined when it names none.
 */
function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ErrandError)) return undefined;
  const outer = error.details as { retryAfterMs?: unknown; details?: { retryAfterMs?: unknown } } | null;
  const after = outer?.details?.retryAfterMs ?? outer?.retryAfterMs;
  return typeof after === "number" && Number.isFinite(after) && after >= 0 ? after : undefined;
}

/** The longest wait between failed lease requests in a row, unless `retryDelayMs` is longer. */
const LEASE_BACKOFF_MAX_MS = 30_000;

/** The first wait before a report is sent again; each next one doubles, up to `retryDelayMs`. */
const FIRST_RESEND_MS = 100;

/** What the server answers when it could not act now but may soon (its store, its shutdown). */
const TRANSIENT_CODES = new Set<string>(["UNAVAILABLE", "STORE_ERROR", "CLOSED", "RATE_LIMITED"]);

/**
 * Whether a report failed on the way rather than being refused: the server could not be reached or
 * its answer was lost or unreadable (the client's `UNAVAILABLE`), it answered 502, 503 or 504, or
 * something on the way throttled it (429 `RATE_LIMITED`). Such a report may or may not have
 * landed; sent again, its attempt number keeps it from landing twice.
 */
function isTransient(error: unknown): boolean {
  if (!(error instanceof ErrandError)) return false;
  if (TRANSIENT_CODES.has(error.code)) return true;
  const status = (error.details as { status?: unknown } | undefined)?.status;
  return status === 502 || status === 503 || status === 504;
}

/**
 * Waits `ms` on `clock`; resolves false at once when `signal` aborts first (the timer is dropped).
 */
function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const cut = () => {
      stop();
      resolve(false);
    };
    const stop = clock.setTimer(ms, () => {
      signal.removeEventListener("abort", cut);
      resolve(true);
    });
    signal.addEventListener("abort", cut, { once: true });
  });
}

/** How a {@link RemoteSink} sends a report again (`RemoteWorkerOptions.reportRetryMs`). */
interface ResendPolicy {
  clock: Clock;
  /** How long after its first failure a report is sent again; 0: never. */
  forMs: number;
  /** The longest wait between two sends. */
  maxDelayMs: number;
  /** Aborted when the worker's close grace period ends: nothing is sent again after it. */
  until: AbortSignal;
}

/**
 * Where a remote worker's runs write their outcomes: the server, completions of one event-loop
 * turn in one batch report (at concurrency 50, one round trip instead of fifty), one report at a
 * time (TurnBatch: what ends during a report goes in the next).
 */
class RemoteSink implements RunSink {
  /** Each completion's outcome: true, false for a stale attempt, or the error the server gave it. */
  readonly #completions: TurnBatch<{ job: Job; result: unknown }, boolean | ErrandError>;

  constructor(
    private readonly client: ErrandClient,
    private readonly leaseMs: number,
    private readonly events: EventEmitter<WorkerEvents>,
    /** Told the queues paused now, at each heartbeat. */
    private readonly onPaused: (queues: string[]) => void,
    private readonly resend: ResendPolicy,
  ) {
    this.#completions = new TurnBatch(
      (batch) => this.#reportCompletions(batch),
      // A failed report rejects each of its completions, and each is reported below.
      () => {},
    );
  }

  /**
   * One report of a turn's completions, sent again (`#resending`): whole when it fails on the way,
   * or the items the server answered with a transient code. A resent completion the server had
   * recorded is answered `ok` (it tells a repeat of the same result); one answered JOB_NOT_FOUND is
   * taken as stale, not as an error, as a single completion's is: on a resend, a queue that keeps no
   * completed jobs deleted it as it completed; on a first send, it was pruned while it ran.
   */
  async #reportCompletions(
    batch: Array<{ job: Job; result: unknown }>,
  ): Promise<Array<boolean | ErrandError>> {
    const out: Array<boolean | ErrandError> = new Array(batch.length);
    let left = batch.map((_, i) => i);
    try {
      await this.#resending(async () => {
        const results = await this.#reportSplitting(
          left.map((i) => {
            const c = batch[i]!;
            return { id: c.job.id, attempt: c.job.attempt, outcome: "complete", result: c.result };
          }),
        );
        const again: number[] = [];
        let fault: ErrandError | null = null;
        left.forEach((i, k) => {
          const r = results[k];
          const code = (r?.code ?? "INTERNAL") as ErrandErrorCode;
          if (r?.ok) out[i] = true;
          else if (code === "STALE_ATTEMPT" || code === "JOB_NOT_FOUND") out[i] = false;
          else {
            out[i] = new ErrandError(
              code,
              code === "INVALID_PAYLOAD"
                ? `complete ${batch[i]!.job.id}: its result is larger than the server (or a proxy before it) takes`
                : `complete ${batch[i]!.job.id} failed`,
            );
            if (TRANSIENT_CODES.has(code)) {
              again.push(i);
              fault = out[i] as ErrandError;
            }
          }
        });
        left = again;
        if (fault) throw fault;
      });
    } catch (error) {
      // Given up: a fault that was not transient (the report was refused whole), or resending ran
      // out of time. Each completion still unanswered fails with it; the rest keep their answers.
      if (!(error instanceof ErrandError)) throw error;
      for (const i of left) out[i] = error;
    }
    return out;
  }

  /**
   * `client.report(items)`, sent again in halves while the answer is 413 (`PAYLOAD_TOO_LARGE`): a
   * turn's completions together may pass a body limit (the server's `bodyLimit`, a proxy's) that
   * each fits. One alone still refused is answered `INVALID_PAYLOAD`, as a local worker answers a
   * result too large to store: the core fails its attempt, not retryable, rather than leave the job
   * to run again at every lease's end.
   */
  async #reportSplitting(items: ReportItem[]): Promise<ReportResult[]> {
    try {
      return await this.client.report(items);
    } catch (error) {
      if (!(error instanceof ErrandError) || error.code !== "PAYLOAD_TOO_LARGE") throw error;
      if (items.length === 1) return [{ id: items[0]!.id, ok: false, code: "INVALID_PAYLOAD" }];
      const half = Math.ceil(items.length / 2);
      const first = await this.#reportSplitting(items.slice(0, half));
      return first.concat(await this.#reportSplitting(items.slice(half)));
    }
  }

  /**
   * Runs `send` (told whether this is a resend), and again while it fails on the way
   * ({@link isTransient}): first after 100 ms, each wait twice the last up to `maxDelayMs`, until
   * `forMs` after the first failure, and never once the close grace period is over (the wait is
   * cut short then). Rejects with the last fault when it gives up.
   */
  async #resending<T>(send: (resent: boolean) => Promise<T>): Promise<T> {
    const { clock, forMs, maxDelayMs, until } = this.resend;
    let delay = Math.min(FIRST_RESEND_MS, maxDelayMs);
    let deadline = Number.NaN;
    for (let resent = false; ; resent = true) {
      try {
        return await send(resent);
      } catch (error) {
        if (!isTransient(error) || until.aborted) throw error;
        const now = clock.now();
        if (Number.isNaN(deadline)) deadline = now + forMs;
        // A 429's Retry-After is waited out (within the resend's time), not sent again sooner.
        const asked = (error as ErrandError).code === "RATE_LIMITED" ? (retryAfterMs(error) ?? 0) : 0;
        const wait = Math.min(Math.max(delay, asked), deadline - now);
        if (wait <= 0 || !(await pause(clock, wait, until))) throw error;
        delay = Math.min(delay * 2, maxDelayMs);
      }
    }
  }

  /**
   * Resolves false for a stale attempt; a fault is reported for each completion it fails.
   * @throws ErrandError `INVALID_PAYLOAD` at once for a result that is not JSON (as a local
   *   Worker's): checked here, it fails its own job only, not the turn's whole report.
   */
  complete(job: Job, result: unknown): Promise<boolean> {
    toJsonText("result", result === undefined ? null : result);
    return this.#completions
      .add({ job, result })
      .then((outcome) => {
        if (outcome instanceof ErrandError) throw outcome;
        return outcome;
      })
      .catch((error: unknown) => {
        this.events.emit("error", error);
        throw error;
      });
  }

  async fail(job: Job, error: unknown, options: FailAttemptOptions = {}): Promise<FailedAttempt> {
    try {
      const retryable = options.retryable ?? (isNonRetryable(error) ? false : undefined);
      // A resend of a failure that landed is answered as the first was (the server tells a repeat
      // of the same error); one the job has moved on from is stale: null, no event.
      const state = await this.#resending(() =>
        this.client.failWithState(job, error, retryable === false ? { retryable } : {}),
      );
      if (state === null) return null;
      return { job: { ...job, state, leaseExpiresAt: null, workerId: null }, error };
    } catch (e) {
      this.events.emit("error", e);
      throw e;
    }
  }

  heartbeat(job: Job): Promise<boolean> {
    return this.client.heartbeat(job, { leaseMs: this.leaseMs });
  }

  /**
   * One request per 1,000 jobs; an attempt the server says is no longer current is lost. A request
   * that fails rejects: the core reports it and keeps every job, without counting any lease as
   * extended (a job leased ahead is then not started past its lease). The queues paused now go to
   * `onPaused`.
   */
  async heartbeatMany(jobs: Job[]): Promise<boolean[]> {
    const { ok, pausedQueues } = await this.client.heartbeatMany(jobs, { leaseMs: this.leaseMs });
    if (pausedQueues.length > 0) this.onPaused(pausedQueues);
    return ok;
  }

  checkpoint(job: Job, data: unknown): Promise<boolean> {
    return this.client.checkpoint(job, data);
  }

  snooze(job: Job, delayMs: number): Promise<boolean> {
    return this.#resending(() => this.client.snooze(job, delayMs));
  }

  dependencies(job: Job): Promise<JobDependency[]> {
    return this.client.dependencies(job.id);
  }

  release(job: Job): Promise<boolean> {
    return this.#resending(() => this.client.release(job));
  }

  /** A cancel on the server shows up here as a refused heartbeat: say so if that is what it was. */
  lost(job: Job): void {
    void this.client
      .get(job.id)
      .then((current) => {
        if (current?.state === "cancelled") this.events.emit("cancelled", current);
      })
      .catch(() => {});
  }
}

/** The calls the worker makes: what it must find on its client, checked before anything starts. */
const CLIENT_CALLS = [
  "lease",
  "report",
  "failWithState",
  "heartbeat",
  "heartbeatMany",
  "checkpoint",
  "snooze",
  "dependencies",
  "release",
] as const;

/**
 * Refuses what is not a client (null, a URL string, options meant for `new ErrandClient`) with a
 * typed error when the worker is made, not a TypeError from its first lease. Checked by shape, as
 * `new Worker` checks its queue: a client from another copy of errand works alike.
 */
function checkClient(client: unknown): void {
  const c = client as Record<string, unknown> | null;
  if (typeof c !== "object" || c === null || CLIENT_CALLS.some((call) => typeof c[call] !== "function")) {
    throw new ErrandError(
      "INVALID_OPTION",
      `RemoteWorker: client must be an ErrandClient (new ErrandClient({ url, token })), got ${describe(client)}`,
    );
  }
}
