/**
 * Owners: a job may carry an owner (the `owner` enqueue option; on the server, the token that
 * enqueued it). Every store keeps it through the job's whole life (claim, retry, completion,
 * death, cancel, expiry, retry by hand, replay), returns it from get and list, and lists one
 * owner's jobs on request.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import type { ListOptions, Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";

/** Every job the filter matches, paging two at a time (so paging with the owner filter is checked too). */
async function all(queue: Queue, filter: Omit<ListOptions, "limit" | "cursor">): Promise<Job[]> {
  const out: Job[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({ ...filter, limit: 2, cursor });
    out.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

const ids = (jobs: Job[]) => jobs.map((j) => j.id).sort();

export function exerciseOwners(backend: Backend): void {
  describe("owners", () => {
    it("keeps a job's owner through its life and returns it from get, list and claim", async () => {
      const { queue, clock, connect } = await backend.setup();
      const a = await queue.enqueue("t", 1, { id: "a", owner: "alice" });
      expect(a.owner).toBe("alice");
      const none = await queue.enqueue("t", 2, { id: "none" });
      expect(none.owner).toBeNull();
      expect((await queue.get("a"))?.owner).toBe("alice");
      expect((await queue.get("none"))?.owner).toBeNull();

      // Claimed, failed (retrying), claimed again, completed: still alice's.
      const [first] = await queue.lease({ types: ["t"], limit: 1 });
      expect(first).toMatchObject({ id: "a", owner: "alice", state: "active" });
      await queue.fail(first!, new Error("once"));
      expect(await queue.get("a")).toMatchObject({ state: "pending", owner: "alice" });
      await clock.advance(3_600_000);
      const again = await queue.lease({ types: ["t"], limit: 2 });
      expect(again.find((j) => j.id === "a")?.owner).toBe("alice");
      expect(again.find((j) => j.id === "none")?.owner).toBeNull();
      expect(await queue.complete(again.find((j) => j.id === "a")!, "ok")).toBe(true);
      expect(await queue.get("a")).toMatchObject({ state: "completed", owner: "alice" });

      // Dead, cancelled and expired jobs keep theirs too.
      await queue.enqueue("d", 1, { id: "dies", owner: "bob", maxAttempts: 1 });
      const [d] = await queue.lease({ types: ["d"] });
      await queue.fail(d!, new Error("fatal"));
      await queue.enqueue("t", 3, { id: "cancelled", owner: "bob", delayMs: 60_000 });
      await queue.cancel("cancelled");
      await queue.enqueue("t", 4, { id: "expires", owner: "bob", delayMs: 60_000, expiresInMs: 1000 });
      await clock.advance(2000);
      await queue.sweep();
      const other = await connect();
      for (const [id, state] of [
        ["dies", "dead"],
        ["cancelled", "cancelled"],
        ["expires", "expired"],
      ] as const) {
        expect(await other.get(id)).toMatchObject({ state, owner: "bob" });
      }

      // A retry by hand and a replay keep the owner.
      expect(await queue.retry("dies")).toMatchObject({ state: "pending", owner: "bob" });
      const copy = await queue.replay("a");
      expect(copy).toMatchObject({ state: "pending", owner: "alice" });
      expect(copy.id).not.toBe("a");
      expect((await other.get(copy.id))?.owner).toBe("alice");
    });

    it("lists one owner's jobs, in every state, with the other filters and across pages", async () => {
      const { queue, clock } = await backend.setup();
      await queue.enqueue("t", 1, { id: "a-pending", owner: "alice" });
      await queue.enqueue("u", 2, { id: "a-later", owner: "alice", delayMs: 60_000 });
      await queue.enqueue("t", 3, { id: "a-active", owner: "alice", priority: 9 });
      await queue.enqueue("t", 4, { id: "a-done", owner: "alice", priority: 8 });
      await queue.enqueue("t", 5, { id: "b-pending", owner: "bob" });
      await queue.enqueue("t", 6, { id: "b-done", owner: "bob", priority: 7 });
      await queue.enqueue("t", 7, { id: "nobody" });
      // alice's name is a prefix of this one's: a filter matches whole names only.
      await queue.enqueue("t", 8, { id: "al-pending", owner: "alice2" });
      const leased = await queue.lease({ types: ["t"], limit: 3 });
      expect(leased.map((j) => j.id).sort()).toEqual(["a-active", "a-done", "b-done"]);
      await clock.advance(10);
      await queue.complete(leased.find((j) => j.id === "a-done")!, null);
      await queue.complete(leased.find((j) => j.id === "b-done")!, null);

      const alice = await all(queue, { owner: "alice" });
      expect(ids(alice)).toEqual(["a-active", "a-done", "a-later", "a-pending"]);
      expect(alice.every((j) => j.owner === "alice")).toBe(true);
      expect(ids(await all(queue, { owner: "bob" }))).toEqual(["b-done", "b-pending"]);
      expect(ids(await all(queue, { owner: "alice", state: "pending" }))).toEqual(["a-later", "a-pending"]);
      expect(ids(await all(queue, { owner: "alice", state: "active" }))).toEqual(["a-active"]);
      expect(ids(await all(queue, { owner: "alice", state: "completed" }))).toEqual(["a-done"]);
      expect(ids(await all(queue, { owner: "alice", type: "u" }))).toEqual(["a-later"]);
      expect(ids(await all(queue, { owner: "bob", queue: "default", state: "completed" }))).toEqual([
        "b-done",
      ]);
      expect(await all(queue, { owner: "carol" })).toEqual([]);
      // Without the filter, every job, owned or not.
      expect(await all(queue, {})).toHaveLength(8);
    });

    it("stores owners from bulk enqueues, one owner for all or one each", async () => {
      const { queue } = await backend.setup();
      // Many jobs, one owner: stores that insert such a batch on a fast path keep it there too.
      const many = await queue.enqueueMany(
        "bulk",
        Array.from({ length: 130 }, (_, n) => n),
        { owner: "batcher" },
      );
      expect(many.every((j) => j.owner === "batcher")).toBe(true);
      const mixed = await queue.enqueueBatch([
        { job: "bulk", payload: 1, options: { owner: "x" } },
        { job: "bulk", payload: 2 },
        { job: "bulk", payload: 3, options: { owner: "y" } },
      ]);
      expect(mixed.map((j) => j.owner)).toEqual(["x", null, "y"]);
      const stored = await Promise.all([...many, ...mixed].map((j) => queue.get(j.id)));
      expect(stored.map((j) => j?.owner)).toEqual([...many, ...mixed].map((j) => j.owner));
      expect(await all(queue, { owner: "batcher" })).toHaveLength(130);
      expect(ids(await all(queue, { owner: "y" }))).toEqual([mixed[2]!.id]);
    });

    it("gives jobs fired by a schedule the owner in its options", async () => {
      const { queue, clock } = await backend.setup();
      await queue.schedule("nightly", {
        cron: "* * * * *",
        job: "report",
        payload: {},
        options: { owner: "ops" },
      });
      await clock.advance(60_000);
      expect((await queue.sweep()).fired).toBe(1);
      const [job] = (await queue.list({ type: "report" })).jobs;
      expect(job?.owner).toBe("ops");
    });

    it("refuses an owner that is not a name, and changes nothing", async () => {
      const { queue } = await backend.setup();
      for (const owner of ["", "has space", "x".repeat(129), "a/b", 7]) {
        await expect(queue.enqueue("t", 1, { owner: owner as string })).rejects.toMatchObject({
          code: "INVALID_OPTION",
        });
        await expect(queue.list({ owner: owner as string })).rejects.toMatchObject({
          code: "INVALID_OPTION",
        });
      }
      expect((await queue.list()).jobs).toEqual([]);
    });
  });
}
