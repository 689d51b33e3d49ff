/**
 * Semantic 3 (delivery): `at_most_once` jobs are never started twice: a lost lease or a failure
 * sends them to `dead`. `at_least_once` jobs (the default) are retried.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";

export function exerciseDelivery(backend: Backend): void {
  describe("delivery", () => {
    it("sends an at_most_once job whose lease expires to dead, and never hands it out again", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("once", {}, { delivery: "at_most_once", maxAttempts: 5 });
      const [leased] = await queue.lease({ leaseMs: 1000 });
      expect(leased).toMatchObject({ id: job.id, attempt: 1, delivery: "at_most_once" });

      await clock.advance(999);
      expect((await queue.sweep()).recovered).toBe(0);
      expect((await queue.get(job.id))?.state).toBe("active");

      await clock.advance(1);
      const swept = await queue.sweep();
      expect(swept.recovered).toBe(1);
      const dead = await queue.get(job.id);
      expect(dead).toMatchObject({ state: "dead", attempt: 1 });
      expect(dead?.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
      expect(dead?.finishedAt?.getTime()).toBe(clock.now());

      // However long we wait, it is never leased again, and the late report of the lost attempt counts for nothing.
      await clock.advance(86_400_000);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      expect((await queue.sweep()).recovered).toBe(0);
      expect(await queue.complete(leased!, "late")).toBe(false);
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 1, result: null });
    });

    it("sends a failing at_most_once handler to dead with no retry, even with maxAttempts 5", async () => {
      const { queue, clock } = await backend.setup();
      let calls = 0;
      const once = defineJob({
        type: "charge-card",
        delivery: "at_most_once",
        maxAttempts: 5,
        backoff: { type: "fixed", delayMs: 10 },
        handler: async () => {
          calls++;
          throw new Error("gateway timeout");
        },
      });
      const job = await queue.enqueue(once, {});
      const first = await drain(queue, { jobs: [once] });
      expect(first).toMatchObject({ completed: 0, failed: 1, retried: 0, dead: 1 });
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 1, maxAttempts: 5 });

      await clock.advance(3_600_000);
      const second = await drain(queue, { jobs: [once] });
      expect(second.jobs).toEqual([]);
      expect(calls).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored?.state).toBe("dead");
      expect(stored?.errors.map((e) => e.message)).toEqual(["gateway timeout"]);
    });

    it("retries a failing at_least_once handler by contrast", async () => {
      const { queue, clock } = await backend.setup();
      let calls = 0;
      const flaky = defineJob({
        type: "flaky",
        maxAttempts: 5,
        backoff: { type: "fixed", delayMs: 10 },
        handler: async () => {
          calls++;
          if (calls < 3) throw new Error(`failure ${calls}`);
          return "ok";
        },
      });
      const job = await queue.enqueue(flaky, {});
      const first = await drain(queue, { jobs: [flaky] });
      expect(first).toMatchObject({ completed: 0, failed: 1, retried: 1, dead: 0 });
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 1 });

      await clock.advance(10);
      expect(await drain(queue, { jobs: [flaky] })).toMatchObject({ failed: 1, retried: 1 });
      await clock.advance(10);
      expect(await drain(queue, { jobs: [flaky] })).toMatchObject({ completed: 1, failed: 0 });
      expect(calls).toBe(3);
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", attempt: 3, result: "ok" });
    });

    it("puts an at_least_once job whose lease expires back to pending, to be leased again", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("again", {}, { backoff: { type: "fixed", delayMs: 0 } });
      const [first] = await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(1);
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 1 });
      const [second] = await queue.lease({ leaseMs: 1000 });
      expect(second).toMatchObject({ id: job.id, attempt: 2 });
      expect(await queue.complete(first!, null)).toBe(false);
      expect(await queue.complete(second!, null)).toBe(true);
    });
  });
}
