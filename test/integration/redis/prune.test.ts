/**
 * Redis prune: a call passes at most `limit` kept jobs (finished jobs a blocked job waits on) per
 * state and says when it stopped at them; the store calls again, and each state goes on from
 * where it stopped. A state whose walk reached its cut-off in this prune() is not walked again in
 * it, so states whose walks end in different calls cannot keep the store calling (without that,
 * the calls run until every state's walk ends in the same one).
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { privateRedis, redisSelected } from "../../helpers/redis.js";

const HOUR = 3_600_000;

describe.runIf(redisSelected())("Redis store: prune past kept jobs", () => {
  let server: Awaited<ReturnType<typeof privateRedis>>;
  beforeAll(async () => {
    server = await privateRedis();
  });
  afterAll(() => server?.stop());

  it("reads each state's kept jobs once a prune(), in as many calls as the longest walk needs", async () => {
    const store = await RedisStore.open({ url: server.url, prefix: "prune" });
    onTestFinished(() => store.close());
    const clock = new ManualClock();
    const queue = new Queue(store, { clock });
    const waitFor = await queue.enqueue("y", {});
    const completed = await queue.enqueueManyIds("k", [1, 2, 3, 4, 5]);
    const dead = await queue.enqueueManyIds("x", [1, 2, 3, 4, 5, 6, 7], { maxAttempts: 1 });
    await queue.enqueue(
      "d",
      {},
      { dependsOn: [...completed, ...dead, waitFor.id], onDependencyFailure: "run" },
    );
    for (const job of await queue.lease({ types: ["k"], limit: 5 })) await queue.complete(job, null);
    for (const job of await queue.lease({ types: ["x"], limit: 7 })) {
      await queue.fail(job, new Error("no"), { retryable: false });
    }
    await clock.advance(HOUR + 1);
    const client = store.client as Redis;
    const retainMs = { completed: HOUR, dead: HOUR, cancelled: HOUR, expired: HOUR };
    for (let round = 0; round < 3; round++) {
      await client.config("RESETSTAT");
      expect(await store.prune({ now: clock.now(), retainMs, limit: 2 })).toBe(0);
      const info = await client.info("commandstats");
      const scripts = Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0);
      // 7 dead jobs at 2 a call: 4 calls; the 5 completed ones end in the third and are left alone
      // (walked again, the two walks would end together only at the twelfth).
      expect(scripts).toBe(4);
    }
  });
});
