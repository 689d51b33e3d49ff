import type { Queue } from "../queue.js";

/** The HTTP response a long-poll answers on: its closing ends the wait. */
export interface PollConnection {
  readonly destroyed: boolean;
  once(event: "close", listener: () => void): unknown;
  off(event: "close", listener: () => void): unknown;
}

/** One long-poll: what it asks for, until when, and how it looks. */
export interface LongPollParams<T> {
  /** What the poll asks for (its types and queues): polls of one group are interchangeable. */
  group: string;
  /** The clock time after which it answers with nothing. */
  deadline: number;
  /** How often it looks again without a wake-up, to find delayed jobs that came due. */
  pollMs: number;
  connection: PollConnection;
  /**
   * One look: the jobs leased, or none. A look that found jobs held back by a rate limit sets
   * `held.until` to when the window has room again; the poll's group is woken then.
   */
  look: (held: { until: number | null }) => Promise<T[]>;
}

/**
 * Long-polls waiting now, oldest first, grouped by what they ask for (types, queues); closing
 * ends them. A wake-up from the store rouses the oldest waiter of each group; a waiter that then
 * leases jobs passes the wake-up on to the next of its group (more may be ready), and one that
 * finds nothing ends its group's chain. Waiters of one group are interchangeable, so an enqueue
 * costs a claim or a few per group, not one per waiting worker: with hundreds of idle long-polls
 * that is the difference between a claim and a thundering herd. A rate limit's window opening is
 * no store event: a look held back by one sets its group a timer for then, which rouses it alike.
 */
export class LongPoll {
  readonly #groups = new Map<string, Set<() => void>>();
  /**
   * Per group, a wake-up set for when a rate limit that held its jobs back has room again (no
   * store event announces that): the earliest such time and the timer for it.
   */
  readonly #held = new Map<string, { at: number; cancel: () => void }>();
  readonly #queue: Queue;
  readonly #unsubscribe: () => void;
  /** Counts store wake-ups, so a poll that raced one looks again instead of waiting. */
  #wakeups = 0;
  #closing = false;

  constructor(queue: Queue) {
    this.#queue = queue;
    this.#unsubscribe = queue.onWake(() => {
      this.#wakeups++;
      for (const group of [...this.#groups.keys()]) this.#handoff(group);
    });
  }

  /** Long-polls waiting for a job right now. */
  get size(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += g.size;
    return n;
  }

  /**
   * Looks once, then, while it found nothing, waits for a wake-up or `pollMs` and looks again,
   * until the deadline, the connection closes or the server does.
   */
  async poll<T>(params: LongPollParams<T>): Promise<T[]> {
    const { group, deadline, pollMs, connection, look } = params;
    const clock = this.#queue.clock;
    let wake = () => {};
    const gone = () => wake();
    connection.once("close", gone);
    try {
      let seen = this.#wakeups;
      let jobs = await this.#look(group, look);
      while (jobs.length === 0 && !this.#closing && !connection.destroyed) {
        const left = deadline - clock.now();
        if (left <= 0) break;
        if (seen === this.#wakeups) {
          await new Promise<void>((resolve) => {
            const cancel = clock.setTimer(Math.min(left, pollMs), () => wake());
            wake = () => {
              cancel();
              const g = this.#groups.get(group)!;
              g.delete(wake);
              if (g.size === 0) this.#groups.delete(group);
              wake = () => {};
              resolve();
            };
            let g = this.#groups.get(group);
            if (!g) this.#groups.set(group, (g = new Set()));
            g.add(wake);
          });
        }
        seen = this.#wakeups;
        if (this.#closing || connection.destroyed) break;
        jobs = await this.#look(group, look);
        if (jobs.length > 0) this.#handoff(group);
      }
      return jobs;
    } finally {
      connection.off("close", gone);
      // A rate limit's wake-up rouses a group's waiters: with none left it rouses no one, and kept
      // it would outlive every poll of the group (a window can be weeks long, and each distinct
      // set of types and queues is a group). The next poll of the group that is held sets it again.
      if (!this.#groups.has(group)) this.#dropHeld(group);
    }
  }

  #dropHeld(group: string): void {
    this.#held.get(group)?.cancel();
    this.#held.delete(group);
  }

  /** Ends every waiting poll (each answers with what it has: nothing), and every later one at once. */
  close(): void {
    this.#closing = true;
    for (const { cancel } of this.#held.values()) cancel();
    this.#held.clear();
    for (const wake of [...this.#groups.values()].flatMap((g) => [...g])) wake();
  }

  /** Stops following the store's wake-ups; the server calls it last, once closed. */
  detach(): void {
    this.#unsubscribe();
  }

  async #look<T>(group: string, look: LongPollParams<T>["look"]): Promise<T[]> {
    const held = { until: null as number | null };
    const jobs = await look(held);
    if (held.until !== null && !this.#closing) this.#wakeAt(group, held.until);
    return jobs;
  }

  /**
   * Rouses `group` at `at`, as a store wake-up would: its oldest waiter looks, and passes it on
   * if it leased something. One timer per group, at the earliest time asked for.
   */
  #wakeAt(group: string, at: number): void {
    const current = this.#held.get(group);
    if (current && current.at <= at) return;
    current?.cancel();
    const clock = this.#queue.clock;
    const cancel = clock.setTimer(Math.max(1, at - clock.now()), () => {
      this.#held.delete(group);
      this.#handoff(group);
    });
    this.#held.set(group, { at, cancel });
  }

  #handoff(group: string): void {
    const [oldest] = this.#groups.get(group) ?? [];
    oldest?.();
  }
}
