/**
 * Semantic 10, cancel: a pending job can be cancelled, rescheduled or re-prioritised; cancelling an
 * active job aborts its handler's signal and its late result is ignored.
 */
import { once } from "node:events";
import { describe, expect, it, onTestFinished } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const noop = defineJob({ type: "noop", handler: async () => null });

function closeAfterTest(worker: Worker, clock: ManualClock): void {
  onTestFinished(async () => {
    const closed = worker.close({ graceMs: 0 });
    await clock.advance(0);
    await closed;
  });
}

/** A job type whose handler waits for its signal to abort, then returns a (late) result. */
function abortable() {
  const started: Array<(job: Job) => void> = [];
  const aborted: Array<(reason: unknown) => void> = [];
  const returned: Array<() => void> = [];
  const def = defineJob({
    type: "long-export",
    handler: async (_payload: unknown, ctx) => {
      const abort = once(ctx.signal, "abort");
      started.shift()?.(ctx.job);
      await abort;
      aborted.shift()?.(ctx.signal.reason);
      queueMicrotask(() => returned.shift()?.());
      return "late result";
    },
  });
  return {
    def,
    started: () => new Promise<Job>((resolve) => started.push(resolve)),
    aborted: () => new Promise<unknown>((resolve) => aborted.push(resolve)),
    returned: () => new Promise<void>((resolve) => returned.push(resolve)),
  };
}

