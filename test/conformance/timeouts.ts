/** timeoutMs: the handler's signal aborts and the attempt fails; a late result is ignored. */
import { describe, expect, it, onTestFinished } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

export function exerciseTimeouts(backend: Backend): void {
  describe("timeouts", () => {
    it("aborts the signal after timeoutMs, fails the attempt with kind timeout, and ignores the late result", async () => {
      const { queue, clock } = await backend.setup();
      let finishLate!: () => void;
      const late = new Promise<void>((resolve) => {
        finishLate = resolve;
      });
      const aborted: unknown[] = [];
      const slow = defineJob({
        type: "slow",
        timeoutMs: "5s",
        maxAttempts: 2,
        backoff: { type: "fixed", delayMs: 60_000 },
        handler: async (_p: unknown, ctx) => {
          ctx.signal.addEventListener("abort", () => aborted.push(ctx.signal.reason));
          await late;
          return "too late";
        },
      });
      const job = await queue.enqueue(slow, {});
      const worker = new Worker(queue, { jobs: [slow], maintenance: false });
      onTestFinished(async () => {
        const closed = worker.close({ graceMs: 0 });
        await clock.advance(0);
        await closed;
      });
      const active = new Promise<void>((resolve) => worker.once("active", () => resolve()));
      const retrying = new Promise<Job>((resolve) => worker.once("retrying", (j) => resolve(j)));
      const completed: Job[] = [];
      worker.on("completed", (j) => completed.push(j));
      await worker.start();
      await active;

      await clock.advance(4_999);
      expect(aborted).toEqual([]);
      await clock.advance(1);
      const failed = await retrying;
      expect(aborted).toHaveLength(1);
      expect(aborted[0]).toMatchObject({ code: "TIMEOUT" });
      expect(failed.errors.at(-1)).toMatchObject({ attempt: 1, kind: "timeout", name: "TIMEOUT" });

      finishLate();
      await late;
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "pending", attempt: 1, result: null });
      expect(stored!.runAt.getTime()).toBe(clock.now() + 60_000);
      expect(completed).toEqual([]);
    });

    it("sends a timed-out job to dead when its attempts are spent", async () => {
      const { queue, clock } = await backend.setup();
      const hang = defineJob({
        type: "hang",
        timeoutMs: 1000,
        maxAttempts: 1,
        handler: (_p: unknown, ctx) =>
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
          ),
      });
      const job = await queue.enqueue(hang, {});
      const worker = new Worker(queue, { jobs: [hang], maintenance: false });
      onTestFinished(async () => {
        const closed = worker.close({ graceMs: 0 });
        await clock.advance(0);
        await closed;
      });
      const active = new Promise<void>((resolve) => worker.once("active", () => resolve()));
      const dead = new Promise<Job>((resolve) => worker.once("dead", (j) => resolve(j)));
      await worker.start();
      await active;
      await clock.advance(1000);
      expect((await dead).id).toBe(job.id);
      const stored = await queue.get(job.id);
      expect(stored?.state).toBe("dead");
      expect(stored?.errors).toHaveLength(1);
      expect(stored?.errors[0]).toMatchObject({ kind: "timeout" });
    });
  });
}
