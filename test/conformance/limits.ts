/**
 * Semantic 8, limits: a job's weight counts against its worker's concurrency, and a job type's
 * cluster-wide cap is never exceeded, whatever the number of workers.
 */
import { EventEmitter, once } from "node:events";
import { describe, expect, it, onTestFinished } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { LeaseOptions } from "../../src/queue-options.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

/** A handler the test holds open: it runs until the test releases it. */
interface Held {
  job: Job;
  release: () => void;
}

/**
 * Handlers that wait on promises the test releases, recording which jobs (and how much weight)
 * run at the same time.
 */
class Gates extends EventEmitter<{ start: [Held] }> {
  readonly running = new Map<string, Held>();
  runningWeight = 0;
  peakWeight = 0;
  peakCount = 0;
  /** For each start, the ids running at that moment (itself included). */
  readonly overlaps: string[][] = [];

  handler = async (_payload: unknown, ctx: { job: Job }): Promise<string> => {
    const { job } = ctx;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held: Held = { job, release };
    this.running.set(job.id, held);
    this.runningWeight += job.weight;
    this.peakWeight = Math.max(this.peakWeight, this.runningWeight);
    this.peakCount = Math.max(this.peakCount, this.running.size);
    this.overlaps.push([...this.running.keys()]);
    this.emit("start", held);
    await gate;
    this.running.delete(job.id);
    this.runningWeight -= job.weight;
    return job.id;
  };

  /** The next handler start. */
  nextStart(): Promise<Held> {
    return new Promise((resolve) => this.once("start", resolve));
  }
}

/** Resolves when `worker` reports `id` completed. */
function completion(workers: Worker[], id: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (job: Job) => {
      if (job.id !== id) return;
      for (const w of workers) w.off("completed", listener);
      resolve();
    };
    for (const w of workers) w.on("completed", listener);
  });
}

/** Closes the worker when the test ends, passing its grace period on the ManualClock. */
function closeAfterTest(worker: Worker, clock: ManualClock): void {
  onTestFinished(async () => {
    const closed = worker.close({ graceMs: 0 });
    await clock.advance(0);
    await closed;
  });
}

