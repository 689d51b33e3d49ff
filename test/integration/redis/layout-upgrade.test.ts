/**
 * Schema version 3 (lua/includes/prelude.lua): errands at version 2 kept different sets of keys, so
 * one that predates a key wrote a prefix HEAD's errand keeps in step and left it out of step.
 * lua/open.lua repairs a prefix at 2 (schedule names, parked jobs) and raises it to 3, which an
 * errand at 2 refuses. The older errand's writes are made here by hand, as it made them: it knew
 * neither {p}:schn nor parked jobs.
 */
import { Redis } from "ioredis";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { ErrandError } from "../../../src/errors.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { scriptSha } from "../../../src/store/redis/scripts.js";
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

/**
 * A prefix at version 2 with `n` jobs of key "K" parked and stranded: the key's running job was
 * finished by an errand at 2, which left them parked.
 */
async function strandedParkedJobs(n: number) {
  const { queue, client, prefix, clock } = await openRedisQueue();
  const p = `{${prefix}}:`;
  queue.register(keyed);
  const ids = await queue.enqueueManyIds(
    keyed,
    Array.from({ length: n + 1 }, () => ({})),
    { key: "K" },
  );
  const [running] = await queue.lease({ limit: 5 });
  // A claim parks up to 1,000 held-back jobs a run, and runs again while there are more.
  for (let i = 0; (await client.zcard(`${p}parked`)) < n; i++) {
    if (i > n / 100) throw new Error("the backlog was never parked");
    await queue.lease({ limit: 5 });
  }
  await finishAsOlderErrand(client, p, running!.id, "active", "completed", clock.now());
  await client.set(`${p}schema_version`, "2");
  return { client, prefix, p, clock, ids: ids.filter((id) => id !== running!.id) };
}

/** Opens `prefix` on a client of its own, and counts the upgradeSlice.lua calls it sends. */
async function openCountingSlices(prefix: string): Promise<{ store: RedisStore; slices: () => number }> {
  const client = new Redis(REDIS_URL, { autoResendUnfulfilledCommands: false });
  onTestFinished(() => {
    client.disconnect();
  });
  // Counted as sent: a command lets go of its arguments once answered.
  const sha = scriptSha("upgradeSlice");
  let sliceCalls = 0;
  const send = client.sendCommand.bind(client);
  vi.spyOn(client, "sendCommand").mockImplementation((command, stream) => {
    if (command.name.toUpperCase() === "EVALSHA" && String(command.args[0]) === sha) sliceCalls++;
    return send(command, stream);
  });
  const store = await RedisStore.open({ client, prefix });
  onTestFinished(() => store.close());
  return { store, slices: () => sliceCalls };
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

  it("puts back thousands of parked jobs in slices, one short script each, then drops the marker", {
    timeout: 60_000,
  }, async () => {
    const { client, prefix, p, clock, ids } = await strandedParkedJobs(2_500);
    // Before: open.lua put every parked job back in the one script, Redis serving no one meanwhile.
    const { store, slices } = await openCountingSlices(prefix);
    expect(slices()).toBe(3);
    expect(await client.get(`${p}schema_version`)).toBe("3");
    expect(await client.exists(`${p}upgrade3`, `${p}parked`, `${p}pk|keyed|K`)).toBe(0);

    const upgraded = new Queue(store, { clock, maintenance: false });
    upgraded.register(keyed);
    expect((await upgraded.stats()).states).toMatchObject({ pending: 2_500, active: 0 });
    // Every one is back in its lane: the claim takes the key's first and parks the others again.
    const [next] = await upgraded.lease({ limit: 5 });
    expect(ids).toContain(next?.id);
    expect(await client.zcard(`${p}parked`)).toBe(2_499);
  });

  it("upgrades safely when two processes open a prefix at version 2 at once", {
    timeout: 60_000,
  }, async () => {
    const { client, prefix, p, clock } = await strandedParkedJobs(2_500);
    const [a, b] = await Promise.all([openCountingSlices(prefix), openCountingSlices(prefix)]);
    expect(a.slices() + b.slices()).toBeGreaterThanOrEqual(3);
    expect(await client.exists(`${p}upgrade3`, `${p}parked`)).toBe(0);
    const upgraded = new Queue(b.store, { clock, maintenance: false });
    upgraded.register(keyed);
    expect(await upgraded.lease({ limit: 5 })).toHaveLength(1);
    expect(await client.zcard(`${p}parked`)).toBe(2_499);
    expect((await upgraded.stats()).states).toMatchObject({ pending: 2_499, active: 1 });
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
