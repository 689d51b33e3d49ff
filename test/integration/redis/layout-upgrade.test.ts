/**
 * Schema version 3 (lua/includes/prelude.lua): errands at version 2 kept different sets of keys, so
 * one that predates a key wrote a prefix HEAD's errand keeps in step and left it out of step.
 * lua/open.lua repairs a prefix at 2 (schedule names, parked jobs) and raises it to 3, which an
 * errand at 2 refuses. The older errand's writes are made here by hand, as it made them: it knew
 * neither {p}:schn nor parked jobs.
 */
import type { Redis } from "ioredis";
import { describe, expect, it, onTestFinished } from "vitest";
import type { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { ErrandError } from "../../../src/errors.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { openRedisQueue, REDIS_URL, redisSelected } from "../../helpers/redis.js";

const keyed = defineJob({ type: "keyed", keyConcurrency: 1, handler: async () => null });

/** A store of its own on `prefix`, as a process started later would open it. */
async function reopen(prefix: string, clock: ManualClock): Promise<Queue> {
  const store = await RedisStore.open({ url: REDIS_URL, prefix });
  onTestFinished(() => store.close());
  const queue = new Queue(store, { clock, maintenance: false });
  queue.register(keyed);
  return queue;
}

/**
 * What an errand at version 2 from before parked jobs did to finish job `id` (from `from`, to
 * `to`): state, indexes and counters, its key's order and active count, and nothing about the key's
 * parked jobs. `to` null: then pruned, its hash gone.
 */
async function finishAsOlderErrand(
  client: Redis,
  p: string,
  id: string,
  from: "active" | "pending",
  to: "completed" | "cancelled" | null,
  now: number,
): Promise<void> {
  const [queue, type, key] = await client.hmget(`${p}j:${id}`, "q", "t", "ky");
  const counts = (state: string, d: number) =>
    [state, `q|${queue}|${state}`, `t|${type}|${state}`].map((f) => client.hincrby(`${p}n`, f, d));
  await Promise.all(counts(from, -1));
  await client.zrem(`${p}ko|${type}|${key}`, id);
  if (from === "active") {
    await client.zrem(`${p}lease`, id);
    await client.hdel(`${p}kact`, `${type}|${key}`);
    await client.hdel(`${p}act`, type!);
  }
  if (to === null) {
    await client.del(`${p}j:${id}`);
    return;
  }
  await Promise.all(counts(to, 1));
  await client.hset(`${p}j:${id}`, "s", to === "completed" ? "c" : "x", "f", now);
  await client.hdel(`${p}j:${id}`, "l", "h");
  await client.zadd(`${p}f:${to}`, now, id);
}

describe.runIf(redisSelected())("Redis store: layout version 3", () => {
  it("indexes the schedules an errand at version 2 added and drops the names of those it deleted", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const p = `{${prefix}}:`;
    for (const name of ["a", "b", "c"])
      await queue.schedule(name, { cron: "0 3 * * *", job: "t", payload: null });
    // Written by the older errand: "b" added without its name, "c" deleted leaving its name.
    await client.zrem(`${p}schn`, "b");
    await client.zrem(`${p}schd`, "c");
    await client.del(`${p}s|c`);
    await client.set(`${p}schema_version`, "2");
    expect((await queue.schedulePage({ limit: 10 })).schedules.map((s) => s.name)).toEqual(["a"]);

    const upgraded = await reopen(prefix, clock);
    expect(await client.get(`${p}schema_version`)).toBe("3");
    expect((await upgraded.schedulePage({ limit: 10 })).schedules.map((s) => s.name)).toEqual(["a", "b"]);
    expect((await upgraded.schedules()).map((s) => s.name)).toEqual(["a", "b"]);
  });

  it("puts back the parked jobs of a key whose running job an errand at version 2 finished", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const p = `{${prefix}}:`;
    queue.register(keyed);
    for (const id of ["k1", "k2", "k3"]) await queue.enqueue(keyed, {}, { id, key: "K" });
    expect((await queue.lease({ limit: 5 })).map((j) => j.id)).toEqual(["k1"]);
    expect(await client.zrange(`${p}parked`, 0, -1)).toEqual(["k2", "k3"]);

    await finishAsOlderErrand(client, p, "k1", "active", "completed", clock.now());
    await client.set(`${p}schema_version`, "2");
    // Nothing runs for the key, yet its jobs stay parked: stranded, before the upgrade.
    expect(await queue.lease({ limit: 5 })).toEqual([]);

    const upgraded = await reopen(prefix, clock);
    expect(await client.get(`${p}schema_version`)).toBe("3");
    const second = await upgraded.lease({ limit: 5 });
    expect(second.map((j) => j.id)).toEqual(["k2"]);
    expect(await upgraded.complete(second[0]!, null)).toBe(true);
    expect((await upgraded.lease({ limit: 5 })).map((j) => j.id)).toEqual(["k3"]);
    expect((await upgraded.stats()).states).toMatchObject({ pending: 0, active: 1, completed: 2 });
  });

  it("passes over a parked entry whose job an errand at version 2 cancelled and pruned", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const p = `{${prefix}}:`;
    queue.register(keyed);
    for (const id of ["k1", "k2", "k3"]) await queue.enqueue(keyed, {}, { id, key: "K" });
    const [first] = await queue.lease({ limit: 5 });
    expect(first?.id).toBe("k1");
    // k2, parked, is cancelled and pruned: its entries in the key's parked sets stay behind.
    await finishAsOlderErrand(client, p, "k2", "pending", null, clock.now());
    await client.set(`${p}schema_version`, "2");

    const upgraded = await reopen(prefix, clock);
    expect(await client.zrange(`${p}parked`, 0, -1)).toEqual([]);
    // k1 still runs: k3 is parked again, behind k2's stale entry.
    expect(await upgraded.lease({ limit: 5 })).toEqual([]);
    expect(await client.zcard(`${p}pk|keyed|K`)).toBe(2);
    expect(await upgraded.complete(first!, null)).toBe(true);
    expect((await upgraded.lease({ limit: 5 })).map((j) => j.id)).toEqual(["k3"]);
    expect(await client.exists(`${p}pk|keyed|K`)).toBe(0);
  });

  it("refuses a prefix a newer errand wrote (version 4)", async () => {
    const { client, prefix, clock } = await openRedisQueue();
    await client.set(`{${prefix}}:schema_version`, "4");
    const refused = reopen(prefix, clock);
    await expect(refused).rejects.toBeInstanceOf(ErrandError);
    await expect(refused).rejects.toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringMatching(/schema version 4, newer than this errand \(3\); upgrade errand/),
    });
    expect(await client.get(`{${prefix}}:schema_version`)).toBe("4");
  });
});
