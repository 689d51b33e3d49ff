/**
 * Fairness: when several keys have ready jobs of a `fair` type, claims take them round-robin
 * across keys, whichever key enqueued first or most; priority still orders (within a key and
 * across); jobs without a key take their turns as one group; a key that enqueues after others
 * were served starts level with them, not behind their backlog; per-key caps still hold.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";

const sync = defineJob({ type: "sync-account", fair: true, handler: async () => null });
const plain = defineJob({ type: "plain-sync", handler: async () => null });

/**
 * One worker of concurrency `slots`, driven by hand: it leases as many jobs as it has free slots,
 * then finishes its oldest running job, until `done` says stop or nothing is left. Returns the
 * starts in order.
 */
async function drive(queue: Queue, slots: number, done: (started: Job[]) => boolean): Promise<Job[]> {
  const started: Job[] = [];
  const running: Job[] = [];
  for (;;) {
    const got = await queue.lease({ limit: slots - running.length });
    started.push(...got);
    running.push(...got);
    if (done(started) || running.length === 0) return started;
    await queue.complete(running.shift()!, null);
  }
}

/** Every ready job's id, leased one at a time, in the order the claims take them. */
async function takeOneByOne(queue: Queue): Promise<string[]> {
  const ids: string[] = [];
  for (let [job] = await queue.lease({ limit: 1 }); job; [job] = await queue.lease({ limit: 1 }))
    ids.push(job.id);
  return ids;
}

/** A fair type whose keys run one job at a time. */
function cappedFair(type: string) {
  return defineJob({ type, fair: true, keyConcurrency: 1, handler: async () => null });
}

