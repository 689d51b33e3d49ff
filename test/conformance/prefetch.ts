/**
 * The Worker's `prefetch` (DESIGN.md, worker runtime): a worker may claim up to `prefetch` jobs
 * beyond its free capacity and keep them in a local buffer. A buffered job is claimed like a
 * running one and as honestly: it starts in claim order within `concurrency`, its lease is
 * heartbeated while it waits (no other worker takes it), close() gives it back at once without
 * spending its attempt, and a cancel (here, or from another process) keeps it from ever starting.
 */
import { once } from "node:events";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { Store } from "../../src/store/store.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { trackHeartbeats } from "./heartbeats.js";

/** A promise and the function that resolves it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * A job type whose handler for payload `n` waits until `gates[n]` opens (when there is one), and
 * the order in which handlers started.
 */
function steps(options: { maxAttempts?: number } = {}) {
  const gates = new Map<number, ReturnType<typeof gate>>();
  const started: number[] = [];
  let running = 0;
  let most = 0;
  const job = defineJob({
    type: "step",
    ...options,
    handler: async (p: { n: number }) => {
      started.push(p.n);
      most = Math.max(most, ++running);
      try {
        await gates.get(p.n)?.promise;
      } finally {
        running--;
      }
      return p.n;
    },
  });
  /** Enqueues jobs 0 … count − 1, each held by a closed gate until the test opens it. */
  const gated = (queue: Queue, count: number) => {
    for (let n = 0; n < count; n++) gates.set(n, gate());
    return queue.enqueueMany(
      job,
      Array.from({ length: count }, (_, n) => ({ n })),
    );
  };
  return { job, gates, started, gated, mostAtOnce: () => most };
}

/**
 * The release writes a worker sends to `store` (each job it gives back unstarted), as they start;
 * `seen` hears each job's id when its write starts.
 */
function trackReleases(store: Store, seen: (id: string) => void = () => {}): Array<Promise<unknown>> {
  const writes: Array<Promise<unknown>> = [];
  const release = store.release.bind(store);
  store.release = (params) => {
    seen(params.id);
    const write = release(params);
    writes.push(write);
    return write;
  };
  return writes;
}

/**
 * Makes `store` answer as a store with `claimAhead` and chunks of `chunk` jobs would (the Worker
 * reads only its capabilities), so every store's claims are exercised pipelined.
 */
function pipelineClaims(store: Store, chunk: number): void {
  Object.defineProperty(store, "capabilities", {
    value: { ...store.capabilities, claimChunk: chunk, prefetchChunk: chunk, claimAhead: true },
    configurable: true,
  });
}

/**
 * Each claim sent to `store`, with what the worker held when it went (`held()`) plus the weight
 * every claim under way may bring (`bound`), and the most claims under way at once.
 */
function watchClaims(store: Store, held: () => number) {
  const sent: Array<{ limit: number; maxWeight: number; bound: number }> = [];
  const underWay = new Set<{ maxWeight: number }>();
  let most = 0;
  const claim = store.claim.bind(store);
  store.claim = async (params) => {
    const entry = { maxWeight: params.maxWeight ?? Number.POSITIVE_INFINITY };
    underWay.add(entry);
    most = Math.max(most, underWay.size);
    let bound = held();
    for (const c of underWay) bound += c.maxWeight;
    sent.push({ limit: params.limit, maxWeight: entry.maxWeight, bound });
    try {
      return await claim(params);
    } finally {
      underWay.delete(entry);
    }
  };
  return { sent, mostAtOnce: () => most };
}

/** The store's view of each job: state and holder. */
async function statesOf(queue: Queue, jobs: Job[]): Promise<string[]> {
  return Promise.all(jobs.map(async (j) => (await queue.get(j.id))!.state));
}

