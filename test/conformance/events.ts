/**
 * Events (DESIGN.md, worker runtime): workers report each attempt's outcome in order, the queue
 * reports what changes through it, and sweeps report what they recover and expire.
 */
import { once } from "node:events";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

type Seen = [event: string, attempt: number, state: string, extra?: unknown];

const OUTCOMES = ["active", "completed", "failed", "retrying", "dead"] as const;

/** Records the job events of a worker or queue as [event, attempt, state, result or error message]. */
function record(emitter: Worker | Queue): Seen[] {
  const seen: Seen[] = [];
  for (const event of OUTCOMES) {
    (emitter as Worker).on(event, (job: Job, extra?: unknown) => {
      const detail =
        event === "completed"
          ? extra
          : event === "active"
            ? undefined
            : (extra as Error | undefined)?.message;
      seen.push(
        detail === undefined ? [event, job.attempt, job.state] : [event, job.attempt, job.state, detail],
      );
    });
  }
  return seen;
}

function closeAfterTest(worker: Worker, clock: ManualClock): void {
  onTestFinished(async () => {
    const closed = worker.close({ graceMs: 0 });
    await clock.advance(0);
    await closed;
  });
}

export function exerciseEvents(backend: Backend): void {
  describe("events", () => {
    it("emits active, failed, retrying, active, completed (with the result) for a job that fails then succeeds", async () => {
      const { queue, clock } = await backend.setup();
      const flaky = defineJob({
        type: "flaky",
        backoff: { type: "fixed", delayMs: 1000 },
        handler: async (_p: unknown, ctx) => {
          if (ctx.attempt === 1) throw new Error("first try fails");
          return { ok: true, attempt: ctx.attempt };
        },
      });
      const worker = new Worker(queue, { jobs: [flaky], pollIntervalMs: 1000 });
      closeAfterTest(worker, clock);
      const fromWorker = record(worker);
      const fromQueue = record(queue);
      const retrying = once(worker, "retrying");
      const completed = once(worker, "completed");
      const job = await queue.enqueue(flaky, {});
      await worker.start();
      await retrying;
      expect((await queue.get(job.id))?.state).toBe("pending");
      await clock.advance(1000);
      const [done, result] = (await completed) as [Job, unknown];
      expect(done).toMatchObject({ id: job.id, state: "completed", result: { ok: true, attempt: 2 } });
      expect(result).toEqual({ ok: true, attempt: 2 });

      const expected: Seen[] = [
        ["active", 1, "active"],
        ["failed", 1, "pending", "first try fails"],
        ["retrying", 1, "pending", "first try fails"],
        ["active", 2, "active"],
        ["completed", 2, "completed", { ok: true, attempt: 2 }],
      ];
      expect(fromWorker).toEqual(expected);
      expect(fromQueue).toEqual(expected);
    });

    it("emits active, failed, retrying, active, failed, dead for a job that dies", async () => {
      const { queue, clock } = await backend.setup();
      const doomed = defineJob({
        type: "doomed",
        maxAttempts: 2,
        backoff: { type: "fixed", delayMs: 1000 },
        handler: async (_p: unknown, ctx): Promise<never> => {
          throw new Error(`attempt ${ctx.attempt} fails`);
        },
      });
      const worker = new Worker(queue, { jobs: [doomed], pollIntervalMs: 1000 });
      closeAfterTest(worker, clock);
      const fromWorker = record(worker);
      const retrying = once(worker, "retrying");
      const dead = once(worker, "dead");
      const job = await queue.enqueue(doomed, {});
      await worker.start();
      await retrying;
      await clock.advance(1000);
      const [deadJob, error] = (await dead) as [Job, Error];
      expect(deadJob).toMatchObject({ id: job.id, state: "dead", attempt: 2 });
      expect(error.message).toBe("attempt 2 fails");
      expect(fromWorker).toEqual([
        ["active", 1, "active"],
        ["failed", 1, "pending", "attempt 1 fails"],
        ["retrying", 1, "pending", "attempt 1 fails"],
        ["active", 2, "active"],
        ["failed", 2, "dead", "attempt 2 fails"],
        ["dead", 2, "dead", "attempt 2 fails"],
      ]);
      expect((await queue.get(job.id))?.state).toBe("dead");
    });

    it("emits enqueued for each new job (not for a duplicate) and cancelled once", async () => {
      const { queue } = await backend.setup();
      const enqueued: Job[] = [];
      const cancelled: Job[] = [];
      queue.on("enqueued", (j) => enqueued.push(j));
      queue.on("cancelled", (j) => cancelled.push(j));

      const job = await queue.enqueue("email", { to: "a@b.c" }, { id: "email-1" });
      expect(enqueued.map((j) => [j.id, j.state, j.payload])).toEqual([
        ["email-1", "pending", { to: "a@b.c" }],
      ]);
      const duplicate = await queue.enqueue("email", { to: "other" }, { id: "email-1" });
      expect(duplicate.duplicate).toBe(true);
      const many = await queue.enqueueMany("email", [{ n: 1 }, { n: 2 }]);
      expect(enqueued.map((j) => j.id)).toEqual([job.id, ...many.map((j) => j.id)]);

      await queue.cancel(job.id);
      await queue.cancel(job.id);
      expect(cancelled.map((j) => [j.id, j.state])).toEqual([[job.id, "cancelled"]]);
    });

    it("emits completed in the batch's order, reading back a job that came without its own, and none for a stale attempt", async () => {
      const { queue } = await backend.setup();
      const [a, b, c, d] = await queue.enqueueMany("email", [{ n: "a" }, { n: "b" }, { n: "c" }, { n: "d" }]);
      const leased = await queue.lease({ limit: 4 });
      const byId = new Map(leased.map((j) => [j.id, j]));
      const seen: Array<[string, string, unknown, unknown]> = [];
      queue.on("completed", (job, result) => seen.push([job.id, job.state, job.payload, result]));
      const item = (id: string, value: unknown, withJob: boolean, attempt = 1) => ({
        id,
        attempt,
        result: queue.attempts.resultText(value),
        value,
        ...(withJob ? { job: byId.get(id)! } : {}),
      });

      // b and d come as references only (a remote worker after a restart): read back, in place.
      const oks = await queue.attempts.completeMany([
        item(a!.id, "ra", true),
        item(b!.id, "rb", false),
        item(c!.id, "rc", true, 2), // not its attempt: stale, no event
        item(d!.id, "rd", false),
      ]);
      expect(oks).toEqual([true, true, false, true]);
      expect(seen).toEqual([
        [a!.id, "completed", { n: "a" }, "ra"],
        [b!.id, "completed", { n: "b" }, "rb"],
        [d!.id, "completed", { n: "d" }, "rd"],
      ]);
      expect((await queue.get(c!.id))?.state).toBe("active");
    });

    it("emits expired and, for a lost lease, failed and retrying from a sweep", async () => {
      const { queue, clock } = await backend.setup();
      const lost = await queue.enqueue("crashy", {}, { backoff: { type: "fixed", delayMs: 0 } });
      const [leased] = await queue.lease({ leaseMs: 1000 });
      expect(leased?.id).toBe(lost.id);
      const stale = await queue.enqueue("stale", {}, { expiresInMs: 1000, delayMs: 5000 });

      const seen = record(queue);
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(1000);
      const swept = await queue.sweep();
      expect(swept).toMatchObject({ recovered: 1, expired: 1 });
      expect(expired.map((j) => [j.id, j.state])).toEqual([[stale.id, "expired"]]);
      expect(seen.map(([event, attempt, state]) => [event, attempt, state])).toEqual([
        ["failed", 1, "pending"],
        ["retrying", 1, "pending"],
      ]);
      expect(String(seen[1]?.[3])).toMatch(/lease expired/);
      expect((await queue.get(lost.id))?.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
    });

    it("emits dead from a sweep when a lost lease used the last attempt", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("crashy", {}, { maxAttempts: 1 });
      await queue.lease({ leaseMs: 1000 });
      const dead = once(queue, "dead");
      await clock.advance(1000);
      await queue.sweep();
      const [deadJob] = (await dead) as [Job];
      expect(deadJob).toMatchObject({ id: job.id, state: "dead" });
    });

    it("emits completed with the whole job for a discarded completion given only by reference", async () => {
      const { queue, store } = await backend.setup({ retention: { completed: 0 } });
      const [a, b, c] = await queue.enqueueMany("email", [{ n: "a" }, { n: "b" }, { n: "c" }]);
      const leased = await queue.lease({ limit: 3 });
      const held = leased.find((j) => j.id === c!.id)!;
      const seen: Array<[string, string, string, unknown, unknown, unknown]> = [];
      queue.on("completed", (job, result) =>
        seen.push([job.id, job.type, job.state, job.payload, job.result, result]),
      );
      const getMany = vi.spyOn(store, "getMany");

      // A reference only (another server leased it, or a restart lost the job): the discarding
      // write leaves nothing to read back, so the job is read before it, once for the batch.
      expect(await queue.complete({ id: a!.id, attempt: 1 }, "ra")).toBe(true);
      expect(getMany).toHaveBeenCalledTimes(1);
      const oks = await queue.attempts.completeMany([
        { id: b!.id, attempt: 1, result: '"rb"', value: "rb" },
        { id: c!.id, attempt: 1, result: '"rc"', value: "rc", job: held },
        { id: a!.id, attempt: 1, result: '"again"', value: "again" }, // done already: stale
      ]);
      expect(oks).toEqual([true, true, false]);
      expect(getMany).toHaveBeenCalledTimes(2);
      expect(seen).toEqual([
        [a!.id, "email", "completed", { n: "a" }, "ra", "ra"],
        [b!.id, "email", "completed", { n: "b" }, "rb", "rb"],
        [c!.id, "email", "completed", { n: "c" }, "rc", "rc"],
      ]);
      for (const job of [a!, b!, c!]) expect(await queue.get(job.id)).toBeNull();
    });

    it("reads nothing before a discarding completion when no one listens and no type is capped", async () => {
      const { queue, store } = await backend.setup({ retention: { completed: 0 } });
      const job = await queue.enqueue("email", {});
      await queue.lease();
      const getMany = vi.spyOn(store, "getMany");
      const get = vi.spyOn(store, "get");
      expect(await queue.complete({ id: job.id, attempt: 1 }, null)).toBe(true);
      expect(getMany).not.toHaveBeenCalled();
      expect(get).not.toHaveBeenCalled();
      expect(await queue.get(job.id)).toBeNull();
    });

    describe("cascaded cancellations", () => {
      /**
       * Jobs waiting on `a`: a chain a → b → c, a fan-out a → f1, f2, and `r` under
       * onDependencyFailure "run" (counts a finished, is not cancelled). Returns the ones a's
       * failure cancels.
       */
      async function dependentsOf(queue: Queue, a: Job): Promise<{ doomed: Job[]; r: Job }> {
        const b = await queue.enqueue("b", { n: "b" }, { dependsOn: [a.id] });
        const c = await queue.enqueue("c", { n: "c" }, { dependsOn: [b.id] });
        const f1 = await queue.enqueue("f", { n: 1 }, { dependsOn: [a.id] });
        const f2 = await queue.enqueue("f", { n: 2 }, { dependsOn: [a.id] });
        const r = await queue.enqueue("r", { n: "r" }, { dependsOn: [a.id], onDependencyFailure: "run" });
        return { doomed: [b, c, f1, f2], r };
      }

      /** Every `cancelled` and `expired` event of `queue`, in order. */
      function ended(queue: Queue): { cancelled: Job[]; expired: Job[] } {
        const seen = { cancelled: [] as Job[], expired: [] as Job[] };
        queue.on("cancelled", (j) => seen.cancelled.push(j));
        queue.on("expired", (j) => seen.expired.push(j));
        return seen;
      }

      /**
       * `cancelled` was emitted exactly once for each of `doomed` (and for nothing else but
       * `also`), each a whole job as stored: cancelled, with its payload and a dependency_failed
       * entry; `r` is pending and announced nothing.
       */
      async function expectAnnounced(
        queue: Queue,
        cancelled: Job[],
        doomed: Job[],
        r: Job,
        also: string[] = [],
      ): Promise<void> {
        const ids = (jobs: Job[]) => jobs.map((j) => j.id).sort();
        expect(ids(cancelled)).toEqual([...ids(doomed), ...also].sort());
        for (const job of doomed) {
          const event = cancelled.find((j) => j.id === job.id)!;
          expect(event).toMatchObject({ state: "cancelled", type: job.type, payload: job.payload });
          expect(event.finishedAt).toBeInstanceOf(Date);
          expect(event.errors.at(-1)).toMatchObject({ kind: "dependency_failed" });
          expect(await queue.get(job.id)).toMatchObject({ state: "cancelled" });
        }
        expect(await queue.get(r.id)).toMatchObject({ state: "pending" });
      }

      it("emits cancelled for each dependent a dead job cancels, down the chain and across the fan-out", async () => {
        const { queue } = await backend.setup();
        const a = await queue.enqueue(
          "a",
          { n: "a" },
          { maxAttempts: 2, backoff: { type: "fixed", delayMs: 0 } },
        );
        const { doomed, r } = await dependentsOf(queue, a);
        const seen = ended(queue);
        const [first] = await queue.lease({ types: ["a"] });
        await queue.fail(first!, new Error("once"));
        // A retry ends nothing: no dependent is touched.
        expect(seen.cancelled).toEqual([]);
        const [second] = await queue.lease({ types: ["a"] });
        await queue.fail(second!, new Error("twice"));
        expect((await queue.get(a.id))?.state).toBe("dead");
        await expectAnnounced(queue, seen.cancelled, doomed, r);
      });

      it("emits cancelled for each dependent of a job a sweep kills for its lost lease", async () => {
        const { queue, clock } = await backend.setup();
        const a = await queue.enqueue("a", { n: "a" }, { maxAttempts: 1 });
        const { doomed, r } = await dependentsOf(queue, a);
        const seen = ended(queue);
        await queue.lease({ types: ["a"], leaseMs: 1000 });
        await clock.advance(1000);
        await queue.sweep();
        expect((await queue.get(a.id))?.state).toBe("dead");
        await expectAnnounced(queue, seen.cancelled, doomed, r);
      });

      it("emits cancelled for the cancelled job and then for each dependent it cancels", async () => {
        const { queue } = await backend.setup();
        const a = await queue.enqueue("a", { n: "a" });
        const { doomed, r } = await dependentsOf(queue, a);
        const seen = ended(queue);
        await queue.cancel(a.id);
        expect(seen.cancelled[0]).toMatchObject({ id: a.id, state: "cancelled" });
        await expectAnnounced(queue, seen.cancelled, doomed, r, [a.id]);
        // Cancelling again changes nothing and announces nothing.
        await queue.cancel(a.id);
        expect(seen.cancelled).toHaveLength(doomed.length + 1);
      });

      it("emits expired for a swept job and cancelled for each dependent its expiry cancels", async () => {
        const { queue, clock } = await backend.setup();
        const a = await queue.enqueue("a", { n: "a" }, { delayMs: 5_000, expiresInMs: 1_000 });
        const { doomed, r } = await dependentsOf(queue, a);
        const seen = ended(queue);
        await clock.advance(1_000);
        expect(await queue.sweep()).toMatchObject({ expired: 1 });
        expect(seen.expired.map((j) => [j.id, j.state])).toEqual([[a.id, "expired"]]);
        await expectAnnounced(queue, seen.cancelled, doomed, r);
      });

      it("emits cancelled for each dependent of a key holder an enqueue expires to free its key", async () => {
        const holding = {
          unique: { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 },
          debounce: { debounce: { key: "D", delayMs: 5_000 }, expiresInMs: 1_000 },
        } as const;
        const cases: Array<[string, keyof typeof holding, (queue: Queue) => Promise<unknown>]> = [
          ["a unique key", "unique", (q) => q.enqueue("a", { n: "new" }, { uniqueKey: "k" })],
          [
            "a unique key, ids only",
            "unique",
            (q) => q.enqueueManyIds("a", [{ n: "new" }], { uniqueKey: "k" }),
          ],
          [
            "a unique key, in a batch with dependencies",
            "unique",
            async (q) => {
              const z = await q.enqueue("z", {});
              return q.enqueueBatch([
                { job: "a", payload: { n: "new" }, options: { uniqueKey: "k" } },
                { job: "y", payload: {}, options: { dependsOn: [z.id] } },
              ]);
            },
          ],
          [
            "a debounce key",
            "debounce",
            (q) => q.enqueue("a", { n: "new" }, { debounce: { key: "D", delayMs: 0 } }),
          ],
          [
            "debounce keys, in a batch",
            "debounce",
            (q) =>
              q.enqueueBatch([
                { job: "a", payload: { n: "new" }, options: { debounce: { key: "D", delayMs: 0 } } },
                { job: "a", payload: { n: "other" }, options: { debounce: { key: "E", delayMs: 0 } } },
              ]),
          ],
        ];
        for (const [name, key, freeing] of cases) {
          const { queue, clock } = await backend.setup({ maintenance: false });
          const a = await queue.enqueue("a", { n: "a" }, holding[key]);
          const { doomed, r } = await dependentsOf(queue, a);
          await clock.advance(1_000);
          const seen = ended(queue);
          await freeing(queue);
          expect(
            seen.expired.map((j) => [j.id, j.state]),
            name,
          ).toEqual([[a.id, "expired"]]);
          await expectAnnounced(queue, seen.cancelled, doomed, r);
        }
      });
    });
  });
}
