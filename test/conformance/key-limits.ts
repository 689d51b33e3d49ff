/**
 * Per-key concurrency: a type's `keyConcurrency` caps the running jobs of each key, across every
 * claimer sharing the store; it composes with the type's `concurrency` (both hold); jobs without
 * a key are not limited by it; a finished job frees its key's room at once.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { LeaseOptions } from "../../src/queue-options.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const byKey = (jobs: Job[]) => {
  const counts = new Map<string, number>();
  for (const j of jobs) counts.set(j.key ?? "-", (counts.get(j.key ?? "-") ?? 0) + 1);
  return Object.fromEntries([...counts].sort());
};

export function exerciseKeyLimits(backend: Backend): void {
  // Leases of every type, and leases naming the test's one type (on PostgreSQL, a claim of one
  // keyed type from one queue is one statement: claim.ts claimKeyedAlone).
  for (const named of [false, true]) {
    const lease = (q: Queue, type: string, o: LeaseOptions = {}) =>
      q.lease(named ? { ...o, types: [type] } : o);
    describe(named ? "key concurrency, claims naming the type" : "key concurrency", () => {
      const sync = defineJob({ type: "sync-account", keyConcurrency: 2, handler: async () => null });

      it("runs at most keyConcurrency jobs per key, and frees a key's room when one finishes", async () => {
        const { queue } = await backend.setup();
        queue.register(sync);
        for (const key of ["a", "a", "a", "b", "b", "b"]) await queue.enqueue(sync, {}, { key });
        await queue.enqueue(sync, { free: 1 });
        await queue.enqueue(sync, { free: 2 });
        await queue.enqueue(sync, { free: 3 });
        const first = await lease(queue, sync.type, { limit: 100 });
        expect(byKey(first)).toEqual({ "-": 3, a: 2, b: 2 });
        expect(await lease(queue, sync.type, { limit: 100 })).toEqual([]);

        const a = first.find((j) => j.key === "a")!;
        expect(await queue.complete(a, null)).toBe(true);
        const next = await lease(queue, sync.type, { limit: 100 });
        expect(byKey(next)).toEqual({ a: 1 });
      });

      it("holds across connections: two claimers never exceed a key's cap together", async () => {
        const { queue, connect } = await backend.setup();
        const other = await connect();
        queue.register(sync);
        other.register(sync);
        for (let i = 0; i < 10; i++) await queue.enqueue(sync, { i }, { key: "k" });
        const [x, y] = await Promise.all([
          lease(queue, sync.type, { limit: 10 }),
          lease(other, sync.type, { limit: 10 }),
        ]);
        expect(x.length + y.length).toBe(2);
      });

      it("composes with the type's cluster-wide concurrency: both hold", async () => {
        const { queue } = await backend.setup();
        const capped = defineJob({
          type: "capped-sync",
          concurrency: 3,
          keyConcurrency: 2,
          handler: async () => null,
        });
        queue.register(capped);
        for (const key of ["a", "a", "a", "b", "b", "b"]) await queue.enqueue(capped, {}, { key });
        const leased = await lease(queue, capped.type, { limit: 100 });
        expect(leased).toHaveLength(3);
        expect(Math.max(...Object.values(byKey(leased)))).toBeLessThanOrEqual(2);
      });

      it("counts a retrying job's key room free while it waits, and a snoozed one too", async () => {
        const { queue, clock } = await backend.setup();
        const one = defineJob({ type: "one-per-key", keyConcurrency: 1, handler: async () => null });
        queue.register(one);
        const j1 = await queue.enqueue(
          one,
          { n: 1 },
          { key: "k", backoff: { type: "fixed", delayMs: 1_000 } },
        );
        const j2 = await queue.enqueue(one, { n: 2 }, { key: "k" });
        const [first] = await lease(queue, one.type, { limit: 10 });
        expect(first?.id).toBe(j1.id);
        expect(await queue.fail(first!, new Error("later"))).toBe(true);
        const [second] = await lease(queue, one.type, { limit: 10 });
        expect(second?.id).toBe(j2.id);
        expect(await queue.snooze(second!, "1h")).toBe(true);
        await clock.advance(1_000);
        expect((await lease(queue, one.type, { limit: 10 })).map((j) => j.id)).toEqual([j1.id]);
      });

      it("refuses a keyConcurrency that is not a positive integer", async () => {
        for (const bad of [0, -1, 1.5, "2", Number.NaN]) {
          await refused(
            () => defineJob({ type: "x", keyConcurrency: bad as never, handler: async () => null }),
            "INVALID_OPTION",
          );
        }
        await refused(
          () => defineJob({ type: "x", ordered: "yes" as never, handler: async () => null }),
          "INVALID_OPTION",
        );
      });
    });
  }
}
