/**
 * Semantic 4, retries: a failure schedules `runAt = now + backoff(attempt)` or sends the job to
 * dead; handlers can refuse retries; retries can move to another queue; dead jobs can be retried
 * (same id) or replayed (new id) by hand.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { ErrandError, NonRetryableError } from "../../src/errors.js";
import type { Queue } from "../../src/queue.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";

const task = defineJob({ type: "task", handler: async () => null });

/** Leases the one ready job, fails it, and returns the delay until its retry (from the failure time). */
async function failOnce(queue: Queue, error: unknown = new Error("boom")): Promise<number> {
  const [leased] = await queue.lease();
  expect(leased).toBeDefined();
  const failedAt = queue.clock.now();
  expect(await queue.fail(leased!, error)).toBe(true);
  const stored = await queue.get(leased!.id);
  expect(stored!.state).toBe("pending");
  return stored!.runAt.getTime() - failedAt;
}

export function exerciseRetries(backend: Backend): void {
  describe("retries", () => {
    it("retries after a fixed backoff at exactly failure time + delay", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { backoff: { type: "fixed", delayMs: "30s" } });
      const [first] = await queue.lease();
      await clock.advance(1234);
      const failedAt = clock.now();
      expect(await queue.fail(first!, new Error("boom"))).toBe(true);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "pending", attempt: 1, workerId: null, leaseExpiresAt: null });
      expect(stored!.runAt.getTime()).toBe(failedAt + 30_000);

      await clock.advance(29_999);
      expect(await queue.lease()).toEqual([]);
      await clock.advance(1);
      const [second] = await queue.lease();
      expect(second).toMatchObject({ id: job.id, attempt: 2 });
      await clock.advance(777);
      expect(await queue.lease()).toEqual([]); // the job is held by attempt 2
      const secondFailedAt = clock.now();
      expect(await queue.fail(second!, new Error("boom again"))).toBe(true);
      expect((await queue.get(job.id))!.runAt.getTime()).toBe(secondFailedAt + 30_000);
    });

    it("retries after exponential backoff without jitter: base, doubling, capped at maxMs", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(
        task,
        {},
        {
          maxAttempts: 7,
          backoff: { type: "exponential", baseMs: 1000, factor: 2, maxMs: 5000, jitter: false },
        },
      );
      const delays: number[] = [];
      for (let i = 0; i < 6; i++) {
        const delay = await failOnce(queue);
        delays.push(delay);
        await clock.advance(delay);
      }
      expect(delays).toEqual([1000, 2000, 4000, 5000, 5000, 5000]);
      const [last] = await queue.lease();
      expect(last!.attempt).toBe(7);
      await queue.fail(last!, new Error("final"));
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 7 });
    });

    it("keeps jittered exponential delays within the upper half of each step", async () => {
      const { queue, clock } = await backend.setup();
      await queue.enqueue(
        task,
        {},
        { maxAttempts: 10, backoff: { type: "exponential", baseMs: 1000, factor: 3, maxMs: 60_000 } },
      );
      const raws = [1000, 3000, 9000, 27_000, 60_000, 60_000];
      const delays: number[] = [];
      for (const raw of raws) {
        const delay = await failOnce(queue);
        expect(delay).toBeGreaterThanOrEqual(raw / 2);
        expect(delay).toBeLessThanOrEqual(raw);
        delays.push(delay);
        await clock.advance(delay);
      }
      // Jitter means they are not all exactly the raw values.
      expect(delays).not.toEqual(raws);
    });

    it("asks a custom backoff function with the error and attempt, and sends the job to dead when it returns false", async () => {
      const { queue, clock } = await backend.setup();
      const calls: Array<{ error: unknown; attempt: number }> = [];
      const custom = defineJob({
        type: "custom-backoff",
        maxAttempts: 10,
        backoff: (error, attempt) => {
          calls.push({ error, attempt });
          return attempt < 3 ? attempt * 7000 : false;
        },
        handler: async () => null,
      });
      queue.register(custom);
      const job = await queue.enqueue(custom, {});
      const errors = [new Error("e1"), new Error("e2"), new Error("e3")];

      expect(await failOnce(queue, errors[0])).toBe(7000);
      await clock.advance(7000);
      expect(await failOnce(queue, errors[1])).toBe(14_000);
      await clock.advance(14_000);
      const [third] = await queue.lease();
      expect(await queue.fail(third!, errors[2])).toBe(true);

      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      for (const [i, c] of calls.entries()) expect(c.error).toBe(errors[i]);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: 3, maxAttempts: 10 });
      expect(stored!.errors.map((e) => e.message)).toEqual(["e1", "e2", "e3"]);
    });

    it("gives a Worker's custom backoff function the error the handler threw", async () => {
      const { queue } = await backend.setup();
      class RateLimited extends Error {
        override name = "RateLimited";
      }
      const thrown: Error[] = [];
      const seen: Array<{ error: unknown; attempt: number }> = [];
      const limited = defineJob({
        type: "rate-limited",
        maxAttempts: 5,
        backoff: (error, attempt) => {
          seen.push({ error, attempt });
          return false;
        },
        handler: async () => {
          const e = new RateLimited("slow down");
          thrown.push(e);
          throw e;
        },
      });
      const job = await queue.enqueue(limited, {});
      const result = await drain(queue, { jobs: [limited] });
      expect(result).toMatchObject({ failed: 1, dead: 1, retried: 0 });
      expect(seen).toHaveLength(1);
      expect(seen[0]!.error).toBe(thrown[0]);
      expect(seen[0]!.attempt).toBe(1);
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 1 });
    });

    it("sends a job to dead at once when its handler throws NonRetryableError", async () => {
      const { queue } = await backend.setup();
      let runs = 0;
      const fatal = defineJob({
        type: "fatal",
        maxAttempts: 5,
        backoff: { type: "fixed", delayMs: 0 },
        handler: async () => {
          runs++;
          throw new NonRetryableError("the account was deleted");
        },
      });
      const job = await queue.enqueue(fatal, {});
      const result = await drain(queue, { jobs: [fatal] });
      expect(result).toMatchObject({ completed: 0, failed: 1, retried: 0, dead: 1 });
      expect(runs).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: 1 });
      expect(stored!.errors).toHaveLength(1);
      expect(stored!.errors[0]).toMatchObject({ attempt: 1, message: "the account was deleted" });
    });

    it("sends a job to dead at once on fail(job, err, { retryable: false }) or an error with retryable: false", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue(task, { which: "a" }, { maxAttempts: 5 });
      const [leasedA] = await queue.lease();
      expect(await queue.fail(leasedA!, new Error("no point"), { retryable: false })).toBe(true);
      expect(await queue.get(a.id)).toMatchObject({ state: "dead", attempt: 1 });

      const b = await queue.enqueue(task, { which: "b" }, { maxAttempts: 5 });
      const [leasedB] = await queue.lease();
      const error = Object.assign(new Error("validation failed"), { retryable: false });
      expect(await queue.fail(leasedB!, error)).toBe(true);
      expect(await queue.get(b.id)).toMatchObject({ state: "dead", attempt: 1 });

      // Nothing comes back, however long we wait.
      await clock.advance(86_400_000);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
    });

    it("moves retries to the retryQueue", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(
        task,
        {},
        { queue: "fast", retryQueue: "slow-lane", backoff: { type: "fixed", delayMs: 1000 } },
      );
      const [leased] = await queue.lease({ queues: ["fast"] });
      await queue.fail(leased!, new Error("boom"));
      expect(await queue.get(job.id)).toMatchObject({
        state: "pending",
        queue: "slow-lane",
        retryQueue: "slow-lane",
      });

      await clock.advance(1000);
      expect(await queue.lease({ queues: ["fast"] })).toEqual([]);
      const [retry] = await queue.lease({ queues: ["slow-lane"] });
      expect(retry).toMatchObject({ id: job.id, attempt: 2, queue: "slow-lane" });
    });

    it("runs a type's retries from its retryQueue when the worker or lease names no queues", async () => {
      const { queue } = await backend.setup();
      const laned = defineJob({
        type: "laned",
        queue: "fast",
        retryQueue: "slow-lane",
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (_p: unknown, ctx) => {
          if (ctx.attempt === 1) throw new Error("once");
        },
      });
      const ran = await queue.enqueue(laned, {});
      const result = await drain(queue, { jobs: [laned] });
      expect(result).toMatchObject({ completed: 1, retried: 1 });
      expect(await queue.get(ran.id)).toMatchObject({ state: "completed", queue: "slow-lane", attempt: 2 });

      const leased = await queue.enqueue(laned, {});
      const [first] = await queue.lease({ types: ["laned"] });
      await queue.fail(first!, new Error("boom"));
      const [retry] = await queue.lease({ types: ["laned"] });
      expect(retry).toMatchObject({ id: leased.id, attempt: 2, queue: "slow-lane" });
    });

    it("sends a job to dead when its attempts are spent, with one error entry per attempt", async () => {
      const { queue } = await backend.setup();
      const flaky = defineJob({
        type: "always-fails",
        maxAttempts: 3,
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (_p: unknown, ctx) => {
          throw new Error(`failure ${ctx.attempt}`);
        },
      });
      const job = await queue.enqueue(flaky, {});
      const result = await drain(queue, { jobs: [flaky] });
      expect(result).toMatchObject({ completed: 0, failed: 3, retried: 2, dead: 1 });
      expect(result.jobs.map((j) => j.attempt)).toEqual([1, 2, 3]);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: 3, maxAttempts: 3 });
      expect(stored!.finishedAt).not.toBeNull();
      expect(stored!.errors.map((e) => [e.attempt, e.message])).toEqual([
        [1, "failure 1"],
        [2, "failure 2"],
        [3, "failure 3"],
      ]);
    });

    it("retries a dead job by hand: pending again under the same id, history kept, and it can complete", async () => {
      const { queue, clock } = await backend.setup();
      let healthy = false;
      const flaky = defineJob({
        type: "flaky",
        maxAttempts: 2,
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (p: { n: number }, ctx) => {
          if (!healthy) throw new Error(`down ${ctx.attempt}`);
          return { n: p.n, attempt: ctx.attempt };
        },
      });
      const job = await queue.enqueue(flaky, { n: 7 });
      await drain(queue, { jobs: [flaky] });
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 2 });

      await clock.advance(60_000);
      const retried = await queue.retry(job.id);
      expect(retried).toMatchObject({
        id: job.id,
        state: "pending",
        attempt: 2,
        payload: { n: 7 },
        finishedAt: null,
      });
      expect(retried.maxAttempts).toBeGreaterThanOrEqual(3);
      expect(retried.runAt.getTime()).toBe(clock.now());
      expect(retried.errors.map((e) => e.message)).toEqual(["down 1", "down 2"]);
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 2 });

      healthy = true;
      const result = await drain(queue, { jobs: [flaky] });
      expect(result.completed).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "completed", attempt: 3, result: { n: 7, attempt: 3 } });
      expect(stored!.errors.map((e) => e.message)).toEqual(["down 1", "down 2"]);
    });

    it("replays a finished job as a new job (new id, attempt 0) and leaves the original as it was", async () => {
      const { queue } = await backend.setup();
      const echo = defineJob({
        type: "echo",
        handler: async (p: { n: number }, ctx) => ({ n: p.n, id: ctx.job.id }),
      });
      const original = await queue.enqueue(echo, { n: 1 });
      await drain(queue, { jobs: [echo] });
      const before = await queue.get(original.id);
      expect(before).toMatchObject({ state: "completed", result: { n: 1, id: original.id } });

      const replayed = await queue.replay(original.id);
      expect(replayed.id).not.toBe(original.id);
      expect(replayed).toMatchObject({
        type: "echo",
        state: "pending",
        attempt: 0,
        payload: { n: 1 },
        result: null,
        checkpoint: null,
        errors: [],
      });
      expect(await queue.get(original.id)).toEqual(before);

      await drain(queue, { jobs: [echo] });
      expect(await queue.get(replayed.id)).toMatchObject({
        state: "completed",
        attempt: 1,
        result: { n: 1, id: replayed.id },
      });
      expect(await queue.get(original.id)).toEqual(before);
    });

    it("replays a dead job as a fresh job while the dead one stays dead", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(task, { n: 2 }, { maxAttempts: 1 });
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("boom"));
      const dead = await queue.get(job.id);
      expect(dead!.state).toBe("dead");

      const replayed = await queue.replay(job.id);
      expect(replayed).toMatchObject({ state: "pending", attempt: 0, errors: [], payload: { n: 2 } });
      expect(replayed.id).not.toBe(job.id);
      expect(await queue.get(job.id)).toEqual(dead);
      const [again] = await queue.lease();
      expect(again).toMatchObject({ id: replayed.id, attempt: 1 });
    });

    it("refuses to retry or replay a pending or active job, and to retry a completed one, with INVALID_STATE", async () => {
      const { queue } = await backend.setup();
      const pending = await queue.enqueue(task, { n: 1 }, { delayMs: 60_000 });
      const active = await queue.enqueue(task, { n: 2 });
      await queue.lease();
      const done = await queue.enqueue(task, { n: 3 });
      const [leasedDone] = await queue.lease();
      expect(leasedDone!.id).toBe(done.id);
      await queue.complete(leasedDone!, null);

      for (const id of [pending.id, active.id]) {
        const before = await queue.get(id);
        await expect(queue.retry(id)).rejects.toMatchObject({ name: "ErrandError", code: "INVALID_STATE" });
        await expect(queue.replay(id)).rejects.toMatchObject({ code: "INVALID_STATE" });
        expect(await queue.get(id)).toEqual(before);
      }
      await expect(queue.retry(done.id)).rejects.toBeInstanceOf(ErrandError);
      await expect(queue.retry(done.id)).rejects.toMatchObject({ code: "INVALID_STATE" });
      expect((await queue.stats()).states).toMatchObject({ pending: 1, active: 1, completed: 1 });
    });

    it("throws JOB_NOT_FOUND when retrying or replaying an unknown id", async () => {
      const { queue } = await backend.setup();
      await expect(queue.retry("no-such-job")).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
      await expect(queue.replay("no-such-job")).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
      expect((await queue.stats()).states.pending).toBe(0);
    });

    it("falls back to the default policy when a custom backoff function throws, instead of leaving the job stuck", async () => {
      const { queue, clock } = await backend.setup();
      const buggy = defineJob({
        type: "buggy-policy",
        backoff: () => {
          throw new Error("bug in the retry policy");
        },
        handler: async (_p: unknown, ctx) => {
          if (ctx.attempt === 1) throw new Error("first attempt fails");
          return "second attempt";
        },
      });
      const job = await queue.enqueue(buggy, {});
      const first = await drain(queue, { jobs: [buggy] });
      expect(first).toMatchObject({ failed: 1, retried: 1, completed: 0 });
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "pending", attempt: 1 });
      expect(stored!.errors.map((e) => e.message)).toEqual(["first attempt fails"]);
      // The default policy's first step: 1 s, jittered into its upper half.
      const delay = stored!.runAt.getTime() - clock.now();
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeLessThanOrEqual(1000);

      await clock.advance(delay);
      expect((await drain(queue, { jobs: [buggy] })).completed).toBe(1);
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", attempt: 2 });
    });

    it("keeps sweeping other expired leases when one job's custom backoff function throws", async () => {
      const { queue, clock } = await backend.setup();
      const buggy = defineJob({
        type: "buggy-policy",
        backoff: () => {
          throw new Error("bug in the retry policy");
        },
        handler: async () => null,
      });
      queue.register(buggy);
      const a = await queue.enqueue(buggy, {});
      const b = await queue.enqueue(task, {}, { backoff: { type: "fixed", delayMs: 0 } });
      await queue.lease({ limit: 2, leaseMs: 1000 });
      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(2);
      expect(await queue.get(a.id)).toMatchObject({ state: "pending", attempt: 1 });
      expect(await queue.get(b.id)).toMatchObject({ state: "pending", attempt: 1 });
    });

    it("refuses a backoff function given per enqueue, which could never be called", async () => {
      const { queue } = await backend.setup();
      await expect(
        queue.enqueue(task, {}, { backoff: (_error: unknown, attempt: number) => attempt * 1000 }),
      ).rejects.toMatchObject({ code: "INVALID_OPTION" });
      expect((await queue.stats()).states.pending).toBe(0);
    });
  });
}
