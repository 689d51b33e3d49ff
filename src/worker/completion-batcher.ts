import type { Job } from "../job.js";
import type { Queue } from "../queue.js";
import { toJsonText } from "../validation.js";

interface PendingCompletion {
  id: string;
  attempt: number;
  result: string;
  resolve: (ok: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the completions of one event-loop turn into one `completeMany` call (graphile-worker's
 * batched completions): at 50 jobs in flight that is one write instead of fifty.
 */
export class CompletionBatcher {
  #pending: PendingCompletion[] = [];
  #inFlight: Promise<void> | null = null;
  #scheduled = false;

  constructor(
    private readonly queue: Queue,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * Resolves `true` when the attempt is now completed, `false` when it was stale.
   * @throws ErrandError `INVALID_PAYLOAD` at once when the result is not JSON-serialisable.
   */
  complete(job: Job, result: unknown): Promise<boolean> {
    const text = toJsonText("result", result === undefined ? null : result, this.queue.maxPayloadBytes);
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ id: job.id, attempt: job.attempt, result: text, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  /** Writes whatever is gathered; resolves when every completion so far is written. */
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
    const write = this.queue.store
      .completeMany({ now: this.queue.clock.now(), items: batch })
      .then(
        (results) => {
          for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i] === true);
        },
        (error) => {
          this.onError(error);
          for (const c of batch) c.reject(error);
        },
      )
      .finally(() => {
        if (this.#inFlight === write) this.#inFlight = null;
      });
    this.#inFlight = write;
    return write;
  }
}
