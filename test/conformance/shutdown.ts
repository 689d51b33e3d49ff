/**
 * Graceful shutdown (DESIGN.md, worker runtime): `close()` stops claiming, lets running jobs finish
 * within the grace period, then aborts the rest and releases them to pending without using up an
 * attempt (at-most-once jobs go to `dead`).
 */
import { once } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { trackHeartbeats } from "./heartbeats.js";

/** A promise and its resolver. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export function exerciseShutdown(backend: Backend): void {
  describe("shutdown", () => {
    it("stops claiming, finishes jobs within grace, releases the rest after grace and kills at-most-once ones", async () => {
      const { queue, clock } = await backend.setup();
      const signals = new Map<string, AbortSignal>();
      const started = { quick: deferred(), slow: deferred(), once: deferred() };
      const quickGate = deferred();
      let lateRuns = 0;

      const quick = defineJob({
        type: "quick",
        handler: async (_p: unknown, ctx) => {
          signals.set("quick", ctx.signal);
          started.quick.resolve();
          await quickGate.promise;
          return "quick done";
        },
      });
      const slow = defineJob({
        type: "slow",
        maxAttempts: 1,
        handler: async (_p: unknown, ctx) => {
          if (ctx.attempt > 1) return `slow done on attempt ${ctx.attempt}`;
          signals.set("slow", ctx.signal);
          started.slow.resolve();
          await once(ctx.signal, "abort");
          return "ignored";
        },
      });
      const onceOnly = defineJob({
        type: "once-only",
        delivery: "at_most_once",
        handler: async (_p: unknown, ctx) => {
          signals.set("once", ctx.signal);
          started.once.resolve();
          await once(ctx.signal, "abort");
          return "ignored";
        },
      });
      const late = defineJob({
        type: "late",
        handler: async () => {
          lateRuns++;
          return null;
        },
      });
      const jobs = [quick, slow, onceOnly, late];

      const q = await queue.enqueue(quick, {});
      const s = await queue.enqueue(slow, {});
      const o = await queue.enqueue(onceOnly, {});
      const worker = new Worker(queue, { jobs, concurrency: 5 });
      const completed: Job[] = [];
      worker.on("completed", (j) => completed.push(j));
      await worker.start();
      await Promise.all([started.quick.promise, started.slow.promise, started.once.promise]);

      let closed = false;
      const closing = worker.close({ graceMs: 5000 });
      void closing.then(() => {
        closed = true;
      });
      // Closing again is harmless: the same shutdown.
      expect(worker.close({ graceMs: 1 })).toBe(closing);

      // A job enqueued after close began is not run, whatever the clock does.
      const l = await queue.enqueue(late, {});

      // A job that finishes within grace completes.
      const quickDone = once(worker, "completed");
      quickGate.resolve();
      expect(((await quickDone) as [Job])[0].id).toBe(q.id);
      await clock.advance(4999);
      expect(closed).toBe(false);
      expect((await queue.get(s.id))?.state).toBe("active");
      expect(signals.get("slow")?.aborted).toBe(false);

      // Grace runs out: the rest are aborted and released (or killed) at once.
      await clock.advance(1);
      await closing;
      expect(closed).toBe(true);
      expect(signals.get("slow")?.aborted).toBe(true);
      expect(signals.get("once")?.aborted).toBe(true);
      expect(signals.get("quick")?.aborted).toBe(false);
      expect(completed.map((j) => j.id)).toEqual([q.id]);

      expect(await queue.get(q.id)).toMatchObject({ state: "completed", result: "quick done" });
      const released = await queue.get(s.id);
      expect(released).toMatchObject({ state: "pending", attempt: 1, leaseExpiresAt: null, workerId: null });
      expect(released!.runAt.getTime()).toBeLessThanOrEqual(clock.now());
      expect(released!.errors).toEqual([]);
      // The released attempt was not used up: one attempt is still left of maxAttempts 1.
      expect(released!.maxAttempts - released!.attempt).toBe(1);
      const dead = await queue.get(o.id);
      expect(dead).toMatchObject({ state: "dead", attempt: 1 });
      expect(dead!.errors.map((e) => e.kind)).toEqual(["shutdown"]);
      expect(await queue.get(l.id)).toMatchObject({ state: "pending", attempt: 0 });

      // A closed worker claims nothing more; double close after the fact is harmless.
      await clock.advance(60_000);
      await worker.close();
      expect(lateRuns).toBe(0);
      expect((await queue.get(l.id))?.state).toBe("pending");
      expect(clock.pendingTimers).toBe(0);

      // The released job runs again and completes; the at-most-once one never does.
      const next = await drain(queue, { jobs });
      expect(next.jobs.map((j) => j.id).sort()).toEqual([s.id, l.id].sort());
      expect(await queue.get(s.id)).toMatchObject({
        state: "completed",
        attempt: 2,
        result: "slow done on attempt 2",
      });
      expect((await queue.get(o.id))?.state).toBe("dead");
      expect(lateRuns).toBe(1);
    });

    it("resolves as soon as running jobs finish within grace, without waiting out the grace period", async () => {
      const { queue, clock } = await backend.setup();
      const gate = deferred();
      const started = deferred();
      const job = defineJob({
        type: "job",
        handler: async () => {
          started.resolve();
          await gate.promise;
          return 7;
        },
      });
      const j = await queue.enqueue(job, {});
      const worker = new Worker(queue, { jobs: [job] });
      await worker.start();
      await started.promise;
      const at = clock.now();
      const closing = worker.close({ graceMs: 60_000 });
      gate.resolve();
      await closing;
      expect(clock.now()).toBe(at);
      expect(await queue.get(j.id)).toMatchObject({ state: "completed", result: 7 });
      // Every timer the worker set (polls, heartbeats, sweeps, the grace period) is gone.
      expect(clock.pendingTimers).toBe(0);
    });

    it("keeps heartbeating running jobs through the grace period, so no one else recovers them", async () => {
      const { queue, clock, connect } = await backend.setup();
      const sweeper = await connect();
      const gate = deferred();
      const started = deferred();
      const job = defineJob({
        type: "job",
        handler: async () => {
          started.resolve();
          await gate.promise;
          return "finished in grace";
        },
      });
      const j = await queue.enqueue(job, {});
      const worker = new Worker(queue, { jobs: [job], leaseMs: 3000, heartbeatMs: 1000 });
      const heartbeatsLanded = trackHeartbeats(queue.store);
      await worker.start();
      await started.promise;
      const closing = worker.close({ graceMs: 30_000 });
      // Twenty seconds into the grace period, far past the 3 s lease, another process sweeps.
      for (let t = 0; t < 20; t++) {
        await clock.advance(1000);
        await heartbeatsLanded();
        expect((await sweeper.sweep()).recovered).toBe(0);
      }
      expect(await queue.get(j.id)).toMatchObject({ state: "active", attempt: 1 });
      gate.resolve();
      await closing;
      expect(await queue.get(j.id)).toMatchObject({
        state: "completed",
        attempt: 1,
        result: "finished in grace",
      });
    });

    it("gives back a job claimed while closing before close resolves, so the store may close next", async () => {
      const { queue, connect } = await backend.setup();
      let runs = 0;
      const job = defineJob({
        type: "job",
        delivery: "at_most_once",
        handler: async () => {
          runs++;
          return "ran";
        },
      });
      const worker = new Worker(queue, { jobs: [job] });
      await worker.start();
      // The enqueue wakes the idle worker, whose claim is under way when close begins. The claim
      // is held until then: a wake-up that travels over the network (pub/sub, NOTIFY) could
      // otherwise let it finish, and the job run, before the test gets to close.
      const claimStarted = deferred();
      const closeBegun = deferred();
      const claim = queue.store.claim.bind(queue.store);
      const held = vi.spyOn(queue.store, "claim").mockImplementation(async (params) => {
        claimStarted.resolve();
        await closeBegun.promise;
        return claim(params);
      });
      const j = await queue.enqueue(job, {});
      await claimStarted.promise;
      const closed = worker.close({ graceMs: 10_000 });
      closeBegun.resolve();
      await closed;
      held.mockRestore();
      await queue.store.close();

      const other = await connect();
      const after = await other.get(j.id);
      expect(after?.state).toBe("pending");
      // Its five attempts are all still to come.
      expect(after!.maxAttempts - after!.attempt).toBe(5);
      expect(runs).toBe(0);
      // It never started, so even at-most-once it runs now.
      expect(await drain(other, { jobs: [job] })).toMatchObject({ completed: 1, dead: 0 });
      expect(await other.get(j.id)).toMatchObject({ state: "completed", result: "ran" });
    });

    it("closes an idle or never-started worker at once, and again harmlessly", async () => {
      const { queue, clock } = await backend.setup();
      const job = defineJob({ type: "job", handler: async () => null });
      const idle = new Worker(queue, { jobs: [job] });
      await idle.start();
      await idle.close({ graceMs: 10_000 });
      await idle.close({ graceMs: 10_000 });
      expect(clock.pendingTimers).toBe(0);

      const never = new Worker(queue, { jobs: [job] });
      await never.close();
      await never.close();
      // A closed worker cannot be started again.
      await expect(never.start()).rejects.toMatchObject({ code: "INVALID_STATE" });
      const j = await queue.enqueue(job, {});
      expect(await queue.get(j.id)).toMatchObject({ state: "pending", attempt: 0 });
    });

    it("aborts at once a job cancelled through the worker's own Queue during the grace period", async () => {
      const { queue, clock } = await backend.setup();
      const started = deferred<AbortSignal>();
      const job = defineJob({
        type: "job",
        handler: async (_p: unknown, ctx) => {
          started.resolve(ctx.signal);
          await once(ctx.signal, "abort");
          return "ignored";
        },
      });
      const j = await queue.enqueue(job, {});
      const worker = new Worker(queue, { jobs: [job], leaseMs: 30_000 });
      const cancelled: Job[] = [];
      worker.on("cancelled", (c) => cancelled.push(c));
      await worker.start();
      const signal = await started.promise;
      const at = clock.now();
      const closing = worker.close({ graceMs: 60_000 });
      // As before close: the Queue's cancel reaches this process's worker before it returns, with
      // no heartbeat (10 s away) nor the grace period's end (60 s) needed.
      await queue.cancel(j.id);
      expect(signal.aborted).toBe(true);
      expect(cancelled.map((c) => c.id)).toEqual([j.id]);
      // Nothing is left running: close resolves without the clock moving.
      await closing;
      expect(clock.now()).toBe(at);
      expect(clock.pendingTimers).toBe(0);
      expect(await queue.get(j.id)).toMatchObject({ state: "cancelled", attempt: 1, result: null });
    });

    it("waits for the first sweep of a start() not awaited, so the store can be closed right after", async () => {
      const { queue, clock, store } = await backend.setup();
      const job = defineJob({ type: "swept", handler: async () => null });
      const sweepBegun = deferred();
      const gate = deferred();
      let sweepEnded = false;
      const sweep = queue.sweep.bind(queue);
      const held = vi.spyOn(queue, "sweep").mockImplementation(async () => {
        sweepBegun.resolve();
        await gate.promise;
        const result = await sweep();
        sweepEnded = true;
        return result;
      });
      const worker = new Worker(queue, { jobs: [job] });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      // README: start() resolves once the first claim is made; a program may close before that.
      const starting = worker.start();
      await sweepBegun.promise;
      let closed = false;
      const closing = worker.close({ graceMs: 0 }).then(() => {
        closed = true;
      });
      await clock.advance(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed).toBe(false);
      gate.resolve();
      await closing;
      expect(sweepEnded).toBe(true);
      held.mockRestore();
      // The caller closes the store next: nothing the worker began touches it afterwards.
      await store.close();
      await starting;
      expect(errors).toEqual([]);
      expect(clock.pendingTimers).toBe(0);
    });

    it("waits for a maintenance sweep under way, so the store can be closed right after", async () => {
      const { queue, clock, store } = await backend.setup();
      const job = defineJob({ type: "swept", handler: async () => null });
      const worker = new Worker(queue, { jobs: [job], sweepIntervalMs: 1000 });
      await worker.start();
      const gate = deferred();
      const due = vi.spyOn(store, "dueSchedules").mockImplementation(async () => {
        await gate.promise;
        return [];
      });
      await clock.advance(1000);
      await vi.waitFor(() => expect(due).toHaveBeenCalled());
      let closed = false;
      const closing = worker.close({ graceMs: 0 }).then(() => {
        closed = true;
      });
      await clock.advance(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed).toBe(false);
      gate.resolve();
      await closing;
      expect(closed).toBe(true);
      due.mockRestore();
    });
  });
}