export function exerciseLimits(backend: Backend): void {
  describe("limits", () => {
    it("never runs more job weight than the worker's concurrency (weights 3 and 1, concurrency 4)", async () => {
      const { queue, clock } = await backend.setup();
      const gates = new Gates();
      const heavy = defineJob({ type: "heavy", weight: 3, handler: gates.handler });
      const light = defineJob({ type: "light", handler: gates.handler });
      const ids: string[] = [];
      // Interleave so that claims meet both weights in every order.
      for (let i = 0; i < 6; i++) {
        ids.push((await queue.enqueue(light, { i })).id);
        await clock.advance(1);
        ids.push((await queue.enqueue(heavy, { i })).id);
        await clock.advance(1);
        ids.push((await queue.enqueue(light, { i, second: true })).id);
        await clock.advance(1);
      }
      const worker = new Worker(queue, { jobs: [heavy, light], concurrency: 4 });
      closeAfterTest(worker, clock);
      const completed = new Set<string>();
      worker.on("completed", (job) => completed.add(job.id));
      const firstStart = gates.nextStart();
      await worker.start();
      await firstStart;

      while (completed.size < ids.length) {
        const next = gates.running.values().next().value as Held | undefined;
        if (!next) {
          await gates.nextStart();
          continue;
        }
        const done = completion([worker], next.job.id);
        next.release();
        await done;
      }
      expect(gates.peakWeight).toBeLessThanOrEqual(4);
      expect(gates.peakWeight).toBeGreaterThanOrEqual(3);
      expect(new Set(completed)).toEqual(new Set(ids));
      for (const id of ids) expect((await queue.get(id))?.state).toBe("completed");
    });

    it("runs a job heavier than the whole concurrency, alone", async () => {
      const { queue, clock } = await backend.setup();
      const gates = new Gates();
      const huge = defineJob({ type: "huge", weight: 10, handler: gates.handler });
      const light = defineJob({ type: "light", handler: gates.handler });
      const before = [
        await queue.enqueue(light, { n: 1 }, { priority: 10 }),
        await queue.enqueue(light, { n: 2 }, { priority: 10 }),
      ];
      const big = await queue.enqueue(huge, {}, { priority: 5 });
      const after = [await queue.enqueue(light, { n: 3 }), await queue.enqueue(light, { n: 4 })];
      const all = [...before, big, ...after].map((j) => j.id);

      const worker = new Worker(queue, { jobs: [huge, light], concurrency: 4 });
      closeAfterTest(worker, clock);
      const completed: string[] = [];
      worker.on("completed", (job) => completed.push(job.id));
      const firstStart = gates.nextStart();
      await worker.start();
      await firstStart;
      while (completed.length < all.length) {
        const next = gates.running.values().next().value as Held | undefined;
        if (!next) {
          await gates.nextStart();
          continue;
        }
        const done = completion([worker], next.job.id);
        next.release();
        await done;
      }
      expect(new Set(completed)).toEqual(new Set(all));
      const bigStart = gates.overlaps.find((ids) => ids.includes(big.id));
      expect(bigStart).toEqual([big.id]);
      // Nothing started while the heavy job ran.
      for (const ids of gates.overlaps) {
        if (ids.includes(big.id)) expect(ids).toEqual([big.id]);
      }
      expect(completed.indexOf(big.id)).toBe(2);
      expect((await queue.get(big.id))?.weight).toBe(10);
    });

    it("fills a concurrency larger than one claim asks for (concurrency 250, handlers held)", async () => {
      const { queue, clock } = await backend.setup();
      const gates = new Gates();
      const held = defineJob({ type: "held", handler: gates.handler });
      await queue.enqueueMany(
        held,
        Array.from({ length: 260 }, (_, i) => ({ i })),
      );
      const worker = new Worker(queue, { jobs: [held], concurrency: 250 });
      closeAfterTest(worker, clock);
      onTestFinished(() => {
        for (const h of gates.running.values()) h.release();
      });
      await worker.start();
      // Claims come in chunks: the worker keeps claiming while a chunk came back full and room
      // is left, rather than waiting for running jobs to finish.
      while (gates.running.size < 250) await gates.nextStart();
      expect(gates.peakCount).toBe(250);
      expect(worker.running).toBe(250);
      expect((await queue.stats()).states.pending).toBe(10);
    });

    it("caps a type cluster-wide: two workers on two connections, concurrency 10 each, cap 2", async () => {
      const { queue, clock, connect } = await backend.setup();
      const gates = new Gates();
      const capped = defineJob({ type: "capped", concurrency: 2, handler: gates.handler });
      const jobs = await queue.enqueueMany(
        capped,
        Array.from({ length: 20 }, (_, i) => ({ i })),
      );
      const other = await connect();
      const workers = [
        new Worker(queue, { jobs: [capped], concurrency: 10, workerId: "w1" }),
        new Worker(other, { jobs: [capped], concurrency: 10, workerId: "w2" }),
      ];
      for (const w of workers) closeAfterTest(w, clock);
      const completed = new Set<string>();
      for (const w of workers) w.on("completed", (job) => completed.add(job.id));
      const activeSeen: number[] = [];
      // After every start, the store agrees: never more than 2 active.
      gates.on("start", () => {
        void queue.stats().then(
          (s) => activeSeen.push(s.types.capped?.active ?? 0),
          () => {},
        );
      });

      await Promise.all(workers.map((w) => w.start()));
      let rounds = 0;
      while (completed.size < jobs.length) {
        expect(++rounds).toBeLessThan(500);
        const held = [...gates.running.values()];
        if (held.length === 0) {
          // Freed room under the cap reaches other workers by polling at the latest. Time moves on
          // only once the poll is answered (a start, or both workers idle): a networked store's
          // claim takes real milliseconds, and a clock spinning ahead of it would expire leases.
          const answered = Promise.race([
            gates.nextStart(),
            Promise.all(workers.map((w) => once(w, "idle"))),
          ]);
          await clock.advance(1000);
          await answered;
          continue;
        }
        const done = Promise.all(held.map((h) => completion(workers, h.job.id)));
        for (const h of held) h.release();
        await done;
      }
      expect(gates.peakCount).toBeLessThanOrEqual(2);
      expect(gates.peakCount).toBe(2);
      expect(Math.max(...activeSeen)).toBeLessThanOrEqual(2);
      expect(completed).toEqual(new Set(jobs.map((j) => j.id)));
      const stats = await queue.stats();
      expect(stats.types.capped).toEqual({ completed: 20 });
    });

    it("wakes a worker held back by a cap, on another connection, when a capped job finishes", async () => {
      const { queue, clock, connect } = await backend.setup();
      const gates = new Gates();
      const capped = defineJob({ type: "capped-wake", concurrency: 1, handler: gates.handler });
      queue.register(capped);
      await queue.enqueueMany(capped, [{ n: 1 }, { n: 2 }]);
      const [held] = await queue.lease({ types: ["capped-wake"] });
      const other = await connect();
      // No polling and no sweeps: only a wake-up can start the second job.
      const worker = new Worker(other, { jobs: [capped], pollIntervalMs: 3_600_000, maintenance: false });
      closeAfterTest(worker, clock);
      await worker.start();
      expect(gates.running.size).toBe(0);
      const started = gates.nextStart();
      expect(await queue.complete(held!, "done")).toBe(true);
      const second = await started;
      expect(second.job.id).not.toBe(held!.id);
      second.release();
    });

    it.each([
      ["", undefined],
      [", naming it", ["capped"]],
    ] as const)("caps a type across concurrent leases on separate connections%s", async (_name, types) => {
      // Naming the one type: on PostgreSQL, one statement per claim (claim.ts claimCappedAlone).
      const lease = (q: Queue, o: LeaseOptions) => q.lease(types ? { ...o, types: [...types] } : o);
      const { queue, connect } = await backend.setup();
      const capped = defineJob({ type: "capped", concurrency: 2, handler: async () => null });
      queue.register(capped);
      const others = await Promise.all([connect({ jobs: [capped] }), connect({ jobs: [capped] })]);
      await queue.enqueueMany(
        capped,
        Array.from({ length: 10 }, (_, i) => ({ i })),
      );
      const batches = await Promise.all(
        [queue, ...others].map((q, i) => lease(q, { limit: 10, workerId: `w${i}` })),
      );
      const leased = batches.flat();
      expect(leased).toHaveLength(2);
      expect(await lease(queue, { limit: 10 })).toEqual([]);
      // One finishing frees exactly one slot.
      expect(await queue.complete(leased[0]!, null)).toBe(true);
      expect(await lease(others[0]!, { limit: 10 })).toHaveLength(1);
      expect(await lease(others[1]!, { limit: 10 })).toEqual([]);
      expect((await queue.stats()).types.capped).toMatchObject({ active: 2, pending: 7, completed: 1 });
    });
  });
}
