/**
 * Wake-ups, kept apart from the Store's operations (Oban's Notifier beside its Engine): each store
 * has a notifier of its own kind (an emitter and a doorbell file for SQLite, LISTEN/NOTIFY for
 * PostgreSQL, pub/sub for Redis), and its `onWake`/`wake` hand over to it.
 * @module
 */

/**
 * Tells claimers that jobs may have become ready. Best effort by design: a lost wake-up costs a
 * worker one poll interval, never a job, so a notifier swallows its own faults.
 * @internal
 */
export interface Notifier {
  /** Calls `listener` on every wake-up this process hears; returns the unsubscribe function. */
  onWake(listener: () => void): () => void;
  /** Wakes claimers in this process and, where the notifier reaches them, in every other. */
  wake(): void;
  /** Stops listening and forgets every listener; safe to call twice. */
  close(): Promise<void>;
}

/**
 * The listeners of one store in this process. Each notifier keeps one, so subscribing and
 * delivering work the same way whatever carries the wake-up between processes.
 * @internal
 */
export class WakeListeners {
  readonly #listeners = new Set<() => void>();

  /** Adds `listener`; returns the function that removes it. */
  add(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls every listener, in the order they were added. */
  emit(): void {
    for (const listener of this.#listeners) listener();
  }

  clear(): void {
    this.#listeners.clear();
  }
}
