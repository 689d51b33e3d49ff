/**
 * Issue 15 on Redis, what the conformance suite cannot see: the per-key bookkeeping ({p}:kact,
 * {p}:ko|<type>|<key>, {p}:deb) follows jobs in and out of the hot set and leaves nothing behind;
 * jobs held back by key rules are parked (includes/job.lua), a bounded number per script run, and
 * put back as room opens; two jobs with one debounce key in one call make one job.
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

  it("parks the jobs key rules hold back, 1,000 a script run, and puts them back as room opens", async () => {
    const { queue, client, prefix } = await openRedisQueue();
    const p = `{${prefix}}:`;
    queue.register(ledger);
    const held = await queue.enqueueMany(
      ledger,
      Array.from({ length: 2_100 }, (_, i) => ({ i })),
      { key: "k" },
    );
    const beyond = await queue.enqueue(ledger, {}, { key: "other" });
    const plain = await queue.enqueue("plain", {});
    const parkedCount = async () => [
      await client.zcard(`${p}pk|ledger|k`),
      await client.zcard(`${p}pkt|ledger`),
      await client.zcard(`${p}parked`),
    ];
    // One script run: k's head, then 1,000 of its jobs parked, and the lanes of types with key
    // rules left; the plain job's lane is still read. The claim has all it asked for.
    const first = await queue.lease({ limit: 2 });
    expect(first.map((j) => j.id)).toEqual([held[0]!.id, plain.id]);
    expect(await queue.complete(first[1]!, null)).toBe(true);
    expect(await parkedCount()).toEqual([1_000, 1_000, 1_000]);
    expect(await client.hget(`${p}j:${held[1]!.id}`, "pk")).toBe("1");
    // A claim wanting more runs the script again (it parks the rest) and finds the other key's
    // job behind the backlog.
    const other = await queue.lease({ limit: 10 });
    expect(other.map((j) => j.id)).toEqual([beyond.id]);
    expect(await queue.complete(other[0]!, null)).toBe(true);
    expect(await parkedCount()).toEqual([2_099, 2_099, 2_099]);
    // Parked jobs are pending, listed and counted as ever.
    expect((await queue.get(held[1]!.id))?.state).toBe("pending");
    expect((await queue.stats()).states.pending).toBe(2_099);
    expect((await queue.list({ state: "pending", key: "k", limit: 5 })).jobs).toHaveLength(5);

    // k's head finishes: its next job in order goes back to its lane, and runs.
    expect(await queue.complete(first[0]!, null)).toBe(true);
    expect(await client.hget(`${p}j:${held[1]!.id}`, "pk")).toBeNull();
    const second = await queue.lease({ limit: 10 });
    expect(second.map((j) => j.id)).toEqual([held[1]!.id]);

    // A parked job cancelled leaves the parked sets.
    await queue.cancel(held[2_099]!.id);
    expect(await parkedCount()).toEqual([2_097, 2_097, 2_097]);

    // The rest, one at a time in order, each put back as the one before it finishes.
    for (let jobs = second, n = 0; jobs.length > 0 && n < 2_100; n++) {
      expect(jobs).toHaveLength(1);
      expect(await queue.complete(jobs[0]!, null)).toBe(true);
      jobs = await queue.lease({ limit: 10 });
    }
    expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 0 });
    const left = (await keysOf(client, prefix)).filter(
      (k) =>
        k === `${p}parked` ||
        k.startsWith(`${p}pk|`) ||
        k.startsWith(`${p}pkt|`) ||
        k.startsWith(`${p}pwake`),
    );
    expect(left).toEqual([]);
  }, 60_000);

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
