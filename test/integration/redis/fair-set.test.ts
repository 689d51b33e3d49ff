/**
 * A fair type's set on Redis ({p}:fr|<queue>|<priority>|<type>, includes/fair.lua): its members
 * are the job's runAt, zero-padded, "|" and its id, so the jobs of one turn go by runAt, then id
 * (the conformance suite holds the order); a set written before that form, of bare ids, is still
 * taken by turn.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../../src/define-job.js";
import { openRedisQueue, redisSelected } from "../../helpers/redis.js";

const sync = defineJob({ type: "sync", fair: true, handler: async () => null });

describe.runIf(redisSelected())("Redis store: a fair type's set", () => {
  it("holds runAt|id members, and takes a set of bare ids by turn as before", async () => {
    const { queue, client, prefix, clock } = await openRedisQueue();
    const set = `{${prefix}}:fr|default|0|sync`;
    queue.register(sync);
    const a = await queue.enqueueMany(sync, [{ n: 1 }, { n: 2 }, { n: 3 }], { key: "a" });
    const b = await queue.enqueue(sync, { n: 4 }, { key: "b" });
    const members = await client.zrange(set, 0, -1, "WITHSCORES");
    const at = String(clock.now()).padStart(15, "0");
    expect(members).toEqual([
      `${at}|${a[0]!.id}`,
      "0",
      `${at}|${b.id}`,
      "0",
      `${at}|${a[1]!.id}`,
      "1",
      `${at}|${a[2]!.id}`,
      "2",
    ]);

    // As an errand before this form wrote them: bare ids, scored by turn.
    await client.del(set);
    for (const [turn, id] of [
      [0, a[0]!.id],
      [0, b.id],
      [1, a[1]!.id],
      [2, a[2]!.id],
    ] as const)
      await client.zadd(set, turn, id);
    const taken = await queue.lease({ limit: 2 });
    // By turn: a's first and b's, not a's first two (the lane's order).
    expect(taken.map((j) => j.id).sort()).toEqual([a[0]!.id, b.id].sort());
    expect(await client.zrange(set, 0, -1)).toEqual([a[1]!.id, a[2]!.id]);
    expect((await queue.lease({ limit: 5 })).map((j) => j.id)).toEqual([a[1]!.id, a[2]!.id]);
    expect(await client.exists(set)).toBe(0);
  });
});
