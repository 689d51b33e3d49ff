/**
 * The Redis store's lease index, {p}:lease, holds one member that is no job: LEASE_SENTINEL
 * (lua/includes/prelude.lua), at +inf, which keeps the set a skiplist. As a listpack (what Redis
 * makes of a set of up to 128 short members: a worker's leases at defaults) every lease a claim
 * added scanned the whole set. Each reader of the index must pass over the sentinel.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../../src/job.js";
import { scriptText } from "../../../src/store/redis/scripts.js";
import { openRedisQueue, redisSelected } from "../../helpers/redis.js";

describe.runIf(redisSelected())("Redis store: the lease index", () => {
  it("stays a skiplist from the first claim, and no reader takes its sentinel for a job", async () => {
    const { queue, store, client, prefix, clock } = await openRedisQueue();
    const lease = `{${prefix}}:lease`;

    // A claim that leases nothing adds nothing.
    expect(await queue.lease({ types: ["t"], limit: 5, workerId: "w" })).toEqual([]);
    expect(await client.exists(lease)).toBe(0);

    await queue.enqueueMany("t", [1, 2, 3, 4, 5, 6, 7]);
    const first = await queue.lease({ types: ["t"], limit: 3, workerId: "w", leaseMs: 60_000 });
    expect(first).toHaveLength(3);
    // Three short members would make a listpack; the sentinel, added first, makes a skiplist.
    expect(await client.object("ENCODING", lease)).toBe("skiplist");
    expect(await client.zcard(lease)).toBe(4);
    expect(await client.zcount(lease, "-inf", "(+inf")).toBe(3);
    expect(await client.zrangebyscore(lease, "+inf", "+inf")).toHaveLength(1);

    clock.advance(1000);
    const second = await queue.lease({ types: ["t"], limit: 3, workerId: "w", leaseMs: 60_000 });
    expect(second).toHaveLength(3);
    expect(await client.zcard(lease)).toBe(7);

    // list: every active job once, one per page, latest first (lease, then id); the sentinel is on no
    // page.
    const listed: Job[] = [];
    let cursor: string | undefined;
    do {
      const page = await queue.list({ state: "active", limit: 1, cursor });
      listed.push(...page.jobs);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(listed.map((j) => j.id)).toEqual([...second.reverse(), ...first.reverse()].map((j) => j.id));
    // With a budget of one candidate (the store passes 10,000), that candidate is a job: the
    // sentinel, first at +inf, is passed over rather than examined and made the next cursor.
    const [jobs, time] = (await client.eval(
      scriptText("list"),
      1,
      `{${prefix}}:meta`,
      "active",
      "",
      "",
      1,
      "",
      1,
      "",
      "",
    )) as [unknown[], string | null];
    expect(jobs).toHaveLength(1);
    expect(time).toMatch(/^\d+$/);

    // Lease recovery reads the index up to now: past every lease, it finds the six jobs, not the
    // sentinel, and they go back to pending.
    const expired = await store.expiredLeases({ now: clock.now() + 3_600_000, limit: 100 });
    expect(expired.map((j) => j.id).sort()).toEqual([...first, ...second].map((j) => j.id).sort());

    // Finished and released jobs leave the index; the sentinel stays, and stats count no phantom.
    for (const j of first) expect(await queue.complete(j, null)).toBe(true);
    for (const j of second) expect(await queue.release(j)).toBe(true);
    expect(await client.zrange(lease, 0, -1, "WITHSCORES")).toEqual([
      expect.stringContaining("errand: keeps this index a skiplist"),
      "inf",
    ]);
    expect((await queue.stats()).states).toMatchObject({ active: 0, pending: 4, completed: 3 });
    expect((await queue.list({ state: "active" })).jobs).toEqual([]);
  });
});
