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

    it("orders the jobs of several types together: priority desc, then runAt, then id", async () => {
      const { queue, clock } = await backend.setup();
      // Ten types (more than one merged walk takes at once on SQLite), interleaved in time and
      // priority, so no type's jobs are contiguous in claim order.
      const types = Array.from({ length: 10 }, (_, i) => `t${i}`);
      const jobs: Array<{ id: string; type: string; priority: number; runAt: number }> = [];
      for (let n = 0; n < 60; n++) {
        const type = types[(n * 7) % types.length]!;
        const priority = (n * 5) % 3;
        const job = await queue.enqueue(type, { n }, { priority, runAt: clock.now() - ((n * 11) % 13) });
        jobs.push({ id: job.id, type, priority, runAt: job.runAt.getTime() });
        await clock.advance(1);
      }
      const order = (xs: typeof jobs) =>
        [...xs]
          .sort((a, b) => b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : 1))
          .map((j) => j.id);
      const some = ["t1", "t4", "t5", "t8", "no-such-type"];
      const first = await queue.lease({ types: some, limit: 9 });
      expect(first.map((j) => j.id)).toEqual(order(jobs.filter((j) => some.includes(j.type))).slice(0, 9));
      const taken = new Set(first.map((j) => j.id));
      const rest = jobs.filter((j) => !taken.has(j.id));
      // Every type named, and no types named (any type): the same order over what is left.
      const named = await queue.lease({ types, limit: 20 });
      expect(named.map((j) => j.id)).toEqual(order(rest).slice(0, 20));
      const any = await queue.lease({ limit: 100 });
      expect(any.map((j) => j.id)).toEqual(order(rest).slice(20));
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
