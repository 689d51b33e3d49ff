/**
 * Redis keeps every schedule's name in {p}:schn (all scored 0), which listSchedules reads by
 * ZRANGEBYLEX for a page. A prefix whose schedules were written before that index is indexed when
 * a store opens it.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { openRedisQueue, REDIS_URL, redisSelected } from "../../helpers/redis.js";

describe.runIf(redisSelected())("Redis store: schedule names", () => {
  it("indexes names with their schedules, drops them with them, and indexes an older prefix's on open", async () => {
    const { queue, client, prefix } = await openRedisQueue();
    const names = `{${prefix}}:schn`;
    for (const name of ["b", "a", "c"])
      await queue.schedule(name, { cron: "0 * * * *", job: "t", payload: null });
    await queue.unschedule("c");
    expect(await client.zrange(names, 0, -1, "WITHSCORES")).toEqual(["a", "0", "b", "0"]);

    // As an errand before the index left the prefix: schedules, no names.
    await client.del(names);
    expect((await queue.schedules()).map((s) => s.name)).toEqual([]);
    const store = await RedisStore.open({ url: REDIS_URL, prefix });
    onTestFinished(() => store.close());
    expect((await new Queue(store).schedules()).map((s) => s.name)).toEqual(["a", "b"]);
    expect(await client.zrange(names, 0, -1, "WITHSCORES")).toEqual(["a", "0", "b", "0"]);
  });
});
