import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { Queue } from "../../src/queue.js";
import { SharedRead } from "../../src/shared-read.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

/** A read whose answers the test gives, one call at a time. */
function controlled() {
  const calls: Array<{ resolve: (v: number) => void; reject: (e: Error) => void }> = [];
  const read = vi.fn(
    () =>
      new Promise<number>((resolve, reject) => {
        calls.push({ resolve, reject });
      }),
  );
  return { read, calls };
}

/** Lets every pending promise callback run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe("SharedRead", () => {
  it("runs one read at a time: callers who ask meanwhile share the next, started after the first ends", async () => {
    const { read, calls } = controlled();
    const shared = new SharedRead(read);
    const first = shared.get();
    await settle();
    const [a, b, c] = [shared.get(), shared.get(), shared.get()];
    expect(b).toBe(a);
    expect(c).toBe(a);
    await settle();
    expect(read).toHaveBeenCalledTimes(1);

    calls[0]!.resolve(1);
    expect(await first).toBe(1);
    // The first read has ended (this await ran after it) and the next has not begun: a caller now
    // still shares the next read.
    expect(read).toHaveBeenCalledTimes(1);
    const d = shared.get();
    expect(d).toBe(a);
    await settle();
    expect(read).toHaveBeenCalledTimes(2);
    calls[1]!.resolve(2);
    expect(await Promise.all([a, b, c, d])).toEqual([2, 2, 2, 2]);

    // Nothing running: a caller starts a read of its own.
    const e = shared.get();
    await settle();
    expect(read).toHaveBeenCalledTimes(3);
    calls[2]!.resolve(3);
    expect(await e).toBe(3);
  });

  it("gives a failed read's error to its callers only; the next read runs afresh", async () => {
    const { read, calls } = controlled();
    const shared = new SharedRead(read);
    const first = shared.get();
    await settle();
    const next = shared.get();
    calls[0]!.reject(new Error("down"));
    await expect(first).rejects.toThrow("down");
    await settle();
    calls[1]!.resolve(7);
    expect(await next).toBe(7);
  });

  it("rejects, not throws, when the read throws at once", async () => {
    const shared = new SharedRead<number>(() => {
      throw new Error("at once");
    });
    const p = shared.get();
    await expect(p).rejects.toThrow("at once");
    await expect(shared.get()).rejects.toThrow("at once");
  });
});

describe("SharedRead with spacing", () => {
  /** A read the test answers, spaced ×4 by a manual clock from reads of 10 ms, at most 1,000 ms. */
  function spaced() {
    const clock = new ManualClock();
    const { read, calls } = controlled();
    const shared = new SharedRead(read, { clock, factor: 4, maxWaitMs: 1000, fromMs: 10 });
    /** The read just begun (the newest call) answers `value` after `ms` of the clock. */
    const answer = async (ms: number, value: number) => {
      await clock.advance(ms);
      calls.at(-1)!.resolve(value);
    };
    /** One read, begun at once, that takes `ms` of the clock. */
    const readFor = async (ms: number, value: number) => {
      const p = shared.get();
      await settle();
      await answer(ms, value);
      return p;
    };
    /** The read asked for begins `ms` of the clock from now, not a millisecond sooner. */
    const beginsIn = async (ms: number) => {
      const before = read.mock.calls.length;
      if (ms > 0) {
        await clock.advance(ms - 1);
        await settle();
        expect(read).toHaveBeenCalledTimes(before);
        await clock.advance(1);
      }
      await settle();
      expect(read).toHaveBeenCalledTimes(before + 1);
    };
    return { clock, read, calls, shared, answer, readFor, beginsIn };
  }

  it("spaces only after a read of fromMs or more", async () => {
    const { shared, answer, readFor, beginsIn } = spaced();
    await readFor(9, 1);
    const quick = shared.get();
    await beginsIn(0);
    await answer(10, 2);
    await quick;
    const spacedRead = shared.get();
    await beginsIn(40);
    await answer(0, 3);
    expect(await spacedRead).toBe(3);
  });

  it("begins a read no sooner than four times the last one's length after it, shared by who asks meanwhile", async () => {
    const { clock, read, shared, answer, readFor, beginsIn } = spaced();
    expect(await readFor(100, 1)).toBe(1);
    const [a, b] = [shared.get(), shared.get()];
    expect(b).toBe(a);
    await clock.advance(399);
    await settle();
    expect(read).toHaveBeenCalledTimes(1);
    // Still waiting for its turn: a caller now shares it rather than queueing behind it.
    expect(shared.get()).toBe(a);
    await beginsIn(1);
    // Once it reads, a caller waits for the read after it, as without spacing.
    const c = shared.get();
    expect(c).not.toBe(a);
    await answer(0, 2);
    expect(await Promise.all([a, b])).toEqual([2, 2]);
    // That read took no time on the clock: the next one begins at once.
    await beginsIn(0);
    await answer(0, 3);
    expect(await c).toBe(3);
  });

  it("waits at most maxWaitMs, and no longer than the last read earned if the clock goes back", async () => {
    const { clock, shared, answer, readFor, beginsIn } = spaced();
    await readFor(10_000, 1);
    const next = shared.get();
    await beginsIn(1000);
    await answer(50, 2);
    expect(await next).toBe(2);

    // The last read earned 200 ms; the clock set back an hour still waits only those.
    await clock.set(clock.now() - 3_600_000);
    const after = shared.get();
    await beginsIn(200);
    await answer(0, 3);
    expect(await after).toBe(3);
  });

  it("hurry() begins a read waiting for its turn now; hurry(true) every later one too", async () => {
    const { read, shared, answer, readFor, beginsIn } = spaced();
    await readFor(100, 1);
    const waiting = shared.get();
    await settle();
    expect(read).toHaveBeenCalledTimes(1);
    shared.hurry();
    await beginsIn(0);
    await answer(100, 2);
    expect(await waiting).toBe(2);
    // hurry() let that one go: the next still waits its turn (4 × 100 ms).
    const spacedAgain = shared.get();
    await settle();
    expect(read).toHaveBeenCalledTimes(2);
    shared.hurry(true);
    await beginsIn(0);
    await answer(100, 3);
    expect(await spacedAgain).toBe(3);
    // Closed for good: no read waits any more.
    const after = shared.get();
    await beginsIn(0);
    await answer(0, 4);
    expect(await after).toBe(4);
  });

  it("spaces after a failed read too, and gives the error to its callers only", async () => {
    const { clock, calls, shared, answer, beginsIn } = spaced();
    const first = shared.get();
    await settle();
    await clock.advance(50);
    calls[0]!.reject(new Error("down"));
    await expect(first).rejects.toThrow("down");
    const next = shared.get();
    await beginsIn(200);
    await answer(0, 7);
    expect(await next).toBe(7);
  });
});

