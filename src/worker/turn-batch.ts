/** The per-turn, one-write-at-a-time batching of the outcomes workers report. @module */
/** Outcomes that make a write of their own even while another is under way. */
export const FULL_BATCH = 64;

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Items of one kind gathered over one event-loop turn and written in one call; each caller gets
 * its own item's result. A fault rejects every item of the write and is reported once.
 *
 * One write at a time (group commit): what arrives while a write is under way waits for it and
 * goes in the next. An idle worker's outcome is written on the next turn, as before; a busy
 * worker whose jobs end at different moments no longer sends a small write every turn, its
 * batches grow with the write's round trip. On PostgreSQL, with handlers of 0–5 ms, that halved
 * the completion statements and cut the server's CPU per job by a sixth (bench/RESULTS.md,
 * session 14); a no-op drain, whose jobs all end in one turn, was already one write per claim.
 * A full batch ({@link FULL_BATCH}) goes at once, beside the write under way: holding more only
 * makes outcomes wait longer, and outcomes that wait survive V8's scavenges (on a prefetching
 * Redis drain, batches of 150 held behind each write grew the worker's RSS from 76–77 to 80–82 MB).
 * @internal
 */
export class TurnBatch<I, R> {
  #pending: Pending<I, R>[] = [];
  /** Writes under way: one, or more while full batches go beside it. */
  readonly #inFlight = new Set<Promise<void>>();
  #scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<R[]>,
    private readonly onError: (error: unknown) => void,
  ) {}

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#scheduled && (this.#inFlight.size === 0 || this.#pending.length >= FULL_BATCH))
        this.#schedule();
    });
  }

  /** Writes whatever is gathered; resolves when every item so far is written. */
  async flush(): Promise<void> {
    while (this.#pending.length > 0 || this.#inFlight.size > 0) {
      if (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
      else await this.#flush();
    }
  }

  #schedule(): void {
    this.#scheduled = true;
    setImmediate(() => void this.#flush());
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
        this.#inFlight.delete(write);
        if (this.#pending.length > 0 && !this.#scheduled) this.#schedule();
      });
    this.#inFlight.add(write);
    return write;
  }
}
