import type { Clock } from "./clock.js";

/** How a {@link SharedRead} spaces its reads. */
export interface ReadSpacing {
  /** Whose time the reads are timed and spaced in. */
  clock: Clock;
  /**
   * After a read that took `d` ms, the next begins no sooner than `factor × d` ms after it ended,
   * so reads keep the reader busy at most `1 / (1 + factor)` of the time.
   */
  factor: number;
  /** The longest a read waits for its turn, whatever the last one took. */
  maxWaitMs: number;
  /** A read shorter than this earns the next no wait: only costly reads are spaced. */
  fromMs: number;
}

/**
 * One read for many callers, never two at once: a caller who asks while the read runs shares the
 * next one, which starts when the running one ends. So every answer was read after it was asked
 * for (a caller sees what was written before it asked), and any number of callers (dashboard tabs
 * polling, probes, scrapes) keep at most one read running and one waiting.
 *
 * With `spacing`, a read also waits after a costly one in proportion to how long that one took,
 * and callers who ask while it waits share it: a read that costs the store little (most) earns
 * no wait, and one that costs it much (counting a huge backlog) cannot keep it busy however many
 * callers poll.
 */
export class SharedRead<T> {
  readonly #read: () => Promise<T>;
  readonly #spacing: ReadSpacing | null;
  #running: Promise<T> | null = null;
  /**
   * Starts the running read now, while it waits for its turn (its timer cancelled); null once it
   * reads. While it is set, a caller may share the running read.
   */
  #hurry: (() => void) | null = null;
  /** Closing: no read waits for its turn any more. */
  #hurried = false;
  #next: Promise<T> | null = null;
  /** When the next read may begin, and the wait that gave it (the most it may still be). */
  #readyAt = 0;
  #gap = 0;

  constructor(read: () => Promise<T>, spacing: ReadSpacing | null = null) {
    this.#read = read;
    this.#spacing = spacing;
  }

  /** The next read's answer (or its error), shared with everyone who asked meanwhile. */
  get(): Promise<T> {
    if (this.#next !== null) return this.#next;
    if (this.#running === null) return this.#start();
    if (this.#hurry !== null) return this.#running;
    const next = this.#running.then(settled, settled).then(() => {
      this.#next = null;
      return this.#start();
    });
    this.#next = next;
    return next;
  }

  #start(): Promise<T> {
    const wait = this.#wait();
    const turn =
      wait > 0
        ? new Promise<void>((resolve) => {
            const cancel = this.#spacing!.clock.setTimer(wait, resolve);
            this.#hurry = () => {
              cancel();
              resolve();
            };
          })
        : Promise.resolve();
    // A read that throws before its first await rejects its callers like one that fails later.
    const running = turn.then(() => {
      this.#hurry = null;
      return this.#timed();
    });
    this.#running = running;
    const done = () => {
      if (this.#running === running) this.#running = null;
    };
    running.then(done, done);
    return running;
  }

  /**
   * Lets a read waiting for its turn begin now, so its callers (an HTTP request of a closing
   * server among them) get their answer or its error at once; with `forever` (a closing queue),
   * every later read too.
   */
  hurry(forever = false): void {
    if (forever) this.#hurried = true;
    this.#hurry?.();
  }

  async #timed(): Promise<T> {
    const spacing = this.#spacing;
    if (spacing === null) return this.#read();
    const started = spacing.clock.now();
    try {
      return await this.#read();
    } finally {
      const ended = spacing.clock.now();
      const took = Math.max(0, ended - started);
      this.#gap = took < spacing.fromMs ? 0 : Math.min(spacing.maxWaitMs, took * spacing.factor);
      this.#readyAt = ended + this.#gap;
    }
  }

  /** How long the next read waits: never more than the last read earned, if the clock went back. */
  #wait(): number {
    if (this.#spacing === null || this.#gap === 0 || this.#hurried) return 0;
    return Math.min(this.#gap, Math.max(0, this.#readyAt - this.#spacing.clock.now()));
  }
}

function settled(): void {}
