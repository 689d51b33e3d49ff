import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffDelay, DEFAULT_BACKOFF, toStoredBackoff } from "../../src/backoff.js";
import type { StoredBackoff } from "../../src/job.js";
import { fcParams } from "../helpers/property.js";

const never = () => {
  throw new Error("random() should not be called");
};

describe("toStoredBackoff", () => {
  it("defaults to exponential from 1 s, doubling, capped at 1 h, jittered", () => {
    expect(toStoredBackoff(undefined)).toEqual({
      type: "exponential",
      baseMs: 1000,
      maxMs: 3_600_000,
      factor: 2,
      jitter: true,
    });
  });

  it("reads fixed delays as milliseconds or duration strings", () => {
    expect(toStoredBackoff({ type: "fixed", delayMs: 250 })).toEqual({ type: "fixed", delayMs: 250 });
    expect(toStoredBackoff({ type: "fixed", delayMs: "1m30s" })).toEqual({ type: "fixed", delayMs: 90_000 });
  });

  it("fills exponential defaults and keeps what is given", () => {
    expect(toStoredBackoff({ type: "exponential", baseMs: "2s", jitter: false })).toEqual({
      type: "exponential",
      baseMs: 2000,
      maxMs: 3_600_000,
      factor: 2,
      jitter: false,
    });
    expect(toStoredBackoff({ type: "exponential", factor: 1.5, maxMs: "10m" })).toMatchObject({
      factor: 1.5,
      maxMs: 600_000,
    });
  });

  it("stores a function as a custom marker with the default policy as fallback", () => {
    expect(toStoredBackoff(() => 5)).toEqual({ type: "custom", fallback: DEFAULT_BACKOFF });
  });

  it("refuses a factor below 1, a bad duration and an unknown type", () => {
    expect(() => toStoredBackoff({ type: "exponential", factor: 0.5 })).toThrow(
      expect.objectContaining({ code: "INVALID_OPTION" }),
    );
    expect(() => toStoredBackoff({ type: "exponential", factor: Number.NaN })).toThrow(
      expect.objectContaining({ code: "INVALID_OPTION" }),
    );
    expect(() => toStoredBackoff({ type: "fixed", delayMs: -1 })).toThrow(
      expect.objectContaining({ code: "INVALID_DURATION" }),
    );
    expect(() => toStoredBackoff({ type: "linear" } as never)).toThrow(
      expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("linear") }),
    );
  });
});

describe("backoffDelay", () => {
  const exp = (o: Partial<Extract<StoredBackoff, { type: "exponential" }>> = {}): StoredBackoff => ({
    type: "exponential",
    baseMs: 1000,
    maxMs: 3_600_000,
    factor: 2,
    jitter: false,
    ...o,
  });

  it("gives the same delay every attempt for fixed backoff", () => {
    const fixed: StoredBackoff = { type: "fixed", delayMs: 30_000 };
    for (const attempt of [1, 2, 10, 100]) {
      expect(backoffDelay(fixed, undefined, new Error("x"), attempt, never)).toBe(30_000);
    }
  });

  it("doubles from baseMs without jitter and caps at maxMs", () => {
    const policy = exp({ maxMs: 10_000 });
    const delays = [1, 2, 3, 4, 5, 6, 50].map((a) => backoffDelay(policy, undefined, null, a, never));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
  });

  it("uses the factor", () => {
    const policy = exp({ baseMs: 100, factor: 3 });
    expect([1, 2, 3, 4].map((a) => backoffDelay(policy, undefined, null, a, never))).toEqual([
      100, 300, 900, 2700,
    ]);
  });

  it("never overflows for huge attempt numbers", () => {
    expect(backoffDelay(exp(), undefined, null, 10_000, never)).toBe(3_600_000);
  });

  it("waits 0 from a baseMs of 0 at any attempt (0 × an overflowed power is not NaN)", () => {
    for (const attempt of [1, 3, 1_026, 1_000_000]) {
      expect(backoffDelay(exp({ baseMs: 0 }), undefined, null, attempt, never)).toBe(0);
      expect(
        backoffDelay(exp({ baseMs: 0, factor: 1e300, jitter: true }), undefined, null, attempt, () => 0.5),
      ).toBe(0);
    }
  });

  it("answers a whole number of ms within [0, maxMs] for every policy and attempt", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.double({ min: 1, max: 1e300, noNaN: true }),
        fc.boolean(),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 0.999_999, noNaN: true }),
        (baseMs, maxMs, factor, jitter, attempt, r) => {
          const d = backoffDelay(exp({ baseMs, maxMs, factor, jitter }), undefined, null, attempt, () => r);
          expect(Number.isSafeInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(maxMs);
        },
      ),
      fcParams(300),
    );
  });

  it("draws jittered delays from the upper half of the step", () => {
    const policy = exp({ jitter: true });
    expect(backoffDelay(policy, undefined, null, 3, () => 0)).toBe(2000);
    expect(backoffDelay(policy, undefined, null, 3, () => 0.5)).toBe(3000);
    expect(backoffDelay(policy, undefined, null, 3, () => 0.999_999)).toBe(4000);
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(policy, undefined, null, 4, Math.random) as number;
      expect(d).toBeGreaterThanOrEqual(4000);
      expect(d).toBeLessThanOrEqual(8000);
    }
  });

  it("calls a custom function with the error and the attempt and uses its answer", () => {
    const calls: Array<[unknown, number]> = [];
    const error = new Error("rate limited");
    const fn = (e: unknown, attempt: number) => {
      calls.push([e, attempt]);
      return attempt * 1234.4;
    };
    const custom = toStoredBackoff(fn);
    expect(backoffDelay(custom, fn, error, 2, never)).toBe(2469);
    expect(calls).toEqual([[error, 2]]);
    expect(calls[0]![0]).toBe(error);
  });

  it("stops retrying when the custom function returns false", () => {
    expect(
      backoffDelay(
        toStoredBackoff(() => false),
        () => false,
        null,
        1,
        never,
      ),
    ).toBe(false);
  });

  it("uses the default base delay when the custom function returns something unusable", () => {
    const custom = toStoredBackoff(() => 0);
    for (const bad of [-5, Number.NaN, Number.POSITIVE_INFINITY, "100" as unknown as number]) {
      expect(backoffDelay(custom, () => bad, null, 1, never)).toBe(DEFAULT_BACKOFF.baseMs);
    }
    expect(backoffDelay(custom, () => 0, null, 1, never)).toBe(0);
  });

  it("falls back to the stored policy when the custom function throws", () => {
    const custom = toStoredBackoff(() => 0);
    const throws = () => {
      throw new Error("bug in the policy");
    };
    expect(backoffDelay(custom, throws, null, 1, () => 0)).toBe(500);
    expect(backoffDelay(custom, throws, null, 3, () => 0.999_999)).toBe(4000);
  });

  it("uses the fallback policy for a custom marker when the function is not known here", () => {
    const custom = toStoredBackoff(() => 5);
    expect(backoffDelay(custom, undefined, null, 1, () => 0)).toBe(500);
    expect(backoffDelay(custom, undefined, null, 2, () => 0.999_999)).toBe(2000);
  });
});

describe("DEFAULT_BACKOFF", () => {
  it("keeps its stored text, which the SQLite and Redis stores write as '' and read back as this", () => {
    // Jobs already stored with '' mean exactly this policy: a new default needs a migration that
    // writes the old text into those rows first, or they would change policy silently.
    expect(JSON.stringify(DEFAULT_BACKOFF)).toBe(
      '{"type":"exponential","baseMs":1000,"maxMs":3600000,"factor":2,"jitter":true}',
    );
  });
});
