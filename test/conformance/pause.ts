/**
 * Paused queues (River's QueuePause, Oban's pause_queue, BullMQ's queue.pause()): while a queue is
 * paused no claim, by any process on the store, hands out its jobs; everything else works as usual,
 * running jobs finish, and a resume wakes idle workers so they take the jobs at once.
 */
import { once } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

const mail = defineJob({ type: "mail", queue: "mail", handler: async () => "sent" });
const bulk = defineJob({ type: "bulk", queue: "bulk", handler: async () => "done" });

export function exercisePause(backend: Backend): void {
  describe("paused queues", () => {
    it("pauses and resumes idempotently, reporting whether anything changed", async () => {
      const { queue } = await backend.setup();
      expect(await queue.pausedQueues()).toEqual([]);
      expect(await queue.pauseQueue("mail")).toBe(true);
      expect(await queue.pauseQueue("mail")).toBe(false);
      // A queue that holds no jobs (yet) can be paused too.
      expect(await queue.pauseQueue("a.b:c-1")).toBe(true);
      expect(await queue.pausedQueues()).toEqual(["a.b:c-1", "mail"]);
      expect((await queue.stats()).paused).toEqual(["a.b:c-1", "mail"]);
      expect(await queue.resumeQueue("mail")).toBe(true);
      expect(await queue.resumeQueue("mail")).toBe(false);
      expect(await queue.resumeQueue("never-paused")).toBe(false);
      expect(await queue.pausedQueues()).toEqual(["a.b:c-1"]);
    });

    it("refuses a bad queue name with INVALID_QUEUE_NAME and stores nothing", async () => {
      const { queue } = await backend.setup();
      for (const bad of ["", "-lead", "has space", "x".repeat(129), "{tag}", 7 as unknown as string]) {
        await expect(queue.pauseQueue(bad)).rejects.toMatchObject({ code: "INVALID_QUEUE_NAME" });
        await expect(queue.resumeQueue(bad)).rejects.toBeInstanceOf(ErrandError);
      }
      expect(await queue.pausedQueues()).toEqual([]);
    });

    it("hands out none of a paused queue's jobs; everything else works and running jobs finish", async () => {
      const { queue, clock } = await backend.setup();
      const running = await queue.enqueue(mail, {});
      const [leased] = await queue.lease({ queues: ["mail"] });
      expect(leased?.id).toBe(running.id);
      const waiting = await queue.enqueue(mail, { n: 1 });
      const other = await queue.enqueue(mail, { n: 2 });

      expect(await queue.pauseQueue("mail")).toBe(true);
      expect(await queue.lease({ queues: ["mail"], limit: 10 })).toEqual([]);
      // Enqueue, reschedule, cancel, reads: as usual.
      const late = await queue.enqueue(mail, { n: 3 });
      expect((await queue.reschedule(other.id, { priority: 5 })).priority).toBe(5);
      expect((await queue.cancel(late.id)).state).toBe("cancelled");
      expect((await queue.list({ queue: "mail", state: "pending" })).jobs.map((j) => j.id).sort()).toEqual(
        [waiting.id, other.id].sort(),
      );
      const stats = await queue.stats();
      expect(stats.queues.mail).toMatchObject({ pending: 2, active: 1, cancelled: 1 });
      expect(stats.paused).toEqual(["mail"]);
      // The job leased before the pause runs to the end.
      expect(await queue.heartbeat(leased!)).toBe(true);
      expect(await queue.complete(leased!, "ok")).toBe(true);
      clock.advance(60_000);
      expect(await queue.lease({ queues: ["mail"], limit: 10 })).toEqual([]);

      expect(await queue.resumeQueue("mail")).toBe(true);
      const after = await queue.lease({ queues: ["mail"], limit: 10 });
      // In claim order: the rescheduled job's priority puts it first.
      expect(after.map((j) => j.id)).toEqual([other.id, waiting.id]);
    });

    it("skips a paused queue in a weighted claim without blocking the others", async () => {
      const { queue } = await backend.setup();
      await queue.enqueueMany(
        mail,
        Array.from({ length: 20 }, (_, i) => ({ i })),
      );
      const bulkJobs = await queue.enqueueMany(
        bulk,
        Array.from({ length: 20 }, (_, i) => ({ i })),
      );
      await queue.pauseQueue("mail");
      // Heavily weighted towards the paused queue: every slot still goes to "bulk".
      for (let n = 0; n < 5; n++) {
        const got = await queue.lease({ queues: { mail: 10, bulk: 1 }, limit: 1 });
        expect(got.map((j) => j.queue)).toEqual(["bulk"]);
      }
      const rest = await queue.lease({ queues: { mail: 10, bulk: 1 }, limit: 100 });
      expect(rest).toHaveLength(15);
      expect(rest.every((j) => j.queue === "bulk")).toBe(true);
      expect((await queue.stats()).queues.bulk).toMatchObject({ active: bulkJobs.length });
      expect((await queue.stats()).queues.mail).toEqual({ pending: 20 });
    });

    it("is shared by every connection to the store, and a resume wakes an idle worker elsewhere", async () => {
      const { queue, connect } = await backend.setup();
      const other = await connect();
      const job = await queue.enqueue(mail, {});
      await queue.pauseQueue("mail");
      expect(await other.pausedQueues()).toEqual(["mail"]);
      expect(await other.lease({ queues: ["mail"] })).toEqual([]);

      // The other process's worker runs both queues; with the clock held still it never polls, so
      // only a wake-up can start a job.
      const worker = new Worker(other, { jobs: [mail, bulk], maintenance: false });
      const completed: string[] = [];
      worker.on("completed", (j) => completed.push(j.id));
      const idle = once(worker, "idle");
      await worker.start();
      await idle;
      // It did claim: the unpaused queue's job runs while the paused one's waits.
      const b = await queue.enqueue(bulk, {});
      await vi.waitFor(() => expect(completed).toEqual([b.id]));
      expect((await queue.get(job.id))?.state).toBe("pending");

      expect(await queue.resumeQueue("mail")).toBe(true);
      await vi.waitFor(() => expect(completed).toEqual([b.id, job.id]));
      expect(await other.pausedQueues()).toEqual([]);
      await worker.close();
    });
  });
}
