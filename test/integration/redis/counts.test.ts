/**
 * Issue 4, the lease API's promises on Redis: adding an item whose id exists neither duplicates it
 * nor inflates the queue length, and the queue length and processing count are O(1) reads.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import {
  deleteKeys,
  freshPrefix,
  keysOf,
  privateRedis,
  REDIS_URL,
  redisSelected,
} from "../../helpers/redis.js";

async function openQueue(url: string, prefix: string, clock = new ManualClock()): Promise<Queue> {
  const store = await RedisStore.open({ url, prefix });
  onTestFinished(() => store.close());
  return new Queue(store, { clock });
}

/** How many job ids the ready lanes of `prefix` hold, counting repeats. */
async function laneEntries(client: Redis, prefix: string): Promise<number> {
  let n = 0;
  for (const key of await keysOf(client, prefix)) {
    if (key.startsWith(`{${prefix}}:r|`)) n += await client.zcard(key);
  }
  return n;
}

describe.runIf(redisSelected())("Redis store: queue length", () => {
  it("does not duplicate a job or grow the queue length when its id is enqueued again, in any state", async () => {
    const prefix = freshPrefix();
    onTestFinished(() => deleteKeys(prefix));
    const queue = await openQueue(REDIS_URL, prefix);
    const other = await openQueue(REDIS_URL, prefix);
    const ids = Array.from({ length: 50 }, (_, i) => `order-${i}`);
    for (const id of ids) await queue.enqueue("task", { id }, { id });

    // Every id again, from two connections at once, with other payloads and options.
    const again = await Promise.all(
      [queue, other].flatMap((q) =>
        ids.map((id) => q.enqueue("task", { id, again: true }, { id, priority: 9 })),
      ),
    );
    expect(again.every((j) => j.duplicate && j.priority === 0)).toBe(true);
    // And a batch whose payloads all carry a unique key held by one job.
    const batch = await queue.enqueueMany("task", [{ n: 1 }, { n: 2 }, { n: 3 }], { uniqueKey: "k" });
    expect(batch.map((j) => j.duplicate)).toEqual([false, true, true]);

    const store = queue.store as RedisStore;
    let stats = await queue.stats();
    expect(stats.queues.default).toEqual({ pending: 51 });
    expect(await laneEntries(store.client as Redis, prefix)).toBe(51);

    // Leased jobs count as processing; enqueueing their ids again changes neither count.
    const leased = await queue.lease({ limit: 20 });
    expect(leased).toHaveLength(20);
    for (const j of leased) {
      expect(await other.enqueue("task", {}, { id: j.id })).toMatchObject({
        duplicate: true,
        state: "active",
      });
    }
    stats = await queue.stats();
    expect(stats.queues.default).toEqual({ pending: 31, active: 20 });
    expect(await laneEntries(store.client as Redis, prefix)).toBe(31);

    // Finished jobs keep their ids: enqueueing them returns the finished job.
    for (const j of leased) expect(await queue.complete(j, null)).toBe(true);
    for (const j of leased) {
      expect(await other.enqueue("task", {}, { id: j.id })).toMatchObject({
        duplicate: true,
        state: "completed",
      });
    }
    expect((await queue.stats()).queues.default).toEqual({ pending: 31, completed: 20 });
    const rest = await queue.lease({ limit: 100 });
    expect(rest).toHaveLength(31);
    expect(new Set([...leased, ...rest].map((j) => j.id)).size).toBe(51);
  });
});

describe.runIf(redisSelected())("Redis store: counts", () => {
  let server: Awaited<ReturnType<typeof privateRedis>>;
  beforeAll(async () => {
    server = await privateRedis();
  });
  afterAll(() => server?.stop());

  /** Redis commands (scripts' own included) that one stats() call runs, from INFO commandstats. */
  async function commandsPerStats(queue: Queue, client: Redis): Promise<number> {
    await client.config("RESETSTAT");
    await queue.stats();
    const info = await client.info("commandstats");
    let calls = 0;
    for (const [, command, n] of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) {
      if (command !== "info" && command !== "config") calls += Number(n);
    }
    return calls;
  }

  it("answers stats() with the same Redis work at 12 jobs and at 10,012", async () => {
    const clock = new ManualClock();
    const queue = await openQueue(server.url, "counts", clock);
    const client = (queue.store as RedisStore).client as Redis;
    const fill = async (n: number) => {
      for (const q of ["default", "critical"]) {
        for (const type of ["email", "report"]) {
          await queue.enqueueMany(
            type,
            Array.from({ length: n }, (_, i) => ({ i })),
            { queue: q },
          );
        }
      }
      await queue.enqueueMany("email", [{ later: true }, { later: true }], { delayMs: 60_000 });
    };
    await fill(2);
    // One active job; both of critical's lanes keep jobs (the work grows with lanes, not jobs).
    await queue.lease({ queues: ["critical"], limit: 1 });
    const small = await commandsPerStats(queue, client);

    await fill(2_500);
    await queue.lease({ queues: ["critical"], limit: 1_000 });
    const large = await commandsPerStats(queue, client);
    expect(large).toBe(small);

    const stats = await queue.stats();
    expect(stats.states).toMatchObject({ pending: 10_012 - 1_001, active: 1_001 });
    expect(stats.scheduled).toBe(4);
    expect(stats.queues.default).toEqual({ pending: 2 * 2_502 + 4 });
    expect(stats.queues.critical).toEqual({ pending: 2 * 2_502 - 1_001, active: 1_001 });
  });
});
