import { describe, expect, it } from "vitest";
import { planClaim, type QueueTake } from "../../src/store/claim-plan.js";
import type { QueueWeight } from "../../src/store/store.js";
import { seeded } from "../conformance/backend.js";

/** A fake store: `ready[q]` jobs wait in each queue (Infinity for a bottomless one). Records each take. */
function fakeQueues(ready: Record<string, number>) {
  const left = { ...ready };
  const calls: Array<{ queue: string; count: number }> = [];
  const take = (queue: string, count: number): QueueTake<string> => {
    calls.push({ queue, count });
    const n = Math.min(count, left[queue] ?? 0);
    left[queue] = (left[queue] ?? 0) - n;
    return { taken: Array.from({ length: n }, () => queue), full: false };
  };
  return { take, calls, left };
}

function tally(items: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const q of items) out[q] = (out[q] ?? 0) + 1;
  return out;
}

const weights = (w: Record<string, number>): QueueWeight[] =>
  Object.entries(w).map(([name, weight]) => ({ name, weight }));

describe("planClaim", () => {
  it("shares single-job claims in proportion to the weights over many claims", () => {
    const random = seeded(7);
    const { take } = fakeQueues({ critical: Number.POSITIVE_INFINITY, default: Number.POSITIVE_INFINITY });
    const all: string[] = [];
    for (let i = 0; i < 7000; i++)
      all.push(...planClaim(weights({ critical: 6, default: 1 }), 1, random, take));
    expect(all).toHaveLength(7000);
    const t = tally(all);
    expect(t.critical! / 7000).toBeCloseTo(6 / 7, 1);
    expect(Math.abs(t.critical! / 7000 - 6 / 7)).toBeLessThan(0.02);
    expect(Math.abs(t.default! / 7000 - 1 / 7)).toBeLessThan(0.02);
  });

  it("shares batch claims in proportion to the weights across three queues", () => {
    const random = seeded(42);
    const { take } = fakeQueues({
      a: Number.POSITIVE_INFINITY,
      b: Number.POSITIVE_INFINITY,
      c: Number.POSITIVE_INFINITY,
    });
    const all: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const got = planClaim(weights({ a: 3, b: 2, c: 1 }), 12, random, take);
      expect(got).toHaveLength(12);
      all.push(...got);
    }
    const t = tally(all);
    const total = all.length;
    expect(Math.abs(t.a! / total - 3 / 6)).toBeLessThan(0.02);
    expect(Math.abs(t.b! / total - 2 / 6)).toBeLessThan(0.02);
    expect(Math.abs(t.c! / total - 1 / 6)).toBeLessThan(0.02);
  });

  it("repeats exactly with the same seed", () => {
    const run = () => {
      const { take } = fakeQueues({ a: Number.POSITIVE_INFINITY, b: Number.POSITIVE_INFINITY });
      const random = seeded(123);
      return Array.from({ length: 50 }, () => planClaim(weights({ a: 2, b: 1 }), 3, random, take).join(","));
    };
    expect(run()).toEqual(run());
  });

  it("never lets an empty queue block another, however heavy its weight", () => {
    const { take, calls } = fakeQueues({ heavy: 0, light: Number.POSITIVE_INFINITY });
    const random = seeded(1);
    for (let i = 0; i < 100; i++) {
      calls.length = 0;
      const got = planClaim(weights({ heavy: 1000, light: 1 }), 10, random, take);
      expect(got).toEqual(Array(10).fill("light"));
      // The empty queue is asked at most once per claim, then left alone for that claim.
      expect(calls.filter((c) => c.queue === "heavy").length).toBeLessThanOrEqual(1);
    }
  });

  it("gives the unfilled share of a queue that runs dry to the others", () => {
    const { take, left } = fakeQueues({ a: 3, b: Number.POSITIVE_INFINITY });
    const got = planClaim(weights({ a: 9, b: 1 }), 10, seeded(5), take);
    expect(got).toHaveLength(10);
    expect(tally(got)).toEqual({ a: 3, b: 7 });
    expect(left.a).toBe(0);
  });

  it("returns fewer than the limit only when every queue has run dry", () => {
    const { take } = fakeQueues({ a: 2, b: 1, c: 0 });
    const got = planClaim(weights({ a: 1, b: 1, c: 1 }), 10, seeded(9), take);
    expect(tally(got)).toEqual({ a: 2, b: 1 });
    const none = fakeQueues({ a: 0, b: 0 });
    expect(planClaim(weights({ a: 1, b: 1 }), 5, seeded(9), none.take)).toEqual([]);
  });

  it("never takes more than the limit", () => {
    const random = seeded(11);
    for (let limit = 1; limit <= 40; limit++) {
      const { take } = fakeQueues({ a: 5, b: 17, c: Number.POSITIVE_INFINITY });
      expect(planClaim(weights({ a: 5, b: 3, c: 1 }), limit, random, take)).toHaveLength(limit);
    }
  });

  it("asks a single queue once for the whole limit", () => {
    const { take, calls } = fakeQueues({ only: Number.POSITIVE_INFINITY });
    expect(planClaim(weights({ only: 3 }), 25, () => 0.5, take)).toHaveLength(25);
    expect(calls).toEqual([{ queue: "only", count: 25 }]);
  });

  it("stops the whole claim when a take reports the budget full", () => {
    const calls: string[] = [];
    const take = (queue: string, count: number): QueueTake<string> => {
      calls.push(queue);
      // The first queue asked fits one job, then the claimer has no room left.
      return { taken: [queue], full: count > 0 };
    };
    const got = planClaim(weights({ a: 1, b: 1, c: 1 }), 30, seeded(3), take);
    expect(got).toHaveLength(1);
    expect(calls).toHaveLength(1);
  });

  it("keeps what was taken before the budget filled", () => {
    let asked = 0;
    const take = (queue: string, count: number): QueueTake<string> => {
      asked++;
      if (asked === 1) return { taken: Array(count).fill(queue), full: false };
      return { taken: [queue], full: true };
    };
    const got = planClaim(weights({ a: 1, b: 1 }), 10, seeded(4), take);
    expect(asked).toBe(2);
    expect(got.length).toBeGreaterThan(1);
    expect(got.length).toBeLessThanOrEqual(10);
  });

  it("never asks a queue of weight 0", () => {
    const { take, calls } = fakeQueues({ off: Number.POSITIVE_INFINITY, on: Number.POSITIVE_INFINITY });
    const got = planClaim(weights({ off: 0, on: 1 }), 5, seeded(2), take);
    expect(got).toEqual(Array(5).fill("on"));
    expect(calls.every((c) => c.queue === "on")).toBe(true);
  });

  it("returns nothing and asks nobody for a limit of 0", () => {
    const { take, calls } = fakeQueues({ a: 5 });
    expect(planClaim(weights({ a: 1 }), 0, seeded(2), take)).toEqual([]);
    expect(calls).toEqual([]);
  });
});
