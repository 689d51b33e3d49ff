/**
 * Issue 15 on Redis, what the conformance suite cannot see: the per-key bookkeeping ({p}:kact,
 * {p}:ko|<type>|<key>, {p}:deb) follows jobs in and out of the hot set and leaves nothing behind;
 * a claim passes over a bounded number of jobs held back by key rules and still serves other
 * types; two jobs with one debounce key in one call make one job.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../../src/define-job.js";
import { keysOf, openRedisQueue, redisSelected } from "../../helpers/redis.js";

const sync = defineJob({ type: "sync", keyConcurrency: 2, handler: async () => null });
const ledger = defineJob({ type: "ledger", ordered: true, handler: async () => null });

describe.runIf(redisSelected())("Redis store: keys, debounce", () => {
  it("keeps a key's active count, order and debounce entry only while its jobs are hot", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const p = `{${prefix}}:`;
    queue.register(sync);
    queue.register(ledger);
    for (let i = 0; i < 3; i++) await queue.enqueue(sync, { i }, { key: "a" });
    await queue.enqueue(ledger, { n: 1 }, { key: "k" });
    await queue.enqueue(ledger, { n: 2 }, { key: "k" });
    const debounced = await queue.enqueue("plain", {}, { debounce: { key: "d", delayMs: 0 } });
    const doomed = await queue.enqueue("plain", {}, { key: "x", delayMs: 60_000 });
    const expiring = await queue.enqueue("plain", {}, { key: "x", delayMs: 60_000, expiresInMs: 1_000 });
    expect(await client.zcard(`${p}ko|sync|a`)).toBe(3);
    expect(await client.zcard(`${p}ko|ledger|k`)).toBe(2);
    expect(await client.zcard(`${p}ko|plain|x`)).toBe(2);
    expect(await client.hget(`${p}deb`, "d")).toBe(debounced.id);
    expect(await client.exists(`${p}kact`)).toBe(0);

    const first = await queue.lease({ limit: 100 });
    expect(first).toHaveLength(4);
    expect(await client.hgetall(`${p}kact`)).toEqual({ "sync|a": "2", "ledger|k": "1" });
    // Started: no longer the debounce target, though the job still shows its debounce key.
    expect(await client.exists(`${p}deb`)).toBe(0);
    expect((await queue.get(debounced.id))?.debounceKey).toBe("d");

    const syncJob = first.find((j) => j.type === "sync")!;
    expect(await queue.snooze(syncJob, "1s")).toBe(true);
    expect(await client.hget(`${p}kact`, "sync|a")).toBe("1");
    expect(await client.zcard(`${p}ko|sync|a`)).toBe(3);

    await queue.cancel(doomed.id);
    await clock.advance(1_001);
    await queue.sweep();
    expect((await queue.get(expiring.id))?.state).toBe("expired");
    expect(await client.exists(`${p}ko|plain|x`)).toBe(0);

    let failed = false;
    for (
      let jobs = first.filter((j) => j !== syncJob);
      jobs.length > 0;
      jobs = await queue.lease({ limit: 100 })
    ) {
      for (const j of jobs) {
        // One dead on the way: a dead job leaves its key's order too.
        if (j.type === "ledger" && !failed) {
          failed = true;
          expect(await queue.fail(j, new Error("x"), { retryable: false })).toBe(true);
        } else {
          expect(await queue.complete(j, null)).toBe(true);
        }
      }
    }
    const states = (await queue.stats()).states;
    expect(states).toMatchObject({ pending: 0, active: 0, completed: 5, dead: 1, cancelled: 1, expired: 1 });
    const left = (await keysOf(client, prefix)).filter(
      (k) => k === `${p}kact` || k === `${p}deb` || k.startsWith(`${p}ko|`),
    );
    expect(left).toEqual([]);

    // Back in the hot set by hand: in its key's order again, by its createdAt, no debounce target.
    const dead = (await queue.list({ state: "dead" })).jobs[0]!;
    const retried = await queue.retry(dead.id);
    expect(await client.zrange(`${p}ko|ledger|k`, 0, -1)).toEqual([retried.id]);
  });

  it("passes over at most 1,000 jobs held back by key rules per claim, and still serves other types", async () => {
    const { queue } = await openRedisQueue();
    queue.register(ledger);
    const held = await queue.enqueueMany(
      ledger,
      Array.from({ length: 1_100 }, (_, i) => ({ i })),
      { key: "k" },
    );
    // Behind the held ones in the same lane: this claim gives up on the lane before reaching it.
    const beyond = await queue.enqueue(ledger, {}, { key: "other" });
    const plain = await queue.enqueue("plain", {});
    const taken = await queue.lease({ limit: 10 });
    expect(taken.map((j) => j.id)).toEqual([held[0]!.id, plain.id]);
    expect(await queue.lease({ limit: 10 })).toEqual([]);
    for (const j of taken) expect(await queue.complete(j, null)).toBe(true);
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([held[1]!.id]);
    expect((await queue.get(beyond.id))?.state).toBe("pending");
  });

  it("makes one job of two with the same debounce key in one call, with the later payload", async () => {
    const { queue, clock } = await openRedisQueue();
    const [a, b] = await queue.enqueueMany("t", [{ n: 1 }, { n: 2 }], {
      debounce: { key: "d", delayMs: 1_000 },
    });
    expect(b).toMatchObject({ id: a!.id, duplicate: true, payload: { n: 2 } });
    expect((await queue.stats()).states.pending).toBe(1);
    await clock.advance(1_000);
    const [job] = await queue.lease({ limit: 10 });
    expect(job).toMatchObject({ id: a!.id, payload: { n: 2 } });
  });
});
