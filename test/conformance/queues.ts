/** Semantic 7, queues: weighted choice among queues with ready jobs; an empty queue never blocks another. */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";

const noop = defineJob({ type: "noop", handler: async () => null });

export function exerciseQueues(backend: Backend): void {
  describe("queues", () => {
    it("takes what hundreds of mostly empty queues hold in one claim", async () => {
      const { queue } = await backend.setup();
      // 600 queues, 5 with a job: a claim's weighted choice goes round after round through the
      // empty ones (each round closes those that gave nothing), more rounds than limit numbers
      // drawn up front cover on Redis, which then draws its own.
      const names = Array.from({ length: 600 }, (_, i) => `q${i}`);
      const full = ["q3", "q150", "q333", "q598", "q599"];
      for (const name of full) await queue.enqueue(noop, null, { queue: name });
      const got = await queue.lease({ queues: Object.fromEntries(names.map((n) => [n, 1])), limit: 50 });
      expect(got.map((j) => j.queue).sort()).toEqual([...full].sort());
    });

    it("shares single-job leases between two full queues in proportion to their weights (6:1)", async () => {
      const { queue } = await backend.setup();
      const leases = 2_100;
      // Both queues hold more jobs than there are leases, so neither ever runs dry.
      await queue.enqueueMany(
        noop,
        Array.from({ length: leases }, (_, i) => ({ i })),
        { queue: "critical" },
      );
      await queue.enqueueMany(
        noop,
        Array.from({ length: leases }, (_, i) => ({ i })),
        { queue: "default" },
      );

      const taken: Record<string, number> = { critical: 0, default: 0 };
      for (let n = 0; n < leases; n++) {
        const got = await queue.lease({ queues: { critical: 6, default: 1 }, limit: 1 });
        expect(got).toHaveLength(1);
        taken[got[0]!.queue]! += 1;
      }
      expect(taken.critical! + taken.default!).toBe(leases);
      expect(taken.default).toBeGreaterThan(0);
      const ratio = taken.critical! / taken.default!;
      expect(ratio).toBeGreaterThanOrEqual(5.2);
      expect(ratio).toBeLessThanOrEqual(6.8);
      const stats = await queue.stats();
      expect(stats.queues.critical?.active).toBe(taken.critical);
      expect(stats.queues.default?.active).toBe(taken.default);
    });

    it("never lets an empty queue block another: every claim comes from the one with jobs", async () => {
      const { queue } = await backend.setup();
      const jobs = await queue.enqueueMany(
        noop,
        Array.from({ length: 60 }, (_, i) => ({ i })),
        { queue: "default" },
      );
      const seen: string[] = [];
      // Single-job leases: the heavily weighted, empty "critical" queue is chosen most of the time.
      for (let n = 0; n < 50; n++) {
        const got = await queue.lease({ queues: { critical: 6, default: 1 }, limit: 1 });
        expect(got).toHaveLength(1);
        expect(got[0]!.queue).toBe("default");
        seen.push(got[0]!.id);
      }
      // A batch takes the rest in one claim, all from "default".
      const rest = await queue.lease({ queues: { critical: 6, default: 1 }, limit: 100 });
      expect(rest).toHaveLength(10);
      expect(rest.every((j) => j.queue === "default")).toBe(true);
      seen.push(...rest.map((j) => j.id));
      expect(new Set(seen)).toEqual(new Set(jobs.map((j) => j.id)));
      expect(await queue.lease({ queues: { critical: 6, default: 1 }, limit: 10 })).toEqual([]);
    });

    it("gives a low-weight queue the whole batch while the high-weight one is empty, and shares once both have jobs", async () => {
      const { queue } = await backend.setup();
      await queue.enqueueMany(
        noop,
        Array.from({ length: 20 }, (_, i) => ({ i })),
        { queue: "bulk" },
      );
      const first = await queue.lease({ queues: { critical: 10, bulk: 1 }, limit: 5 });
      expect(first.map((j) => j.queue)).toEqual(["bulk", "bulk", "bulk", "bulk", "bulk"]);
      await queue.enqueueMany(
        noop,
        Array.from({ length: 20 }, (_, i) => ({ i })),
        { queue: "critical" },
      );
      const mixed = await queue.lease({ queues: { critical: 10, bulk: 1 }, limit: 10 });
      expect(mixed).toHaveLength(10);
      expect(mixed.filter((j) => j.queue === "critical").length).toBeGreaterThan(5);
    });

    it("orders jobs within a queue by numeric priority, highest first", async () => {
      const { queue, clock } = await backend.setup();
      const byPriority = new Map<number, string>();
      for (const priority of [0, 7, -3, 42, 1]) {
        const job = await queue.enqueue(noop, { priority }, { priority });
        byPriority.set(priority, job.id);
        await clock.advance(1);
      }
      const got = await queue.lease({ limit: 5 });
      expect(got.map((j) => j.priority)).toEqual([42, 7, 1, 0, -3]);
      expect(got.map((j) => j.id)).toEqual([42, 7, 1, 0, -3].map((p) => byPriority.get(p)));
    });

    it("runs jobs in priority order (then runAt) on a Worker with concurrency 1", async () => {
      const { queue, clock } = await backend.setup();
      const started: string[] = [];
      const recorder = defineJob({
        type: "recorder",
        handler: async (payload: { name: string }) => {
          started.push(payload.name);
          return null;
        },
      });
      // Enqueued in an order unlike the run order; equal priorities are broken by runAt.
      const plan: Array<[string, number]> = [
        ["low", -1],
        ["mid-1", 5],
        ["top", 100],
        ["mid-2", 5],
        ["zero", 0],
      ];
      for (const [name, priority] of plan) {
        await queue.enqueue(recorder, { name }, { priority });
        await clock.advance(1);
      }
      const result = await drain(queue, { jobs: [recorder], concurrency: 1 });
      expect(result.completed).toBe(5);
      expect(started).toEqual(["top", "mid-1", "mid-2", "zero", "low"]);
      expect(result.jobs.map((j) => (j.payload as { name: string }).name)).toEqual(started);
    });
  });
}
