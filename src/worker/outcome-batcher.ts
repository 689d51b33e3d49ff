import type { Job, JobDependency } from "../job.js";
import type { Queue } from "../queue.js";
import type { Completion } from "../store/instrument.js";
import type { FailAttemptOptions, RunSink } from "./run-core.js";

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Items of one kind gathered over one event-loop turn and written in one call; each caller gets
 * its own item's result. A fault rejects every item of the write and is reported once.
 */
class TurnBatch<I, R> {
  #pending: Pending<I, R>[] = [];
  #inFlight: Promise<void> | null = null;
  #scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<R[]>,
    private readonly onError: (error: unknown) => void,
  ) {}

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  /** Writes whatever is gathered; resolves when every item so far is written. */
  async flush(): Promise<void> {
    while (this.#pending.length > 0 || this.#inFlight) {
      if (this.#inFlight) await this.#inFlight;
      else await this.#flush();
    }
  }

  #flush(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return Promise.resolve();
    const write = this.write(batch.map((p) => p.item))
      .then(
        (results) => {
          for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
        },
        (error) => {
          this.onError(error);
          for (const p of batch) p.reject(error);
        },
      )
      .finally(() => {
        if (this.#inFlight === write) this.#inFlight = null;
      });
    this.#inFlight = write;
    return write;
  }
}

/** What a failure came to: the job as it now is and the error, or null when the attempt was stale. */
export type FailedAttempt = { job: Job; error: unknown } | null;

/**
 * Gathers the outcomes of one event-loop turn into one `completeMany` and one `failMany` call
 * (graphile-worker's batched completions): at 50 jobs in flight that is one write instead of
 * fifty, whether the jobs succeed or fail. It is the local worker's {@link RunSink}: the rest of
 * what a run writes goes straight to the Queue.
 */
export class OutcomeBatcher implements RunSink {
  /** `complete` refuses a result that cannot be stored when called, never later. */
  readonly checksResultsAtOnce = true;
  readonly #completions: TurnBatch<Completion, boolean>;
  readonly #failures: TurnBatch<
    { job: Job; error: unknown; retryable?: boolean; kind?: string },
    FailedAttempt
  >;

  /**
   * @param leaseMs - what a heartbeat extends a lease to.
   * @param onError - told once per batched write that failed; the callers' promises reject as well.
   */
  constructor(
    private readonly queue: Queue,
    private readonly leaseMs: number,
    onError: (error: unknown) => void,
  ) {
    this.#completions = new TurnBatch((items) => queue.attempts.completeMany(items), onError);
    this.#failures = new TurnBatch((items) => queue.attempts.failMany(items), onError);
  }

  /**
   * Resolves `true` when the attempt is now completed, `false` when it was stale.
   * @throws ErrandError `INVALID_PAYLOAD` at once when the result is not JSON-serialisable.
   */
  complete(job: Job, result: unknown): Promise<boolean> {
    const text = this.queue.attempts.resultText(result);
    // The job goes along only for a `completed` listener: otherwise the batch keeps its id and
    // type alone, and the job (a kilobyte or two with its dates) is garbage while the write is
    // under way, rather than surviving a young-generation scavenge (issue 16).
    return this.#completions.add(
      this.queue.listenerCount("completed") > 0
        ? { id: job.id, attempt: job.attempt, result: text, value: result, job }
        : { id: job.id, attempt: job.attempt, result: text, value: result, type: job.type },
    );
  }

  /** One failed attempt (`Attempts.failMany`), written with the other failures of this turn. */
  fail(job: Job, error: unknown, options: FailAttemptOptions = {}): Promise<FailedAttempt> {
    return this.#failures.add({ job, error, ...options });
  }

  heartbeat(job: Job): Promise<boolean> {
    return this.queue.heartbeat(job, { leaseMs: this.leaseMs });
  }

  heartbeatMany(jobs: Job[]): Promise<boolean[]> {
    return this.queue.attempts.heartbeatMany({
      leaseMs: this.leaseMs,
      items: jobs.map((job) => ({ id: job.id, attempt: job.attempt })),
    });
  }

  checkpoint(job: Job, data: unknown): Promise<boolean> {
    return this.queue.checkpoint(job, data);
  }

  snooze(job: Job, delayMs: number): Promise<boolean> {
    return this.queue.attempts.snooze(job, delayMs);
  }

  dependencies(job: Job): Promise<JobDependency[]> {
    return this.queue.dependencies(job.id);
  }

  release(job: Job): Promise<boolean> {
    return this.queue.release(job);
  }

  /** Writes whatever is gathered; resolves when every outcome so far is written. */
  async flush(): Promise<void> {
    await Promise.all([this.#completions.flush(), this.#failures.flush()]);
  }
}
