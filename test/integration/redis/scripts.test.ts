/**
 * Issue 4: the Lua scripts are loaded once and called by SHA; when Redis forgets them (SCRIPT
 * FLUSH, a restart) the store sends them again on NOSCRIPT and nothing else changes. On a Redis
 * of the test's own, so no other test reloads the scripts in between.
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { scriptNames, scriptText } from "../../../src/store/redis/scripts.js";
import { newJob } from "../../helpers/new-job.js";
import { privateRedis, redisSelected } from "../../helpers/redis.js";

// Each script's SHA-1 from its text, as Redis computes it: not the one generated beside it.
const sha = (name: (typeof scriptNames)[number]) => createHash("sha1").update(scriptText(name)).digest("hex");

// These tests count the commands each call sends: the lease API's own maintenance pass (which
// sends its own scripts when due, see leases.ts in the conformance suite) is off here.
describe.runIf(redisSelected())("Redis store: Lua scripts", () => {
  let server: Awaited<ReturnType<typeof privateRedis>>;
  beforeAll(async () => {
    server = await privateRedis();
  });
  afterAll(() => server?.stop());

  it("loads every script once at open and calls them by SHA", async () => {
    const store = await RedisStore.open({ url: server.url, prefix: "loaded" });
    onTestFinished(() => store.close());
    const shas = scriptNames.map(sha);
    expect(await store.client.script("EXISTS", ...shas)).toEqual(shas.map(() => 1));

    const sent = vi.spyOn(store.client, "sendCommand");
    const queue = new Queue(store, { clock: new ManualClock(), maintenance: false });
    await queue.enqueue("task", {});
    expect(await queue.lease()).toHaveLength(1);
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(["EVALSHA", "EVALSHA"]);
  });

  it("sends at open only the texts of the scripts Redis lacks", async () => {
    const first = await RedisStore.open({ url: server.url, prefix: "shared" });
    onTestFinished(() => first.close());
    /** Opens a store on a client of the test's own and counts the SCRIPT LOADs it sent. */
    const loadsAtOpen = async (prefix: string) => {
      const client = new Redis(server.url, { autoResendUnfulfilledCommands: false });
      onTestFinished(async () => {
        await client.quit();
      });
      const sent = vi.spyOn(client, "sendCommand");
      const store = await RedisStore.open({ client, prefix });
      onTestFinished(() => store.close());
      return sent.mock.calls.filter(
        ([c]) => c.name === "script" && String(c.args[0]).toUpperCase() === "LOAD",
      ).length;
    };
    // Another process on the same Redis: every script is there, and no text goes out.
    expect(await loadsAtOpen("shared-2")).toBe(0);
    await first.client.script("FLUSH");
    await first.client.script("LOAD", scriptText("claim"));
    expect(await loadsAtOpen("shared-3")).toBe(scriptNames.length - 1);
    expect(await first.client.script("EXISTS", ...scriptNames.map(sha))).toEqual(scriptNames.map(() => 1));
  });

  it("refuses a prefix whose keys a newer errand wrote (a higher schema version)", async () => {
    const first = await RedisStore.open({ url: server.url, prefix: "versioned" });
    await first.client.set("{versioned}:schema_version", "99");
    await first.close();
    await expect(RedisStore.open({ url: server.url, prefix: "versioned" })).rejects.toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringMatching(/schema version 99, newer than this errand/),
    });
  });

  it("refuses a prefix holding jobs in an older layout, and takes over one holding nothing", async () => {
    const first = await RedisStore.open({ url: server.url, prefix: "older" });
    await new Queue(first, { clock: new ManualClock(), maintenance: false }).enqueue("task", {});
    await first.client.set("{older}:schema_version", "1");
    await expect(RedisStore.open({ url: server.url, prefix: "older" })).rejects.toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringMatching(/layout of schema version 1, which this errand \(\d+\) cannot read/),
    });

    await first.client.set("{empty-older}:schema_version", "1");
    await first.close();
    const taken = await RedisStore.open({ url: server.url, prefix: "empty-older" });
    onTestFinished(() => taken.close());
    expect(Number(await taken.client.get("{empty-older}:schema_version"))).toBeGreaterThan(1);
    const queue = new Queue(taken, { clock: new ManualClock(), maintenance: false });
    const job = await queue.enqueue("task", { n: 1 });
    expect((await queue.lease()).map((j) => j.id)).toEqual([job.id]);
  });

  it("reloads a script Redis forgot (SCRIPT FLUSH) on NOSCRIPT, and runs it exactly once", async () => {
    const clock = new ManualClock();
    const store = await RedisStore.open({ url: server.url, prefix: "flushed" });
    onTestFinished(() => store.close());
    const queue = new Queue(store, { clock, maintenance: false });
    const job = await queue.enqueue("task", { n: 1 });

    await store.client.script("FLUSH");
    const claim = sha("claim");
    expect(await store.client.script("EXISTS", claim)).toEqual([0]);

    const sent = vi.spyOn(store.client, "sendCommand");
    const [leased] = await queue.lease({ workerId: "w1" });
    // EVALSHA met NOSCRIPT; EVAL sent the source, which Redis ran once and cached again.
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(["EVALSHA", "EVAL"]);
    expect(leased).toMatchObject({ id: job.id, attempt: 1, workerId: "w1" });
    expect(await queue.get(job.id)).toMatchObject({ state: "active", attempt: 1 });
    expect(await store.client.script("EXISTS", claim)).toEqual([1]);

    // The next call goes by SHA again; other scripts reload the same way as they are used.
    sent.mockClear();
    expect(await queue.complete(leased!, "done")).toBe(true);
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(["EVALSHA", "EVAL"]);
    sent.mockClear();
    expect(await queue.lease()).toEqual([]);
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(["EVALSHA"]);
    expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: "done", attempt: 1 });
  });

  it("fails a batch in one pipeline, and after SCRIPT FLUSH sends the source in one more", async () => {
    const clock = new ManualClock();
    const store = await RedisStore.open({ url: server.url, prefix: "failmany" });
    onTestFinished(() => store.close());
    const queue = new Queue(store, { clock, maintenance: false });
    await queue.enqueueMany("task", [1, 2, 3, 4]);
    const leased = await queue.lease({ limit: 4 });
    const now = clock.now();
    const item = (i: number, retryAt: number | null) => ({
      id: leased[i]!.id,
      attempt: 1,
      error: { attempt: 1, message: `failure ${i}`, at: now },
      retryAt,
    });
    const pipeline = vi.spyOn(store.client, "pipeline");
    const sent = vi.spyOn(store.client, "sendCommand");
    expect(await store.failMany({ now, items: [item(0, now + 1000), item(1, null), item(0, null)] })).toEqual(
      ["pending", "dead", null],
    );
    expect(pipeline).toHaveBeenCalledTimes(1);
    // The pipeline's three runs, and nothing sent beside them.
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(["EVALSHA", "EVALSHA", "EVALSHA"]);

    await store.client.script("FLUSH");
    pipeline.mockClear();
    expect(await store.failMany({ now, items: [item(2, null), item(3, now)] })).toEqual(["dead", "pending"]);
    // The EVALSHAs met NOSCRIPT and changed nothing; the EVALs ran each item once.
    expect(pipeline).toHaveBeenCalledTimes(2);
    expect(await store.client.script("EXISTS", sha("failMany"))).toEqual([1]);
    expect((await queue.get(leased[2]!.id))!.errors.map((e) => e.message)).toEqual(["failure 2"]);
    expect((await queue.get(leased[3]!.id))!.errors.map((e) => e.message)).toEqual(["failure 3"]);
    expect((await queue.stats()).states).toMatchObject({ pending: 2, dead: 2, active: 0 });
  });

  it("sends a bulk enqueue of one type as its first job whole and an id and payload for each other", async () => {
    const store = await RedisStore.open({ url: server.url, prefix: "uniform" });
    onTestFinished(() => store.close());
    // What each command carried as it went out (ioredis empties a command's args once written).
    const lengths: number[] = [];
    const send = store.client.sendCommand.bind(store.client);
    store.client.sendCommand = ((command: { args: unknown[] }) => {
      lengths.push(command.args.length);
      return send(command as never);
    }) as typeof store.client.sendCommand;
    const argsSent = () => lengths.at(-1)!;
    const jobs = (tag: string, priority: (i: number) => number) =>
      [0, 1, 2, 3].map((i) =>
        newJob({ id: `${tag}-${i}`, runAt: 0, type: "task", priority: priority(i), payload: `{"n":${i}}` }),
      );

    await store.enqueueMany({ jobs: jobs("same", () => 5), now: 0 });
    const uniform = argsSent();
    // One differing value (here each job's priority) sends every job whole.
    await store.enqueueMany({ jobs: jobs("mixed", (i) => i), now: 0 });
    const whole = argsSent();
    // 19 values for the first job, then 2 for each of the other three, against 19 for each.
    expect(whole - uniform).toBe(3 * (19 - 2));

    const queue = new Queue(store, { clock: new ManualClock(), maintenance: false });
    for (let i = 0; i < 4; i++) {
      expect(await queue.get(`same-${i}`)).toMatchObject({
        payload: { n: i },
        priority: 5,
        state: "pending",
      });
      expect(await queue.get(`mixed-${i}`)).toMatchObject({
        payload: { n: i },
        priority: i,
        state: "pending",
      });
    }
    // An id that exists is still found in a uniform batch, in any position.
    const again = await store.enqueueMany({
      jobs: [...jobs("same", () => 5).slice(2), ...jobs("new", () => 5)],
      now: 0,
    });
    expect(again.map((r) => r.inserted)).toEqual([false, false, true, true, true, true]);
    expect(argsSent()).toBe(uniform + 2 * 2);
  });
});
