/**
 * A dependency that does not succeed: when a job ends `dead`, `cancelled` or `expired`, in the
 * same write its blocked dependents under `onDependencyFailure: "cancel"` (the default) end
 * `cancelled`, a `dependency_failed` entry naming it in their error history, and the cancellation
 * goes on down to their own dependents; dependents under `"run"` count it finished and run once
 * every dependency has finished. A blocked job can be cancelled, rescheduled, and expires. A
 * dependency retried by hand counts as unfinished again for dependents still blocked; dependents
 * it cancelled stay cancelled, and retrying one of those blocks it again on what is unfinished.
 */
import { describe, expect, it } from "vitest";
import type { Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";

/** Leases the one ready job of `type` and fails it for good. */
async function kill(queue: Queue, type: string): Promise<string> {
  const [job] = await queue.lease({ types: [type] });
  expect(job).toBeDefined();
  expect(await queue.fail(job!, new Error("broken"), { retryable: false })).toBe(true);
  return job!.id;
}

async function completeOne(queue: Queue, type: string): Promise<string> {
  const [job] = await queue.lease({ types: [type] });
  expect(job).toBeDefined();
  expect(await queue.complete(job!, `${type}-result`)).toBe(true);
  return job!.id;
}

export function exerciseDependencyFailure(backend: Backend): void {
  describe("dependency failure", () => {
    it("cancels the dependents of a dead job, and theirs, recording which dependency failed", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const ok = await queue.enqueue("ok", {});
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id, ok.id] });
      const c = await queue.enqueue("c", {}, { dependsOn: [b.id] });
      const other = await queue.enqueue("d", {}, { dependsOn: [ok.id] });
      await clock.advance(5);
      await kill(queue, "a");
      const cancelledB = await queue.get(b.id);
      expect(cancelledB).toMatchObject({ state: "cancelled", blockedBy: 0 });
      expect(cancelledB?.finishedAt?.getTime()).toBe(clock.now());
      expect(cancelledB?.errors.at(-1)).toMatchObject({
        kind: "dependency_failed",
        dependency: a.id,
        at: clock.now(),
      });
      expect(cancelledB?.errors.at(-1)?.message).toContain(a.id);
      expect(cancelledB?.errors.at(-1)?.message).toContain("dead");
      const cancelledC = await queue.get(c.id);
      expect(cancelledC?.state).toBe("cancelled");
      expect(cancelledC?.errors.at(-1)).toMatchObject({ kind: "dependency_failed", dependency: b.id });
      // A job waiting only on jobs that succeed is untouched.
      expect((await queue.get(other.id))?.state).toBe("blocked");
      await completeOne(queue, "ok");
      expect((await queue.get(other.id))?.state).toBe("pending");
      expect((await queue.stats()).states).toMatchObject({ blocked: 0, cancelled: 2, dead: 1 });
    });

    it("cancels the dependents of a cancelled job and of an expired one", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const e = await queue.enqueue("e", {}, { delayMs: 10_000, expiresInMs: 5_000 });
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id] });
      const f = await queue.enqueue("f", {}, { dependsOn: [e.id] });
      expect((await queue.cancel(a.id)).state).toBe("cancelled");
      expect(await queue.get(b.id)).toMatchObject({ state: "cancelled" });
      expect((await queue.get(b.id))?.errors.at(-1)).toMatchObject({
        kind: "dependency_failed",
        dependency: a.id,
      });

      await clock.advance(5_001);
      await queue.sweep();
      expect((await queue.get(e.id))?.state).toBe("expired");
      expect((await queue.get(f.id))?.errors.at(-1)).toMatchObject({
        kind: "dependency_failed",
        dependency: e.id,
      });
      expect((await queue.get(f.id))?.state).toBe("cancelled");
    });

    it('runs a dependent under onDependencyFailure: "run" once every dependency has finished', async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const ok = await queue.enqueue("ok", {});
      const c = await queue.enqueue("c", {}, { dependsOn: [a.id, ok.id], onDependencyFailure: "run" });
      expect(c.onDependencyFailure).toBe("run");
      await kill(queue, "a");
      // a finished (dead): one dependency left.
      expect(await queue.get(c.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      await completeOne(queue, "ok");
      expect(await queue.get(c.id)).toMatchObject({ state: "pending", blockedBy: 0 });
      expect((await queue.get(c.id))?.errors).toEqual([]);
      expect((await queue.dependencies(c.id)).map((d) => [d.id, d.state, d.result])).toEqual([
        [a.id, "dead", null],
        [ok.id, "completed", "ok-result"],
      ]);
    });

    it("takes onDependencyFailure from the job type when the enqueue does not say", async () => {
      const { queue } = await backend.setup();
      const { defineJob } = await import("../../src/define-job.js");
      const tolerant = defineJob({ type: "tolerant", onDependencyFailure: "run", handler: async () => null });
      const a = await queue.enqueue("a", {});
      const c = await queue.enqueue(tolerant, {}, { dependsOn: [a.id] });
      const strict = await queue.enqueue(tolerant, {}, { dependsOn: [a.id], onDependencyFailure: "cancel" });
      expect(c.onDependencyFailure).toBe("run");
      await kill(queue, "a");
      expect((await queue.get(c.id))?.state).toBe("pending");
      expect((await queue.get(strict.id))?.state).toBe("cancelled");
    });

    it("settles a job enqueued on a dependency that has already failed", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("a", {});
      await kill(queue, "a");
      const c = await queue.enqueue("c", {}, { dependsOn: [a.id] });
      expect(c.state).toBe("cancelled");
      expect((await queue.get(c.id))?.errors.at(-1)).toMatchObject({
        kind: "dependency_failed",
        dependency: a.id,
      });
      const r = await queue.enqueue("r", {}, { dependsOn: [a.id], onDependencyFailure: "run" });
      expect(r).toMatchObject({ state: "pending", blockedBy: 0 });
    });

    it("counts a dependency retried by hand as unfinished again; a dependent it cancelled stays cancelled", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const slow = await queue.enqueue("slow", {});
      const runner = await queue.enqueue(
        "runner",
        {},
        { dependsOn: [a.id, slow.id], onDependencyFailure: "run" },
      );
      const strict = await queue.enqueue("strict", {}, { dependsOn: [a.id] });
      await kill(queue, "a");
      expect(await queue.get(runner.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      expect((await queue.get(strict.id))?.state).toBe("cancelled");

      expect((await queue.retry(a.id)).state).toBe("pending");
      expect(await queue.get(runner.id)).toMatchObject({ state: "blocked", blockedBy: 2 });
      expect((await queue.get(strict.id))?.state).toBe("cancelled");

      await completeOne(queue, "slow");
      expect(await queue.get(runner.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      await completeOne(queue, "a");
      expect(await queue.get(runner.id)).toMatchObject({ state: "pending", blockedBy: 0 });
    });

    it("blocks a cancelled dependent again when it is retried while its dependencies are unfinished", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {});
      const c = await queue.enqueue("c", {}, { dependsOn: [a.id, b.id] });
      expect((await queue.cancel(c.id)).state).toBe("cancelled");
      await completeOne(queue, "a");
      const retried = await queue.retry(c.id);
      expect(retried).toMatchObject({ state: "blocked", blockedBy: 1 });
      expect(await queue.lease({ types: ["c"] })).toEqual([]);
      await completeOne(queue, "b");
      expect((await queue.get(c.id))?.state).toBe("pending");
      // Retried once its dependencies are all complete, it is pending at once.
      const d = await queue.enqueue("d", {}, { dependsOn: [a.id] });
      expect(d.state).toBe("pending");
      await queue.cancel(d.id);
      expect((await queue.retry(d.id)).state).toBe("pending");
    });

    it("cancels a blocked job on request, and its dependents with it", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id] });
      const c = await queue.enqueue("c", {}, { dependsOn: [b.id] });
      const cancelled = await queue.cancel(b.id);
      expect(cancelled).toMatchObject({ state: "cancelled", attempt: 0 });
      expect((await queue.get(c.id))?.state).toBe("cancelled");
      // The dependency itself goes on.
      expect((await queue.get(a.id))?.state).toBe("pending");
      await completeOne(queue, "a");
      expect((await queue.get(b.id))?.state).toBe("cancelled");
    });

    it("reschedules a blocked job: the new runAt, priority and queue apply once it is unblocked", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id] });
      const moved = await queue.reschedule(b.id, { delayMs: 60_000, priority: 3, queue: "later" });
      expect(moved).toMatchObject({ state: "blocked", priority: 3, queue: "later" });
      expect(moved.runAt.getTime()).toBe(clock.now() + 60_000);
      await completeOne(queue, "a");
      expect((await queue.get(b.id))?.state).toBe("pending");
      expect(await queue.lease({ queues: ["later"] })).toEqual([]);
      await clock.advance(60_000);
      expect((await queue.lease({ queues: ["later"] })).map((j) => j.id)).toEqual([b.id]);
    });

    it("answers with the dependents it cancelled (cascaded), and with no cascaded when it cancelled none", async () => {
      const { queue, store, clock } = await backend.setup({ maintenance: false });
      const error = (attempt: number) => ({ attempt, message: "broken", at: clock.now() });
      const has = (answer: object | null) => answer !== null && Object.hasOwn(answer, "cascaded");
      // Jobs nothing waits on, and a job only a dependent under "run" waits on: nothing cancelled,
      // and nothing more in the answer than before.
      const lone = await queue.enqueue("lone", {});
      const tolerated = await queue.enqueue("tolerated", {});
      const runner = await queue.enqueue(
        "runner",
        {},
        { dependsOn: [tolerated.id], onDependencyFailure: "run" },
      );
      const leased = await queue.lease({ types: ["lone", "tolerated"], limit: 2 });
      const failed = await store.failMany({
        now: clock.now(),
        items: leased.map((j) => ({ id: j.id, attempt: j.attempt, error: error(j.attempt), retryAt: null })),
      });
      expect([...failed]).toEqual(["dead", "dead"]);
      expect(has(failed)).toBe(false);
      expect((await queue.get(runner.id))?.state).toBe("pending");
      const cancelled = await store.cancel({ id: (await queue.enqueue("lone", {})).id, now: clock.now() });
      expect(has(cancelled)).toBe(false);
      await queue.enqueue("lone", {}, { expiresInMs: 1_000, delayMs: 5_000 });
      await clock.advance(1_000);
      const expired = await store.expirePending({ now: clock.now(), limit: 10 });
      expect(expired).toHaveLength(1);
      expect(has(expired)).toBe(false);
      expect((await queue.get(lone.id))?.state).toBe("dead");

      // A dead job's dependents: the answer names each job it cancelled, as stored.
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id] });
      const c = await queue.enqueue("c", {}, { dependsOn: [b.id] });
      const [leasedA] = await queue.lease({ types: ["a"] });
      const dead = await store.failMany({
        now: clock.now(),
        items: [{ id: a.id, attempt: leasedA!.attempt, error: error(1), retryAt: null }],
      });
      expect([...dead]).toEqual(["dead"]);
      expect(dead.cascaded?.map((r) => [r.id, r.state]).sort()).toEqual([
        [b.id, "cancelled"],
        [c.id, "cancelled"],
      ]);
    });

    it("expires a blocked job whose expiresAt passes, and cancels its dependents", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue("a", {});
      const b = await queue.enqueue("b", {}, { dependsOn: [a.id], expiresInMs: 1_000 });
      const c = await queue.enqueue("c", {}, { dependsOn: [b.id] });
      await clock.advance(1_001);
      await queue.sweep();
      expect((await queue.get(b.id))?.state).toBe("expired");
      expect((await queue.get(c.id))?.state).toBe("cancelled");
      await completeOne(queue, "a");
      expect((await queue.get(b.id))?.state).toBe("expired");
    });
  });
}