export function exerciseCancel(backend: Backend): void {
  describe("cancel", () => {
    it("cancels a pending job: it is cancelled and never claimed", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const other = await queue.enqueue(noop, { other: true });
      const cancelled = await queue.cancel(job.id);
      expect(cancelled).toMatchObject({ id: job.id, state: "cancelled", attempt: 0 });
      expect(cancelled.finishedAt?.getTime()).toBe(clock.now());
      expect((await queue.get(job.id))?.state).toBe("cancelled");

      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([other.id]);
      await clock.advance(86_400_000);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      // Cancelling again returns it unchanged.
      expect((await queue.cancel(job.id)).state).toBe("cancelled");
    });

    it("reschedules a pending job later: it is not claimed until then", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue(noop, { n: "a" });
      const b = await queue.enqueue(noop, { n: "b" });
      const moved = await queue.reschedule(a.id, { delayMs: 60_000 });
      expect(moved.runAt.getTime()).toBe(clock.now() + 60_000);
      expect(moved.state).toBe("pending");

      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([b.id]);
      await clock.advance(59_999);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      await clock.advance(1);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([a.id]);
    });

    it("reschedules a pending job earlier: it is claimable at once", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {}, { delayMs: 3_600_000 });
      expect(await queue.lease()).toEqual([]);
      const moved = await queue.reschedule(job.id, { runAt: new Date(clock.now()) });
      expect(moved.runAt.getTime()).toBe(clock.now());
      expect((await queue.lease()).map((j) => j.id)).toEqual([job.id]);
    });

    it("re-prioritises a pending job, changing the claim order", async () => {
      const { queue, clock } = await backend.setup();
      const ids: string[] = [];
      for (const n of ["a", "b", "c"]) {
        ids.push((await queue.enqueue(noop, { n })).id);
        await clock.advance(1);
      }
      const [a, b, c] = ids as [string, string, string];
      expect((await queue.reschedule(c, { priority: 10 })).priority).toBe(10);
      expect((await queue.reschedule(a, { priority: -1 })).priority).toBe(-1);
      expect((await queue.lease({ limit: 3 })).map((j) => j.id)).toEqual([c, b, a]);
    });

    it("moves a pending job to another queue", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      expect((await queue.reschedule(job.id, { queue: "slow-lane" })).queue).toBe("slow-lane");
      expect(await queue.lease({ queues: ["default"] })).toEqual([]);
      expect((await queue.lease({ queues: ["slow-lane"] })).map((j) => j.id)).toEqual([job.id]);
    });

    it("refuses to reschedule or cancel a finished job (INVALID_STATE) or an unknown id (JOB_NOT_FOUND)", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease();
      // An active job cannot be rescheduled either.
      await refused(() => queue.reschedule(job.id, { delayMs: 1000 }), "INVALID_STATE");
      expect(await queue.complete(leased!, "done")).toBe(true);

      const e1 = await refused(() => queue.reschedule(job.id, { delayMs: 1000 }), "INVALID_STATE");
      expect(e1.details).toEqual({ state: "completed" });
      await refused(() => queue.reschedule(job.id, { priority: 5 }), "INVALID_STATE");
      await refused(() => queue.cancel(job.id), "INVALID_STATE");
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: "done", priority: 0 });

      await refused(() => queue.cancel("no-such-job"), "JOB_NOT_FOUND");
      await refused(() => queue.reschedule("no-such-job", { delayMs: 1000 }), "JOB_NOT_FOUND");
    });

    it("cancels a leased job: every later report of that attempt is stale and changes nothing", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease({ workerId: "custom-runner" });
      expect((await queue.cancel(job.id)).state).toBe("cancelled");
      expect(await queue.heartbeat(leased!)).toBe(false);
      expect(await queue.checkpoint(leased!, { step: 2 })).toBe(false);
      expect(await queue.complete(leased!, "late")).toBe(false);
      expect(await queue.fail(leased!, new Error("late failure"))).toBe(false);
      expect(await queue.release(leased!)).toBe(false);
      expect(await queue.get(job.id)).toMatchObject({
        state: "cancelled",
        result: null,
        errors: [],
        checkpoint: null,
      });
      expect(await queue.lease()).toEqual([]);
    });

    it("aborts the handler's signal when its active job is cancelled, and ignores its late result", async () => {
      const { queue, clock } = await backend.setup();
      const longJob = abortable();
      const worker = new Worker(queue, { jobs: [longJob.def, noop], concurrency: 1 });
      closeAfterTest(worker, clock);
      const completedEvents: Job[] = [];
      worker.on("completed", (j) => completedEvents.push(j));
      queue.on("completed", (j) => completedEvents.push(j));
      const cancelledEvents: Job[] = [];
      worker.on("cancelled", (j) => cancelledEvents.push(j));

      const started = longJob.started();
      const aborted = longJob.aborted();
      const returned = longJob.returned();
      const job = await queue.enqueue(longJob.def, {});
      await worker.start();
      const running = await started;
      expect(running).toMatchObject({ id: job.id, attempt: 1 });
      expect((await queue.get(job.id))?.state).toBe("active");

      const cancelled = await queue.cancel(job.id);
      expect(cancelled.state).toBe("cancelled");
      const reason = await aborted;
      expect(reason).toBeInstanceOf(Error);
      await returned;
      expect(cancelledEvents.map((j) => j.id)).toEqual([job.id]);

      // The late result changes nothing: a complete for that attempt is stale.
      expect(await queue.complete({ id: job.id, attempt: 1 }, "late result")).toBe(false);
      // The slot is free again: the next job runs and completes.
      const next = await queue.enqueue(noop, {});
      const [done] = (await once(worker, "completed")) as [Job];
      expect(done.id).toBe(next.id);
      expect(completedEvents.map((j) => j.id)).toEqual([next.id, next.id]);
      expect(await queue.get(job.id)).toMatchObject({ state: "cancelled", result: null, attempt: 1 });
    });

    it("aborts a job running on another connection at its next heartbeat", async () => {
      const { queue, clock, connect } = await backend.setup();
      const longJob = abortable();
      const workerQueue = await connect();
      const worker = new Worker(workerQueue, {
        jobs: [longJob.def],
        leaseMs: 3000,
        heartbeatMs: 1000,
        maintenance: false,
      });
      closeAfterTest(worker, clock);
      const completed: Job[] = [];
      worker.on("completed", (j) => completed.push(j));
      const started = longJob.started();
      const aborted = longJob.aborted();
      const returned = longJob.returned();
      const job = await queue.enqueue(longJob.def, {});
      await worker.start();
      await started;

      await queue.cancel(job.id);
      await clock.advance(1000);
      await aborted;
      await returned;
      expect(worker.running).toBe(0);
      expect(completed).toEqual([]);
      expect(await queue.get(job.id)).toMatchObject({ state: "cancelled", result: null });
    });

    it("never runs a job cancelled before a worker claims it", async () => {
      const { queue } = await backend.setup();
      let ran = 0;
      const counted = defineJob({
        type: "counted",
        handler: async () => {
          ran++;
          return null;
        },
      });
      const job = await queue.enqueue(counted, {});
      await queue.cancel(job.id);
      const result = await drain(queue, { jobs: [counted] });
      expect(result.jobs).toEqual([]);
      expect(ran).toBe(0);
    });
  });
}
