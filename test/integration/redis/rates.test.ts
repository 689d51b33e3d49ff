/**
 * Rate limits on Redis, what the conformance suite cannot see: each scope's starts are a sorted
 * set ({p}:rate|<scope>) that keeps only the starts inside the window and expires when idle; two
 * starts at the same instant (a job released and claimed again) are two starts; a claim with no
 * rate limits leaves no such set; and a window holding more starts than its limit (the limit
 * lowered) opens when the start that must leave has left.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../../src/define-job.js";
import type { Queue } from "../../../src/queue.js";
import { RATE_FORGET_LAG_MS, type RateRule } from "../../../src/store/store.js";
import { keysOf, openRedisQueue, redisSelected } from "../../helpers/redis.js";

function claimWith(queue: Queue, type: string, rate: RateRule) {
  const rateLimits: Record<string, RateRule> = Object.assign(Object.create(null), { [type]: rate });
  return async (limit: number) => {
    const held = { until: null as number | null };
    const jobs = await queue.attempts.claim({
      workerId: "w",
      queues: [{ name: "default", weight: 1 }],
      limit,
      leaseMs: 60_000,
      rateLimits,
      held,
    });
    return { jobs, until: held.until };
  };
}

describe.runIf(redisSelected())("Redis store: rate limits", () => {
  it("keeps only the starts inside the window, per scope, under the prefix's hash tag", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const p = `{${prefix}}:`;
    const sync = defineJob({
      type: "sync",
      rateLimit: { limit: 3, periodMs: 1_000 },
      keyRateLimit: { limit: 2, periodMs: 1_000 },
      handler: async () => null,
    });
    queue.register(sync);
    for (let i = 0; i < 40; i++) await queue.enqueue(sync, { i }, { key: i % 2 ? "a" : "b" });
    for (let round = 0; round < 5; round++) {
      expect(await queue.lease({ limit: 100 })).toHaveLength(3);
      await clock.advance(1_000);
    }
    // Starts are kept RATE_FORGET_LAG_MS past their window (a claim whose now lags another's still
    // counts them), then dropped by the next claim of the scope.
    expect(await client.zcard(`${p}rate|sync`)).toBe(15);
    await clock.advance(RATE_FORGET_LAG_MS);
    expect(await queue.lease({ limit: 100 })).toHaveLength(3);
    // This round's starts alone: those of the earlier rounds left the window and the lag.
    expect(await client.zcard(`${p}rate|sync`)).toBe(3);
    const perKey = (await client.zcard(`${p}rate|sync|a`)) + (await client.zcard(`${p}rate|sync|b`));
    expect(perKey).toBe(3);
    const rateKeys = (await keysOf(client, prefix)).filter((k) => k.startsWith(`${p}rate|`)).sort();
    expect(rateKeys).toEqual([`${p}rate|sync`, `${p}rate|sync|a`, `${p}rate|sync|b`]);
    // Idle sets expire, well after their window (Redis's clock is not the claimers').
    const ttl = await client.pttl(`${p}rate|sync`);
    expect(ttl).toBeGreaterThan(1_000);
    expect(ttl).toBeLessThanOrEqual(1_000 + 3_600_000);
  });

  it("counts a job released and claimed again at the same instant as two starts", async () => {
    const { queue, client, prefix } = await openRedisQueue();
    await queue.enqueueMany(
      "t",
      Array.from({ length: 3 }, (_, i) => ({ i })),
    );
    const claim = claimWith(queue, "t", { limit: 2, periodMs: 1_000 });
    const [first] = (await claim(1)).jobs;
    expect(await queue.release(first!)).toBe(true);
    const again = await claim(10);
    expect(again.jobs.map((j) => j.id)).toEqual([first!.id]);
    expect(again.until).not.toBeNull();
    expect(await client.zcard(`{${prefix}}:rate|t`)).toBe(2);
  });

  it("leaves no rate keys behind a claim without rate limits", async () => {
    const { queue, client, prefix } = await openRedisQueue();
    await queue.enqueueMany(
      "t",
      Array.from({ length: 3 }, (_, i) => ({ i })),
      { key: "k" },
    );
    expect(await queue.lease({ limit: 10 })).toHaveLength(3);
    const rateKeys = (await keysOf(client, prefix)).filter((k) => k.includes(":rate|"));
    expect(rateKeys).toEqual([]);
  });

  it("opens a window over its limit when the start that must leave has left", async () => {
    const { queue, clock } = await openRedisQueue();
    const start = clock.now();
    await queue.enqueueMany(
      "t",
      Array.from({ length: 5 }, (_, i) => ({ i })),
    );
    const loose = claimWith(queue, "t", { limit: 3, periodMs: 1_000 });
    for (const at of [0, 200, 400]) {
      await clock.advance(at - (clock.now() - start));
      expect((await loose(1)).jobs).toHaveLength(1);
    }
    // Lowered to 1: three starts in the window, so the 400's must leave (the 2nd oldest, 0-based).
    await clock.advance(100);
    const strict = claimWith(queue, "t", { limit: 1, periodMs: 1_000 });
    expect(await strict(10)).toEqual({ jobs: [], until: start + 1_400 });
    await clock.advance(899);
    expect((await strict(10)).jobs).toEqual([]);
    await clock.advance(1);
    expect((await strict(10)).jobs).toHaveLength(1);
  });
});
