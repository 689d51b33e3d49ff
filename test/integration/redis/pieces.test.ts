/**
 * Long texts in a Redis job hash are kept in pieces (includes/job.lua: a value over 64 bytes in
 * "<field>", "<field>:1", ...). A completion learns from the fields it reads whether the result or
 * the worker id is in pieces, and drops exactly those: after it, the hash holds the whole result
 * in its pieces, no lease, no worker id and no piece of either left behind, whatever the pieces
 * were before.
 */
import type { Redis } from "ioredis";
import { describe, expect, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { deleteKeys, freshPrefix, REDIS_URL, redisSelected } from "../../helpers/redis.js";

async function open(): Promise<{ queue: Queue; client: Redis; p: string }> {
  const prefix = freshPrefix();
  onTestFinished(() => deleteKeys(prefix));
  const store = await RedisStore.open({ url: REDIS_URL, prefix });
  onTestFinished(() => store.close());
  return {
    queue: new Queue(store, { clock: new ManualClock() }),
    client: store.client as Redis,
    p: `{${prefix}}:`,
  };
}

/** The fields of a job hash named `field` or `field:<n>`. */
function piecesOf(hash: Record<string, string>, field: string): string[] {
  return Object.keys(hash)
    .filter((f) => f === field || f.startsWith(`${field}:`))
    .sort();
}

describe.runIf(redisSelected())("Redis store: long texts in pieces", () => {
  it("a completion drops the lease and a worker id in pieces, and stores a long result whole", async () => {
    const { queue, client, p } = await open();
    const job = await queue.enqueue("long", {});
    const workerId = `w-${"é".repeat(60)}-${"x".repeat(100)}`;
    const [leased] = await queue.lease({ workerId });
    const before = await client.hgetall(`${p}j:${job.id}`);
    expect(piecesOf(before, "h").length).toBeGreaterThan(1);
    expect(before.l).toBeDefined();

    const result = { text: "ü".repeat(300) };
    expect(await queue.complete(leased!, result)).toBe(true);
    const after = await client.hgetall(`${p}j:${job.id}`);
    expect(piecesOf(after, "h")).toEqual([]);
    expect(after.l).toBeUndefined();
    expect(piecesOf(after, "x").length).toBeGreaterThan(1);
    expect((await queue.get(job.id))?.result).toEqual(result);
  });

  it("a completion with a short result drops the pieces a longer result left in the hash", async () => {
    const { queue, client, p } = await open();
    const job = await queue.enqueue("long", {});
    const [leased] = await queue.lease();
    // As if an earlier, longer result had been stored in pieces.
    await client.hset(`${p}j:${job.id}`, "x:1", "stale one", "x:2", "stale two");
    expect(await queue.complete(leased!, { ok: true })).toBe(true);
    const after = await client.hgetall(`${p}j:${job.id}`);
    expect(piecesOf(after, "x")).toEqual(["x"]);
    expect((await queue.get(job.id))?.result).toEqual({ ok: true });
  });
});
