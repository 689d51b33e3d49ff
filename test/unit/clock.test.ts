import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock, systemClock } from "../../src/clock.js";
import { MAX_TIMER_MS } from "../../src/duration.js";
import { ErrandError } from "../../src/errors.js";
import { MAX_DATE_MS } from "../../src/validation.js";

describe("systemClock.setTimer", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // Fake timers mimic Node: a delay over 2^31 − 1 fires after 1 ms. A 25-day job timeout stored
  // before errand bounded timeoutMs would abort its job at once without the chaining.
  it("fires a timer longer than 2^31 − 1 ms when it is due, not after 1 ms", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fired = vi.fn();
    const ms = MAX_TIMER_MS + 5_000;
    systemClock.setTimer(ms, fired);
    vi.advanceTimersByTime(1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(ms - MAX_TIMER_MS - 2);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledOnce();
  });

  it("cancels a chained timer in any link of its chain", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fired = vi.fn();
    const cancel = systemClock.setTimer(2 * MAX_TIMER_MS + 10, fired);
    vi.advanceTimersByTime(MAX_TIMER_MS + 1);
    cancel();
    cancel();
    vi.advanceTimersByTime(2 * MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("fires a timer at the bound, and a short one, on time", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const atBound = vi.fn();
    const short = vi.fn();
    systemClock.setTimer(MAX_TIMER_MS, atBound);
    systemClock.setTimer(10, short);
    vi.advanceTimersByTime(10);
    expect(short).toHaveBeenCalledOnce();
    vi.advanceTimersByTime(MAX_TIMER_MS - 11);
    expect(atBound).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(atBound).toHaveBeenCalledOnce();
  });
});

describe("ManualClock's own input", () => {
  it("refuses a start, a set() or an advance() that is no date a store keeps, leaving the time as it was", async () => {
    // Each once made a clock whose now() was NaN, "NaN1s" (a string concatenated), or past 9999.
    for (const start of [Number.NaN, -1, 1e20, Number.POSITIVE_INFINITY, new Date("x"), "2026", null]) {
      expect(() => new ManualClock(start as never), String(start)).toThrow(ErrandError);
    }
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const before = clock.now();
    for (const ms of [Number.NaN, -5, "1s", Number.POSITIVE_INFINITY, MAX_DATE_MS]) {
      await expect(clock.advance(ms as never), String(ms)).rejects.toBeInstanceOf(ErrandError);
    }
    for (const at of [Number.NaN, MAX_DATE_MS + 1, new Date("x"), "soon"]) {
      await expect(clock.set(at as never), String(at)).rejects.toBeInstanceOf(ErrandError);
    }
    expect(clock.now()).toBe(before);
    await clock.advance(1_000);
    await clock.set(new Date(before + 5_000));
    expect(clock.now()).toBe(before + 5_000);
    expect(new ManualClock(new Date(MAX_DATE_MS)).now()).toBe(MAX_DATE_MS);
  });
});
