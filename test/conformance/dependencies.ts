/**
 * Dependencies: a job may wait for any number of jobs (`dependsOn`). While any is unfinished it is
 * `blocked`: never claimed, counted apart from pending and scheduled. The completion of its last
 * dependency makes it `pending` in the same write, and its own `runAt` and priority apply from
 * then on. A dependency named by id must exist (`DEPENDENCY_NOT_FOUND`, nothing stored); one
 * already completed is satisfied.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const fetchPage = defineJob({ type: "fetch-page", handler: async (p: { url: string }) => `<${p.url}>` });

/** Leases every ready job and completes each with `result(job)`; returns the ids, in lease order. */
async function completeReady(queue: Queue, result: (job: Job) => unknown = (j) => j.id): Promise<string[]> {
  const jobs = await queue.lease({ limit: 100 });
  for (const job of jobs) expect(await queue.complete(job, result(job))).toBe(true);
  return jobs.map((j) => j.id);
}

/** Resolves on the next wake-up `store` hears. */
function nextWake(store: { onWake(listener: () => void): () => void }): Promise<void> {
  return new Promise((resolve) => {
    const off = store.onWake(() => {
      off();
      resolve();
    });
  });
}

export function exerciseDependencies(backend: Backend): void {
  describe("dependencies", () => {
    it("blocks a job until every dependency has completed, then it is pending in the same write", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      const b = await queue.enqueue(fetchPage, { url: "b" });
      const c = await queue.enqueue("merge", { n: 1 }, { dependsOn: [a.id, b.id] });
      expect(c).toMatchObject({ state: "blocked", blockedBy: 2, dependsOn: [a.id, b.id], duplicate: false });
      expect(await queue.get(c.id)).toMatchObject({
        state: "blocked",
        blockedBy: 2,
        dependsOn: [a.id, b.id],
      });

      // Never leased while blocked; counted as blocked, not pending or scheduled.
      const [first] = await queue.lease({ types: ["fetch-page"], limit: 1 });
      expect(await queue.lease({ types: ["merge"] })).toEqual([]);
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ blocked: 1, pending: 1, active: 1 });
      expect(stats.scheduled).toBe(0);
      expect(stats.types.merge).toMatchObject({ blocked: 1 });
      expect((await queue.list({ state: "blocked" })).jobs.map((j) => j.id)).toEqual([c.id]);

      expect(await queue.complete(first!, "one")).toBe(true);
      expect(await queue.get(c.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      expect(await queue.lease({ types: ["merge"] })).toEqual([]);

      const [second] = await queue.lease({ types: ["fetch-page"] });
      expect(await queue.complete(second!, "two")).toBe(true);
      expect(await queue.get(c.id)).toMatchObject({ state: "pending", blockedBy: 0 });
      expect((await queue.stats()).states.blocked).toBe(0);
      const [leased] = await queue.lease({ types: ["merge"] });
      expect(leased?.id).toBe(c.id);

      const results = new Map([
        [first!.id, "one"],
        [second!.id, "two"],
      ]);
      expect(await queue.dependencies(c.id)).toEqual([
        { id: a.id, type: "fetch-page", state: "completed", result: results.get(a.id) },
        { id: b.id, type: "fetch-page", state: "completed", result: results.get(b.id) },
      ]);
      expect(await queue.dependencies(a.id)).toEqual([]);
    });

    it("gives the handler its dependencies' results in dependsOn order (ctx.dependencies)", async () => {
      const { queue } = await backend.setup();
      const seen: unknown[] = [];
      const merge = defineJob({
        type: "merge",
        handler: async (_p: unknown, ctx) => {
          const deps = await ctx.dependencies();
          seen.push(deps.map((d) => [d.state, d.result]));
          return deps.map((d) => d.result).join("+");
        },
      });
      const b = await queue.enqueue(fetchPage, { url: "b" });
      const a = await queue.enqueue(fetchPage, { url: "a" });
      const c = await queue.enqueue(merge, {}, { dependsOn: [a.id, b.id] });
      const result = await drain(queue, { jobs: [fetchPage, merge], concurrency: 4 });
      expect(result.completed).toBe(3);
      expect(seen).toEqual([
        [
          ["completed", "<a>"],
          ["completed", "<b>"],
        ],
      ]);
      expect((await queue.get(c.id))?.result).toBe("<a>+<b>");
      // The merge started only after both fetches: it is the last job leased.
      expect(result.jobs.at(-1)?.id).toBe(c.id);
    });

    it("counts an already completed dependency as satisfied", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      await completeReady(queue);
      const b = await queue.enqueue(fetchPage, { url: "b" });
      const c = await queue.enqueue("merge", {}, { dependsOn: [a.id] });
      expect(c).toMatchObject({ state: "pending", blockedBy: 0, dependsOn: [a.id] });
      const d = await queue.enqueue("merge", {}, { dependsOn: [a.id, b.id] });
      expect(d).toMatchObject({ state: "blocked", blockedBy: 1 });
    });

    it("applies the job's own runAt and priority once it is unblocked", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      const later = await queue.enqueue("merge", { n: "later" }, { dependsOn: [a.id], delayMs: 60_000 });
      const urgent = await queue.enqueue("merge", { n: "urgent" }, { dependsOn: [a.id], priority: 5 });
      const plain = await queue.enqueue("merge", { n: "plain" });
      await clock.advance(10_000);
      await completeReady(queue, () => null); // a and plain
      expect((await queue.get(later.id))?.state).toBe("pending");
      // urgent's priority puts it first; later's runAt is still 50 s away.
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([urgent.id]);
      expect(plain.state).toBe("pending");
      await clock.advance(50_000);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([later.id]);
    });

    it("keeps dependents blocked while a dependency retries, and unblocks them when it completes", async () => {
      const { queue, clock } = await backend.setup();
      const a = await queue.enqueue(
        fetchPage,
        { url: "a" },
        { maxAttempts: 3, backoff: { type: "fixed", delayMs: 1000 } },
      );
      const c = await queue.enqueue("merge", {}, { dependsOn: [a.id] });
      const [first] = await queue.lease();
      expect(await queue.fail(first!, new Error("flaky"))).toBe(true);
      expect(await queue.get(c.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      await clock.advance(1000);
      const [again] = await queue.lease();
      expect(again?.id).toBe(a.id);
      expect(await queue.complete(again!, "ok")).toBe(true);
      expect((await queue.get(c.id))?.state).toBe("pending");
    });

    it("unblocks a dependent enqueued while its dependency runs, when that run completes", async () => {
      // Completed jobs kept, and not kept: a dependency something waits on is kept either way, and
      // its dependent reads its result.
      for (const retention of [{}, { completed: 0 }]) {
        const { queue } = await backend.setup({ retention });
        const a = await queue.enqueue(fetchPage, { url: "a" });
        const [running] = await queue.lease();
        expect(running?.id).toBe(a.id);
        const c = await queue.enqueue("merge", {}, { dependsOn: [a.id] });
        expect(c).toMatchObject({ state: "blocked", blockedBy: 1 });
        expect(await queue.complete(running!, "page a")).toBe(true);
        expect(await queue.get(c.id), JSON.stringify(retention)).toMatchObject({
          state: "pending",
          blockedBy: 0,
        });
        expect(await queue.dependencies(c.id)).toEqual([
          { id: a.id, type: "fetch-page", state: "completed", result: "page a" },
        ]);
        // The dependent's own completion: not kept, it leaves no trace among a's dependents.
        const [dependent] = await queue.lease();
        expect(dependent?.id).toBe(c.id);
        expect(await queue.complete(dependent!, "merged")).toBe(true);
        expect((await queue.dependents(a.id)).jobs.map((j) => [j.id, j.state])).toEqual(
          "completed" in retention ? [] : [[c.id, "completed"]],
        );
      }
    });

    it("refuses a dependency that names no job with DEPENDENCY_NOT_FOUND and stores nothing", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      // In the same words on every store, the id in its details.
      await expect(
        queue.enqueue("merge", {}, { id: "c1", dependsOn: [a.id, "no-such-job"] }),
      ).rejects.toMatchObject({
        code: "DEPENDENCY_NOT_FOUND",
        message: 'dependsOn names no job: "no-such-job"',
        details: { id: "no-such-job" },
      });
      expect(await queue.get("c1")).toBeNull();
      // In a batch, one bad dependency stores none of the batch.
      await refused(
        () =>
          queue.enqueueBatch([
            { job: "merge", payload: {}, options: { id: "ok-1", dependsOn: [a.id] } },
            { job: "merge", payload: {}, options: { id: "bad-1", dependsOn: ["missing"] } },
          ]),
        "DEPENDENCY_NOT_FOUND",
      );
      expect(await queue.get("ok-1")).toBeNull();
      expect(await queue.get("bad-1")).toBeNull();
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: 0 });
    });

    it("refuses duplicates, a job depending on itself and ids that are not ids, before the store", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      await refused(() => queue.enqueue("merge", {}, { dependsOn: [a.id, a.id] }), "INVALID_OPTION");
      await refused(() => queue.enqueue("merge", {}, { id: "self", dependsOn: ["self"] }), "INVALID_OPTION");
      await refused(() => queue.enqueue("merge", {}, { dependsOn: "nope" as never }), "INVALID_OPTION");
      await refused(() => queue.enqueue("merge", {}, { dependsOn: [""] }), "INVALID_JOB_ID");
      await refused(
        () => queue.enqueue("merge", {}, { onDependencyFailure: "ignore" as never }),
        "INVALID_OPTION",
      );
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: 0 });
    });

    it("lists a job's dependents, in id order, a page at a time", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      const ids = ["d-3", "d-1", "d-2"];
      for (const id of ids) await queue.enqueue("merge", {}, { id, dependsOn: [a.id] });
      await queue.enqueue("merge", {}, { id: "unrelated" });
      const first = await queue.dependents(a.id, { limit: 2 });
      expect(first.jobs.map((j) => [j.id, j.state])).toEqual([
        ["d-1", "blocked"],
        ["d-2", "blocked"],
      ]);
      expect(first.nextCursor).not.toBeNull();
      const second = await queue.dependents(a.id, { limit: 2, cursor: first.nextCursor! });
      expect(second.jobs.map((j) => j.id)).toEqual(["d-3"]);
      expect(second.nextCursor).toBeNull();
      expect((await queue.dependents("d-1")).jobs).toEqual([]);
      // A mistyped id is no empty page.
      await expect(queue.dependents("d-9")).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
    });

    it("unblocks a fan-out of dependents in the completion's write", async () => {
      const { queue } = await backend.setup();
      const root = await queue.enqueue(fetchPage, { url: "root" });
      await queue.enqueueMany(
        "leaf",
        Array.from({ length: 250 }, (_, i) => ({ i })),
        { dependsOn: [root.id] },
      );
      expect((await queue.stats()).states).toMatchObject({ blocked: 250, pending: 1 });
      const [job] = await queue.lease();
      expect(await queue.complete(job!, null)).toBe(true);
      expect((await queue.stats()).states).toMatchObject({ blocked: 0, pending: 250 });
    });

    it("unblocks a fan-in exactly when its last dependency completes", async () => {
      const { queue } = await backend.setup();
      const deps = await queue.enqueueMany(
        "part",
        Array.from({ length: 120 }, (_, i) => ({ i })),
      );
      const join = await queue.enqueue("join", {}, { dependsOn: deps.map((d) => d.id) });
      expect(join).toMatchObject({ state: "blocked", blockedBy: 120 });
      for (let round = 0; round < 3; round++) {
        const jobs = await queue.lease({ types: ["part"], limit: 40 });
        expect(jobs.length).toBe(40);
        // One write completing 40 dependencies of the same job counts all 40.
        const done = await queue.attempts.completeMany(
          jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: "null", value: null })),
        );
        expect(done).toEqual(jobs.map(() => true));
        expect(await queue.get(join.id)).toMatchObject({
          state: round === 2 ? "pending" : "blocked",
          blockedBy: round === 2 ? 0 : 120 - 40 * (round + 1),
        });
      }
    });

    it.runIf(backend.capabilities.listen)(
      "wakes claimers on another connection when a completion unblocks jobs",
      async () => {
        const { queue, connect } = await backend.setup();
        const other = await connect();
        const a = await queue.enqueue(fetchPage, { url: "a" });
        await queue.enqueue("merge", {}, { dependsOn: [a.id] });
        const [job] = await queue.lease({ types: ["fetch-page"] });
        const heard = nextWake(other.store);
        expect(await queue.complete(job!, null)).toBe(true);
        await heard;
        expect((await other.lease({ types: ["merge"] })).length).toBe(1);
      },
    );

    it("holds a unique key while its job is blocked", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue(fetchPage, { url: "a" });
      const c = await queue.enqueue("merge", {}, { dependsOn: [a.id], uniqueKey: "merge-1" });
      const again = await queue.enqueue("merge", {}, { uniqueKey: "merge-1" });
      expect(again).toMatchObject({ id: c.id, duplicate: true, state: "blocked" });
    });
  });
}
