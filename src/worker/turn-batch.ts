/** The per-turn, one-write-at-a-time batching of the outcomes workers report. @module */
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
 * @internal
 */
export class TurnBatch<I, R> {
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
      if (!this.#scheduled && !this.#inFlight) this.#schedule();
    });
  }

  /** Writes whatever is gathered; resolves when every item so far is written. */
  async flush(): Promise<void> {
    while (this.#pending.length > 0 || this.#inFlight) {
      if (this.#inFlight) await this.#inFlight;
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
        if (this.#inFlight === write) this.#inFlight = null;
        if (this.#pending.length > 0 && !this.#scheduled) this.#schedule();
      });
    this.#inFlight = write;
    return write;
  }
}
