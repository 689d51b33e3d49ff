import type { Clock } from "../clock.js";

/**
 * Runs a maintenance pass when one is due: at most once per `intervalMs` of the clock's time,
 * however often it is asked. Callers that ask while a pass runs wait for that pass rather than
 * start another, so what they do next (a claim) sees its effect.
 *
 * The lease API asks before each claim: a program that only leases and completes (no Worker, no
 * server) still gets expired leases back and sees jobs past `expiresAt` end `expired`, as users of
 * SQS, pg-boss or graphile-worker expect, and a producer that never leases pays nothing.
 * Standalone, so the pass can move to wherever maintenance lives.
 */
export class DuePass {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #pass: () => Promise<unknown>;
  readonly #onError: (error: unknown) => void;
  #lastAt = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | null = null;

  /**
   * @param pass the work; a fault goes to `onError`, never to the caller of {@link DuePass.run},
   * whose own work (a lease) should not fail for it.
   */
  constructor(
    clock: Clock,
    intervalMs: number,
    pass: () => Promise<unknown>,
    onError: (error: unknown) => void,
  ) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#pass = pass;
    this.#onError = onError;
  }

  /** Runs the pass when the last one began `intervalMs` ago or more; waits for one under way. */
  run(): Promise<void> {
    if (this.#running) return this.#running;
    const now = this.#clock.now();
    if (now - this.#lastAt < this.#intervalMs) return Promise.resolve();
    // Counted from the start, failed or not: a store that is down is not asked again at once.
    this.#lastAt = now;
    const running = this.#pass().then(
      () => {},
      (error: unknown) => this.#onError(error),
    );
    this.#running = running;
    void running.finally(() => {
      if (this.#running === running) this.#running = null;
    });
    return running;
  }

  /** The same pass ran by other means (an explicit sweep) at `at`: the next is due from there. */
  ran(at: number): void {
    if (at > this.#lastAt) this.#lastAt = at;
  }
}
