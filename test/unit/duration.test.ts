import { describe, expect, it } from "vitest";
import { MAX_DURATION_MS, MAX_TIMER_MS, toMs, toTimerMs } from "../../src/duration.js";

describe("toMs", () => {
  it("takes non-negative finite numbers as milliseconds, rounded", () => {
    expect(toMs("d", 0)).toBe(0);
    expect(toMs("d", 1500)).toBe(1500);
    expect(toMs("d", 1.4)).toBe(1);
    expect(toMs("d", 1.5)).toBe(2);
  });

  it.each([
    ["250ms", 250],
    ["30s", 30_000],
    ["5m", 300_000],
    ["2h", 7_200_000],
    ["7d", 604_800_000],
    ["1w", 604_800_000],
    ["1.5s", 1500],
    ["0.5m", 30_000],
    ["1h30m", 5_400_000],
    ["1d2h3m4s5ms", 93_784_005],
    [" 1h 30m ", 5_400_000],
    ["0s", 0],
    ["90s", 90_000],
  ])("reads %j as %d ms", (text, ms) => {
    expect(toMs("d", text)).toBe(ms);
  });

  it("tells milliseconds from minutes", () => {
    expect(toMs("d", "1ms")).toBe(1);
    expect(toMs("d", "1m")).toBe(60_000);
    expect(toMs("d", "1m1ms")).toBe(60_001);
  });

  it.each([
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    "",
    "   ",
    "5",
    "5x",
    "m5",
    "-5s",
    "1h-",
    "1h 30",
    "s",
    "1.s",
    "five seconds",
    "1e3ms",
  ])("refuses %j with INVALID_DURATION", (value) => {
    expect(() => toMs("retryDelay", value as number | string)).toThrow(
      expect.objectContaining({ name: "ErrandError", code: "INVALID_DURATION" }),
    );
  });

  it.each([null, undefined, {}, [], true])("refuses the non-duration %j", (value) => {
    expect(() => toMs("d", value as unknown as number)).toThrow(
      expect.objectContaining({ code: "INVALID_DURATION" }),
    );
  });

  it("names the field in the error", () => {
    expect(() => toMs("backoff.delayMs", "soon")).toThrow(/backoff\.delayMs/);
    expect(() => toMs("leaseMs", -3)).toThrow(/leaseMs/);
  });
});

describe("duration bounds", () => {
  it("refuses a duration over MAX_DURATION_MS (the span to the end of year 9999), naming the bound", () => {
    expect(toMs("delayMs", MAX_DURATION_MS)).toBe(MAX_DURATION_MS);
    for (const value of [MAX_DURATION_MS + 1, 2 ** 53, 1e308, "999999999999h", "9999999999w"]) {
      expect(() => toMs("delayMs", value)).toThrow(
        expect.objectContaining({
          code: "INVALID_DURATION",
          message: expect.stringMatching(/delayMs must be at most 253402300799999 ms/),
        }),
      );
    }
  });

  it("holds a duration that becomes a timer to 2^31 − 1 ms: 25 days is refused, the maximum taken", () => {
    expect(MAX_TIMER_MS).toBe(2_147_483_647);
    expect(toTimerMs("timeoutMs", MAX_TIMER_MS)).toBe(MAX_TIMER_MS);
    expect(toTimerMs("timeoutMs", "24d")).toBe(24 * 86_400_000);
    for (const value of ["25d", MAX_TIMER_MS + 1, 1e308, "4w"]) {
      expect(() => toTimerMs("timeoutMs", value)).toThrow(
        expect.objectContaining({
          code: "INVALID_DURATION",
          message: expect.stringMatching(/timeoutMs must be at most 2147483647 ms/),
        }),
      );
    }
  });

  it("takes its bound from the caller", () => {
    expect(toMs("x", "1s", 1000)).toBe(1000);
    expect(() => toMs("x", "1001ms", 1000)).toThrow(expect.objectContaining({ code: "INVALID_DURATION" }));
  });
});
