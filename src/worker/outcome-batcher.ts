import type { Job, JobDependency } from "../job.js";
import type { Queue } from "../queue.js";
import type { Completion } from "../store/instrument.js";
import type { FailAttemptOptions, RunSink } from "./run-core.js";
import { TurnBatch } from "./turn-batch.js";

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
