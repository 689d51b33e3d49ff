/**
 * The Redis store lists each state from its own index (pending by runAt, active by lease expiry,
 * finished by finishedAt) and merges them, latest first: paging must still give every job exactly
 * once, ties within a millisecond included.
 */
import { describe, expect, it } from "vitest";
import type { Job, JobState } from "../../../src/job.js";
import type { ListOptions, Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { LIST_SCAN } from "../../../src/store/store.js";
import { openRedisQueue, redisSelected } from "../../helpers/redis.js";

async function all(queue: Queue, options: ListOptions): Promise<Job[][]> {
  const pages: Job[][] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({ ...options, cursor });
    pages.push(page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

/** The time a job is listed by, in its state's index. */
function listedAt(j: Job): number {
  if (j.state === "pending") return j.runAt.getTime();
  if (j.state === "active") return j.leaseExpiresAt!.getTime();
  return j.finishedAt!.getTime();
}

describe.runIf(redisSelected())("Redis store: list", () => {
  it("pages through every job exactly once, latest first, with and without filters", async () => {
    const { queue, clock } = await openRedisQueue();

    // Many jobs per millisecond, in every state, two types and two queues.
    const ids = new Map<string, { type: string; queue: string }>();
    for (let round = 0; round < 6; round++) {
      for (const [type, q] of [
        ["a", "default"],
        ["b", "default"],
        ["a", "other"],
      ] as const) {
        const jobs = await queue.enqueueMany(
          type,
          Array.from({ length: 40 }, (_, i) => ({ round, i })),
          { queue: q, delayMs: round % 2 === 0 ? 0 : 5_000 },
        );
        for (const j of jobs) ids.set(j.id, { type, queue: q });
      }
      const leased = await queue.lease({ queues: ["default", "other"], limit: 50 });
      for (const j of leased.slice(0, 30)) await queue.complete(j, null);
      for (const j of leased.slice(30, 35)) await queue.fail(j, new Error("x"), { retryable: false });
      // The round's last job: delayed (so pending) in odd rounds.
      if (round % 2 === 1) await queue.cancel([...ids.keys()].at(-1)!);
      await clock.advance(1);
    }

    const check = async (options: ListOptions, want: (id: string) => boolean) => {
      const pages = await all(queue, { ...options, limit: 37 });
      const jobs = pages.flat();
      for (const page of pages.slice(0, -1)) expect(page.length).toBeLessThanOrEqual(37);
      const seen = jobs.map((j) => j.id);
      expect(new Set(seen).size).toBe(seen.length);
      expect(new Set(seen)).toEqual(new Set([...ids.keys()].filter(want)));
      for (let i = 1; i < jobs.length; i++) {
        const [a, b] = [jobs[i - 1]!, jobs[i]!];
        expect(listedAt(a) > listedAt(b) || (listedAt(a) === listedAt(b) && a.id > b.id)).toBe(true);
      }
      return jobs;
    };

    const stats = await queue.stats();
    const everything = await check({}, () => true);
    const byState = (s: JobState) => everything.filter((j) => j.state === s).map((j) => j.id);
    for (const state of ["pending", "active", "completed", "dead", "cancelled"] as const) {
      expect(byState(state)).toHaveLength(stats.states[state]);
      const listed = await check({ state }, (id) => byState(state).includes(id));
      expect(listed.every((j) => j.state === state)).toBe(true);
    }
    await check({ type: "b" }, (id) => ids.get(id)!.type === "b");
    await check({ queue: "other" }, (id) => ids.get(id)!.queue === "other");
    await check({ state: "pending", type: "a", queue: "default" }, (id) => {
      const j = ids.get(id)!;
      return j.type === "a" && j.queue === "default" && byState("pending").includes(id);
    });
    // Of a cursor's characters and length, but no `<time>:<id>` this store gives: a time is at
    // most 15 digits (MAX_DATE_MS), and a bare id is no position.
    for (const cursor of ["not-a-cursor", `${"9".repeat(16)}:a`, `-${"9".repeat(16)}:a`, "x".repeat(255)]) {
      await expect(queue.list({ cursor }), cursor).rejects.toMatchObject({ code: "INVALID_OPTION" });
    }
    // A time before 1970 is a position (a store written to directly may hold one): before every job.
    expect(await queue.list({ cursor: "-1:a" })).toEqual({ jobs: [], nextCursor: null });
  });

  it("examines a fifth of LIST_SCAN candidates a call, so a filtered page holds Redis a few ms", async () => {
    expect(RedisStore.capabilities.listScan).toBe(LIST_SCAN / 5);
    const { queue, clock } = await openRedisQueue();
    const needle = await queue.enqueue("t", {}, { key: "needle" });
    clock.advance(1);
    // More newer jobs than a call examines on Redis, fewer than LIST_SCAN.
    await queue.enqueueManyIds(
      "t",
      Array.from({ length: RedisStore.capabilities.listScan + 100 }, (_, i) => i),
      { key: "hay" },
    );
    const first = await queue.list({ key: "needle" });
    expect(first.jobs).toEqual([]);
    expect(first.nextCursor).not.toBeNull();
    expect((await all(queue, { key: "needle" })).flat().map((j) => j.id)).toEqual([needle.id]);
    // A page of 1,000 whose filter (checked candidate by candidate) they all match is still full.
    expect((await queue.list({ key: "hay", limit: 1000 })).jobs).toHaveLength(1000);
  });
});
