/**
 * Semantic 2, fencing: complete, fail, heartbeat and checkpoint carry the attempt they were given.
 * A stale one returns false and changes nothing; exactly one complete per attempt returns true.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { AttemptRef } from "../../src/store/store.js";
import type { Backend } from "./backend.js";

const task = defineJob({
  type: "task",
  backoff: { type: "fixed", delayMs: 1000 },
  handler: async () => null,
});

/** Every kind of report from `stale` is refused, and the stored job is exactly as it was. */
async function expectStaleReportsIgnored(queue: Queue, stale: Job | AttemptRef): Promise<void> {
  const before = await queue.get(stale.id);
  expect(await queue.complete(stale, { late: true })).toBe(false);
  expect(await queue.fail(stale, new Error("late failure"))).toBe(false);
  expect(await queue.fail(stale, new Error("late failure"), { retryable: false })).toBe(false);
  expect(await queue.heartbeat(stale, { leaseMs: 3_600_000 })).toBe(false);
  expect(await queue.checkpoint(stale, { late: true })).toBe(false);
  expect(await queue.get(stale.id)).toEqual(before);
}

export function exerciseFencing(backend: Backend): void {
  describe("fencing", () => {
    it("refuses every report from an attempt whose lease expired, before and after the job is re-claimed", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, { n: 1 });
      const [first] = await queue.lease({ leaseMs: 1000, workerId: "slow" });
      expect(first!.attempt).toBe(1);
      expect(await queue.checkpoint(first!, { step: 1 })).toBe(true);

      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(1);
      // Pending again: attempt 1 is the stored attempt number, but it is no longer held.
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 1 });
      await expectStaleReportsIgnored(queue, first!);
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 1 });

      await clock.advance(1000);
      const [second] = await queue.lease({ leaseMs: 1000, workerId: "fast" });
      expect(second).toMatchObject({ id: job.id, attempt: 2, workerId: "fast" });
      await expectStaleReportsIgnored(queue, first!);
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 1 });

      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({
        state: "active",
        attempt: 2,
        workerId: "fast",
        checkpoint: { step: 1 },
      });
      expect(stored!.errors).toHaveLength(1);
      expect(stored!.leaseExpiresAt!.getTime()).toBe(clock.now() + 1000);

      // The current attempt is unaffected by all of that.
      expect(await queue.complete(second!, { by: "fast" })).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({
        state: "completed",
        attempt: 2,
        result: { by: "fast" },
      });
    });

    it("refuses every report from an attempt that was cancelled", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [leased] = await queue.lease();
      expect(await queue.checkpoint(leased!, { step: 1 })).toBe(true);
      await queue.cancel(job.id);

      await expectStaleReportsIgnored(queue, leased!);
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 1 });
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "cancelled", attempt: 1, result: null, checkpoint: { step: 1 } });
      expect(stored!.errors).toEqual([]);
    });

    it("refuses every report from an attempt that already completed, including a second complete", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [leased] = await queue.lease();
      expect(await queue.complete(leased!, { first: true })).toBe(true);

      await expectStaleReportsIgnored(queue, leased!);
      expect(await queue.complete(leased!, { second: true })).toBe(false);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({
        state: "completed",
        attempt: 1,
        result: { first: true },
        checkpoint: null,
      });
      expect(stored!.errors).toEqual([]);
    });

    it("refuses every report from an attempt that already failed for good", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [leased] = await queue.lease();
      expect(await queue.fail(leased!, new Error("fatal"), { retryable: false })).toBe(true);

      await expectStaleReportsIgnored(queue, leased!);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: 1, result: null });
      expect(stored!.errors.map((e) => e.message)).toEqual(["fatal"]);
    });

    it("refuses attempt numbers that were never handed out", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [first] = await queue.lease({ leaseMs: 1000 });
      expect(first!.attempt).toBe(1);
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 2 });
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 99 });
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1 });

      // After a second claim, the attempt after it is still unknown.
      await clock.advance(1000);
      await queue.sweep();
      await clock.advance(1000);
      const [second] = await queue.lease();
      expect(second!.attempt).toBe(2);
      await expectStaleReportsIgnored(queue, { id: job.id, attempt: 3 });
      expect(await queue.heartbeat(second!)).toBe(true);
    });

    it("returns false for reports about a job that does not exist", async () => {
      const { queue } = await backend.setup();
      const ghost = { id: "no-such-job", attempt: 1 };
      expect(await queue.complete(ghost, 1)).toBe(false);
      expect(await queue.fail(ghost, new Error("x"))).toBe(false);
      expect(await queue.heartbeat(ghost)).toBe(false);
      expect(await queue.checkpoint(ghost, 1)).toBe(false);
      expect(await queue.get(ghost.id)).toBeNull();
    });

    it("lets exactly one of many concurrent completes of one attempt succeed, across connections", async () => {
      const { queue, connect } = await backend.setup();
      const others = await Promise.all([connect(), connect(), connect(), connect(), connect()]);
      const queues = [queue, ...others];
      for (let round = 0; round < 5; round++) {
        const job = await queue.enqueue(task, { round });
        const [leased] = await queue.lease();
        const ref = { id: job.id, attempt: leased!.attempt };
        // Each connection tries twice, all at once.
        const calls = queues.flatMap((q, i) => [
          q.complete(ref, { by: i, call: 0 }).then((ok) => ({ ok, by: i, call: 0 })),
          q.complete(ref, { by: i, call: 1 }).then((ok) => ({ ok, by: i, call: 1 })),
        ]);
        const outcomes = await Promise.all(calls);
        const winners = outcomes.filter((o) => o.ok);
        expect(winners).toHaveLength(1);
        const stored = await queue.get(job.id);
        expect(stored).toMatchObject({ state: "completed", attempt: 1 });
        expect(stored!.result).toEqual({ by: winners[0]!.by, call: winners[0]!.call });
      }
    });

    it("lets exactly one of racing completes and fails of one attempt succeed, and the store agrees with it", async () => {
      const { queue, connect } = await backend.setup();
      const others = await Promise.all([connect(), connect(), connect()]);
      const queues = [queue, ...others];
      for (let round = 0; round < 6; round++) {
        const job = await queue.enqueue(task, { round });
        const [leased] = await queue.lease();
        const ref = { id: job.id, attempt: leased!.attempt };
        const outcomes = await Promise.all(
          queues.flatMap((q, i) => [
            q.complete(ref, { by: i }).then((ok) => ({ ok, kind: "complete", by: i })),
            q.fail(leased!, new Error(`failed by ${i}`)).then((ok) => ({ ok, kind: "fail", by: i })),
          ]),
        );
        const winners = outcomes.filter((o) => o.ok);
        expect(winners).toHaveLength(1);
        const winner = winners[0]!;
        const stored = await queue.get(job.id);
        if (winner.kind === "complete") {
          expect(stored).toMatchObject({ state: "completed", result: { by: winner.by } });
          expect(stored!.errors).toEqual([]);
        } else {
          expect(stored).toMatchObject({ state: "pending", result: null, attempt: 1 });
          expect(stored!.errors.map((e) => e.message)).toEqual([`failed by ${winner.by}`]);
        }
      }
    });

    it("settles each item of one completion batch on its own: current, stale, named twice, with dependents, unknown", async () => {
      // Stores complete a batch of jobs nothing waits for in one pass and settle what it leaves
      // item by item (SQLite's completeLeaves, PostgreSQL's): every kind of leftover in one batch.
      const { queue, store, clock } = await backend.setup();
      const jobs = await queue.enqueueMany(task, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      const waiter = await queue.enqueue(task, { n: 5 }, { dependsOn: [jobs[3]!.id] });
      const leased = await queue.lease({ limit: 5, leaseMs: 1000 });
      expect(leased).toHaveLength(5);
      const by = new Map(leased.map((j) => [j.id, j]));
      const [a, b, c, d, e] = jobs.map((j) => by.get(j.id)!);
      // b's lease runs out and it is leased again: attempt 1 is stale, attempt 2 current.
      await clock.advance(1000);
      for (const j of [a!, c!, d!, e!]) expect(await queue.heartbeat(j, { leaseMs: 60_000 })).toBe(true);
      expect((await queue.sweep()).recovered).toBe(1);
      await clock.advance(2000);
      const [b2] = await queue.lease({ limit: 1, leaseMs: 60_000 });
      expect(b2!.id).toBe(b!.id);
      expect(await queue.complete(e!, "early")).toBe(true);
      const mixed = await store.completeMany({
        now: clock.now(),
        items: [
          { id: a!.id, attempt: a!.attempt, result: '"a"' },
          { id: b!.id, attempt: 1, result: '"stale"' },
          { id: d!.id, attempt: d!.attempt, result: '"d"' },
          { id: e!.id, attempt: e!.attempt, result: '"late"' },
          { id: "no-such-job", attempt: 1, result: "1" },
          { id: b2!.id, attempt: b2!.attempt, result: '"b"' },
        ],
      });
      expect(mixed).toEqual([true, false, true, false, false, true]);
      // The same attempt twice: the first report wins.
      const twice = await store.completeMany({
        now: clock.now(),
        items: [
          { id: c!.id, attempt: c!.attempt, result: '"c-first"' },
          { id: c!.id, attempt: c!.attempt, result: '"c-second"' },
        ],
      });
      expect(twice).toEqual([true, false]);
      const stored = await Promise.all([a, b, c, d, e].map((j) => queue.get(j!.id)));
      expect(stored.map((j) => [j!.state, j!.result])).toEqual([
        ["completed", "a"],
        ["completed", "b"],
        ["completed", "c-first"],
        ["completed", "d"],
        ["completed", "early"],
      ]);
      // d had a dependent: completing it made the waiter ready.
      expect((await queue.get(waiter.id))!.state).toBe("pending");
    });
  });
}