describe("Queue.stats", () => {
  it("counts once for the callers who ask while a count runs, and afresh for what they wrote before", async () => {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store);
    const count = store.stats.bind(store);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    // The first count reads at once and answers when the test says: a slow count of a long history.
    const stats = vi.spyOn(store, "stats").mockImplementationOnce(async (p) => {
      const read = await count(p);
      await gate;
      return read;
    });
    const first = queue.stats();
    await vi.waitFor(() => expect(stats).toHaveBeenCalledTimes(1));
    await queue.enqueue("t", {});
    const later = [queue.stats(), queue.stats(), queue.stats()];
    open();
    expect((await first).states.pending).toBe(0);
    // Asked after the enqueue: one count more, begun after it, for all three.
    for (const s of await Promise.all(later)) expect(s.states.pending).toBe(1);
    expect(stats).toHaveBeenCalledTimes(2);
    await queue.close();
  });

  /** A queue on an in-memory store whose first count takes `ms` of real time. */
  async function slowFirstCount(ms: number, clock = new ManualClock()) {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store, { clock });
    const count = store.stats.bind(store);
    const ended: number[] = [];
    const began: number[] = [];
    const stats = vi.spyOn(store, "stats").mockImplementationOnce(async (p) => {
      began.push(Date.now());
      await new Promise((r) => setTimeout(r, ms));
      ended.push(Date.now());
      return count(p);
    });
    return { store, queue, stats, began, ended, clock };
  }

  it("spaces its counts in real time, four times the last count's length, whatever the queue's clock", async () => {
    const { store, queue, stats, began, ended, clock } = await slowFirstCount(60);
    const startedAt: number[] = [];
    const first = queue.stats();
    // The queue's clock moving on during a count does not lengthen the wait (a ManualClock would
    // otherwise hold the next count until the test moved it again).
    await clock.advance(3_600_000);
    await first;
    stats.mockImplementation(async (p) => {
      startedAt.push(Date.now());
      return store.constructor.prototype.stats.call(store, p);
    });
    await queue.enqueue("t", {});
    expect((await queue.stats()).states.pending).toBe(1);
    expect(stats).toHaveBeenCalledTimes(2);
    // A lower bound only: the next count began at least four times the first's length after it
    // (less a millisecond each side, as Date.now and Node's timers round apart).
    const took = ended[0]! - began[0]!;
    expect(took).toBeGreaterThanOrEqual(59);
    expect(startedAt[0]! - ended[0]!).toBeGreaterThanOrEqual(4 * took - 2);
    await queue.close();
  });

  it("close() lets a count waiting for its turn go at once", async () => {
    const { store, queue, stats } = await slowFirstCount(250);
    await queue.stats();
    // Its turn is a second away.
    const waiting = queue.stats();
    await settle();
    expect(stats).toHaveBeenCalledTimes(1);
    await queue.close();
    await settle();
    expect(stats).toHaveBeenCalledTimes(2);
    // The store is the caller's: the count still reads it.
    expect((await waiting).states.pending).toBe(0);
    await store.close();
  });
});
