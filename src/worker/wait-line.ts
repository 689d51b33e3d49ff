import type { Job } from "../job.js";

/** A job claimed ahead of free capacity, waiting in a {@link WaitLine}. @internal */
export interface Waiting {
  readonly job: Job;
  /** The weight it takes when it runs (its own, at most the worker's concurrency). */
  readonly weight: number;
  /** When its lease runs out, as this worker last knew it (the claim, then each heartbeat). */
  leaseUntil: number;
}

/**
 * The jobs a worker claimed ahead of free capacity (its `prefetch`), first claimed first. A queue
 * on an array with a moving head, compacted as the head moves, so taking the next is O(1); taking
 * one out by id (a cancel) is O(n), and rare. @internal
 */
export class WaitLine {
  #items: Array<Waiting | undefined> = [];
  #head = 0;
  #weight = 0;

  /** Jobs waiting. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Their total weight. */
  get weight(): number {
    return this.#weight;
  }

  push(item: Waiting): void {
    this.#items.push(item);
    this.#weight += item.weight;
  }

  /** The next to start, if any. */
  peek(): Waiting | undefined {
    return this.#items[this.#head];
  }

  /** Takes the next out of the line. */
  shift(): Waiting | undefined {
    const item = this.#items[this.#head];
    if (!item) return undefined;
    this.#items[this.#head++] = undefined;
    this.#weight -= item.weight;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /**
   * Takes the job with this id out of the line; null when it is not waiting (or, given `entry`,
   * when what waits under that id is another entry: a newer claim of the job).
   */
  remove(id: string, entry?: Waiting): Waiting | null {
    let at = this.#head;
    while (at < this.#items.length && this.#items[at]!.job.id !== id) at++;
    if (at === this.#items.length || (entry && this.#items[at] !== entry)) return null;
    if (at === this.#head) return this.shift()!;
    const [item] = this.#items.splice(at, 1) as [Waiting];
    this.#weight -= item.weight;
    return item;
  }

  /** Takes every entry `test` holds for out of the line, in order. */
  removeWhere(test: (job: Job) => boolean): Waiting[] {
    const kept: Array<Waiting | undefined> = [];
    const removed: Waiting[] = [];
    for (let i = this.#head; i < this.#items.length; i++) {
      const item = this.#items[i]!;
      if (test(item.job)) {
        removed.push(item);
        this.#weight -= item.weight;
      } else {
        kept.push(item);
      }
    }
    if (removed.length > 0) {
      this.#items = kept;
      this.#head = 0;
    }
    return removed;
  }

  /** Every waiting entry, first claimed first. */
  toArray(): Waiting[] {
    return this.#items.slice(this.#head) as Waiting[];
  }

  /** Empties the line; returns what waited, in order. */
  clear(): Waiting[] {
    const items = this.toArray();
    this.#items = [];
    this.#head = 0;
    this.#weight = 0;
    return items;
  }
}