export function exerciseFair(backend: Backend): void {
  describe("fair", () => {
    it("takes every ready job a claim has room for", async () => {
      const { queue } = await backend.setup();
      queue.register(sync);
      const a = await queue.enqueueMany(
        sync,
        Array.from({ length: 5 }, (_, i) => ({ i })),
        { key: "a" },
      );
      const k = [];
      for (let n = 0; n < 3; n++) k.push(await queue.enqueue(sync, { n }, { key: `k${n}` }));
      // Every one: a job taken by turn in an earlier slot leaves its own slot to the next turn.
      const got = await queue.lease({ limit: 100 });
      expect(got.map((j) => j.id).sort()).toEqual([...a, ...k].map((j) => j.id).sort());
    });

    it("prunes the keys' next turns that no longer matter, and no turn changes", async () => {
      const bundle = await backend.setup();
      const { queue } = bundle;
      queue.register(sync);
      // Key a has 5 jobs (turns 0-4), keys k0-k19 one each (turn 0): once all are taken, the
      // type's turn is 4, and only a's next turn (5) is above it.
      await queue.enqueueMany(
        sync,
        Array.from({ length: 5 }, (_, i) => ({ i })),
        { key: "a" },
      );
      for (let k = 0; k < 20; k++) await queue.enqueue(sync, { k }, { key: `k${k}` });
      for (let started = await queue.lease({ limit: 1 }); started.length > 0; ) {
        await queue.complete(started[0]!, null);
        started = await queue.lease({ limit: 1 });
      }
      if (backend.inspect) expect(await backend.inspect.fairKeys(bundle)).toBe(21);
      await queue.prune();
      if (backend.inspect) expect(await backend.inspect.fairKeys(bundle)).toBe(1);
      // A pruned key enqueues again level with the type's turn, as it would have unpruned; a
      // kept one after its own backlog.
      const a = await queue.enqueue(sync, {}, { key: "a" });
      const k3 = await queue.enqueue(sync, {}, { key: "k3" });
      expect((await queue.lease({ limit: 1 })).map((j) => j.id)).toEqual([k3.id]);
      expect((await queue.lease({ limit: 1 })).map((j) => j.id)).toEqual([a.id]);
    });

    it("starts all 10 of B's jobs before A's 50th, with 10,000 of A's enqueued first (concurrency 5)", async () => {
      for (const def of [sync, plain]) {
        const { queue } = await backend.setup();
        queue.register(def);
        await queue.enqueueMany(
          def,
          Array.from({ length: 10_000 }, (_, i) => ({ i })),
          { key: "tenant-a" },
        );
        const b = await queue.enqueueMany(
          def,
          Array.from({ length: 10 }, (_, i) => ({ i })),
          { key: "tenant-b" },
        );
        const bIds = new Set(b.map((j) => j.id));
        const started = await drive(queue, 5, (s) => s.filter((j) => j.key === "tenant-a").length >= 50);
        const aBefore = (id: string) =>
          started
            .slice(
              0,
              started.findIndex((j) => j.id === id),
            )
            .filter((j) => j.key === "tenant-a").length;
        const bStarted = started.filter((j) => bIds.has(j.id));
        if (def === sync) {
          expect(bStarted.length).toBe(10);
          for (const j of bStarted) expect(aBefore(j.id)).toBeLessThan(50);
          // Round-robin: while both keys wait, they take turns (a batch of starts in any order).
          expect(started.slice(0, 20).filter((j) => j.key === "tenant-b").length).toBe(10);
        } else {
          // Without fair, A's backlog goes first: what fair is for.
          expect(bStarted).toEqual([]);
        }
      }
    });

    it("takes keys in turns, jobs without a key as one group, each key's jobs by priority", async () => {
      const { queue } = await backend.setup();
      queue.register(sync);
      const a = await queue.enqueueMany(sync, [{ n: 1 }, { n: 2 }, { n: 3 }], { key: "a" });
      const aUrgent = await queue.enqueue(sync, { n: 4 }, { key: "a", priority: 5 });
      const none = await queue.enqueueMany(sync, [{ n: 5 }, { n: 6 }]);
      const b = await queue.enqueueMany(sync, [{ n: 7 }, { n: 8 }], { key: "b" });
      const ids = await takeOneByOne(queue);
      // Priority first, across keys too; then a turn each: a, no key, b, a, no key, b, a.
      expect(ids).toEqual([
        aUrgent.id,
        a[0]!.id,
        none[0]!.id,
        b[0]!.id,
        a[1]!.id,
        none[1]!.id,
        b[1]!.id,
        a[2]!.id,
      ]);
    });

    it("gives a key that enqueues late a turn level with the others, not behind their backlog", async () => {
      const { queue } = await backend.setup();
      queue.register(sync);
      await queue.enqueueMany(
        sync,
        Array.from({ length: 100 }, (_, i) => ({ i })),
        { key: "a" },
      );
      const first = await queue.lease({ limit: 40 });
      expect(first.every((j) => j.key === "a")).toBe(true);
      const late = await queue.enqueueMany(sync, [{ n: 1 }, { n: 2 }], { key: "late" });
      // The late key's first turn is the one just served (a's 40th), so it goes first.
      const next = await queue.lease({ limit: 4 });
      expect(next.map((j) => j.key).sort()).toEqual(["a", "a", "late", "late"]);
      expect(next.filter((j) => j.key === "late").map((j) => j.id)).toEqual(late.map((j) => j.id));
      expect(next.filter((j) => j.key === "a").map((j) => j.payload)).toEqual([{ i: 40 }, { i: 41 }]);
    });

    it("takes the jobs of one turn by runAt, then id, as the usual order does", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      const t0 = clock.now();
      // Four keys' first jobs share a turn; their runAt order is not their enqueue order, and
      // two of them share a runAt. Some are ready at enqueue, some once the clock reaches them.
      const spec: Array<[string, number]> = [
        ["k1", t0 - 5],
        ["k2", t0 - 20],
        ["k3", t0 + 50],
        ["k4", t0 + 10],
        ["k5", t0 - 20],
      ];
      const jobs: Job[] = [];
      for (const [key, runAt] of spec) jobs.push(await queue.enqueue(sync, { key }, { key, runAt }));
      const byRunAt = (xs: typeof jobs) =>
        [...xs]
          .sort((a, b) => a.runAt.getTime() - b.runAt.getTime() || (a.id < b.id ? -1 : 1))
          .map((j) => j.id);
      const ready = jobs.filter((j) => j.runAt.getTime() <= t0);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(byRunAt(ready));
      await clock.advance(50);
      const later = jobs.filter((j) => j.runAt.getTime() > t0);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(byRunAt(later));
    });

    it("keeps a rescheduled job's turn: its new priority and runAt order it as any job of that turn", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      const t0 = clock.now();
      // Turns: a 0, 1, 2; b 0, 1.
      const a = await queue.enqueueMany(sync, [{ n: 0 }, { n: 1 }, { n: 2 }], { key: "a" });
      const b = await queue.enqueueMany(sync, [{ n: 0 }, { n: 1 }], { key: "b" });
      // a's last turn now runs earliest of all, still behind the turns before it; a's second and
      // b's first move up to priority 5, where b's turn 0 comes before a's turn 1 whichever was
      // enqueued first.
      await queue.reschedule(a[2]!.id, { runAt: new Date(t0 - 100) });
      await queue.reschedule(a[1]!.id, { priority: 5 });
      await queue.reschedule(b[0]!.id, { priority: 5 });
      const ids = await takeOneByOne(queue);
      expect(ids).toEqual([b[0]!.id, a[1]!.id, a[0]!.id, b[1]!.id, a[2]!.id]);
    });

    it("takes a fair job moved to a lower priority at its new priority", async () => {
      const { queue } = await backend.setup();
      queue.register(sync);
      const x = await queue.enqueue(sync, { n: 0 }, { key: "a", priority: 5 });
      const y = await queue.enqueue(sync, { n: 1 }, { key: "b", priority: 5 });
      const z = await queue.enqueue(sync, { n: 2 }, { key: "c" });
      await queue.reschedule(x.id, { priority: 0 });
      const ids = await takeOneByOne(queue);
      // x and z share turn 0 at priority 0, where x's runAt and id come first.
      expect(ids).toEqual([y.id, x.id, z.id]);
    });

    it("orders a debounced fair job by its new runAt within its turn", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      const t0 = clock.now();
      const x = await queue.enqueue(sync, { v: 1 }, { key: "a", debounce: { key: "d", delayMs: 0 } });
      await clock.advance(10);
      const y = await queue.enqueue(sync, { v: 2 }, { key: "b", runAt: new Date(t0 + 5) });
      // The debounce moves x to now (t0 + 10): both hold turn 0, and y's runAt is earlier.
      const again = await queue.enqueue(sync, { v: 3 }, { key: "a", debounce: { key: "d", delayMs: 0 } });
      expect(again.id).toBe(x.id);
      const ids = (await queue.lease({ limit: 1 })).map((j) => j.id);
      ids.push(...(await queue.lease({ limit: 1 })).map((j) => j.id));
      expect(ids).toEqual([y.id, x.id]);
    });

    it("takes a fair job its dependencies made ready by its turn", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      queue.register(plain);
      const dep = await queue.enqueue(plain, {});
      // a's first job (turn 0) waits for dep; a's second (turn 1, due before every other) and b's
      // two (0, 1) are ready.
      const a0 = await queue.enqueue(sync, { n: 0 }, { key: "a", dependsOn: [dep.id] });
      const a1 = await queue.enqueue(sync, { n: 1 }, { key: "a", runAt: new Date(clock.now() - 100) });
      const b = await queue.enqueueMany(sync, [{ n: 0 }, { n: 1 }], { key: "b" });
      const [started] = await queue.lease({ limit: 1, types: [plain.type] });
      await queue.complete(started!, null);
      expect(await takeOneByOne(queue)).toEqual([a0.id, b[0]!.id, a1.id, b[1]!.id]);
    });

    it("keeps a rescheduled job's turn when it is due later, then comes due", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      const a = await queue.enqueueMany(sync, [{ n: 0 }, { n: 1 }], { key: "a" });
      const b = await queue.enqueueMany(sync, [{ n: 0 }, { n: 1 }], { key: "b" });
      // a's first turn waits a while; once due it is turn 0 again, ahead of both turns 1.
      await queue.reschedule(a[0]!.id, { runAt: new Date(clock.now() + 1_000) });
      expect((await queue.lease({ limit: 1 })).map((j) => j.id)).toEqual([b[0]!.id]);
      await clock.advance(1_000);
      const ids = await takeOneByOne(queue);
      expect(ids).toEqual([a[0]!.id, a[1]!.id, b[1]!.id]);
    });

    it("keeps keyConcurrency: a turn passes to the next key when a key is at its cap", async () => {
      const { queue } = await backend.setup();
      const capped = cappedFair("sync-capped");
      queue.register(capped);
      for (const key of ["a", "b", "c"]) {
        await queue.enqueueMany(
          capped,
          Array.from({ length: 5 }, (_, i) => ({ i })),
          { key },
        );
      }
      const got = await queue.lease({ limit: 10 });
      expect(got.map((j) => j.key).sort()).toEqual(["a", "b", "c"]);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      await queue.complete(got.find((j) => j.key === "b")!, null);
      expect((await queue.lease({ limit: 10 })).map((j) => j.key)).toEqual(["b"]);
    });

    it("keeps keyConcurrency over a claim larger than a page of turns: one job per key, each key's first", async () => {
      const { queue } = await backend.setup();
      const capped = cappedFair("sync-capped-wide");
      queue.register(capped);
      // 40 keys' first turns, then their second and third: more than one read of turns (SQLite
      // reads 16 at a time) before the claim meets keys already running.
      const keys = Array.from({ length: 40 }, (_, k) => `k${String(k).padStart(2, "0")}`);
      for (let round = 0; round < 3; round++) {
        await queue.enqueueBatch(
          keys.map((key) => ({ job: capped, payload: { key, round }, options: { key } })),
        );
      }
      const got = await queue.lease({ limit: 100 });
      expect(got.map((j) => j.key).sort()).toEqual(keys);
      expect(got.every((j) => (j.payload as { round: number }).round === 0)).toBe(true);
      expect(await queue.lease({ limit: 100 })).toEqual([]);
      await queue.complete(got.find((j) => j.key === "k17")!, null);
      await queue.complete(got.find((j) => j.key === "k33")!, null);
      const next = await queue.lease({ limit: 100 });
      expect(next.map((j) => [j.key, (j.payload as { round: number }).round]).sort()).toEqual([
        ["k17", 1],
        ["k33", 1],
      ]);
    });

    it("gives a late key turns level with the others when a worker of one keyed fair type claims", async () => {
      // A claim of one fair type with per-key rules, naming it: PostgreSQL's one-statement claim,
      // which moves the type's turn itself. A cap that never binds keeps the type keyed.
      const { queue } = await backend.setup();
      const keyed = defineJob({
        type: "sync-keyed",
        fair: true,
        keyConcurrency: 10,
        handler: async () => null,
      });
      queue.register(keyed);
      for (const key of ["a", "b"]) {
        await queue.enqueueMany(
          keyed,
          Array.from({ length: 20 }, (_, i) => ({ key, i })),
          { key },
        );
      }
      const lease = (limit: number) => queue.lease({ limit, types: ["sync-keyed"] });
      // Which jobs were taken (the order a lease returns them in is each store's own).
      const taken = (jobs: Job[]) =>
        jobs
          .map((j) => j.payload as { key: string; i: number })
          .map(({ key, i }) => `${key}${i}`)
          .sort();
      const first = await lease(8);
      expect(taken(first)).toEqual(["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"]);
      for (const j of first) await queue.complete(j, null);
      // The type's turn is now 3: the late key's five jobs take turns 3 to 7.
      await queue.enqueueMany(
        keyed,
        Array.from({ length: 5 }, (_, i) => ({ key: "late", i })),
        { key: "late" },
      );
      // Behind the others' backlog (turns from 0), it would take five of the six.
      expect(taken(await lease(6))).toEqual(["a4", "a5", "b4", "b5", "late0", "late1"]);
    });

    it("does not reorder other types: a fair type's turns only fill the slots its jobs had", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(sync);
      queue.register(plain);
      await queue.enqueueMany(sync, [{ n: 1 }, { n: 2 }], { key: "a" });
      await clock.advance(1);
      const p = await queue.enqueue(plain, { n: 3 });
      await clock.advance(1);
      const b = await queue.enqueue(sync, { n: 4 }, { key: "b" });
      const got = await queue.lease({ limit: 3 });
      // The plain job keeps its place among the slots by runAt; b's turn takes a's second slot.
      expect(got.map((j) => j.type).sort()).toEqual(["plain-sync", "sync-account", "sync-account"]);
      expect(got.map((j) => j.id)).toContain(b.id);
      expect(got.map((j) => j.id)).toContain(p.id);
    });
  });
}
