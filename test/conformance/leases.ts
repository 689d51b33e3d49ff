/**
 * Semantic 3, leases: a lease runs out at `leaseExpiresAt` and heartbeats extend it. An expired
 * lease is a failed attempt (retry with backoff, or dead); crashed workers' jobs come back by this
 * rule alone, and a job that keeps killing its worker is dead after three expired leases.
 */
import { once } from "node:events";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { Queue } from "../../src/queue.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { trackHeartbeats } from "./heartbeats.js";

const task = defineJob({
  type: "task",
  backoff: { type: "fixed", delayMs: 5000 },
  handler: async () => null,
});

/** Workers in these tests meet store errors on purpose; keep them out of the test output. */
const silent = pino({ level: "silent" });

/** A promise and the function that resolves it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

export function exerciseLeases(backend: Backend): void {
  describe("leases", () => {
    it("puts an at-least-once job whose lease expired back to pending, with a lease_expired error and backoff", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [leased] = await queue.lease({ leaseMs: 10_000, workerId: "w1" });
      const claimedAt = clock.now();
      expect(leased!.leaseExpiresAt!.getTime()).toBe(claimedAt + 10_000);

      await clock.advance(9_999);
      expect((await queue.sweep()).recovered).toBe(0);
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1, workerId: "w1" });

      await clock.advance(1);
      const sweptAt = clock.now();
      expect((await queue.sweep()).recovered).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({
        state: "pending",
        attempt: 1,
        workerId: null,
        leaseExpiresAt: null,
        finishedAt: null,
      });
      expect(stored!.runAt.getTime()).toBe(sweptAt + 5000);
      expect(stored!.errors).toHaveLength(1);
      expect(stored!.errors[0]).toMatchObject({ attempt: 1, kind: "lease_expired", at: sweptAt });
      expect(stored!.errors[0]!.message).toMatch(/lease expired/);

      // A second sweep finds nothing more to do.
      expect((await queue.sweep()).recovered).toBe(0);
      // Backoff holds: not claimable until it has passed.
      await clock.advance(4_999);
      expect(await queue.lease()).toEqual([]);
      await clock.advance(1);
      const [again] = await queue.lease();
      expect(again).toMatchObject({ id: job.id, attempt: 2 });
    });

    it("applies the default (exponential) backoff to an expired lease too", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("plain", {});
      await queue.lease({ types: ["plain"], leaseMs: 1000 });
      await clock.advance(1000);
      await queue.sweep();
      const stored = await queue.get(job.id);
      expect(stored!.state).toBe("pending");
      // First retry of the default policy: 1 s, jittered into its upper half.
      const delay = stored!.runAt.getTime() - clock.now();
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeLessThanOrEqual(1000);
    });

    it("does not recover a job whose lease a heartbeat extended", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {});
      const [leased] = await queue.lease({ leaseMs: 1000 });

      await clock.advance(800);
      expect(await queue.heartbeat(leased!, { leaseMs: 1000 })).toBe(true);
      expect((await queue.get(job.id))!.leaseExpiresAt!.getTime()).toBe(clock.now() + 1000);

      await clock.advance(800); // past the original expiry
      expect((await queue.sweep()).recovered).toBe(0);
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1 });
      expect(await queue.lease()).toEqual([]);

      await clock.advance(200); // the extended lease runs out now
      expect((await queue.sweep()).recovered).toBe(1);
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 1 });
    });

    it("sends a job whose lease expired three times without an outcome to dead, saying why", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { maxAttempts: 10, backoff: { type: "fixed", delayMs: 0 } });
      for (let attempt = 1; attempt <= 3; attempt++) {
        const [leased] = await queue.lease({ leaseMs: 1000 });
        expect(leased).toMatchObject({ id: job.id, attempt });
        await clock.advance(1000);
        expect((await queue.sweep()).recovered).toBe(1);
        expect((await queue.get(job.id))!.state).toBe(attempt < 3 ? "pending" : "dead");
      }
      const dead = await queue.get(job.id);
      expect(dead).toMatchObject({ state: "dead", attempt: 3, finishedAt: new Date(clock.now()) });
      expect(dead!.errors.map((e) => [e.attempt, e.kind])).toEqual([
        [1, "lease_expired"],
        [2, "lease_expired"],
        [3, "lease_expired"],
      ]);
      expect(dead!.errors[2]!.message).toMatch(/lease expired 3 times/);
      expect(await queue.lease()).toEqual([]);
    });

    it("counts only expired leases towards the poison pill, not ordinary failures", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { maxAttempts: 10, backoff: { type: "fixed", delayMs: 0 } });
      const expire = async () => {
        await queue.lease({ leaseMs: 1000 });
        await clock.advance(1000);
        await queue.sweep();
      };
      await expire();
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("ordinary"));
      await expire();
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 3 });
      await expire();
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 4 });
    });

    it("starts counting expired leases afresh when a dead poison pill is retried by hand", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { maxAttempts: 10, backoff: { type: "fixed", delayMs: 0 } });
      for (let i = 0; i < 3; i++) {
        await queue.lease({ leaseMs: 1000 });
        await clock.advance(1000);
        await queue.sweep();
      }
      expect((await queue.get(job.id))!.state).toBe("dead");
      await queue.retry(job.id);
      await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      await queue.sweep();
      expect(await queue.get(job.id)).toMatchObject({ state: "pending", attempt: 4 });
    });

    it("sends a job to dead when its lease expires on its last attempt", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { maxAttempts: 1 });
      await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: 1 });
      expect(stored!.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
    });

    it("sends an at-most-once job whose lease expired to dead, never to run again", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(task, {}, { delivery: "at_most_once", maxAttempts: 5 });
      await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(1);
      expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 1 });
      await clock.advance(3_600_000);
      expect(await queue.lease()).toEqual([]);
    });

    it("recovers jobs leased through the lease API and never reported, and a Worker runs them", async () => {
      const { queue, clock } = await backend.setup();
      const jobs = await queue.enqueueMany(task, [{ n: 1 }, { n: 2 }]);
      const leased = await queue.lease({ limit: 2, leaseMs: 5000, workerId: "vanished" });
      expect(leased).toHaveLength(2);

      await clock.advance(5000);
      const finish = defineJob({
        type: "task",
        handler: async (p: { n: number }, ctx) => ({ n: p.n, attempt: ctx.attempt }),
      });
      const worker = new Worker(queue, { jobs: [finish], workerId: "rescuer" });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      let completed = 0;
      const allDone = gate();
      worker.on("completed", () => {
        if (++completed === 2) allDone.open();
      });
      // The worker's own sweep (run at start) recovers them; nobody calls queue.sweep().
      await worker.start();
      for (const j of jobs) expect(await queue.get(j.id)).toMatchObject({ state: "pending", attempt: 1 });
      await clock.advance(5000); // past the stored backoff (fixed 5 s); the worker's poll finds them
      await allDone.promise;
      for (const [i, j] of jobs.entries()) {
        const stored = await queue.get(j.id);
        expect(stored).toMatchObject({ state: "completed", attempt: 2, result: { n: i + 1, attempt: 2 } });
        expect(stored!.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
      }
      // The vanished holder's late reports are refused.
      for (const l of leased) expect(await queue.complete(l, "late")).toBe(false);
    });

    it("runs a crashed Worker's jobs again on another Worker after lease expiry and sweep, ignoring the crashed one's late results", async () => {
      const { queue, clock, connect } = await backend.setup();
      // The crashed process: its own connection, and a clock that stops when it "dies", so it
      // never heartbeats, polls or sweeps again.
      const frozen = new ManualClock(clock.now());
      const crashedQueue = new Queue((await connect()).store, { clock: frozen });
      const hung: Array<() => void> = [];
      const hangs = defineJob({
        type: "crashy",
        handler: async () => {
          await new Promise<void>((resolve) => hung.push(resolve));
          return { by: "crashed" };
        },
      });
      const works = defineJob({
        type: "crashy",
        backoff: { type: "fixed", delayMs: 1000 },
        handler: async (p: { n: number }, ctx) => ({ by: "survivor", n: p.n, attempt: ctx.attempt }),
      });
      const jobs = await queue.enqueueMany(works, [{ n: 1 }, { n: 2 }, { n: 3 }]);

      const crashed = new Worker(crashedQueue, {
        jobs: [hangs],
        concurrency: 3,
        leaseMs: 5000,
        maintenance: false,
        workerId: "crashed",
      });
      let started = 0;
      const allStarted = gate();
      crashed.on("active", () => {
        if (++started === 3) allStarted.open();
      });
      await crashed.start();
      await allStarted.promise;
      for (const j of jobs) {
        expect(await queue.get(j.id)).toMatchObject({ state: "active", attempt: 1, workerId: "crashed" });
      }

      await clock.advance(4_999);
      expect((await queue.sweep()).recovered).toBe(0);
      await clock.advance(1);
      expect((await queue.sweep()).recovered).toBe(3);
      await clock.advance(1000);
      const drained = await drain(queue, { jobs: [works], workerId: "survivor" });
      expect(drained.completed).toBe(3);
      const expectSurvivorResults = async () => {
        for (const [i, j] of jobs.entries()) {
          const stored = await queue.get(j.id);
          expect(stored).toMatchObject({
            state: "completed",
            attempt: 2,
            result: { by: "survivor", n: i + 1, attempt: 2 },
          });
          expect(stored!.errors).toHaveLength(1);
          expect(stored!.errors[0]).toMatchObject({ attempt: 1, kind: "lease_expired" });
        }
      };
      await expectSurvivorResults();

      // The crashed worker comes back to life and finishes: its stale completions change nothing.
      let lateCompleted = 0;
      crashed.on("completed", () => lateCompleted++);
      for (const resolve of hung) resolve();
      await crashed.close();
      expect(lateCompleted).toBe(0);
      await expectSurvivorResults();
    });

    it("heartbeats running jobs from the Worker so a long job outlives many lease lengths and is handed out once", async () => {
      const { queue, clock, connect } = await backend.setup();
      const release = gate<string>();
      const attempts: number[] = [];
      const long = defineJob({
        type: "long",
        handler: async (_p: unknown, ctx) => {
          attempts.push(ctx.attempt);
          return release.promise;
        },
      });
      const job = await queue.enqueue(long, {});
      // leaseMs 3000, so the worker heartbeats every 1000 ms.
      const worker = new Worker(queue, { jobs: [long], leaseMs: 3000, workerId: "holder" });
      const rival = new Worker(await connect(), { jobs: [long], leaseMs: 3000, workerId: "rival" });
      onTestFinished(async () => {
        release.open("cleanup");
        await Promise.all([worker.close({ graceMs: 0 }), rival.close({ graceMs: 0 })]);
      });
      const heartbeatsLanded = trackHeartbeats(queue.store);
      const active = once(worker, "active");
      await worker.start();
      await active;
      await rival.start();

      // Ten lease lengths, in steps shorter than the heartbeat interval; both workers sweep.
      for (let elapsed = 0; elapsed < 30_000; elapsed += 400) {
        await clock.advance(400);
        await heartbeatsLanded();
        await queue.sweep();
        const stored = await queue.get(job.id);
        expect(stored).toMatchObject({ state: "active", attempt: 1, workerId: "holder" });
        expect(stored!.leaseExpiresAt!.getTime()).toBeGreaterThan(clock.now());
      }
      expect(attempts).toEqual([1]);

      const completed = once(worker, "completed");
      release.open("done");
      await completed;
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "completed", attempt: 1, result: "done" });
      expect(stored!.errors).toEqual([]);
      expect(attempts).toEqual([1]);
    });

    it("recovers each expired lease exactly once when several sweepers run at once", async () => {
      const { queue, clock, connect } = await backend.setup();
      const sweepers = [queue, ...(await Promise.all([connect(), connect(), connect()]))];
      const jobs = await queue.enqueueMany(
        task,
        Array.from({ length: 20 }, (_, i) => ({ i })),
      );
      await queue.lease({ limit: 20, leaseMs: 1000 });
      await clock.advance(1000);
      const results = await Promise.all(sweepers.map((q) => q.sweep()));
      expect(results.reduce((n, r) => n + r.recovered, 0)).toBe(20);
      for (const j of jobs) {
        const stored = await queue.get(j.id);
        expect(stored).toMatchObject({ state: "pending", attempt: 1 });
        expect(stored!.errors).toHaveLength(1);
      }
    });

    it("recovers more expired leases than one chunk in one sweep", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      await queue.enqueueManyIds(
        task,
        Array.from({ length: 1_201 }, (_, i) => ({ i })),
      );
      let leased = 0;
      while (leased < 1_201) leased += (await queue.lease({ limit: 1000, leaseMs: 1000 })).length;
      await clock.advance(1000);
      // More than a sweep's chunk (500): a crash's leases come back in one sweep, not one a chunk.
      expect((await queue.sweep()).recovered).toBe(1_201);
      expect((await queue.stats()).states).toMatchObject({ pending: 1_201, active: 0 });
      expect((await queue.sweep()).recovered).toBe(0);
    });

    it("aborts a running handler's signal when its Worker learns that the lease was lost to another holder", async () => {
      const { queue, clock, store, connect } = await backend.setup();
      const aborted = gate<unknown>();
      const stubborn = defineJob({
        type: "stubborn",
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (_p: unknown, ctx) => {
          ctx.signal.addEventListener("abort", () => aborted.open(ctx.signal.reason));
          await new Promise(() => {}); // never finishes on its own
        },
      });
      const job = await queue.enqueue(stubborn, {});
      // concurrency 1: the worker has no room to claim the job back itself.
      const worker = new Worker(queue, {
        jobs: [stubborn],
        leaseMs: 3000,
        concurrency: 1,
        maintenance: false,
        logger: silent,
        workerId: "holder",
      });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      let failures = 0;
      worker.on("failed", () => failures++);
      const active = once(worker, "active");
      await worker.start();
      await active;

      // The store refuses heartbeats for a while (a network partition), so the lease runs out.
      const outage = vi.spyOn(store, "heartbeatMany").mockImplementation(async () => {
        throw new Error("connection lost");
      });
      await clock.advance(3000);
      const other = await connect();
      expect((await other.sweep()).recovered).toBe(1);
      const [taken] = await other.lease({ types: ["stubborn"], workerId: "other" });
      expect(taken).toMatchObject({ id: job.id, attempt: 2 });
      outage.mockRestore();

      // The holder's next heartbeat is refused: it gives up on its attempt.
      await clock.advance(1000);
      const reason = await aborted.promise;
      expect(String((reason as Error).message)).toMatch(/lease lost/);
      expect(failures).toBe(0);
      expect(worker.running).toBe(0);
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 2, workerId: "other" });
    });

    describe("with the lease API alone (no Worker, no sweep)", () => {
      it("leases an expired lease again: attempt + 1, the expiry in the error history, the old holder fenced off", async () => {
        const { queue, clock } = await backend.setup();
        const job = await queue.enqueue(task, {}); // fixed backoff of 5 s
        const [first] = await queue.lease({ leaseMs: 10_000, workerId: "vanished" });
        expect(first).toMatchObject({ id: job.id, attempt: 1 });

        // (Lease calls a sweepIntervalMs apart, 1 s by default, so each runs a pass.)
        await clock.advance(9_000);
        expect(await queue.lease()).toEqual([]);
        expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1 });

        // The lease has run out: the next lease call recovers it (retry after the backoff).
        await clock.advance(1000);
        const recoveredAt = clock.now();
        const retrying: Job[] = [];
        queue.on("retrying", (j) => retrying.push(j));
        expect(await queue.lease()).toEqual([]);
        expect(retrying.map((j) => j.id)).toEqual([job.id]);
        const stored = await queue.get(job.id);
        expect(stored).toMatchObject({ state: "pending", attempt: 1, workerId: null });
        expect(stored!.runAt.getTime()).toBe(recoveredAt + 5000);
        expect(stored!.errors).toHaveLength(1);
        expect(stored!.errors[0]).toMatchObject({ attempt: 1, kind: "lease_expired", at: recoveredAt });

        await clock.advance(5000);
        const [second] = await queue.lease({ workerId: "rescuer" });
        expect(second).toMatchObject({ id: job.id, attempt: 2, workerId: "rescuer" });
        expect(second!.errors.map((e) => [e.attempt, e.kind])).toEqual([[1, "lease_expired"]]);
        expect(await queue.complete(first!, "late")).toBe(false);
        expect(await queue.complete(second!, "done")).toBe(true);
        expect(await queue.get(job.id)).toMatchObject({ state: "completed", attempt: 2, result: "done" });
      });

      it("hands an expired lease out again in the same lease call when no backoff holds it", async () => {
        const { queue, clock } = await backend.setup();
        const job = await queue.enqueue(task, {}, { backoff: { type: "fixed", delayMs: 0 } });
        await queue.lease({ leaseMs: 1000 });
        await clock.advance(1000);
        const [again] = await queue.lease();
        expect(again).toMatchObject({ id: job.id, attempt: 2 });
        expect(again!.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
      });

      it("runs that maintenance at most once per sweepIntervalMs, counting an explicit sweep", async () => {
        const { queue, clock, store } = await backend.setup({ sweepIntervalMs: 5000 });
        const passes = vi.spyOn(store, "expiredLeases");
        await queue.lease();
        expect(passes).toHaveBeenCalledTimes(1);
        await queue.lease();
        await clock.advance(4999);
        await queue.lease();
        expect(passes).toHaveBeenCalledTimes(1);
        await clock.advance(1);
        await Promise.all([queue.lease(), queue.lease(), queue.lease()]);
        expect(passes).toHaveBeenCalledTimes(2);
        // A sweep is a pass too: the lease API's next one is due an interval after it.
        await clock.advance(3000);
        await queue.sweep();
        expect(passes).toHaveBeenCalledTimes(3);
        await clock.advance(4999);
        await queue.lease();
        expect(passes).toHaveBeenCalledTimes(3);
      });

      it("costs a producer that only enqueues nothing", async () => {
        const { queue, clock, store } = await backend.setup();
        const passes = [vi.spyOn(store, "expiredLeases"), vi.spyOn(store, "expirePending")];
        for (let i = 0; i < 5; i++) {
          await queue.enqueue(task, { i }, { expiresInMs: 100 });
          await clock.advance(1000);
        }
        for (const pass of passes) expect(pass).not.toHaveBeenCalled();
      });

      it("leaves expired leases to sweep() when the queue is opened with maintenance: false", async () => {
        const { queue, clock } = await backend.setup({ maintenance: false });
        const job = await queue.enqueue(task, {}, { backoff: { type: "fixed", delayMs: 0 } });
        await queue.lease({ leaseMs: 1000 });
        await clock.advance(60_000);
        expect(await queue.lease()).toEqual([]);
        expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1 });
        expect((await queue.sweep()).recovered).toBe(1);
        expect(await queue.lease()).toMatchObject([{ id: job.id, attempt: 2 }]);
      });

      it("runs no pass in a lease call given maintenance: false", async () => {
        const { queue, clock, store } = await backend.setup();
        const job = await queue.enqueue(task, {}, { backoff: { type: "fixed", delayMs: 0 } });
        await queue.lease({ leaseMs: 1000, maintenance: false });
        const passes = vi.spyOn(store, "expiredLeases");
        await clock.advance(60_000);
        expect(await queue.lease({ maintenance: false })).toEqual([]);
        expect(passes).not.toHaveBeenCalled();
        expect(await queue.lease()).toMatchObject([{ id: job.id, attempt: 2 }]);
      });

      it("reports a failing maintenance pass as an error event and still leases", async () => {
        const { queue, store } = await backend.setup();
        const job = await queue.enqueue(task, {});
        vi.spyOn(store, "expiredLeases").mockRejectedValueOnce(new Error("index unavailable"));
        const errors: unknown[] = [];
        queue.on("error", (e) => errors.push(e));
        expect(await queue.lease()).toMatchObject([{ id: job.id, attempt: 1 }]);
        expect(errors.map((e) => (e as Error).message)).toEqual(["index unavailable"]);
      });

      it("refuses a maintenance option that is not a boolean, and a bad sweepIntervalMs", async () => {
        await expect(backend.setup({ maintenance: "yes" as never })).rejects.toMatchObject({
          code: "INVALID_OPTION",
          message: expect.stringMatching(/^maintenance must be true or false/),
        });
        await expect(backend.setup({ sweepIntervalMs: -1 })).rejects.toMatchObject({
          code: "INVALID_DURATION",
          message: expect.stringMatching(/^sweepIntervalMs/),
        });
      });
    });

    it("keeps heartbeating a job that a Worker claims again after losing the earlier attempt's lease", async () => {
      const { queue, clock, store } = await backend.setup();
      const finish = [gate<string>(), gate<string>()];
      const signals: AbortSignal[] = [];
      const sticky = defineJob({
        type: "sticky",
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (_p: unknown, ctx) => {
          signals.push(ctx.signal);
          return finish[ctx.attempt - 1]!.promise;
        },
      });
      const job = await queue.enqueue(sticky, {});
      const worker = new Worker(queue, { jobs: [sticky], leaseMs: 3000, logger: silent, workerId: "w" });
      onTestFinished(async () => {
        for (const f of finish) f.open("cleanup");
        await worker.close({ graceMs: 0 });
      });
      const first = once(worker, "active");
      await worker.start();
      await first;

      // Heartbeats fail, the worker's own sweep recovers the lapsed lease, and (no backoff) the
      // same worker claims attempt 2 while attempt 1's handler is still running.
      const outage = vi.spyOn(store, "heartbeatMany").mockImplementation(async () => {
        throw new Error("connection lost");
      });
      // (Not events.once: the worker's "error" events about the outage would reject it.)
      const second = gate();
      worker.once("active", () => second.open());
      await clock.advance(3000);
      await second.promise;
      outage.mockRestore();
      expect(signals).toHaveLength(2);
      expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 2, workerId: "w" });
      // Attempt 1 lost its lease: its signal is aborted.
      expect(signals[0]!.aborted).toBe(true);
      expect(signals[1]!.aborted).toBe(false);

      // Attempt 1 finishes late; attempt 2 must still be heartbeated for as long as it runs.
      const heartbeatsLanded = trackHeartbeats(store);
      finish[0]!.open("late");
      for (let elapsed = 0; elapsed < 15_000; elapsed += 400) {
        await clock.advance(400);
        // The heartbeats started by now have landed: the lease must have been renewed recently.
        await heartbeatsLanded();
        const current = await queue.get(job.id);
        expect(current).toMatchObject({ state: "active", attempt: 2 });
        expect(current!.leaseExpiresAt!.getTime() - clock.now()).toBeGreaterThan(1000);
      }
      const completed = once(worker, "completed");
      finish[1]!.open("second");
      await completed;
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", attempt: 2, result: "second" });
      expect(signals).toHaveLength(2);
    });
  });
}
