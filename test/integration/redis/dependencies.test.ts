/**
 * Issue 14 on Redis, what the conformance suite cannot see: a blocked job lives in no ready lane
 * and not in {p}:sched (so claims never meet it, however many there are); a completion or failure
 * of a job nobody depends on touches no dependency key; a pruned job takes its edges with it.
 */
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Queue } from "../../../src/queue.js";
import { keysOf, openRedisQueue, redisSelected } from "../../helpers/redis.js";

/** Job ids in the ready lanes' pages and in {p}:sched. */
async function claimable(client: Redis, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const key of await keysOf(client, prefix)) {
    if (key.startsWith(`{${prefix}}:r|`) || key === `{${prefix}}:sched`) {
      ids.push(...(await client.zrange(key, 0, -1)));
    }
  }
  return ids;
}

describe.runIf(redisSelected())("Redis store: dependencies", () => {
  it("keeps blocked jobs out of every ready lane and {p}:sched until they are unblocked", async () => {
    const { queue, client, prefix } = await openRedisQueue();
    const root = await queue.enqueue("root", {});
    const later = await queue.enqueue("root", {}, { delayMs: 60_000 });
    const blocked = await queue.enqueueMany(
      "leaf",
      Array.from({ length: 300 }, (_, i) => ({ i })),
      { dependsOn: [root.id, later.id] },
    );
    expect(blocked.every((j) => j.state === "blocked")).toBe(true);
    expect((await claimable(client, prefix)).sort()).toEqual([root.id, later.id].sort());
    expect(await client.zcard(`{${prefix}}:blocked`)).toBe(300);
    expect(await client.zcard(`{${prefix}}:dep:${root.id}`)).toBe(300);

    const [job] = await queue.lease();
    expect(await queue.complete(job!, null)).toBe(true);
    // One dependency left: still nowhere a claim looks.
    expect(await claimable(client, prefix)).toEqual([later.id]);
    expect(await client.hget(`{${prefix}}:j:${blocked[0]!.id}`, "bb")).toBe("1");

    await queue.cancel(later.id);
    expect(await claimable(client, prefix)).toEqual([]);
    expect(await client.exists(`{${prefix}}:blocked`)).toBe(0);
    expect((await queue.stats()).states).toMatchObject({ blocked: 0, cancelled: 301, completed: 1 });
  });

  it("drops the edges of a dependent whose completion deletes it (completed jobs not kept)", async () => {
    const { store, client, prefix, clock } = await openRedisQueue();
    const queue = new Queue(store, { clock, retention: { completed: 0 } });
    const dep = await queue.enqueue("dep", {});
    const child = await queue.enqueue("child", {}, { dependsOn: [dep.id] });
    for (let i = 0; i < 2; i++) {
      const [job] = await queue.lease();
      expect(await queue.complete(job!, null)).toBe(true);
    }
    // The dependency is kept (something depended on it); the dependent is gone, edge and all.
    expect(await queue.get(child.id)).toBeNull();
    expect((await queue.get(dep.id))?.state).toBe("completed");
    expect(await client.exists(`{${prefix}}:dep:${dep.id}`)).toBe(0);
  });

  it("marks only jobs that have dependents, and drops a pruned job's edges", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const lone = await queue.enqueue("lone", {});
    const dep = await queue.enqueue("dep", {});
    const child = await queue.enqueue("child", {}, { dependsOn: [dep.id] });
    expect(await client.hget(`{${prefix}}:j:${lone.id}`, "hd")).toBeNull();
    expect(await client.hget(`{${prefix}}:j:${dep.id}`, "hd")).toBe("1");
    expect(await client.hget(`{${prefix}}:j:${child.id}`, "dp")).toBe(JSON.stringify([dep.id]));

    for (let i = 0; i < 3; i++) {
      const [job] = await queue.lease();
      expect(await queue.complete(job!, null)).toBe(true);
    }
    expect((await queue.stats()).states).toMatchObject({ completed: 3, blocked: 0 });
    await clock.advance(30 * 24 * 3_600_000);
    expect(await queue.prune()).toBe(3);
    const left = (await keysOf(client, prefix)).filter((k) => k.includes(":dep:") || k.includes(":j:"));
    expect(left).toEqual([]);
  });
});
