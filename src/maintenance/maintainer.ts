import type { Queue } from "../queue.js";
import { type Repeating, repeat } from "./repeat.js";

/** Options for a {@link Maintainer}. */
export interface MaintainerOptions {
  /** How often lease recovery, expiry and cron run (one {@link Queue.sweep}). @defaultValue 1000 */
  sweepIntervalMs?: number;
  /** How often finished jobs past retention are pruned ({@link Queue.prune}). @defaultValue 60_000 */
  pruneIntervalMs?: number;
  /** Told of a pass that failed (the store was down); the next pass runs on time all the same. */
  onError: (error: unknown) => void;
}

/**
 * The background services that keep a store healthy, on the queue's clock: lease recovery,
 * expiry and cron firing (together, one {@link Queue.sweep} per `sweepIntervalMs`) and retention
 * pruning (one {@link Queue.prune} per `pruneIntervalMs`). Each service is compare-and-set in the
 * store, so any number of Maintainers (one per Worker and per server) may run against one store:
 * a recovered lease, an expired job, a cron tick or a pruned job is acted on exactly once.
 *
 * River's `internal/maintenance` is the model: small services with `start()`/`stop()`, stopped
 * once and twice alike.
 * @internal
 */
export class Maintainer {
  readonly #queue: Queue;
  readonly #sweepMs: number;
  readonly #pruneMs: number;
  readonly #onError: (error: unknown) => void;
  #services: Repeating[] = [];
  #started = false;
  #stopped = false;
  /** The first sweep, run by start(); stop() waits for it as for any pass under way. */
  #first: Promise<void> | null = null;

  constructor(queue: Queue, options: MaintainerOptions) {
    this.#queue = queue;
    this.#sweepMs = options.sweepIntervalMs ?? 1000;
    this.#pruneMs = options.pruneIntervalMs ?? 60_000;
    this.#onError = options.onError;
  }

  /**
   * Runs a first sweep (so a restarted process recovers at once), then repeats both services.
   * After {@link Maintainer.stop} it does nothing.
   */
  async start(): Promise<void> {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const { clock } = this.#queue;
    this.#services = [
      repeat(clock, this.#sweepMs, () => this.#queue.sweep(), this.#onError),
      repeat(clock, this.#pruneMs, () => this.#queue.prune(), this.#onError),
    ];
    this.#first = this.#queue.sweep().then(
      () => {},
      (error: unknown) => this.#onError(error),
    );
    await this.#first;
  }

  /**
   * Stops the services and waits for a pass under way, the first sweep of a start() not awaited
   * too: once it resolves, nothing here touches the store, which may be closed next. Safe to call
   * twice, and before start().
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    const services = this.#services;
    this.#services = [];
    await Promise.all([...services.map((s) => s.stop()), this.#first]);
  }
}
