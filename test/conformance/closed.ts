/**
 * After close: a closed store answers every call, reads as well as writes, with ErrandError
 * `CLOSED` (not its driver's error), and a closed Queue refuses every change it would make to the
 * jobs, the schedules or the queues with `CLOSED`, leaving them as they were. A Queue over a store
 * it does not own leaves that store open for the others on it.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const plain = defineJob({ type: "plain", handler: async () => "done" });

/** Every Queue call that reaches the store, each with arguments it would accept while open. */
function calls(queue: Queue, id: string): Array<[string, () => Promise<unknown>]> {
  const ref = { id, attempt: 1 };
  return [
    ["enqueue", () => queue.enqueue(plain, {})],
    ["enqueueMany", () => queue.enqueueMany(plain, [{}])],
    ["enqueueManyIds", () => queue.enqueueManyIds(plain, [{}])],
    ["enqueueBatch", () => queue.enqueueBatch([{ job: plain, payload: {} }])],
    ["enqueueBatchIds", () => queue.enqueueBatchIds([{ job: plain, payload: {} }])],
    ["enqueueFlow", () => queue.enqueueFlow([{ ref: "a", job: plain, payload: {} }])],
    ["get", () => queue.get(id)],
    ["list", () => queue.list()],
    ["dependencies", () => queue.dependencies(id)],
    ["dependents", () => queue.dependents(id)],
    ["stats", () => queue.stats()],
    ["pauseQueue", () => queue.pauseQueue("default")],
    ["resumeQueue", () => queue.resumeQueue("default")],
    ["pausedQueues", () => queue.pausedQueues()],
    ["cancel", () => queue.cancel(id)],
    ["reschedule", () => queue.reschedule(id, { delayMs: 1000 })],
    ["retry", () => queue.retry(id)],
    ["replay", () => queue.replay(id)],
    ["schedule", () => queue.schedule("nightly", { cron: "0 3 * * *", job: plain, payload: {} })],
    ["unschedule", () => queue.unschedule("nightly")],
    ["schedules", () => queue.schedules()],
    ["sweep", () => queue.sweep()],
    ["sweepJobs", () => queue.sweepJobs()],
    ["prune", () => queue.prune()],
    ["lease", () => queue.lease({ limit: 1 })],
    ["complete", () => queue.complete(ref, "late")],
    ["fail", () => queue.fail(ref, new Error("late"))],
    ["heartbeat", () => queue.heartbeat(ref)],
    ["checkpoint", () => queue.checkpoint(ref, { page: 2 })],
    ["release", () => queue.release(ref)],
    ["snooze", () => queue.snooze(ref, 1000)],
    ["ping", () => queue.ping()],
    ["job type records", () => queue.typeRecords.listJobTypes()],
  ];
}

export function exerciseClosed(backend: Backend): void {
  describe("closed", () => {
    it("a closed store answers every call, reads included, with CLOSED", async () => {
      const { queue, store } = await backend.setup();
      queue.register(plain);
      const { id } = await queue.enqueue(plain, {});
      await store.close();
      for (const [name, call] of calls(queue, id)) {
        const error = await refused(call, "CLOSED").catch((e: unknown) => {
          throw new Error(`${name} after the store closed: ${String(e)}`);
        });
        expect(error.message, name).toMatch(/closed/);
      }
    });

    it("a closed Queue refuses every change with CLOSED and leaves the jobs, schedules and queues as they were", async () => {
      const { queue, connect } = await backend.setup();
      queue.register(plain);
      const other = await connect();
      other.register(plain);
      const pending = await queue.enqueue(plain, {});
      const [active] = await queue.lease({ limit: 1 });
      expect(active?.id).toBe(pending.id);
      const waiting = await queue.enqueue(plain, {}, { delayMs: 60_000 });
      await queue.schedule("nightly", { cron: "0 3 * * *", job: plain, payload: {} });
      const before = await queue.list({ limit: 100 });

      await other.close();
      expect(other.closed).toBe(true);
      const changes = [
        () => other.enqueue(plain, {}),
        () => other.enqueueMany(plain, [{}]),
        () => other.enqueueManyIds(plain, [{}]),
        () => other.enqueueBatch([{ job: plain, payload: {} }]),
        () => other.enqueueBatchIds([{ job: plain, payload: {} }]),
        () => other.enqueueFlow([{ ref: "a", job: plain, payload: {} }]),
        () => other.cancel(waiting.id),
        () => other.reschedule(waiting.id, { delayMs: 1 }),
        () => other.retry(waiting.id),
        () => other.replay(waiting.id),
        () => other.schedule("hourly", { cron: "0 * * * *", job: plain, payload: {} }),
        () => other.unschedule("nightly"),
        () => other.pauseQueue("default"),
        () => other.resumeQueue("default"),
        () => other.sweep(),
        () => other.sweepJobs(),
        () => other.prune(),
        () => other.lease({ limit: 10 }),
      ];
      for (const change of changes) await refused(change, "CLOSED");

      // The store stays open for the Queue that did not close: nothing above reached it.
      expect(await queue.list({ limit: 100 })).toEqual(before);
      expect((await queue.schedules()).map((s) => s.name)).toEqual(["nightly"]);
      expect(await queue.pausedQueues()).toEqual([]);
      expect((await queue.get(waiting.id))?.state).toBe("pending");
      expect(await queue.complete(active!, "done")).toBe(true);
    });
  });
}
