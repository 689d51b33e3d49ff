import { describe, expect, it } from "vitest";
import { toMs } from "../../src/duration.js";

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
