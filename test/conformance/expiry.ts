/** Semantic 9, expiry: a job whose `expiresAt` has passed is never handed out; it becomes `expired`. */
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";

export function exerciseExpiry(backend: Backend): void {
  describe("expiry", () => {
    it("never hands out a job past its expiresAt; sweep marks it expired and emits expired", async () => {
      // Without the lease API's own maintenance: the claim alone must pass over the job.
      const { queue, clock } = await backend.setup({ maintenance: false });
      const job = await queue.enqueue("report", {}, { expiresInMs: 60_000, delayMs: 10_000 });
      const fresh = await queue.enqueue("report", { fresh: true });
      expect(job.expiresAt?.getTime()).toBe(clock.now() + 60_000);

      await clock.advance(60_000);
      // Due since 50 s, but expired now: only the other job is handed out.
      const leased = await queue.lease({ limit: 10 });
      expect(leased.map((j) => j.id)).toEqual([fresh.id]);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      expect((await queue.get(job.id))?.state).toBe("pending");

      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      const result = await queue.sweep();
      expect(result.expired).toBe(1);
      expect(expired.map((j) => j.id)).toEqual([job.id]);
      expect(expired[0]?.state).toBe("expired");
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "expired", attempt: 0 });
      expect(stored?.finishedAt?.getTime()).toBe(clock.now());

      // Expired is final: another sweep finds nothing and nothing can lease it.
      expect((await queue.sweep()).expired).toBe(0);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
    });

    it("expires a backlog larger than one chunk in one sweep", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      // More than a sweep's chunk (500): a backlog must not wait one sweep interval per chunk.
      await queue.enqueueManyIds(
        "report",
        Array.from({ length: 1_201 }, (_, i) => i),
        { expiresInMs: 1_000 },
      );
      await clock.advance(1_000);
      expect((await queue.sweep()).expired).toBe(1_201);
      expect((await queue.stats()).states).toMatchObject({ pending: 0, expired: 1_201 });
      expect((await queue.sweep()).expired).toBe(0);
    });

    it("expires one chunk of a backlog on a lease call, so a lease never waits out the whole backlog", async () => {
      const { queue, clock } = await backend.setup();
      await queue.enqueueManyIds(
        "report",
        Array.from({ length: 1_201 }, (_, i) => i),
        { expiresInMs: 1_000 },
      );
      await clock.advance(1_000);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      expect((await queue.stats()).states).toMatchObject({ pending: 701, expired: 500 });
      expect((await queue.sweep()).expired).toBe(701);
    });

    it("expires a pending job past expiresAt on a lease call, without a Worker or sweep()", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("report", {}, { expiresInMs: 60_000, delayMs: 10_000 });
      const fresh = await queue.enqueue("report", { fresh: true }, { delayMs: 10_000 });
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));

      await clock.advance(60_000);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([fresh.id]);
      expect(expired.map((j) => [j.id, j.state])).toEqual([[job.id, "expired"]]);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "expired", attempt: 0 });
      expect(stored?.finishedAt?.getTime()).toBe(clock.now());
    });

    it("hands out a job until the moment before expiresAt", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("report", {}, { expiresAt: new Date(clock.now() + 5000) });
      await clock.advance(4999);
      expect((await queue.sweep()).expired).toBe(0);
      expect((await queue.lease()).map((j) => j.id)).toEqual([job.id]);
    });

    it("lets a job leased before its expiry complete normally", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("report", {}, { expiresInMs: 1000 });
      const [leased] = await queue.lease({ leaseMs: 60_000 });
      expect(leased?.id).toBe(job.id);

      await clock.advance(5000);
      const swept = await queue.sweep();
      expect(swept.expired).toBe(0);
      expect((await queue.get(job.id))?.state).toBe("active");
      expect(await queue.complete(leased!, { done: true })).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: { done: true } });
    });

    it("never runs an expired job on a Worker", async () => {
      const { queue, clock } = await backend.setup();
      let ran = 0;
      const report = defineJob({
        type: "report",
        handler: async () => {
          ran++;
          return null;
        },
      });
      const job = await queue.enqueue(report, {}, { expiresInMs: 1000 });
      await clock.advance(1000);
      const expired = once(queue, "expired");
      // The worker's first maintenance pass expires it; its claims never see it.
      const result = await drain(queue, { jobs: [report] });
      const [event] = (await expired) as [Job];
      expect(event.id).toBe(job.id);
      expect(result.jobs).toEqual([]);
      expect(ran).toBe(0);
      expect((await queue.get(job.id))?.state).toBe("expired");
    });
  });
}
