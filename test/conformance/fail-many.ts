/**
 * Semantic 2 and 4 at the seam, batched: `Store.failMany` applies each item as a lone fail would
 * (fencing, retry or dead, the sweeper's lease check) and answers per item, in order. An attempt
 * named twice in one batch is failed once: the first item wins, the second is stale.
 */
import { describe, expect, it, vi } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { NonRetryableError } from "../../src/errors.js";
import type { Job, JobErrorEntry } from "../../src/job.js";
import type { FailItem } from "../../src/store/store.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

const task = defineJob({ type: "task", handler: async () => null });

const entry = (attempt: number, at: number, message: string): JobErrorEntry => ({
  attempt,
  message,
  name: "Error",
  at,
});

export function exerciseFailMany(backend: Backend): void {
  describe("failMany", () => {
    it("applies a mixed batch item by item: retries, deaths, stale, unknown and repeated attempts, expired and live leases", async () => {
      // The lease API's own maintenance would recover `expired` before the batch names it.
      const { queue, store, clock } = await backend.setup({ maintenance: false });
      // `expired` is leased first, with a short lease that has run out by the time of the batch.
      const expired = await queue.enqueue(task, { n: "expired" });
      const [expiredLease] = await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      const retried = await queue.enqueue(task, { n: "retried" });
      const killed = await queue.enqueue(task, { n: "killed" });
      const staleFirst = await queue.enqueue(task, { n: "staleFirst" });
      const live = await queue.enqueue(task, { n: "live" });
      const untouched = await queue.enqueue(task, { n: "untouched" });
      const leased = await queue.lease({ limit: 5, leaseMs: 30_000 });
      expect(leased.map((j) => j.id).sort()).toEqual(
        [retried.id, killed.id, staleFirst.id, live.id, untouched.id].sort(),
      );
      expect(expiredLease).toMatchObject({ id: expired.id, attempt: 1 });
      const liveBefore = await store.get({ id: live.id });
      const untouchedBefore = await store.get({ id: untouched.id });

      await clock.advance(10);
      const now = clock.now();
      const items: FailItem[] = [
        {
          id: retried.id,
          attempt: 1,
          error: entry(1, now, "retry me"),
          retryAt: now + 5000,
          retryQueue: "later",
        },
        { id: killed.id, attempt: 1, error: entry(1, now, "kill me"), retryAt: null },
        // Never handed out: stale, and it does not stop the current attempt's item after it.
        { id: staleFirst.id, attempt: 2, error: entry(2, now, "stale"), retryAt: now },
        { id: "no-such-job", attempt: 1, error: entry(1, now, "ghost"), retryAt: now },
        { id: staleFirst.id, attempt: 1, error: entry(1, now, "current"), retryAt: null },
        // The same attempts again: the first items already failed them.
        { id: retried.id, attempt: 1, error: entry(1, now, "again"), retryAt: null },
        { id: killed.id, attempt: 1, error: entry(1, now, "again"), retryAt: now },
        // The sweeper's compare-and-set: a lease that has not run out is left alone…
        { id: live.id, attempt: 1, error: entry(1, now, "not expired"), retryAt: now, leaseExpired: true },
        // …and one that has is recovered, and counted as a lease expiration.
        {
          id: expired.id,
          attempt: 1,
          error: { ...entry(1, now, "lease expired"), kind: "lease_expired" },
          retryAt: now,
          leaseExpired: true,
        },
      ];
      expect(await store.failMany({ now, items })).toEqual([
        "pending",
        "dead",
        null,
        null,
        "dead",
        null,
        null,
        null,
        "pending",
      ]);

      expect(await store.get({ id: retried.id })).toMatchObject({
        state: "pending",
        queue: "later",
        attempt: 1,
        runAt: now + 5000,
        leaseExpiresAt: null,
        workerId: null,
        leaseExpirations: 0,
        finishedAt: null,
      });
      expect(await queue.get(retried.id)).toMatchObject({ errors: [items[0]!.error] });
      expect(await store.get({ id: killed.id })).toMatchObject({
        state: "dead",
        queue: "default",
        attempt: 1,
        finishedAt: now,
        leaseExpiresAt: null,
        workerId: null,
        leaseExpirations: 0,
      });
      expect(await queue.get(killed.id)).toMatchObject({ errors: [items[1]!.error] });
      expect(await store.get({ id: staleFirst.id })).toMatchObject({
        state: "dead",
        attempt: 1,
        finishedAt: now,
      });
      expect(await queue.get(staleFirst.id)).toMatchObject({ errors: [items[4]!.error] });
      expect(await store.get({ id: "no-such-job" })).toBeNull();
      expect(await store.get({ id: live.id })).toEqual(liveBefore);
      expect(await store.get({ id: untouched.id })).toEqual(untouchedBefore);
      expect(await store.get({ id: expired.id })).toMatchObject({
        state: "pending",
        attempt: 1,
        runAt: now,
        leaseExpiresAt: null,
        leaseExpirations: 1,
      });
      expect(await queue.get(expired.id)).toMatchObject({ errors: [items[8]!.error] });

      // The dead ones are finished history; the counts agree with the rows.
      const dead = await queue.list({ state: "dead" });
      expect(dead.jobs.map((j) => j.id).sort()).toEqual([killed.id, staleFirst.id].sort());
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ pending: 2, active: 2, dead: 2, completed: 0 });
      expect(stats.queues.later).toEqual({ pending: 1 });
      expect(stats.retrying).toBe(2);
      expect(stats.scheduled).toBe(1);

      // The retry due now is claimable at once; the later one in its queue when due.
      const [again] = await queue.lease({ queues: ["default", "later"] });
      expect(again).toMatchObject({ id: expired.id, attempt: 2 });
      expect(await queue.lease({ queues: ["default", "later"] })).toEqual([]);
      await clock.advance(5000);
      const [later] = await queue.lease({ queues: ["later"] });
      expect(later).toMatchObject({ id: retried.id, attempt: 2, queue: "later" });
    });

    it("answers an empty batch with no results", async () => {
      const { store, clock } = await backend.setup();
      expect(await store.failMany({ now: clock.now(), items: [] })).toEqual([]);
    });

    it("fails a large batch in order, each item on its own terms", async () => {
      const { queue, store, clock } = await backend.setup();
      const jobs = await queue.enqueueMany(
        task,
        Array.from({ length: 300 }, (_, i) => ({ i })),
      );
      const leased = await queue.lease({ limit: 300 });
      expect(leased).toHaveLength(300);
      const attemptOf = new Map(leased.map((j) => [j.id, j.attempt]));
      const now = clock.now();
      // Every third dead, every fifth stale (an attempt never handed out), the rest retried.
      const items: FailItem[] = jobs.map((job, i) => ({
        id: job.id,
        attempt: attemptOf.get(job.id)! + (i % 5 === 4 ? 1 : 0),
        error: entry(1, now, `failure ${i}`),
        retryAt: i % 3 === 0 ? null : now + i,
      }));
      const results = await store.failMany({ now, items });
      const expected = items.map((_, i) => (i % 5 === 4 ? null : i % 3 === 0 ? "dead" : "pending"));
      expect(results).toEqual(expected);
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({
        dead: expected.filter((r) => r === "dead").length,
        pending: expected.filter((r) => r === "pending").length,
        active: expected.filter((r) => r === null).length,
      });
      for (const i of [0, 1, 4, 298, 299]) {
        const stored = await queue.get(jobs[i]!.id);
        expect(stored!.state).toBe(expected[i] ?? "active");
        expect(stored!.errors.map((e) => e.message)).toEqual(expected[i] ? [`failure ${i}`] : []);
        if (expected[i] === "pending") expect(stored!.runAt.getTime()).toBe(now + i);
      }
    });

    it("lets exactly one of two racing batches fail each attempt, across connections", async () => {
      const { queue, store, clock, connect } = await backend.setup();
      const other = await connect();
      const jobs = await queue.enqueueMany(
        task,
        Array.from({ length: 40 }, (_, i) => ({ i })),
      );
      await queue.lease({ limit: 40 });
      const now = clock.now();
      const batch = (by: string, dead: boolean): FailItem[] =>
        jobs.map((job) => ({
          id: job.id,
          attempt: 1,
          error: entry(1, now, by),
          retryAt: dead ? null : now + 1000,
        }));
      // Opposite orders, so each batch meets rows the other has already taken.
      const [a, b] = await Promise.all([
        store.failMany({ now, items: batch("a", false) }),
        other.store.failMany({ now, items: batch("b", true).reverse() }),
      ]);
      const bInOrder = [...b].reverse();
      for (const [i, job] of jobs.entries()) {
        const winners = [a[i], bInOrder[i]].filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        const stored = await queue.get(job.id);
        expect(stored!.state).toBe(winners[0]);
        expect(stored!.errors.map((e) => e.message)).toEqual([a[i] !== null ? "a" : "b"]);
      }
      const stats = await queue.stats();
      expect(stats.states.active).toBe(0);
      expect(stats.states.pending + stats.states.dead).toBe(40);
    });

    it("lets a Worker record the failures of one turn in one failMany, with each job's events", async () => {
      const { queue, store, clock } = await backend.setup();
      const flaky = defineJob({
        type: "flaky",
        backoff: { type: "fixed", delayMs: 1000 },
        handler: async (payload: { i: number }): Promise<never> => {
          throw payload.i % 2 === 0
            ? new Error(`retry ${payload.i}`)
            : new NonRetryableError(`give up ${payload.i}`);
        },
      });
      const jobs = await queue.enqueueMany(
        flaky,
        Array.from({ length: 8 }, (_, i) => ({ i })),
      );
      const failMany = vi.spyOn(store, "failMany");
      const worker = new Worker(queue, { jobs: [flaky], concurrency: 8, maintenance: false });
      const fromWorker: string[] = [];
      const fromQueue: string[] = [];
      for (const event of ["failed", "retrying", "dead"] as const) {
        worker.on(event, (job: Job, error: unknown) =>
          fromWorker.push(`${event} ${job.state} ${(error as Error).message}`),
        );
        queue.on(event, (job: Job, error: unknown) =>
          fromQueue.push(`${event} ${job.state} ${(error as Error).message}`),
        );
      }
      await worker.start();
      await vi.waitFor(() => expect(fromWorker).toHaveLength(16), { interval: 2 });
      // All eight handlers threw in the same turn: one write.
      expect(failMany).toHaveBeenCalledTimes(1);
      expect(failMany.mock.calls[0]![0].items.map((i) => i.id).sort()).toEqual(jobs.map((j) => j.id).sort());
      const expected = jobs.flatMap((_, i) =>
        i % 2 === 0
          ? [`failed pending retry ${i}`, `retrying pending retry ${i}`]
          : [`failed dead give up ${i}`, `dead dead give up ${i}`],
      );
      expect([...fromWorker].sort()).toEqual([...expected].sort());
      expect([...fromQueue].sort()).toEqual([...expected].sort());
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ pending: 4, dead: 4, active: 0 });
      const closed = worker.close({ graceMs: 0 });
      await clock.advance(0);
      await closed;
    });
  });
}
