/** Semantic 1, one holder: claims are atomic, bounded and ordered priority desc, runAt, id. */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Backend } from "./backend.js";

const noop = defineJob({ type: "noop", handler: async () => null });

export function exerciseClaim(backend: Backend): void {
  describe("claim", () => {
    it("returns at most limit jobs, ordered by priority desc, then runAt, then id", async () => {
      const { queue, clock } = await backend.setup();
      const low = await queue.enqueue(noop, { n: 1 }, { priority: 0 });
      await clock.advance(10);
      const highLater = await queue.enqueue(noop, { n: 2 }, { priority: 5 });
      const highEarlier = await queue.enqueue(noop, { n: 3 }, { priority: 5, runAt: clock.now() - 5 });
      const mid = await queue.enqueue(noop, { n: 4 }, { priority: 1 });

      const first = await queue.lease({ limit: 3 });
      expect(first.map((j) => j.id)).toEqual([highEarlier.id, highLater.id, mid.id]);
      const second = await queue.lease({ limit: 3 });
      expect(second.map((j) => j.id)).toEqual([low.id]);
      expect(await queue.lease({ limit: 3 })).toEqual([]);
    });

    it("marks claimed jobs active with attempt 1, the holder and a lease", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease({ workerId: "w1", leaseMs: 5000 });
      expect(leased).toMatchObject({ id: job.id, state: "active", attempt: 1, workerId: "w1" });
      expect(leased!.leaseExpiresAt!.getTime()).toBe(clock.now() + 5000);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "active", attempt: 1, workerId: "w1" });
    });

    it("does not hand out jobs whose runAt is in the future until the clock reaches it", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue(noop, {}, { delayMs: 60_000 });
      expect(await queue.lease()).toEqual([]);
      await clock.advance(59_999);
      expect(await queue.lease()).toEqual([]);
      await clock.advance(1);
      expect((await queue.lease()).map((j) => j.id)).toEqual([job.id]);
    });

    it("judges runAt by the claim's own now: a claimer whose clock is behind the enqueuer's waits", async () => {
      const { queue, store, clock } = await backend.setup({ maintenance: false });
      const claim = (now: number, limit = 10) =>
        store
          .claim({
            now,
            workerId: "behind",
            queues: [{ name: "default", weight: 1 }],
            limit,
            leaseMs: 30_000,
          })
          .then((jobs) => jobs.map((j) => j.id));
      const t0 = clock.now();
      // Ready when enqueued, by the enqueuer's clock: one type alone in its priority, two types
      // sharing another (read, by some stores, in different ways), and a low-priority job due at t0.
      const low = await queue.enqueue("a", { n: 0 }, { priority: -1 });
      await clock.advance(10_000);
      const a = await queue.enqueue("a", { n: 1 }, { priority: 5 });
      const b = await queue.enqueue("b", { n: 2 }, { priority: 3 });
      const c = await queue.enqueue("c", { n: 3 }, { priority: 3 });
      const aEarlier = await queue.enqueue("a", { n: 4 }, { priority: 5, runAt: t0 + 4_000 });

      // 5 s behind: only what is due by its own now, in claim order.
      expect(await claim(t0 + 5_000)).toEqual([aEarlier.id, low.id]);
      expect(await claim(t0 + 5_000)).toEqual([]);
      // The jobs it passed over are still there, each handed out once its runAt comes.
      expect(await claim(t0 + 9_999)).toEqual([]);
      expect(await claim(t0 + 10_000)).toEqual([a.id, b.id, c.id]);
    });

    it("hands each job to exactly one of many concurrent claimers on separate connections", async () => {
      const { queue, connect } = await backend.setup();
      const others = await Promise.all([connect(), connect(), connect()]);
      const jobs = await queue.enqueueMany(
        noop,
        Array.from({ length: 200 }, (_, i) => ({ i })),
      );
      const claimers = [queue, ...others];
      const seen: string[] = [];
      // Every claimer keeps claiming small batches, concurrently, until the queue is empty.
      await Promise.all(
        claimers.map(async (q, w) => {
          for (;;) {
            const got = await q.lease({ limit: 7, workerId: `w${w}` });
            if (got.length === 0) return;
            for (const j of got) seen.push(j.id);
          }
        }),
      );
      expect(seen.length).toBe(200);
      expect(new Set(seen).size).toBe(200);
      expect(new Set(seen)).toEqual(new Set(jobs.map((j) => j.id)));
    });

    it("orders the jobs of several types together: priority desc, then runAt, then id", async () => {
      const { queue, clock } = await backend.setup();
      // Ten types (more than one merged walk takes at once on SQLite), interleaved in time and
      // priority, so no type's jobs are contiguous in claim order.
      const types = Array.from({ length: 10 }, (_, i) => `t${i}`);
      const jobs: Array<{ id: string; type: string; priority: number; runAt: number }> = [];
      for (let n = 0; n < 60; n++) {
        const type = types[(n * 7) % types.length]!;
        const priority = (n * 5) % 3;
        const job = await queue.enqueue(type, { n }, { priority, runAt: clock.now() - ((n * 11) % 13) });
        jobs.push({ id: job.id, type, priority, runAt: job.runAt.getTime() });
        await clock.advance(1);
      }
      const order = (xs: typeof jobs) =>
        [...xs]
          .sort((a, b) => b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : 1))
          .map((j) => j.id);
      const some = ["t1", "t4", "t5", "t8", "no-such-type"];
      const first = await queue.lease({ types: some, limit: 9 });
      expect(first.map((j) => j.id)).toEqual(order(jobs.filter((j) => some.includes(j.type))).slice(0, 9));
      const taken = new Set(first.map((j) => j.id));
      const rest = jobs.filter((j) => !taken.has(j.id));
      // Every type named, and no types named (any type): the same order over what is left.
      const named = await queue.lease({ types, limit: 20 });
      expect(named.map((j) => j.id)).toEqual(order(rest).slice(0, 20));
      const any = await queue.lease({ limit: 100 });
      expect(any.map((j) => j.id)).toEqual(order(rest).slice(20));
    });

    it("merges several types into one claim order: priority desc, then runAt, then id, across types", async () => {
      const { queue, clock } = await backend.setup();
      const t0 = clock.now();
      // Each type's own order differs from the global one: the claim must interleave them.
      const spec: Array<[string, string, number, number]> = [
        ["j-01", "a", 0, t0 - 50],
        ["j-02", "a", 0, t0 - 40],
        ["j-03", "a", 0, t0 - 10],
        ["j-04", "a", 3, t0 - 5],
        ["j-05", "b", 0, t0 - 45],
        ["j-06", "b", 3, t0 - 5],
        ["j-07", "b", 7, t0],
        ["j-08", "c", 0, t0 - 40],
        ["j-09", "c", 0, t0 - 30],
        ["j-10", "c", 0, t0 + 1_000],
      ];
      for (const [id, type, priority, runAt] of spec) await queue.enqueue(type, {}, { id, priority, runAt });
      const expected = ["j-07", "j-04", "j-06", "j-01", "j-05", "j-02", "j-08", "j-09", "j-03"];
      const ids = async (types?: string[]) => (await queue.lease({ types, limit: 4 })).map((j) => j.id);
      expect(await ids(["a", "b", "c"])).toEqual(expected.slice(0, 4));
      // Without types the claim walks the queue's pending types, in the same order.
      expect(await ids()).toEqual(expected.slice(4, 8));
      expect(await ids(["c", "a"])).toEqual(expected.slice(8));
      expect(await ids()).toEqual([]);
      await clock.advance(1_000);
      expect(await ids()).toEqual(["j-10"]);
    });

    it("keeps claim order across many priorities with jobs not yet due at every one of them", async () => {
      const { queue, clock } = await backend.setup();
      const t0 = clock.now();
      // Five priorities (more than a SQLite walk reads by priority before it reads the rest as
      // one range), two types, and at each (type, priority) jobs due and jobs not yet due,
      // interleaved in enqueue order, so every part of each walk holds jobs it must pass over.
      const jobs: Array<{ id: string; priority: number; runAt: number }> = [];
      const priorities = [9, 5, 0, -3, -7];
      for (let n = 0; n < 80; n++) {
        const priority = priorities[(n * 3) % priorities.length]!;
        const runAt = n % 2 === 0 ? t0 - (n % 7) : t0 + 1_000 + (n % 5);
        const job = await queue.enqueue(n % 3 === 0 ? "a" : "b", { n }, { priority, runAt });
        jobs.push({ id: job.id, priority, runAt });
      }
      const order = (now: number) =>
        jobs
          .filter((j) => j.runAt <= now)
          .sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || (x.id < y.id ? -1 : 1))
          .map((j) => j.id);
      const ids = async (limit: number) => (await queue.lease({ types: ["a", "b"], limit })).map((j) => j.id);
      const due = order(t0);
      expect(await ids(7)).toEqual(due.slice(0, 7));
      expect(await ids(100)).toEqual(due.slice(7));
      expect(await ids(100)).toEqual([]);
      await clock.advance(1_010);
      const later = order(t0 + 1_010).filter((id) => !due.includes(id));
      expect(later.length).toBe(40);
      expect(await ids(11)).toEqual(later.slice(0, 11));
      expect(await ids(100)).toEqual(later.slice(11));
    });

    for (const rules of [
      { keyConcurrency: 1 },
      { fair: true },
      { rateLimit: { limit: 1_000, periodMs: 60_000 } },
    ]) {
      const name = Object.keys(rules)[0]!;
      it(`keeps claim order over priorities with jobs not yet due for a type with ${name}`, async () => {
        const { queue, clock } = await backend.setup();
        // A claim of such a type takes other paths (key rooms, turns, rate windows); each job has
        // a key of its own, so no rule holds one back and the order is the usual one.
        const ruled = defineJob({ type: `ruled-${name}`, ...rules, handler: async () => null });
        queue.register(ruled);
        const t0 = clock.now();
        const jobs: Array<{ id: string; priority: number; runAt: number }> = [];
        const priorities = [9, 5, 0, -3];
        for (let n = 0; n < 40; n++) {
          const priority = priorities[(n * 3) % priorities.length]!;
          const runAt = n % 2 === 0 ? t0 - (n % 5) : t0 + 1_000 + (n % 3);
          const job = await queue.enqueue(ruled, { n }, { priority, runAt, key: `k${n}` });
          jobs.push({ id: job.id, priority, runAt });
        }
        const order = (from: number, to: number) =>
          jobs
            .filter((j) => j.runAt > from && j.runAt <= to)
            .sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || (x.id < y.id ? -1 : 1))
            .map((j) => j.id);
        const ids = async (limit: number, types?: string[]) =>
          (await queue.lease({ limit, ...(types ? { types } : {}) })).map((j) => j.id);
        const due = order(-Infinity, t0);
        expect(await ids(6, [ruled.type])).toEqual(due.slice(0, 6));
        expect(await ids(100)).toEqual(due.slice(6));
        await clock.advance(1_010);
        const later = order(t0, t0 + 1_010);
        expect(later.length).toBe(20);
        expect(await ids(7)).toEqual(later.slice(0, 7));
        expect(await ids(100, [ruled.type])).toEqual(later.slice(7));
      });
    }

    it("fills a claim across types when the first type's jobs alone would fill it", async () => {
      const { queue } = await backend.setup();
      const early = await queue.enqueueMany(
        "many",
        Array.from({ length: 30 }, (_, i) => ({ i })),
      );
      const urgent = await queue.enqueue("few", {}, { priority: 1 });
      const got = (await queue.lease({ limit: 10 })).map((j) => j.id);
      expect(got).toEqual([urgent.id, ...early.slice(0, 9).map((j) => j.id)]);
    });

    it("hands each job of several types to exactly one of many concurrent claimers", async () => {
      const { queue, connect } = await backend.setup();
      const others = await Promise.all([connect(), connect(), connect()]);
      const ids: string[] = [];
      for (const type of ["t1", "t2", "t3"]) {
        const jobs = await queue.enqueueMany(
          type,
          Array.from({ length: 60 }, (_, i) => ({ i })),
        );
        for (const j of jobs) ids.push(j.id);
      }
      const seen: string[] = [];
      const claimers = [queue, ...others];
      await Promise.all(
        claimers.map(async (q, w) => {
          for (;;) {
            const got = await q.lease({
              limit: 7,
              workerId: `w${w}`,
              types: w % 2 === 0 ? undefined : ["t3", "t1", "t2"],
            });
            if (got.length === 0) return;
            for (const j of got) seen.push(j.id);
          }
        }),
      );
      // A claimer may come back empty while another takes the last jobs it saw; what is left, if
      // anything, is still there for the next claim.
      for (;;) {
        const got = await queue.lease({ limit: 50 });
        if (got.length === 0) break;
        for (const j of got) seen.push(j.id);
      }
      expect(seen.length).toBe(ids.length);
      expect(new Set(seen)).toEqual(new Set(ids));
    });

    it("hands out every field of a claimed job as stored, however far from a new job's", async () => {
      // Claims read a job's usual fields as columns and the rest packed, NULL while they hold a
      // new job's values (store/packed-row.ts): each field set here must come back as get() reads it.
      const { queue, clock } = await backend.setup();
      const plain = await queue.enqueue(noop, { n: 0 });
      const full = await queue.enqueue(
        noop,
        { n: 1, s: 'quote " back\\ \u00e9 \u2028' },
        {
          priority: 3,
          weight: 2,
          maxAttempts: 7,
          backoff: { type: "fixed", delayMs: 2000 },
          retryQueue: "retries",
          delivery: "at_most_once",
          timeoutMs: 9000,
          uniqueKey: "u-1",
          owner: "team-a",
          key: "tenant-1",
          expiresInMs: 3_600_000,
        },
      );
      const dependency = await queue.enqueue(noop, { n: 2 });
      const dependent = await queue.enqueue(
        noop,
        { n: 3 },
        { dependsOn: [dependency.id], onDependencyFailure: "run" },
      );
      const [first] = await queue.lease({ limit: 1, types: ["noop"] });
      expect(first!.id).toBe(full.id);
      expect(first).toEqual(await queue.get(full.id));
      const [second] = await queue.lease({ limit: 1 });
      expect(second!.id).toBe(plain.id);
      // A job whose first attempt saved a checkpoint and failed, and that a second was snoozed.
      expect(await queue.checkpoint(second!, { step: 2, note: "half way" })).toBe(true);
      expect(await queue.fail(second!, new Error("first try"))).toBe(true);
      const [third] = await queue.lease({ limit: 1 });
      expect(third!.id).toBe(dependency.id);
      expect(await queue.complete(third!, { done: true })).toBe(true);
      await clock.advance(5_000);
      const again = await queue.lease({ limit: 5, leaseMs: 60_000 });
      expect(again.map((j) => j.id).sort()).toEqual([plain.id, dependent.id].sort());
      const retried = again.find((j) => j.id === plain.id)!;
      expect(retried.attempt).toBe(2);
      expect(retried.errors).toHaveLength(1);
      expect(retried.checkpoint).toEqual({ step: 2, note: "half way" });
      expect(await queue.snooze(retried, 0)).toBe(true);
      const [snoozed] = await queue.lease({ limit: 1, workerId: "w-snooze" });
      expect(snoozed!.snoozes).toBe(1);
      for (const job of [...again.filter((j) => j.id !== plain.id), snoozed!]) {
        expect(job).toEqual(await queue.get(job.id));
      }
      expect(again.find((j) => j.id === dependent.id)!.dependsOn).toEqual([dependency.id]);
      expect(first).toMatchObject({
        owner: "team-a",
        key: "tenant-1",
        uniqueKey: "u-1",
        retryQueue: "retries",
      });
    });

    it("claims only the requested types", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue("a-type", {});
      const b = await queue.enqueue("b-type", {});
      const got = await queue.lease({ types: ["b-type"], limit: 10 });
      expect(got.map((j) => j.id)).toEqual([b.id]);
    });
  });
}
