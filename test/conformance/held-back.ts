/**
 * Held back, seen: `stats().limits[type]` counts the ready jobs (pending, due, not expired, queue
 * not paused) of a type with rate limits or per-key rules that a claim now would not take, once
 * each, under the first rule that holds it: `order`, then `keyConcurrency`, then `rateLimit` (the
 * key's window, then the type's); and lists the type's busiest keys by ready plus running jobs.
 * Stats reads at most `sampleLimit` ready jobs per type, in claim order; beyond that the counts
 * are lower bounds and `exact` is false.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";

const ledger = defineJob({ type: "ledger", ordered: true, handler: async () => null });
const sync = defineJob({ type: "sync", keyConcurrency: 2, handler: async () => null });
const partner = defineJob({
  type: "partner",
  rateLimit: { limit: 3, periodMs: 1_000 },
  handler: async () => null,
});
const perKey = defineJob({
  type: "per-key",
  keyRateLimit: { limit: 1, periodMs: 1_000 },
  handler: async () => null,
});

const none = { rateLimit: 0, keyConcurrency: 0, order: 0, exact: true };

async function heldOf(queue: Queue, type: string) {
  const stats = await queue.stats();
  expect(Object.hasOwn(stats.limits, type)).toBe(true);
  return stats.limits[type]!;
}

/** How many jobs of `type` a claim of everything takes now (they stay leased). */
async function takeable(queue: Queue, type: string): Promise<number> {
  const leased = await queue.lease({ limit: 1_000, types: [type] });
  return leased.length;
}

