import { describe, expect, it } from "vitest";
import { type Clock, ManualClock } from "../../src/clock.js";
import { Queue } from "../../src/queue.js";
import { MAX_HISTORY_SIZE, StatsHistory } from "../../src/server/stats-history.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

const T0 = Date.UTC(2026, 0, 1);

describe("StatsHistory", () => {
  it("refuses an interval or a size it cannot keep, naming it", () => {
    const clock = new ManualClock(0);
    for (const options of [
      { size: 0 },
      { size: -1 },
      { size: 1.5 },
      { size: MAX_HISTORY_SIZE + 1 },
      { size: Number.NaN },
    ]) {
      expect(() => new StatsHistory(clock, options)).toThrow(
        expect.objectContaining({
          code: "INVALID_OPTION",
          message: expect.stringContaining("StatsHistory size"),
        }),
      );
    }
    for (const options of [
      { intervalMs: 0 },
      { intervalMs: 2 ** 31 },
      { intervalMs: "1s" as unknown as number },
    ]) {
      expect(() => new StatsHistory(clock, options)).toThrow(
        expect.objectContaining({
          code: "INVALID_OPTION",
          message: expect.stringContaining("StatsHistory intervalMs"),
        }),
      );
    }
    const widest = new StatsHistory(clock, { intervalMs: 2 ** 31 - 1, size: 1 });
    expect([widest.intervalMs, widest.size]).toEqual([2 ** 31 - 1, 1]);
  });

  it("counts per second into the right interval, oldest first, with empty seconds as 0", async () => {
    const clock = new ManualClock(T0);
    const h = new StatsHistory(clock, { size: 10 });
    h.record("completed");
    h.record("completed", 2, T0 + 999);
    await clock.advance(2_500);
    h.record("failed");
    h.record("enqueued", 5);
    expect(h.series(4)).toEqual({
      intervalMs: 1000,
      times: [T0 - 1000, T0, T0 + 1000, T0 + 2000],
      enqueued: [0, 0, 0, 5],
      completed: [0, 3, 0, 0],
      failed: [0, 0, 0, 1],
    });
  });

  it("forgets a second once the ring has come round to its slot, and ignores writes older than the window", async () => {
    const clock = new ManualClock(T0);
    const h = new StatsHistory(clock, { size: 5 });
    h.record("completed", 7);
    await clock.advance(5_000); // the same slot, one ring later
    expect(h.series(5).completed).toEqual([0, 0, 0, 0, 0]);
    h.record("completed", 1);
    h.record("completed", 9, T0); // from a second that has left the window: no slot any more
    expect(h.series(5).completed).toEqual([0, 0, 0, 0, 1]);
    expect(h.series(50).times).toHaveLength(5);
  });

  /** A clock that can be stepped back, as NTP steps a wall clock; it sets no timers. */
  function steppedClock(start: number): Clock & { at: number } {
    const clock = { at: start, now: () => clock.at, setTimer: () => () => {} };
    return clock;
  }

  it("keeps counting after the clock steps back from a jump ahead", () => {
    const clock = steppedClock(T0 + 86_400_000); // a day ahead
    const h = new StatsHistory(clock, { size: 10 });
    for (let i = 0; i < 10; i++, clock.at += 1000) h.record("completed");
    clock.at = T0; // stepped back to the true time
    // What was written while ahead is not shown: it is stamped in the future.
    expect(h.series(10).completed).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    const shown: number[] = [];
    for (let i = 0; i < 30; i++, clock.at += 1000) {
      h.record("completed");
      shown.push(h.series(1).completed[0]!);
    }
    expect(shown).toEqual(new Array(30).fill(1));
  });

  it("lets a write stamped ahead of now neither blind its slot nor wipe a shown second", () => {
    const clock = steppedClock(T0);
    const h = new StatsHistory(clock, { size: 10 });
    h.record("enqueued", 1, T0 + 86_400_000); // a stray write a day ahead, into T0's slot
    h.record("enqueued");
    expect(h.series(1).enqueued).toEqual([1]);
    h.record("enqueued", 5, T0 + 10_000); // T0's slot again, one ring ahead: T0 is still shown
    expect(h.series(1).enqueued).toEqual([1]);
    clock.at += 10_000;
    h.record("enqueued");
    expect(h.series(1).enqueued).toEqual([1]);
  });

  it("follows a queue's enqueued, completed and failed events until closed", async () => {
    const clock = new ManualClock(T0);
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store, { clock });
    const h = new StatsHistory(clock).follow(queue);
    try {
      await queue.enqueue("t", null);
      await queue.enqueue("t", null);
      const [a, b] = await queue.lease({ types: ["t"], limit: 2 });
      await queue.complete(a!, "ok");
      await queue.fail(b!, new Error("boom"));
      const s = h.series(1);
      expect([s.enqueued[0], s.completed[0], s.failed[0]]).toEqual([2, 1, 1]);
      h.close();
      h.close();
      await queue.enqueue("t", null);
      expect(h.series(1).enqueued[0]).toBe(2);
    } finally {
      await store.close();
    }
  });
});
