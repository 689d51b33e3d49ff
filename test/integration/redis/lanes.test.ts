/**
 * The Redis store keeps each ready lane as a run of small sorted sets (pages, see
 * lua/includes/pages.lua), so that a waiting job stays under issue 4's memory budget. Claims must
 * still take jobs in (priority, runAt, id) order, and every page must stay small and compact,
 * whatever order jobs arrive and leave in.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF } from "../../../src/backoff.js";
import type { NewJob } from "../../../src/store/store.js";
import { newJob } from "../../helpers/new-job.js";
import { keysOf, openRedisQueue, redisSelected } from "../../helpers/redis.js";

/** A small seeded generator (mulberry32), so a failure replays. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Entry {
  id: string;
  runAt: number;
  priority: number;
}

/** Claim order: priority desc, runAt, id (by bytes; ids here are ASCII). */
function claimOrder(a: Entry, b: Entry): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

describe.runIf(redisSelected())("Redis store: ready lanes in pages", () => {
  it("claims in (priority, runAt, id) order through page splits, out-of-order arrivals, cancels and reschedules", async () => {
    const { queue, store, client, prefix, clock } = await openRedisQueue();
    const now = clock.now();
    const random = seeded(7);
    const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;

    const pending = new Map<string, Entry>();
    const taken = new Set<string>();
    const freshId = () => {
      for (;;) {
        // Varied lengths, so that one id is often a prefix of another ("j-1z" < "j-1z0").
        const id = `j-${Math.floor(random() * 36 ** 4)
          .toString(36)
          .slice(0, 1 + Math.floor(random() * 4))}`;
        if (!taken.has(id)) {
          taken.add(id);
          return id;
        }
      }
    };
    const job = (id: string, runAt: number, priority = 0, expiresAt: number | null = null): NewJob =>
      newJob({
        id,
        type: "task",
        payload: JSON.stringify({ id, pad: "x".repeat(80) }),
        priority,
        runAt,
        expiresAt,
        backoff: JSON.stringify(DEFAULT_BACKOFF),
      });
    const enqueue = async (jobs: NewJob[]) => {
      const results = await store.enqueueMany({ jobs, now });
      expect(results.every((r) => r.inserted)).toBe(true);
      for (const j of jobs) pending.set(j.id, { id: j.id, runAt: j.runAt, priority: j.priority });
    };
    const shuffled = <T>(list: T[]) => {
      const out = [...list];
      for (let i = out.length - 1; i > 0; i--) {
        const k = Math.floor(random() * (i + 1));
        [out[i], out[k]] = [out[k]!, out[i]!];
      }
      return out;
    };

    // 1. A large batch in no order, with many ties on runAt, into empty lanes: sorted, then paged.
    await enqueue(
      shuffled(Array.from({ length: 700 }, () => job(freshId(), now - pick([3, 5, 9]), pick([0, 0, 0, 4])))),
    );
    // 2. Large batches that interleave with the jobs there, in no order and in claim order: what
    // falls below a lane's highest job goes in one by one, splitting full pages.
    const interleaved = () => job(freshId(), now - pick([2, 3, 5, 9, 12]));
    await enqueue(Array.from({ length: 250 }, interleaved));
    await enqueue(Array.from({ length: 250 }, interleaved).sort(claimOrder));
    // 3. Single jobs, some below everything.
    for (let i = 0; i < 40; i++) await enqueue([job(freshId(), now - pick([1, 5, 20]))]);
    // 3b. Times at and before 1970, over several pages (negative scores sort below 0 and every
    // positive one), some of which leave again.
    const early = Array.from({ length: 300 }, () =>
      job(freshId(), pick([0, 1, -1, -2, -5000, -1.5e12, -(2 ** 52)]) - Math.floor(random() * 50)),
    );
    await enqueue(early);
    for (const j of early.slice(0, 40)) {
      expect((await store.cancel({ id: j.id, now }))?.changed).toBe(true);
      pending.delete(j.id);
    }
    // 4. A large batch after everything: appended in order.
    await enqueue(
      Array.from({ length: 300 }, (_, i) => job(`z-${String(i).padStart(4, "0")}`, now)).map((j) => {
        taken.add(j.id);
        return j;
      }),
    );
    // 4b. Single jobs after everything: a full last page stays full, the next one starts.
    for (let i = 0; i < 130; i++) {
      const id = `zz-${String(i).padStart(4, "0")}`;
      taken.add(id);
      await enqueue([job(id, now)]);
    }
    // 5. Jobs that expire before the claims: expirePending takes them out of their pages.
    const expiring = Array.from({ length: 30 }, () => job(freshId(), now - pick([3, 9]), 0, now + 10));
    await enqueue(expiring);

    // Jobs leave from the middle of pages, and move between them.
    const ids = () => [...pending.keys()];
    for (const id of shuffled(ids()).slice(0, 150)) {
      if (expiring.some((j) => j.id === id)) continue;
      expect((await store.cancel({ id, now }))?.changed).toBe(true);
      pending.delete(id);
    }
    for (const id of shuffled(ids()).slice(0, 60)) {
      if (expiring.some((j) => j.id === id)) continue;
      const runAt = now - pick([0, 4, 7, 30]);
      expect((await store.reschedule({ id, now, runAt }))?.changed).toBe(true);
      pending.get(id)!.runAt = runAt;
    }
    const later = now + 20;
    const expired = await store.expirePending({ now: later, limit: 100 });
    expect(expired.map((j) => j.id).sort()).toEqual(expiring.map((j) => j.id).sort());
    for (const j of expiring) pending.delete(j.id);

    // Every page is a listpack of at most 128 entries; read in order, the pages hold exactly the
    // pending jobs, sorted.
    const lanes = await client.zrange(`{${prefix}}:rl|default`, 0, -1);
    expect(lanes.sort()).toEqual(["0|task", "4|task"]);
    for (const lane of lanes) {
      const priority = Number(lane.split("|")[0]);
      const fences = await client.zrange(`{${prefix}}:rf|default|${lane}`, 0, -1);
      expect(fences.length).toBeGreaterThan(1);
      const inPages: Entry[] = [];
      for (const fence of fences) {
        const page = `{${prefix}}:r|default|${lane}|${fence}`;
        expect(await client.object("ENCODING", page)).toBe("listpack");
        const flat = await client.zrange(page, 0, -1, "WITHSCORES");
        expect(flat.length / 2).toBeLessThanOrEqual(128);
        for (let i = 0; i < flat.length; i += 2)
          inPages.push({ id: flat[i]!, runAt: Number(flat[i + 1]), priority });
      }
      const want = [...pending.values()].filter((e) => e.priority === priority).sort(claimOrder);
      expect(inPages).toEqual(want);
    }
    const sample = [...pending.keys()][0]!;
    expect(await client.object("ENCODING", `{${prefix}}:j:${sample}`)).toBe("listpack");

    // list() pages through the pending jobs across lane pages, latest first.
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await queue.list({ state: "pending", limit: 53, cursor });
      listed.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const latestFirst = [...pending.values()]
      .sort((a, b) => b.runAt - a.runAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .map((e) => e.id);
    expect(listed).toEqual(latestFirst);

    // Claims take everything in order, and leave no lane behind.
    const claimed: string[] = [];
    for (;;) {
      const batch = await store.claim({
        now: later,
        workerId: "w",
        queues: [{ name: "default", weight: 1 }],
        limit: 37,
        leaseMs: 60_000,
      });
      if (batch.length === 0) break;
      claimed.push(...batch.map((j) => j.id));
    }
    expect(claimed).toEqual([...pending.values()].sort(claimOrder).map((e) => e.id));
    const laneKeys = (await keysOf(client, prefix)).filter((k) => /^\{[^}]+\}:r[fl]?\|/.test(k));
    expect(laneKeys).toEqual([]);
  });
});
