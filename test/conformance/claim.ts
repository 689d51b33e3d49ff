/** Semantic 1, one holder: claims are atomic, bounded and ordered priority desc, runAt, id. */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Backend } from "./backend.js";

const noop = defineJob({ type: "noop", handler: async () => null });

export function exerciseClaim(backend: Backend): void {
  describe("claim", () => {
    it("returns at most limit jobs, ordered by priority desc, then runAt, then id", async () => {
      const { queue, clock } = await backend.setup();
      const low = await queue.enqueue(noop, { n: 1 }, { priority: 0 });
      await clock.advance(10);
      const highLater = await queue.enqueue(noop, { n: 2 }, { priority: 5 });
      const highEarlier = await queue.enqueue(noop, { n: 3 }, { priority: 5, runAt: clock.now() - 5 });
      const mid = await queue.enqueue(noop, { n: 4 }, { priority: 1 });

      const first = await queue.lease({ limit: 3 });
      expect(first.map((j) => j.id)).toEqual([highEarlier.id, highLater.id, mid.id]);
      const second = await queue.lease({ limit: 3 });
      expect(second.map((j) => j.id)).toEqual([low.id]);
      expect(await queue.lease({ limit: 3 })).toEqual([]);
    });

    it("marks claimed jobs active with attempt 1, the holder and a lease", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease({ workerId: "w1", leaseMs: 5000 });
      expect(leased).toMatchObject({ id: job.id, state: "active", attempt: 1, workerId: "w1" });
      expect(leased!.leaseExpiresAt!.getTime()).toBe(clock.now() + 5000);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "active", attempt: 1, workerId: "w1" });
    });

    it("does not hand out jobs whose runAt is in the future until the clock reaches it", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {}, { delayMs: 60_000 });
      expect(await queue.lease()).toEqual([]);
      await clock.advance(59_999);
      expect(await queue.lease()).toEqual([]);
      await clock.advance(1);
      expect((await queue.lease()).map((j) => j.id)).toEqual([job.id]);
    });

    it("hands each job to exactly one of many concurrent claimers on separate connections", async () => {
      const { queue, connect } = await backend.setup();
      const others = await Promise.all([connect(), connect(), connect()]);
      const jobs = await queue.enqueueMany(
        noop,
        Array.from({ length: 200 }, (_, i) => ({ i })),
      );
      const claimers = [queue, ...others];
      const seen: string[] = [];
      // Every claimer keeps claiming small batches, concurrently, until the queue is empty.
      await Promise.all(
        claimers.map(async (q, w) => {
          for (;;) {
            const got = await q.lease({ limit: 7, workerId: `w${w}` });
            if (got.length === 0) return;
            for (const j of got) seen.push(j.id);
          }
        }),
      );
      expect(seen.length).toBe(200);
      expect(new Set(seen).size).toBe(200);
      expect(new Set(seen)).toEqual(new Set(jobs.map((j) => j.id)));
    });

    it("claims only the requested types", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue("a-type", {});
      const b = await queue.enqueue("b-type", {});
      const got = await queue.lease({ types: ["b-type"], limit: 10 });
      expect(got.map((j) => j.id)).toEqual([b.id]);
    });
  });
}
