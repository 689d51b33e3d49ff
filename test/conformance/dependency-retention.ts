/**
 * Dependencies and retention: a finished job is not pruned while a job still blocked on it exists
 * (its dependent would lose the outcome it waits for); once nothing waits on it, it is pruned at
 * its state's retention as any other.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "./backend.js";

const HOUR = 3_600_000;

export function exerciseDependencyRetention(backend: Backend): void {
  describe("dependency retention", () => {
    it("keeps a finished dependency while a blocked job waits on it, and prunes it after", async () => {
      const { queue, clock } = await backend.setup({ retention: { completed: "1h" } });
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {});
      const c = await queue.enqueue("c", {}, { dependsOn: [a.id, b.id] });
      const lone = await queue.enqueue("lone", {});
      for (const type of ["a", "lone"]) {
        const [job] = await queue.lease({ types: [type] });
        expect(await queue.complete(job!, type)).toBe(true);
      }
      await clock.advance(HOUR + 1);
      // lone goes; a stays: c is still blocked on b.
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(lone.id)).toBeNull();
      expect((await queue.get(a.id))?.state).toBe("completed");

      const [job] = await queue.lease({ types: ["b"] });
      expect(await queue.complete(job!, "b")).toBe(true);
      expect((await queue.get(c.id))?.state).toBe("pending");
      // Nothing is blocked on a any more: it is past its retention and goes now.
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(a.id)).toBeNull();
      // The dependent's view of a pruned dependency: the id, nothing else.
      expect(await queue.dependencies(c.id)).toEqual([
        { id: a.id, type: null, state: null, result: null },
        { id: b.id, type: "b", state: "completed", result: "b" },
      ]);
    });

    it("prunes past more kept dependencies than one call's limit, and finds them again once free", async () => {
      const { queue, store, clock } = await backend.setup();
      const retainMs = { completed: HOUR, dead: HOUR, cancelled: HOUR, expired: HOUR };
      const prune = () => store.prune({ now: clock.now(), retainMs, limit: 2 });
      const waitFor = await queue.enqueue("y", {});
      // Three finished jobs a blocked job waits on, finished first (the head of the history), then
      // two that nothing waits on.
      const kept = await queue.enqueueManyIds("k", [1, 2, 3]);
      const blocked = await queue.enqueue("d", {}, { dependsOn: [...kept, waitFor.id] });
      const free = await queue.enqueueManyIds("f", [1, 2]);
      for (const type of ["k", "f"]) {
        for (const job of await queue.lease({ types: [type], limit: 3 })) {
          expect(await queue.complete(job, null)).toBe(true);
        }
        await clock.advance(1);
      }
      await clock.advance(HOUR + 1);

      // One call gets past more kept jobs than its limit to the free ones.
      expect(await prune()).toBe(2);
      for (const id of free) expect(await queue.get(id)).toBeNull();
      for (const id of kept) expect((await queue.get(id))?.state).toBe("completed");
      expect(await prune()).toBe(0);

      // Once nothing waits on them, they go too.
      const [y] = await queue.lease({ types: ["y"] });
      expect(await queue.complete(y!, null)).toBe(true);
      expect((await queue.get(blocked.id))?.state).toBe("pending");
      expect((await prune()) + (await prune())).toBe(3);
      for (const id of kept) expect(await queue.get(id)).toBeNull();
    });

    it("ends a prune with more kept jobs than its limit in two states and nothing to delete", async () => {
      const { queue, store, clock } = await backend.setup();
      const retainMs = { completed: HOUR, dead: HOUR, cancelled: HOUR, expired: HOUR };
      const waitFor = await queue.enqueue("y", {});
      const completed = await queue.enqueueManyIds("k", [1, 2, 3]);
      // Three in one state and five in another: their walks reach the cut-off in different calls.
      const doomed = await queue.enqueueManyIds("x", [1, 2, 3, 4, 5], { maxAttempts: 1 });
      // Waits on all eight and on y; a dead dependency does not cancel it ("run").
      await queue.enqueue(
        "d",
        {},
        { dependsOn: [...completed, ...doomed, waitFor.id], onDependencyFailure: "run" },
      );
      for (const job of await queue.lease({ types: ["k"], limit: 3 })) await queue.complete(job, null);
      for (const job of await queue.lease({ types: ["x"], limit: 5 })) {
        await queue.fail(job, new Error("no"), { retryable: false });
      }
      await clock.advance(HOUR + 1);
      for (let round = 0; round < 3; round++) {
        expect(await store.prune({ now: clock.now(), retainMs, limit: 2 })).toBe(0);
      }
      for (const id of [...completed, ...doomed]) expect(await queue.get(id)).not.toBeNull();
    });

    it("never prunes a blocked job, and prunes a dependent cancelled by a failure at its retention", async () => {
      const { queue, clock } = await backend.setup({ retention: { cancelled: "1h", dead: "1h" } });
      const a = await queue.enqueue("a", {}, { maxAttempts: 1 });
      const slow = await queue.enqueue("slow", {});
      const waiting = await queue.enqueue("w", {}, { dependsOn: [slow.id] });
      const doomed = await queue.enqueue("d", {}, { dependsOn: [a.id] });
      const [job] = await queue.lease({ types: ["a"] });
      expect(await queue.fail(job!, new Error("no"))).toBe(true);
      expect((await queue.get(doomed.id))?.state).toBe("cancelled");
      await clock.advance(HOUR + 1);
      expect(await queue.prune()).toBe(2);
      expect(await queue.get(a.id)).toBeNull();
      expect(await queue.get(doomed.id)).toBeNull();
      expect((await queue.get(waiting.id))?.state).toBe("blocked");
    });
  });
}