export function exerciseHeldBack(backend: Backend): void {
  describe("held back, seen in stats", () => {
    it("counts jobs held by order: an earlier job of the same key is unfinished", async () => {
      const { queue } = await backend.setup();
      queue.register(ledger);
      for (const key of ["a", "a", "a", "b", "b"]) await queue.enqueue(ledger, {}, { key });
      await queue.enqueue(ledger, {});
      expect((await heldOf(queue, "ledger")).heldBack).toEqual({ ...none, order: 3 });
      expect(await takeable(queue, "ledger")).toBe(3);
      // The heads now run: the same three wait behind them; nothing else is ready.
      const stats = await heldOf(queue, "ledger");
      expect(stats.heldBack).toEqual({ ...none, order: 3 });
      expect(stats.busiestKeys).toEqual([
        { key: "a", ready: 2, active: 1 },
        { key: "b", ready: 1, active: 1 },
      ]);
    });

    it("counts only the jobs due by the stats' own now: jobs made ready by a clock ahead of it wait", async () => {
      const { queue, store, clock } = await backend.setup({ maintenance: false });
      queue.register(sync);
      const t0 = clock.now();
      for (let i = 0; i < 3; i++) await queue.enqueue(sync, { i }, { key: "x" });
      // Ready when enqueued, by the enqueuer's clock, 10 s ahead of the stats' below.
      await clock.advance(10_000);
      for (let i = 3; i < 6; i++) await queue.enqueue(sync, { i }, { key: "x" });
      await queue.enqueue(sync, {});
      const limits = {
        types: ["sync"],
        keyRules: { sync: { keyConcurrency: 2 } },
        sampleLimit: 1_000,
        topKeys: 10,
      };
      const at = async (now: number) => (await store.stats({ now, limits })).limits?.sync;
      // 5 s behind: x's first three are due, two of them with room; nothing else is ready.
      expect(await at(t0 + 5_000)).toEqual({
        heldBack: { ...none, keyConcurrency: 1 },
        busiestKeys: [{ key: "x", ready: 3, active: 0 }],
      });
      expect(await at(t0 + 10_000)).toEqual({
        heldBack: { ...none, keyConcurrency: 4 },
        busiestKeys: [{ key: "x", ready: 6, active: 0 }],
      });
      // A claim takes two of x's and the one without a key; x's others wait (a store may set them
      // aside until x has room), and are still judged by the stats' now.
      expect(await takeable(queue, "sync")).toBe(3);
      expect(await at(t0 + 5_000)).toEqual({
        heldBack: { ...none, keyConcurrency: 1 },
        busiestKeys: [{ key: "x", ready: 1, active: 2 }],
      });
      expect(await at(t0 + 10_000)).toEqual({
        heldBack: { ...none, keyConcurrency: 4 },
        busiestKeys: [{ key: "x", ready: 4, active: 2 }],
      });
    });

    it("counts a job held by order behind an earlier job of its key that is blocked", async () => {
      const { queue } = await backend.setup();
      queue.register(ledger);
      const parent = await queue.enqueue("setup", {}, { delayMs: 60_000 });
      await queue.enqueue(ledger, { n: 1 }, { key: "a", dependsOn: [parent.id] });
      await queue.enqueue(ledger, { n: 2 }, { key: "a" });
      expect((await heldOf(queue, "ledger")).heldBack).toEqual({ ...none, order: 1 });
      expect(await takeable(queue, "ledger")).toBe(0);
    });

    it("counts jobs beyond a key's room under keyConcurrency", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      for (let i = 0; i < 5; i++) await queue.enqueue(sync, {}, { key: "x" });
      await clock.advance(1); // x's jobs come first in claim order (runAt)
      await queue.enqueue(sync, {}, { key: "y" });
      await queue.enqueue(sync, {});
      expect((await heldOf(queue, "sync")).heldBack).toEqual({ ...none, keyConcurrency: 3 });
      expect(await queue.lease({ limit: 1, types: ["sync"] })).toHaveLength(1);
      // x: one running, four ready, room for one more.
      const stats = await heldOf(queue, "sync");
      expect(stats.heldBack).toEqual({ ...none, keyConcurrency: 3 });
      expect(stats.busiestKeys).toEqual([
        { key: "x", ready: 4, active: 1 },
        { key: "y", ready: 1, active: 0 },
      ]);
      expect(await takeable(queue, "sync")).toBe(3);
      expect((await heldOf(queue, "sync")).heldBack).toEqual({ ...none, keyConcurrency: 3 });
    });

    it("counts jobs beyond the room in a rate limit's window, and none once it opens", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(partner, perKey);
      await queue.enqueueMany(
        partner,
        Array.from({ length: 5 }, (_, i) => ({ i })),
      );
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 2 });
      expect(await queue.lease({ limit: 2, types: ["partner"] })).toHaveLength(2);
      await clock.advance(500);
      // Two starts in the window, three ready: room for one.
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 2 });
      expect(await takeable(queue, "partner")).toBe(1);
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 2 });
      await clock.advance(500);
      // The two starts of t = 0 left the window.
      expect((await heldOf(queue, "partner")).heldBack).toEqual(none);

      for (const key of ["a", "a", "a", "b"]) await queue.enqueue(perKey, {}, { key });
      expect((await heldOf(queue, "per-key")).heldBack).toEqual({ ...none, rateLimit: 2 });
      expect(await takeable(queue, "per-key")).toBe(2);
      expect((await heldOf(queue, "per-key")).heldBack).toEqual({ ...none, rateLimit: 2 });
    });

    it("counts each job once, under order, then the key's cap, then the rate limits", async () => {
      const { queue } = await backend.setup();
      const all = defineJob({
        type: "all-rules",
        ordered: true,
        keyConcurrency: 1,
        rateLimit: { limit: 2, periodMs: 1_000 },
        handler: async () => null,
      });
      const capped = defineJob({
        type: "capped",
        keyConcurrency: 3,
        keyRateLimit: { limit: 2, periodMs: 1_000 },
        rateLimit: { limit: 10, periodMs: 1_000 },
        handler: async () => null,
      });
      queue.register(all, capped);
      for (const key of ["a", "a", "a", "b", "c"]) await queue.enqueue(all, {}, { key });
      await queue.enqueue(all, {});
      await queue.enqueue(all, {});
      // a2, a3 wait for a1; the heads a1, b1, c1 and two without a key compete for 2 starts.
      expect((await heldOf(queue, "all-rules")).heldBack).toEqual({ ...none, order: 2, rateLimit: 3 });
      expect(await takeable(queue, "all-rules")).toBe(2);

      for (let i = 0; i < 5; i++) await queue.enqueue(capped, {}, { key: "k" });
      // Room for 3 running, of which the key's window lets 2 start.
      expect((await heldOf(queue, "capped")).heldBack).toEqual({ ...none, keyConcurrency: 2, rateLimit: 1 });
      expect(await takeable(queue, "capped")).toBe(2);
    });

    it("counts only ready jobs: not scheduled, expired or in a paused queue", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(partner);
      await queue.enqueueMany(
        partner,
        Array.from({ length: 4 }, (_, i) => ({ i })),
        { delayMs: 1_000 },
      );
      await queue.enqueueMany(
        partner,
        Array.from({ length: 4 }, (_, i) => ({ i })),
        { queue: "slow" },
      );
      await queue.enqueueMany(
        partner,
        Array.from({ length: 4 }, (_, i) => ({ i })),
        { expiresInMs: 500 },
      );
      await queue.pauseQueue("slow");
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 1 });
      await clock.advance(500);
      expect((await heldOf(queue, "partner")).heldBack).toEqual(none);
      await clock.advance(500);
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 1 });
      await queue.resumeQueue("slow");
      expect((await heldOf(queue, "partner")).heldBack).toEqual({ ...none, rateLimit: 5 });
    });

    it("lists the busiest keys by ready plus running jobs, at most ten, ties by key", async () => {
      const { queue } = await backend.setup();
      queue.register(sync);
      for (let k = 0; k < 12; k++) {
        for (let i = 0; i <= k % 4; i++)
          await queue.enqueue(sync, {}, { key: `k${String(k).padStart(2, "0")}` });
      }
      const stats = await heldOf(queue, "sync");
      expect(stats.busiestKeys).toEqual([
        { key: "k03", ready: 4, active: 0 },
        { key: "k07", ready: 4, active: 0 },
        { key: "k11", ready: 4, active: 0 },
        { key: "k02", ready: 3, active: 0 },
        { key: "k06", ready: 3, active: 0 },
        { key: "k10", ready: 3, active: 0 },
        { key: "k01", ready: 2, active: 0 },
        { key: "k05", ready: 2, active: 0 },
        { key: "k09", ready: 2, active: 0 },
        { key: "k00", ready: 1, active: 0 },
      ]);
      expect(stats.heldBack).toEqual({ ...none, keyConcurrency: 2 * 3 + 1 * 3 });
    });

    it("reports only types with rules, and an empty entry for one with nothing ready", async () => {
      const { queue } = await backend.setup();
      queue.register(partner, defineJob({ type: "plain", handler: async () => null }));
      await queue.enqueue("plain", {});
      const stats = await queue.stats();
      expect(Object.keys(stats.limits)).toEqual(["partner"]);
      expect(stats.limits.partner).toEqual({ heldBack: none, busiestKeys: [] });
    });

    it("takes any type and key name as a name: toString, hasOwnProperty", async () => {
      const { queue } = await backend.setup();
      queue.register(defineJob({ type: "toString", keyConcurrency: 1, handler: async () => null }));
      for (const key of ["hasOwnProperty", "hasOwnProperty", "valueOf"])
        await queue.enqueue("toString", {}, { key });
      const stats = await queue.stats();
      expect(Object.keys(stats.limits)).toEqual(["toString"]);
      expect(stats.limits.toString).toEqual({
        heldBack: { ...none, keyConcurrency: 1 },
        busiestKeys: [
          { key: "hasOwnProperty", ready: 2, active: 0 },
          { key: "valueOf", ready: 1, active: 0 },
        ],
      });
      expect(Object.getPrototypeOf(stats.limits)).toBeNull();
    });

    it("reads at most sampleLimit ready jobs per type, in claim order, and says so", async () => {
      const { queue, store, clock } = await backend.setup();
      for (let i = 0; i < 3; i++) await queue.enqueue("t", {}, { key: "low", queue: "q1" });
      for (let i = 0; i < 2; i++) await queue.enqueue("t", {}, { key: "high", queue: "q2", priority: 5 });
      await clock.advance(1);
      await queue.enqueue("t", {}, { key: "early", queue: "q1", priority: 5, runAt: clock.now() - 10 });
      const rateLimits = Object.assign(Object.create(null), { t: { limit: 1, periodMs: 1_000 } });
      const limits = { types: ["t"], rateLimits, sampleLimit: 3, topKeys: 5 };
      const stats = await store.stats({ now: clock.now(), limits });
      // Claim order across queues: priority 5 first (early's runAt first), then priority 0.
      expect(stats.limits!.t).toEqual({
        heldBack: { rateLimit: 2, keyConcurrency: 0, order: 0, exact: false },
        busiestKeys: [
          { key: "high", ready: 2, active: 0 },
          { key: "early", ready: 1, active: 0 },
        ],
      });
      const all = await store.stats({ now: clock.now(), limits: { ...limits, sampleLimit: 6 } });
      expect(all.limits!.t!.heldBack).toEqual({ rateLimit: 5, keyConcurrency: 0, order: 0, exact: true });
    });
  });
}
