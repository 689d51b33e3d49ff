/**
 * Semantic 12, retention: finished jobs are kept for their state's retention, then pruned; pending
 * and active jobs never are; the hot set stays small whatever the history.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import { historyGroups, mail, report, writeHistory } from "../helpers/history.js";
import type { Backend } from "./backend.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const noop = defineJob({ type: "noop", handler: async () => null });

/** The finished jobs as list() pages them, counted by "<state> <queue> <type>". */
async function listedGroups(queue: Queue): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const state of ["completed", "dead", "cancelled", "expired"] as const) {
    let cursor: string | undefined;
    do {
      const page = await queue.list({ state, limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
      for (const j of page.jobs)
        out[`${state} ${j.queue} ${j.type}`] = (out[`${state} ${j.queue} ${j.type}`] ?? 0) + 1;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
  return out;
}

export function exerciseRetention(backend: Backend): void {
  describe("retention", () => {
    it("stats() counts the history as list() finds it, through every writer and a prune", async () => {
      const { queue, clock } = await backend.setup({ retention: { completed: "1h", dead: "1h" } });
      queue.register(mail);
      queue.register(report);
      await writeHistory(queue, clock, () => listedGroups(queue));
      await clock.advance(HOUR + 1);
      await queue.prune();
      expect(await historyGroups(queue)).toEqual(await listedGroups(queue));
      expect(Object.keys(await historyGroups(queue)).length).toBeGreaterThan(0);
    });

    it("prunes finished jobs older than their state's retention and keeps younger ones", async () => {
      const { queue, clock } = await backend.setup({ retention: { completed: "1h", dead: "1d" } });
      const done = await queue.enqueue(noop, { n: "completed" });
      const dead = await queue.enqueue(noop, { n: "dead" }, { maxAttempts: 1 });
      const [a, b] = await queue.lease({ limit: 2 });
      const byId = new Map([a!, b!].map((j) => [j.id, j]));
      expect(await queue.complete(byId.get(done.id)!, "ok")).toBe(true);
      expect(await queue.fail(byId.get(dead.id)!, new Error("boom"))).toBe(true);
      expect((await queue.get(dead.id))?.state).toBe("dead");

      // A second completed job, finished half an hour later.
      await clock.advance(30 * 60_000);
      const younger = await queue.enqueue(noop, { n: "younger" });
      const [y] = await queue.lease();
      await queue.complete(y!, "ok");

      // Exactly at the retention nothing goes; a millisecond past it the older completed job does.
      await clock.advance(30 * 60_000);
      expect(await queue.prune()).toBe(0);
      await clock.advance(1);
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(done.id)).toBeNull();
      expect((await queue.get(younger.id))?.state).toBe("completed");
      expect((await queue.get(dead.id))?.state).toBe("dead");

      // Dead jobs are kept for a day.
      await clock.advance(30 * 60_000);
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(younger.id)).toBeNull();
      expect((await queue.get(dead.id))?.state).toBe("dead");
      await clock.advance(DAY - HOUR);
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(dead.id)).toBeNull();
      expect((await queue.stats()).states).toMatchObject({ completed: 0, dead: 0 });
      expect(await queue.prune()).toBe(0);
    });

    it("uses per-call retention and the defaults for cancelled and expired jobs", async () => {
      const { queue, clock } = await backend.setup();
      const cancelled = await queue.enqueue(noop, {});
      await queue.cancel(cancelled.id);
      const expired = await queue.enqueue(noop, {}, { expiresInMs: 1 });
      await clock.advance(1);
      expect((await queue.sweep()).expired).toBe(1);

      await clock.advance(DAY - 1);
      // The defaults keep cancelled and expired jobs a day.
      expect(await queue.prune()).toBe(0);
      expect(await queue.prune({ retention: { cancelled: "1h" } })).toBe(1);
      expect(await queue.get(cancelled.id)).toBeNull();
      expect((await queue.get(expired.id))?.state).toBe("expired");
      await clock.advance(2);
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(expired.id)).toBeNull();
    });

    it("never prunes pending or active jobs, however old", async () => {
      const { queue, clock } = await backend.setup({
        retention: { completed: 0, dead: 0, cancelled: 0, expired: 0 },
      });
      const pending = await queue.enqueue(noop, { n: "pending" }, { delayMs: 365 * DAY });
      const active = await queue.enqueue(noop, { n: "active" });
      const [leased] = await queue.lease({ leaseMs: 400 * DAY });
      expect(leased?.id).toBe(active.id);

      await clock.advance(300 * DAY);
      expect(await queue.prune()).toBe(0);
      expect((await queue.get(pending.id))?.state).toBe("pending");
      expect((await queue.get(active.id))?.state).toBe("active");
      // completed: 0 keeps no completed job: the completion itself deletes it.
      expect(await queue.complete(leased!, null)).toBe(true);
      expect(await queue.get(active.id)).toBeNull();
      await clock.advance(1);
      expect(await queue.prune()).toBe(0);
      expect((await queue.get(pending.id))?.state).toBe("pending");
    });

    it("completed: 0 deletes each job in the write that completes it, under the same fence", async () => {
      const { queue, clock } = await backend.setup({ retention: { completed: 0 } });
      const seen: string[] = [];
      queue.on("completed", (job) => seen.push(job.id));
      const a = await queue.enqueue(noop, { n: "a" }, { uniqueKey: "only-one" });
      const b = await queue.enqueue(noop, { n: "b" }, { maxAttempts: 2 });
      const [la, lb] = await queue.lease({ limit: 2, leaseMs: 1_000 });
      expect([la!.id, lb!.id].sort()).toEqual([a.id, b.id].sort());
      const leasedA = la!.id === a.id ? la! : lb!;
      const leasedB = la!.id === a.id ? lb! : la!;

      expect(await queue.complete(leasedA, { ok: true })).toBe(true);
      expect(seen).toEqual([a.id]);
      expect(await queue.get(a.id)).toBeNull();
      expect(await queue.complete(leasedA, { ok: true })).toBe(false);
      // Its unique key is free again, as for a completed job.
      const again = await queue.enqueue(noop, { n: "again" }, { uniqueKey: "only-one" });
      expect(again.id).not.toBe(a.id);

      // A stale attempt deletes nothing: b's lease ran out and it was taken again.
      await clock.advance(1_001);
      expect((await queue.sweep()).recovered).toBe(1);
      await clock.advance(HOUR); // past the retry's backoff
      const retaken = (await queue.lease({ limit: 5 })).find((j) => j.id === b.id);
      expect(retaken?.attempt).toBe(leasedB.attempt + 1);
      expect(await queue.complete(leasedB, null)).toBe(false);
      expect((await queue.get(b.id))?.state).toBe("active");
      expect(await queue.complete(retaken!, null)).toBe(true);
      expect(await queue.get(b.id)).toBeNull();

      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ active: 1, completed: 0, pending: 0 }); // "again"
      expect(await queue.prune()).toBe(0);
    });

    it("completed: 0 keeps a job others depend on until they no longer wait, and drops a dependent's edges", async () => {
      const { queue, clock } = await backend.setup({ retention: { completed: 0 } });
      const dep = await queue.enqueue(noop, { n: "dep" });
      const child = await queue.enqueue(noop, { n: "child" }, { dependsOn: [dep.id] });
      const [ld] = await queue.lease();
      expect(await queue.complete(ld!, { answer: 42 })).toBe(true);
      // Kept: its dependent reads its result.
      expect(await queue.get(dep.id)).toMatchObject({ state: "completed", result: { answer: 42 } });
      expect((await queue.get(child.id))?.state).toBe("pending");
      const [lc] = await queue.lease();
      expect(lc?.id).toBe(child.id);
      expect(await queue.dependencies(child.id)).toMatchObject([{ id: dep.id, result: { answer: 42 } }]);
      expect(await queue.complete(lc!, null)).toBe(true);
      expect(await queue.get(child.id)).toBeNull();
      expect((await queue.dependents(dep.id)).jobs).toEqual([]);
      // Nothing waits on it any more: the next prune takes it.
      await clock.advance(1);
      expect(await queue.prune()).toBe(1);
      expect(await queue.get(dep.id)).toBeNull();
    });

    it("keeps the hot set to pending and active jobs after 5,000 completions", async () => {
      const bundle = await backend.setup();
      const { queue } = bundle;
      const total = 5_000;
      const jobs = await queue.enqueueMany(
        noop,
        Array.from({ length: total }, (_, i) => ({ i })),
      );
      for (let done = 0; done < total; ) {
        const batch = await queue.lease({ limit: 1000 });
        expect(batch.length).toBeGreaterThan(0);
        const results = await Promise.all(batch.map((j) => queue.complete(j, j.payload)));
        expect(results.every(Boolean)).toBe(true);
        done += batch.length;
      }
      const waiting = await queue.enqueue(noop, { waiting: true }, { priority: 1 });
      const other = await queue.enqueue(noop, { waiting: 2 });

      const stats = await queue.stats();
      expect(stats.states).toEqual({
        blocked: 0,
        pending: 2,
        active: 0,
        completed: total,
        dead: 0,
        cancelled: 0,
        expired: 0,
      });
      expect(stats.queues.default).toEqual({ pending: 2, completed: total });

      if (backend.inspect) {
        // The claim index covers the hot set only; history lives elsewhere.
        expect(await backend.inspect.hotSet(bundle)).toEqual([{ state: "pending", n: 2 }]);
      }

      // Leasing still finds the right jobs, in order, among 5,000 finished ones.
      const [first] = await queue.lease();
      expect(first?.id).toBe(waiting.id);
      expect((await queue.lease()).map((j) => j.id)).toEqual([other.id]);
      expect(await queue.lease()).toEqual([]);
      expect(await queue.get(jobs[0]!.id)).toMatchObject({ state: "completed", result: { i: 0 } });
    });
  });
}
