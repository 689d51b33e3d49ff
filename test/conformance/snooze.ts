/**
 * Snooze: a handler returns `ctx.snooze(delay)` (or a runner calls `queue.snooze`) to end the
 * attempt without failing it. The job is pending again at now + delay, its error history
 * untouched, the attempt not counted toward `maxAttempts` (`snoozes` counts, `maxAttempts` grows
 * by one, the attempt number still advances as the fencing token). A stale attempt cannot snooze.
 */
import { describe, expect, it, vi } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import type { Job } from "../../src/job.js";
import { drain } from "../../src/testing/index.js";
import { MAX_DATE_MS } from "../../src/validation.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

export function exerciseSnooze(backend: Backend): void {
  describe("snooze", () => {
    it("puts the job back at now + delay without spending an attempt or touching its errors", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("poll-partner", {}, { maxAttempts: 1 });
      const [first] = await queue.lease();
      expect(await queue.snooze(first!, "30s")).toBe(true);
      const snoozed = await queue.get(job.id);
      expect(snoozed).toMatchObject({
        state: "pending",
        attempt: 1,
        snoozes: 1,
        maxAttempts: 2,
        errors: [],
        leaseExpiresAt: null,
        workerId: null,
      });
      expect(snoozed?.runAt.getTime()).toBe(clock.now() + 30_000);
      expect(await queue.lease()).toEqual([]);
      await clock.advance(30_000);
      const [second] = await queue.lease();
      expect(second).toMatchObject({ id: job.id, attempt: 2, snoozes: 1 });
      // The snooze did not use up the only attempt: a failure now is the first real one, and it
      // is the last (maxAttempts 1 + 1 snooze).
      expect(await queue.fail(second!, new Error("down"))).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 2, snoozes: 1 });
      expect((await queue.get(job.id))?.errors).toHaveLength(1);
    });

    it("fences a snooze by the attempt: a stale one changes nothing", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("t", {}, { backoff: { type: "fixed", delayMs: 0 } });
      const [first] = await queue.lease({ leaseMs: 1_000 });
      await clock.advance(1_001);
      await queue.sweep();
      const [second] = await queue.lease();
      expect(second?.attempt).toBe(2);
      expect(await queue.snooze(first!, "1m")).toBe(false);
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 2, snoozes: 0 });
      expect(await queue.complete(second!, "ok")).toBe(true);
      expect(await queue.snooze(second!, "1m")).toBe(false);
      expect((await queue.get(job.id))?.state).toBe("completed");
    });

    it("refuses a bad delay with INVALID_DURATION and leaves the attempt running", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue("t", {});
      const [job] = await queue.lease();
      await refused(() => queue.snooze(job!, -5), "INVALID_DURATION");
      await refused(() => queue.snooze(job!, "soon" as never), "INVALID_DURATION");
      expect((await queue.get(job!.id))?.state).toBe("active");
    });

    it("waits until the latest date a store keeps for a snooze reaching past it, from the API or a handler", async () => {
      const { queue } = await backend.setup();
      const far = MAX_DATE_MS - 1_000;
      await queue.enqueue("t", {}, { id: "api" });
      const [job] = await queue.lease();
      expect(await queue.snooze(job!, far)).toBe(true);
      expect(await queue.get("api")).toMatchObject({
        state: "pending",
        snoozes: 1,
        runAt: new Date(MAX_DATE_MS),
      });

      const sleepy = defineJob({ type: "sleepy", handler: async (_p: unknown, ctx) => ctx.snooze(far) });
      await queue.enqueue(sleepy, {}, { id: "handler" });
      const result = await drain(queue, { jobs: [sleepy] });
      expect(result.failed).toBe(0);
      expect(await queue.get("handler")).toMatchObject({
        state: "pending",
        snoozes: 1,
        errors: [],
        runAt: new Date(MAX_DATE_MS),
      });
    });

    it("emits error when a Worker's snooze cannot be written, and leaves the job to its lease", async () => {
      const { queue, store } = await backend.setup();
      const fault = new ErrandError("STORE_ERROR", "the store is away");
      vi.spyOn(store, "snooze").mockRejectedValueOnce(fault);
      const poll = defineJob({ type: "poll-fault", handler: async (_p: unknown, ctx) => ctx.snooze("10s") });
      const job = await queue.enqueue(poll, {});
      const worker = new Worker(queue, { jobs: [poll], pollIntervalMs: 1_000, sweepIntervalMs: 3_600_000 });
      const errors: unknown[] = [];
      const failed = new Promise<void>((resolve) =>
        worker.on("error", (e) => {
          errors.push(e);
          resolve();
        }),
      );
      await worker.start();
      try {
        await failed;
        expect(errors).toEqual([fault]);
        expect(await queue.get(job.id)).toMatchObject({ state: "active", snoozes: 0 });
      } finally {
        await worker.close({ graceMs: 0 });
      }
    });

    it("lets a Worker's handler snooze by returning ctx.snooze, and emits snoozed", async () => {
      const { queue, clock } = await backend.setup();
      const runs: number[] = [];
      const poll = defineJob({
        type: "poll",
        handler: async (_p: unknown, ctx) => {
          runs.push(ctx.attempt);
          if (ctx.job.snoozes < 2) return ctx.snooze("10s");
          return "ready";
        },
      });
      const job = await queue.enqueue(poll, {}, { maxAttempts: 1 });
      // Polls every second of the manual clock: advancing it past the snooze finds the job again.
      const worker = new Worker(queue, { jobs: [poll], pollIntervalMs: 1_000, sweepIntervalMs: 3_600_000 });
      // Listening before the start: the first run (and its snooze) may happen inside start().
      const snoozed: Job[] = [];
      let onSnooze = () => {};
      worker.on("snoozed", (j) => {
        snoozed.push(j);
        onSnooze();
      });
      const snoozes = (n: number) =>
        new Promise<void>((resolve) => {
          onSnooze = () => snoozed.length >= n && resolve();
          onSnooze();
        });
      const done = new Promise<Job>((resolve) => worker.on("completed", (j) => resolve(j)));
      const queueSnoozed = new Promise<Job>((resolve) => queue.once("snoozed", resolve));
      await worker.start();
      try {
        for (let n = 1; n <= 2; n++) {
          await snoozes(n);
          await clock.advance(10_000);
        }
        const completed = await done;
        expect(completed.id).toBe(job.id);
      } finally {
        const closing = worker.close({ graceMs: 0 });
        await clock.advance(0);
        await closing;
      }
      expect(runs).toEqual([1, 2, 3]);
      expect(snoozed.map((j) => [j.state, j.snoozes])).toEqual([
        ["pending", 1],
        ["pending", 2],
      ]);
      expect((await queueSnoozed).id).toBe(job.id);
      expect(await queue.get(job.id)).toMatchObject({
        state: "completed",
        attempt: 3,
        snoozes: 2,
        errors: [],
      });
    });
  });
}