export function exercisePrefetch(backend: Backend): void {
  describe("prefetch", () => {
    it("claims up to concurrency + prefetch, runs within concurrency, in claim order", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      const jobs = await s.gated(queue, 10);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 2, prefetch: 4, workerId: "ahead" });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const completed: number[] = [];
      worker.on("completed", (_j, result) => completed.push(result as number));
      await worker.start();

      // The first claim took six: two run, four wait in the buffer, claimed (active) in the store.
      expect(s.started).toEqual([0, 1]);
      expect(await statesOf(queue, jobs)).toEqual([...Array(6).fill("active"), ...Array(4).fill("pending")]);
      for (const j of jobs.slice(0, 6)) expect((await queue.get(j.id))!.workerId).toBe("ahead");
      expect([worker.running, worker.prefetched]).toEqual([2, 4]);

      // Each finished job lets the next buffered one start, first claimed first.
      for (let n = 0; n < 10; n++) {
        const next = n + 2 < 10 ? once(worker, "active") : null;
        const done = once(worker, "completed");
        s.gates.get(n)!.open();
        await done;
        if (next) expect(((await next) as [Job])[0].payload).toEqual({ n: n + 2 });
      }
      await vi.waitFor(() => expect(completed).toHaveLength(10));
      expect(s.started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(s.mostAtOnce()).toBe(2);
      for (const j of jobs) expect(await queue.get(j.id)).toMatchObject({ state: "completed", attempt: 1 });
    });

    it("starts a heavy buffered job only when its whole weight is free, and nothing jumps it", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const heavy = defineJob({ type: "heavy", weight: 2, handler: async () => "heavy" });
      const first = await queue.enqueue(s.job, { n: 0 });
      const big = await queue.enqueue(heavy, {});
      const light = await queue.enqueue(s.job, { n: 1 });
      const worker = new Worker(queue, { jobs: [s.job, heavy], concurrency: 2, prefetch: 2 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const order: string[] = [];
      worker.on("active", (j) => order.push(j.id));
      await worker.start();

      // Weight 1 of 2 is free, but the heavy job needs 2: it waits, and the light one behind it too.
      expect(order).toEqual([first.id]);
      expect(await statesOf(queue, [first, big, light])).toEqual(["active", "active", "active"]);
      const bigDone = new Promise<void>((resolve) =>
        worker.on("completed", (j) => j.id === big.id && resolve()),
      );
      s.gates.get(0)!.open();
      await bigDone;
      await vi.waitFor(() => expect(order).toEqual([first.id, big.id, light.id]));
    });

    it("leaves a wake-up to the low-water refill while the buffer is fuller, so enqueues do not become one-job claims", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      await s.gated(queue, 5);
      const claims: number[] = [];
      let claimed = () => {};
      const claim = queue.store.claim.bind(queue.store);
      queue.store.claim = async (params) => {
        const jobs = await claim(params);
        claims.push(jobs.length);
        claimed();
        return jobs;
      };
      // Concurrency 1 and prefetch 4: it holds 5, and claims again when it holds 2 (0 + 4 / 2).
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 1, prefetch: 4, minConcurrency: 0 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await worker.start();
      expect(claims).toEqual([5]);

      // Each enqueue wakes the worker; holding 5, then 4, then 3, it claims nothing yet.
      const late = await queue.enqueue(s.job, { n: 5 });
      for (let n = 0; n < 2; n++) {
        const done = once(worker, "completed");
        s.gates.get(n)!.open();
        await done;
        await queue.enqueue(s.job, { n: 6 + n });
      }
      expect(claims).toEqual([5]);
      // At 2 held (one running, one waiting) it claims what its room allows, the wake-ups' jobs among them.
      const refill = new Promise<void>((resolve) => {
        claimed = resolve;
      });
      const done = once(worker, "completed");
      s.gates.get(2)!.open();
      await done;
      await refill;
      expect(claims).toEqual([5, 3]);
      expect((await queue.get(late.id))?.state).toBe("active");
      for (let n = 3; n < 8; n++) s.gates.get(n)?.open();
    });

    it("keeps a buffered job's lease alive while it waits, so no other worker takes it", async () => {
      const { queue, clock, connect } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const jobs = await queue.enqueueMany(s.job, [{ n: 0 }, { n: 1 }, { n: 2 }]);
      // leaseMs 3000: the worker heartbeats every 1000 ms.
      const worker = new Worker(queue, {
        jobs: [s.job],
        concurrency: 1,
        prefetch: 2,
        leaseMs: 3000,
        workerId: "holder",
      });
      const rival = new Worker(await connect(), { jobs: [s.job], leaseMs: 3000, workerId: "rival" });
      onTestFinished(async () => {
        s.gates.get(0)!.open();
        await Promise.all([worker.close({ graceMs: 0 }), rival.close({ graceMs: 0 })]);
      });
      const heartbeatsLanded = trackHeartbeats(queue.store);
      await worker.start();
      await rival.start();
      expect(s.started).toEqual([0]);

      // Ten lease lengths, in steps shorter than the heartbeat interval; both workers sweep.
      for (let elapsed = 0; elapsed < 30_000; elapsed += 400) {
        await clock.advance(400);
        await heartbeatsLanded();
        await queue.sweep();
        for (const j of jobs) {
          const stored = await queue.get(j.id);
          expect(stored).toMatchObject({ state: "active", attempt: 1, workerId: "holder" });
          expect(stored!.leaseExpiresAt!.getTime()).toBeGreaterThan(clock.now());
        }
      }
      expect(s.started).toEqual([0]);

      const done = new Promise<void>((resolve) => {
        let n = 0;
        worker.on("completed", () => ++n === 3 && resolve());
      });
      s.gates.get(0)!.open();
      await done;
      expect(s.started).toEqual([0, 1, 2]);
      for (const j of jobs) {
        const stored = await queue.get(j.id);
        expect(stored).toMatchObject({ state: "completed", attempt: 1 });
        expect(stored!.errors).toEqual([]);
      }
    });

    it("gives buffered jobs back at close at once, their attempt not spent", async () => {
      const { queue } = await backend.setup();
      const s = steps({ maxAttempts: 1 });
      s.gates.set(0, gate());
      const jobs = await queue.enqueueMany(s.job, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
      const releases = trackReleases(queue.store);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 1, prefetch: 3 });
      await worker.start();
      expect(await statesOf(queue, jobs)).toEqual(["active", "active", "active", "active"]);

      let closed = false;
      const closing = worker.close({ graceMs: 60_000 }).then(() => {
        closed = true;
      });
      // The three buffered jobs go back while the running one is still within its grace period.
      await vi.waitFor(() => expect(releases).toHaveLength(3));
      await Promise.all(releases);
      expect(closed).toBe(false);
      expect(await statesOf(queue, jobs)).toEqual(["active", "pending", "pending", "pending"]);
      for (const j of jobs.slice(1)) {
        const stored = await queue.get(j.id);
        expect(stored).toMatchObject({ workerId: null, leaseExpiresAt: null, errors: [] });
        // maxAttempts 1, and one attempt is still left: giving it back did not spend it.
        expect(stored!.maxAttempts - stored!.attempt).toBe(1);
      }

      s.gates.get(0)!.open();
      await closing;
      expect(s.started).toEqual([0]);
      expect((await queue.get(jobs[0]!.id))?.state).toBe("completed");

      const next = await drain(queue, { jobs: [s.job] });
      expect(next.completed).toBe(3);
      expect(s.started).toEqual([0, 1, 2, 3]);
    });

    for (const rule of ["rateLimit", "keyRateLimit"] as const) {
      it(`claims no job ahead while a type it runs has a ${rule}: buffered jobs would start together`, async () => {
        const { queue, clock } = await backend.setup();
        const g = gate();
        const starts: number[] = [];
        const limited = defineJob({
          type: "limited",
          [rule]: { limit: 3, periodMs: 1000 },
          handler: async (p: { n: number }) => {
            starts.push(clock.now());
            if (p.n === 0) await g.promise;
            return null;
          },
        });
        const plain = defineJob({ type: "plain", handler: async () => null });
        const jobs = await queue.enqueueMany(
          limited,
          Array.from({ length: 6 }, (_, n) => ({ n })),
          { key: "k" },
        );
        const worker = new Worker(queue, { jobs: [limited, plain], concurrency: 1, prefetch: 10 });
        onTestFinished(() => worker.close({ graceMs: 0 }));
        await worker.start();
        // Its window had room for three, but one slot: one claimed, none held ahead (they would
        // have been counted as starts now and started a window later, all at once).
        expect(worker.prefetched).toBe(0);
        expect(await statesOf(queue, jobs)).toEqual(["active", ...Array(5).fill("pending")]);

        // A window on, the slot still busy: nothing claimed.
        await clock.advance(1000);
        expect(worker.prefetched).toBe(0);
        const idle = once(worker, "idle");
        g.open();
        // Job 0 done: three run a window after it, then the window is full.
        await idle;
        expect(starts).toEqual([starts[0], ...Array(3).fill(starts[0]! + 1000)]);
        await clock.advance(1000);
        await vi.waitFor(() => expect(starts).toHaveLength(6));
        for (const t of starts)
          expect(starts.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(3);
        expect(worker.prefetched).toBe(0);
      });
    }

    it("gives back, unstarted, buffered jobs of a type that gains a rate rule (a server's setting)", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      const jobs = await s.gated(queue, 4);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 1, prefetch: 5 });
      onTestFinished(async () => {
        for (const g of s.gates.values()) g.open();
        await worker.close({ graceMs: 0 });
      });
      const releases = trackReleases(queue.store);
      await worker.start();
      expect([worker.running, worker.prefetched]).toEqual([1, 3]);
      // Claimed before the rule: started later, they would break it (three in one window of 1).
      queue.setTypeSettings("step", { rateLimit: { limit: 1, periodMs: 60_000 } });
      const done = once(worker, "completed");
      s.gates.get(0)!.open();
      await done;
      await vi.waitFor(() => expect(releases).toHaveLength(3), { timeout: 10_000 });
      await Promise.all(releases);
      // Claimed again under the rule, one at a time: the window's one start, then none. (Which of
      // the three is the one depends on the order the releases' writes landed in.)
      await vi.waitFor(() => expect(s.started).toHaveLength(2), { timeout: 10_000 });
      const again = jobs[s.started[1]!]!;
      expect(worker.prefetched).toBe(0);
      const states = await statesOf(queue, jobs);
      expect(states[0]).toBe("completed");
      expect(states.slice(1).sort()).toEqual(["active", "pending", "pending"]);
      // The other two given back unstarted: their attempt not spent.
      for (const j of jobs.slice(1).filter((j) => j.id !== again.id)) {
        const stored = (await queue.get(j.id))!;
        expect(stored.maxAttempts - stored.attempt).toBe(j.maxAttempts);
      }
    });

    it("starts what waited behind a heavy buffered job at once when that job is cancelled", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const heavy = defineJob({ type: "heavy", weight: 3, handler: async () => "heavy" });
      const first = await queue.enqueue(s.job, { n: 0 }, { priority: 3 });
      const big = await queue.enqueue(heavy, {}, { priority: 2 });
      const light = await queue.enqueue(s.job, { n: 1 }, { priority: 1 });
      const worker = new Worker(queue, { jobs: [s.job, heavy], concurrency: 3, prefetch: 4 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await worker.start();
      // Two of three free, but the heavy job needs three: it waits, and the light one behind it.
      expect([worker.running, worker.prefetched]).toEqual([1, 2]);
      const started = once(worker, "active");
      await queue.cancel(big.id);
      // The light one fits: it starts now, not once the first job ends.
      expect(((await started) as [Job])[0].id).toBe(light.id);
      expect(s.started).toEqual([0, 1]);
      expect((await queue.get(first.id))?.state).toBe("active");
      s.gates.get(0)!.open();
    });

    it("leases ahead only where no type leased is rate-ruled (LeaseOptions.ahead)", async () => {
      const { queue } = await backend.setup();
      const limited = defineJob({
        type: "limited",
        rateLimit: { limit: 100, periodMs: 1000 },
        handler: async () => null,
      });
      const plain = defineJob({ type: "plain", handler: async () => null });
      queue.register(limited, plain);
      await queue.enqueueMany(limited, [1, 2, 3, 4, 5, 6]);
      await queue.enqueueMany(plain, [1, 2, 3, 4, 5, 6]);
      // Five asked for, four of them ahead: one that can start at once.
      expect(await queue.lease({ types: ["limited"], limit: 5, ahead: 4 })).toHaveLength(1);
      expect(await queue.lease({ types: ["limited"], limit: 5, maxWeight: 3, ahead: 1 })).toHaveLength(2);
      expect(await queue.lease({ types: ["limited"], limit: 5, ahead: 5 })).toEqual([]);
      // A lease of both types is ruled by the rate-limited one.
      expect(await queue.lease({ types: ["limited", "plain"], limit: 5, ahead: 3 })).toHaveLength(2);
      expect(await queue.lease({ types: ["plain"], limit: 3, ahead: 2 })).toHaveLength(3);
      await expect(queue.lease({ ahead: -1 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
      await expect(queue.lease({ ahead: 1.5 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    });

    it("gives back, unstarted, a buffered job whose lease no heartbeat kept", async () => {
      const { queue, clock } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const jobs = await queue.enqueueMany(s.job, [{ n: 0 }, { n: 1 }]);
      // The store cannot be reached for heartbeats: the buffered job's lease runs out unextended.
      queue.store.heartbeatMany = async () => {
        throw new Error("store unreachable");
      };
      const released: Array<{ id: string; startedThen: number[] }> = [];
      trackReleases(queue.store, (id) => released.push({ id, startedThen: [...s.started] }));
      const worker = new Worker(queue, {
        jobs: [s.job],
        concurrency: 1,
        prefetch: 1,
        leaseMs: 3000,
        maintenance: false,
        logger: pino({ level: "silent" }),
      });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      await worker.start();
      expect(await statesOf(queue, jobs)).toEqual(["active", "active"]);

      await clock.advance(3000);
      expect(errors.length).toBeGreaterThan(0);
      const second = new Promise<Job>((resolve) =>
        worker.on("completed", (j) => j.id === jobs[1]!.id && resolve(j)),
      );
      s.gates.get(0)!.open();
      await second;
      // Given back before it started, then claimed afresh and run once, on a lease of its own.
      expect(released.map((r) => [r.id, r.startedThen])).toEqual([[jobs[1]!.id, [0]]]);
      expect(s.started).toEqual([0, 1]);
      const stored = await queue.get(jobs[1]!.id);
      expect(stored).toMatchObject({ state: "completed", attempt: 2, errors: [] });
    });

    it("never starts a buffered job cancelled here or from another process", async () => {
      const { queue, clock, connect } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const jobs = await queue.enqueueMany(s.job, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 1, prefetch: 3, leaseMs: 3000 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const cancelled: string[] = [];
      worker.on("cancelled", (j) => cancelled.push(j.id));
      const heartbeatsLanded = trackHeartbeats(queue.store);
      await worker.start();
      expect(s.started).toEqual([0]);

      // Here: the queue's own cancel reaches the worker at once.
      await queue.cancel(jobs[1]!.id);
      expect(cancelled).toEqual([jobs[1]!.id]);
      // Elsewhere: the worker learns it at its next heartbeat, which the store refuses.
      await (await connect()).cancel(jobs[2]!.id);
      await clock.advance(1000);
      await heartbeatsLanded();
      // The worker reads the refusal in the promise jobs after the write: let them run.
      await new Promise((resolve) => setImmediate(resolve));

      const done = once(worker, "completed");
      const last = new Promise<void>((resolve) =>
        worker.on("completed", (j) => j.id === jobs[3]!.id && resolve()),
      );
      s.gates.get(0)!.open();
      await done;
      await last;
      expect(s.started).toEqual([0, 3]);
      // Only the cancel made here is heard as one; the other was a lease the store refused.
      expect(cancelled).toEqual([jobs[1]!.id]);
      expect(await statesOf(queue, jobs)).toEqual(["completed", "cancelled", "cancelled", "completed"]);
    });

    it("gives back a paused queue's buffered jobs unstarted: at once when paused here, at the next heartbeat when paused elsewhere", async () => {
      for (const where of ["here", "elsewhere"] as const) {
        const { queue, clock, connect } = await backend.setup();
        const s = steps();
        s.gates.set(0, gate());
        const jobs = await queue.enqueueMany(s.job, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
        const releases = trackReleases(queue.store);
        const heartbeatsLanded = trackHeartbeats(queue.store);
        const worker = new Worker(queue, { jobs: [s.job], concurrency: 1, prefetch: 3, leaseMs: 3000 });
        onTestFinished(() => worker.close({ graceMs: 0 }));
        await worker.start();
        expect(await statesOf(queue, jobs)).toEqual(["active", "active", "active", "active"]);

        if (where === "here") {
          await queue.pauseQueue(jobs[0]!.queue);
          expect(releases, where).toHaveLength(3);
        } else {
          await (await connect()).pauseQueue(jobs[0]!.queue);
          expect(releases, where).toHaveLength(0);
          await clock.advance(1000); // the heartbeat asks which queues are paused
          await heartbeatsLanded();
          await vi.waitFor(() => expect(releases, where).toHaveLength(3));
        }
        await Promise.all(releases);
        expect(await statesOf(queue, jobs), where).toEqual(["active", "pending", "pending", "pending"]);
        for (const j of jobs.slice(1)) {
          expect(await queue.get(j.id), where).toMatchObject({ workerId: null, errors: [] });
        }

        // The running job finishes; nothing of the paused queue starts until it is resumed.
        const done = once(worker, "completed");
        s.gates.get(0)!.open();
        await done;
        expect(s.started, where).toEqual([0]);
        const rest = new Promise<void>((resolve) => {
          let n = 0;
          worker.on("completed", () => ++n === 3 && resolve());
        });
        await queue.resumeQueue(jobs[0]!.queue);
        await rest;
        expect(s.started, where).toEqual([0, 1, 2, 3]);
      }
    });

    it("with claimAhead, sends the next claim while a full one is under way, and holds no more than concurrency + prefetch", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      await s.gated(queue, 30);
      // Every store's claims pipelined as Redis's are, in chunks of 4 so that 12 is three of them.
      pipelineClaims(queue.store, 4);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 2, prefetch: 10 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const claims = watchClaims(queue.store, () => worker.running + worker.prefetched);
      const completed: number[] = [];
      worker.on("completed", (_j, result) => completed.push(result as number));
      await worker.start();
      await vi.waitFor(() => expect(worker.running + worker.prefetched).toBe(12));
      // The second and third chunks were asked for together, each within a chunk's weight.
      expect(claims.mostAtOnce()).toBe(2);
      expect(claims.sent.slice(0, 3).map((c) => [c.limit, c.maxWeight])).toEqual([
        [4, 12],
        [4, 4],
        [4, 4],
      ]);
      for (let n = 0; n < 30; n++) s.gates.get(n)!.open();
      await vi.waitFor(() => expect(completed).toHaveLength(30));
      // Held plus what claims under way may bring never passed 12, and every job ran once: in claim
      // order where the store answers a worker's claims in the order sent, as one that sets
      // claimAhead must (PostgreSQL's two claims run side by side on two connections).
      expect(Math.max(...claims.sent.map((c) => c.bound))).toBeLessThanOrEqual(12);
      const order = Array.from({ length: 30 }, (_, n) => n);
      expect([...s.started].sort((a, b) => a - b)).toEqual(order);
      if (backend.capabilities.claimAhead) expect(s.started).toEqual(order);
      expect(s.mostAtOnce()).toBe(2);
    });

    it("claims in chunks of min(prefetchChunk, prefetch) when prefetching, of claimChunk when not", async () => {
      const { queue } = await backend.setup();
      // Small chunks, so a few jobs show each bound; no claim sent ahead, so each claim's limit is
      // the chunk or the room left, whichever is less.
      Object.defineProperty(queue.store, "capabilities", {
        value: { ...queue.store.capabilities, claimChunk: 3, prefetchChunk: 6, claimAhead: false },
        configurable: true,
      });
      /** The limits of the claims that fill a worker with gated jobs; then it drains them. */
      const claimed = async (options: { concurrency: number; prefetch?: number }) => {
        const s = steps();
        await s.gated(queue, 20);
        const worker = new Worker(queue, { jobs: [s.job], ...options });
        const claims = watchClaims(queue.store, () => worker.running + worker.prefetched);
        let done = 0;
        worker.on("completed", () => done++);
        await worker.start();
        const full = options.concurrency + (options.prefetch ?? 0);
        await vi.waitFor(() => expect(worker.running + worker.prefetched).toBe(full));
        const limits = claims.sent.map((c) => c.limit);
        for (const g of s.gates.values()) g.open();
        await vi.waitFor(() => expect(done).toBe(20));
        await worker.close();
        Reflect.deleteProperty(queue.store, "claim"); // the next round watches afresh
        return limits;
      };
      // No prefetch: claimChunk, whatever the room.
      expect(await claimed({ concurrency: 8 })).toEqual([3, 3, 2]);
      // Prefetching 4 (below prefetchChunk): chunks of 4.
      expect(await claimed({ concurrency: 2, prefetch: 4 })).toEqual([4, 2]);
      // Prefetching 10: chunks of prefetchChunk.
      expect(await claimed({ concurrency: 2, prefetch: 10 })).toEqual([6, 6]);
      // Prefetching 1 (below claimChunk): never smaller chunks than claimChunk.
      expect(await claimed({ concurrency: 4, prefetch: 1 })).toEqual([3, 2]);
    });

    it("gives back, unstarted, the jobs of a claim sent ahead that answers while the worker closes", async () => {
      const { queue } = await backend.setup();
      const s = steps({ maxAttempts: 1 });
      const jobs = await s.gated(queue, 12);
      pipelineClaims(queue.store, 4);
      // The third claim (the one sent ahead) answers only once close() has begun.
      const late = gate();
      const claim = queue.store.claim.bind(queue.store);
      let calls = 0;
      queue.store.claim = async (params) => {
        const answer = await claim(params);
        if (++calls === 3) await late.promise;
        return answer;
      };
      const releases = trackReleases(queue.store);
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 2, prefetch: 10 });
      void worker.start();
      await vi.waitFor(() => expect(calls).toBe(3));
      const closing = worker.close({ graceMs: 60_000 });
      late.open();
      await vi.waitFor(() => expect(releases).toHaveLength(10));
      for (let n = 0; n < 12; n++) s.gates.get(n)!.open();
      await closing;
      await Promise.all(releases);
      // The late claim's four jobs went back with the six buffered before them; none started.
      expect(s.started).toEqual([0, 1]);
      const stored = await Promise.all(jobs.map((j) => queue.get(j.id)));
      expect(stored.map((j) => j!.state)).toEqual([
        ...Array(2).fill("completed"),
        ...Array(10).fill("pending"),
      ]);
      for (const j of stored.slice(2)) {
        expect(j).toMatchObject({ state: "pending", workerId: null, errors: [] });
        expect(j!.maxAttempts - j!.attempt).toBe(1);
      }
    });

    it("takes the jobs of a claim sent ahead when the claim before it fails", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      await s.gated(queue, 12);
      pipelineClaims(queue.store, 4);
      const claim = queue.store.claim.bind(queue.store);
      let calls = 0;
      queue.store.claim = (params) => {
        // The second claim fails without taking anything; the third, sent ahead of its answer, works.
        if (++calls === 2) return Promise.reject(new Error("connection reset"));
        return claim(params);
      };
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 2, prefetch: 10 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      const errors: unknown[] = [];
      worker.on("error", (error) => errors.push(error));
      await worker.start();
      // Jobs 0–3 from the first claim, 4–7 from the one sent ahead: held, not stranded as active.
      await vi.waitFor(() => expect(worker.running + worker.prefetched).toBe(8));
      expect(errors).toHaveLength(1);
      for (let n = 0; n < 12; n++) s.gates.get(n)!.open();
      await vi.waitFor(() => expect(s.started.slice(0, 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]));
    });

    it("resolves start() once the first claim has answered, even when a wake-up began it", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      s.gates.set(0, gate());
      const worker = new Worker(queue, { jobs: [s.job], concurrency: 1 });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      // The job arrives during the maintainer's first sweep, so its wake-up starts the claim, and
      // that claim answers a turn after the sweep: start() then finds a claim it did not send.
      const swept = gate();
      const claim = queue.store.claim.bind(queue.store);
      let answered = false;
      queue.store.claim = async (params) => {
        const jobs = await claim(params);
        await swept.promise;
        await new Promise<void>((resolve) => setImmediate(resolve));
        answered = true;
        return jobs;
      };
      const sweep = queue.sweep.bind(queue);
      queue.sweep = async () => {
        const rang = new Promise<void>((resolve) => {
          const off = queue.onWake(() => {
            off();
            resolve();
          });
        });
        await queue.enqueue(s.job, { n: 0 });
        await rang;
        try {
          return await sweep();
        } finally {
          swept.open();
        }
      };
      await worker.start();
      expect(answered).toBe(true);
      expect(s.started).toEqual([0]);
      s.gates.get(0)!.open();
    });

    it("refuses a prefetch that is not a whole number from 0 to 10,000 (INVALID_OPTION)", async () => {
      const { queue } = await backend.setup();
      const s = steps();
      for (const prefetch of [-1, 10_001, 1.5, Number.NaN, "3", Number.POSITIVE_INFINITY]) {
        let error: unknown;
        try {
          new Worker(queue, { jobs: [s.job], prefetch: prefetch as number });
        } catch (e) {
          error = e;
        }
        expect(error, String(prefetch)).toBeInstanceOf(ErrandError);
        expect((error as ErrandError).code).toBe("INVALID_OPTION");
      }
      for (const prefetch of [0, 10_000])
        expect(new Worker(queue, { jobs: [s.job], prefetch })).toBeInstanceOf(Worker);
    });
  });
}
