/**
 * Issue 4: the store refuses to start on a Redis that may evict keys, since an evicted job is a
 * lost job. On a Redis of the test's own: changing the policy of the shared one would refuse the
 * stores other tests open meanwhile.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openQueue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { keysOf, privateRedis, redisSelected } from "../../helpers/redis.js";

describe.runIf(redisSelected())("Redis store: maxmemory-policy", () => {
  let server: Awaited<ReturnType<typeof privateRedis>>;
  let admin: Redis;
  beforeAll(async () => {
    server = await privateRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  it("refuses to open when Redis may evict errand's keys (allkeys-lru), and opens once it may not", async () => {
    const [, before] = (await admin.config("GET", "maxmemory-policy")) as [string, string];
    await admin.config("SET", "maxmemory-policy", "allkeys-lru");
    try {
      const refused = RedisStore.open({ url: server.url, prefix: "evictable" });
      await expect(refused).rejects.toMatchObject({
        name: "ErrandError",
        code: "STORE_ERROR",
        message: expect.stringMatching(/maxmemory-policy is allkeys-lru.*noeviction/),
      });
      await expect(openQueue(`${server.url}?prefix=evictable`)).rejects.toMatchObject({
        code: "STORE_ERROR",
      });
      // Nothing was written under the prefix.
      expect(await keysOf(admin, "evictable")).toEqual([]);

      // volatile-* policies evict only keys with a TTL, and errand sets none.
      await admin.config("SET", "maxmemory-policy", "volatile-lru");
      const queue = await openQueue(`${server.url}?prefix=evictable`);
      await queue.close();
    } finally {
      await admin.config("SET", "maxmemory-policy", before);
    }
    expect(before).toBe("noeviction");
    const queue = await openQueue(`${server.url}?prefix=evictable`);
    expect((await queue.enqueue("task", {})).state).toBe("pending");
    await queue.close();
  });
});
