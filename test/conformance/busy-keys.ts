/**
 * A busy key holds up no other key: under `keyConcurrency`, `ordered` or `keyRateLimit`, jobs of a
 * key that cannot start wait in claim order ahead of other keys' jobs, however many there are, and
 * a claim still finds the other keys' jobs behind them. (A tenant that enqueues a long backlog
 * must not stop every other tenant's work: that is what per-key rules are for.)
 */
import { describe, expect, it } from "vitest";
import { defineJob, type JobDefinitionOptions } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import type { EnqueueOptions } from "../../src/queue-options.js";
import { HELD_SAMPLE_LIMIT } from "../../src/store/held-back.js";
import { claimHeld, enqueueRateBacklog } from "../helpers/rate-backlog.js";
import type { Backend } from "./backend.js";

/** The busy key's backlog: more than the claims below ask for, so a claim that only looks that far fails. */
const BACKLOG = 2_500;

const rules: Array<[string, Omit<JobDefinitionOptions<unknown, unknown>, "type" | "handler">]> = [
  ["keyConcurrency", { keyConcurrency: 1 }],
  ["ordered", { ordered: true }],
  ["keyRateLimit", { keyRateLimit: { limit: 1, periodMs: 60_000 } }],
];

/**
 * A type of `keyConcurrency: 1`, registered, with BACKLOG jobs of key "busy" (each with `options`)
 * and the first of them leased: the key is full, and a claim finds nothing.
 */
async function busyKey(queue: Queue, type: string, options: EnqueueOptions = {}) {
  const tenant = defineJob({ type, keyConcurrency: 1, handler: async () => null });
  queue.register(tenant);
  const jobs = await queue.enqueueMany(
    tenant,
    Array.from({ length: BACKLOG }, (_, i) => ({ i })),
    { ...options, key: "busy" },
  );
  const [head] = await queue.lease({ limit: 10 });
  expect(head?.id).toBe(jobs[0]!.id);
  expect(await queue.lease({ limit: 50 })).toEqual([]);
  return { jobs, head: head! };
}

export function exerciseBusyKeys(backend: Backend): void {
  describe("a busy key holds up no other key", () => {
    for (const [name, rule] of rules) {
      for (const named of [false, true]) {
        it(`${name}: a key behind ${BACKLOG} jobs of a busy key starts${named ? " (claim naming the type)" : ""}`, async () => {
          const { queue, clock } = await backend.setup();
          const tenant = defineJob({ type: "tenant-sync", ...rule, handler: async () => null });
          queue.register(tenant);
          const lease = (q: Queue, limit: number) =>
            q.lease({ limit, ...(named ? { types: [tenant.type] } : {}) });
          await queue.enqueueMany(
            tenant,
            Array.from({ length: BACKLOG }, (_, i) => ({ i })),
            { key: "busy" },
          );
          const quiet = await queue.enqueue(tenant, { quiet: true }, { key: "quiet" });
          const [head] = await lease(queue, 1);
          expect(head?.key).toBe("busy");

          // Every claim size, the worker's usual ones among them: the quiet key's job is found.
          const next = await lease(queue, 10);
          expect(next.map((j) => j.id)).toEqual([quiet.id]);
          expect(await lease(queue, 50)).toEqual([]);

          // The busy key still starts its next job once its room is free again (for the rate
          // limit, once its window opens), in claim order.
          expect(await queue.complete(head!, null)).toBe(true);
          if (name === "keyRateLimit") {
            expect(await lease(queue, 50)).toEqual([]);
            await clock.advance(60_000);
          }
          const after = await lease(queue, 50);
          expect(after.map((j) => j.payload)).toEqual([{ i: 1 }]);
          expect(await lease(queue, 50)).toEqual([]);
        });
      }
    }

    it("keyConcurrency: the busy key's jobs that wait start in claim order, priority first", async () => {
      const { queue } = await backend.setup();
      const tenant = defineJob({ type: "tenant-one", keyConcurrency: 1, handler: async () => null });
      queue.register(tenant);
      const head = await queue.enqueue(tenant, { n: "head" }, { key: "busy", priority: 10 });
      await queue.enqueueMany(
        tenant,
        Array.from({ length: BACKLOG }, (_, i) => ({ i })),
        { key: "busy" },
      );
      const urgent = await queue.enqueue(tenant, { n: "urgent" }, { key: "busy", priority: 5 });
      const quiet = await queue.enqueue(tenant, { n: "quiet" }, { key: "quiet" });
      const first = await queue.lease({ limit: 10 });
      expect(first.map((j) => j.id)).toEqual([head.id, quiet.id]);
      expect(await queue.complete(first[0]!, null)).toBe(true);
      const second = await queue.lease({ limit: 10 });
      expect(second.map((j) => j.id)).toEqual([urgent.id]);
      // A retry frees the key's room while it waits out its backoff: the next job starts.
      expect(await queue.fail(second[0]!, new Error("again"))).toBe(true);
      expect((await queue.lease({ limit: 10 })).map((j) => j.payload)).toEqual([{ i: 0 }]);
    });

    it("keyConcurrency: a waiting job of the busy key can be cancelled, rescheduled or expire", async () => {
      const { queue, clock } = await backend.setup();
      const { jobs, head } = await busyKey(queue, "tenant-sync", { expiresInMs: 10_000 });

      expect((await queue.cancel(jobs[1]!.id))?.state).toBe("cancelled");
      const later = await queue.reschedule(jobs[2]!.id, { runAt: new Date(clock.now() + 60_000) });
      expect(later?.state).toBe("pending");
      expect(await queue.lease({ limit: 50 })).toEqual([]);
      expect(await queue.complete(head, null)).toBe(true);
      // jobs[1] is gone and jobs[2] waits for its new time: jobs[3] is next.
      const next = await queue.lease({ limit: 50 });
      expect(next.map((j) => j.id)).toEqual([jobs[3]!.id]);

      await clock.advance(10_000);
      await queue.sweep();
      expect((await queue.get(jobs[4]!.id))?.state).toBe("expired");
      expect((await queue.get(jobs[2]!.id))?.state).toBe("expired");
      expect(await queue.complete(next[0]!, null)).toBe(true);
      expect(await queue.lease({ limit: 50 })).toEqual([]);
      expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 0, expired: BACKLOG - 3 });
    });

    it("keyRateLimit: the busy key starts its limit each window, in claim order, a job enqueued since among them", async () => {
      const { queue, clock } = await backend.setup();
      const { busy: jobs, quiet } = await enqueueRateBacklog(queue, BACKLOG);
      const ids = async () => (await queue.lease({ limit: 10 })).map((j) => j.id);
      // A worker's claim (the store's, with `held`) learns when to claim again: the window's
      // opening, whether it filled the window or found it full.
      expect(await claimHeld(queue, clock.now())).toEqual({
        ids: [jobs[0]!.id, jobs[1]!.id, quiet.id],
        until: clock.now() + 1_000,
      });
      expect(await claimHeld(queue, clock.now())).toEqual({ ids: [], until: clock.now() + 1_000 });
      expect((await queue.stats()).limits.tenant?.heldBack).toMatchObject({
        rateLimit: Math.min(BACKLOG - 2, HELD_SAMPLE_LIMIT),
      });

      await clock.advance(1_000);
      expect(await ids()).toEqual([jobs[2]!.id, jobs[3]!.id]);
      expect(await ids()).toEqual([]);

      // Enqueued while the window is full, ahead of the backlog by priority: first when it opens.
      const urgent = await queue.enqueue("tenant", { urgent: true }, { key: "busy", priority: 5 });
      expect(await ids()).toEqual([]);
      await clock.advance(1_000);
      expect(await ids()).toEqual([urgent.id, jobs[4]!.id]);
      // Windows that opened while no one claimed hold no more than one window's limit.
      await clock.advance(5_000);
      expect(await ids()).toEqual([jobs[5]!.id, jobs[6]!.id]);
    });

    it("keyConcurrency: the busy key's next job, moved out of reach once its turn came, lets the one after start", async () => {
      const { queue, clock } = await backend.setup();
      const { jobs, head } = await busyKey(queue, "tenant-moved");
      expect(await queue.complete(head, null)).toBe(true);
      // jobs[1]'s turn has come; moved an hour on, it must not hold the key while nothing runs.
      await queue.reschedule(jobs[1]!.id, { runAt: new Date(clock.now() + 3_600_000) });
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([jobs[2]!.id]);
    });

    it("keyConcurrency: keys behind the backlog all start, each up to its room", async () => {
      const { queue } = await backend.setup();
      const tenant = defineJob({ type: "tenant-pair", keyConcurrency: 2, handler: async () => null });
      queue.register(tenant);
      await queue.enqueueMany(
        tenant,
        Array.from({ length: BACKLOG }, (_, i) => ({ i })),
        { key: "busy" },
      );
      for (const key of ["q1", "q1", "q1", "q2"]) await queue.enqueue(tenant, { key }, { key });
      const first = await queue.lease({ limit: 2 });
      expect(first.map((j) => j.key)).toEqual(["busy", "busy"]);
      const counts = new Map<string, number>();
      for (const j of await queue.lease({ limit: 50 })) counts.set(j.key!, (counts.get(j.key!) ?? 0) + 1);
      expect([...counts].sort()).toEqual([
        ["q1", 2],
        ["q2", 1],
      ]);
    });
  });
}
