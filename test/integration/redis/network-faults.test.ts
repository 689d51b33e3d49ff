/**
 * The Redis store through a TCP proxy that cuts or freezes the connection: wake-ups come back
 * after Redis was unreachable when the worker started, an outcome written during a short cut is
 * sent once Redis is back instead of being dropped, and a Redis that stops answering cannot hang
 * close().
 */
import { once } from "node:events";
import { describe, expect, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { connect, loadSender, RedisTransport } from "../../../src/store/redis/transport.js";
import { Worker } from "../../../src/worker/worker.js";
import { closeWhileFrozen } from "../../helpers/frozen-close.js";
import { silentLogger } from "../../helpers/postgres.js";
import { deleteKeys, freshPrefix, REDIS_URL, redisUrl, withRedis } from "../../helpers/redis.js";
import { startTcpProxy, type TcpProxy, until } from "../../helpers/tcp-proxy.js";

/** A store of a fresh prefix reached through a proxy, and one reached directly (never cut). */
async function throughProxy(options: { commandTimeoutMs?: number } = {}): Promise<{
  proxy: TcpProxy;
  store: RedisStore;
  direct: RedisStore;
  prefix: string;
}> {
  const proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
  onTestFinished(() => proxy.close());
  const prefix = freshPrefix();
  onTestFinished(() => deleteKeys(prefix));
  const store = await RedisStore.open({
    url: `redis://127.0.0.1:${proxy.port}/?prefix=${prefix}`,
    ...options,
  });
  onTestFinished(() => store.close());
  const direct = await RedisStore.open({ url: redisUrl(prefix) });
  onTestFinished(() => direct.close());
  return { proxy, store, direct, prefix };
}

/** Subscribers of the store's wake-up channel, as Redis counts them. */
function subscribers(prefix: string): Promise<number> {
  return withRedis(async (client) => {
    const [, n] = (await client.pubsub("NUMSUB", `{${prefix}}:wake`)) as [string, number];
    return Number(n);
  });
}

describe("the Redis store through network faults", () => {
  it("wakes a worker started while Redis was unreachable, once Redis is back", async () => {
    const { proxy, store, direct, prefix } = await throughProxy();
    const clock = new ManualClock();
    const started: string[] = [];
    const job = defineJob({
      type: "w",
      handler: async (_p: unknown, ctx) => {
        started.push(ctx.job.id);
        return null;
      },
    });
    // Polls every minute of a clock that never moves: only a wake-up gets this worker to claim.
    const worker = new Worker(new Queue(store, { clock }), {
      jobs: [job],
      pollIntervalMs: 60_000,
      maintenance: false,
      logger: silentLogger,
    });
    worker.on("error", () => {});
    onTestFinished(() => worker.close({ graceMs: 0 }));

    proxy.cut();
    const failed = once(worker, "error");
    await worker.start();
    await failed;
    // Long enough that ioredis gave up on the commands queued meanwhile (maxRetriesPerRequest 2:
    // three refused reconnections of each connection), the first SUBSCRIBE among them.
    await until("ioredis gave up on the queued commands", () => proxy.refused() >= 10, 15_000);
    proxy.restore();

    await until(
      "the worker's store subscribed to wake-ups again",
      async () => (await subscribers(prefix)) > 0,
      10_000,
    );
    const { id } = await new Queue(direct, { clock }).enqueue("w", {});
    await until("the worker took the job", () => started.includes(id), 5_000);
  });

  it("completes a job whose handler returned during a 1 s cut, running it once", async () => {
    const { proxy, store, direct } = await throughProxy();
    const clock = new ManualClock();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    const job = defineJob({
      type: "once",
      delivery: "at_most_once",
      handler: async () => {
        runs++;
        await gate;
        return "charged";
      },
    });
    const worker = new Worker(new Queue(store, { clock }), {
      jobs: [job],
      pollIntervalMs: 60_000,
      maintenance: false,
      logger: silentLogger,
    });
    const errors: unknown[] = [];
    worker.on("error", (error) => errors.push(error));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await worker.start();
    const producer = new Queue(direct, { clock });
    const { id } = await producer.enqueue("once", {});
    await until("the handler runs", () => runs === 1, 5_000);

    proxy.cut();
    release(); // the handler returns while Redis is unreachable: the completion waits offline
    // ioredis gives up on queued commands at every third refused reconnection (maxRetriesPerRequest 2).
    await until("ioredis gave up on the queued completion", () => proxy.refused() >= 6, 10_000);
    proxy.restore();

    await until("the job is completed", async () => (await producer.get(id))?.state === "completed", 10_000);
    expect(await producer.get(id)).toMatchObject({ state: "completed", result: "charged", attempt: 1 });
    expect(runs).toBe(1);
    // A command already written when the cut came (a claim after the wake-up, say) is reported,
    // as documented; whatever the worker reports is errand's typed store error.
    for (const error of errors) expect(error).toMatchObject({ name: "ErrandError", code: "STORE_ERROR" });
  });

  it("closes a worker and the store within a bound while Redis stops answering", {
    timeout: 60_000,
  }, async () => {
    const { proxy, store } = await throughProxy({ commandTimeoutMs: 1_000 });
    const { workerCloseMs, storeCloseMs, errors } = await closeWhileFrozen(new Queue(store), proxy, {
      graceMs: 200,
      boundMs: 15_000,
    });
    // Without a deadline both waited for a reply that never came.
    expect(workerCloseMs).not.toBeNull();
    expect(storeCloseMs).not.toBeNull();
    expect(errors.length).toBeGreaterThan(0);
  });

  it("rejects a call queued while Redis was unreachable whose connection drops after it went out", {
    timeout: 30_000,
  }, async () => {
    const proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    onTestFinished(() => proxy.close());
    const prefix = freshPrefix();
    // No command deadline: only the transport can settle a call whose reply a dropped connection lost.
    const { client } = await connect({
      url: `redis://127.0.0.1:${proxy.port}/?prefix=${prefix}`,
      commandTimeoutMs: 0,
    });
    const transport = new RedisTransport(client, true, `{${prefix}}:`, await loadSender());
    onTestFinished(() => transport.close());
    /** errand's connection blocks in Redis on the BLPOP. */
    const blocked = () =>
      withRedis(async (direct) =>
        String(await direct.client("LIST"))
          .split("\n")
          .some((line) => line.includes(`name=errand:${prefix} `) && line.includes("cmd=blpop")),
      );

    proxy.cut();
    await until("the client is disconnected", () => client.status !== "ready", 5_000);
    // Queued offline; a minute-long BLPOP, so no reply comes within the bound below.
    let outcome: "pending" | "resolved" | "rejected" = "pending";
    let failure: unknown;
    transport.command("BLPOP", [`{${prefix}}:nothing`, 60]).then(
      () => {
        outcome = "resolved";
      },
      (error: unknown) => {
        outcome = "rejected";
        failure = error;
      },
    );
    proxy.restore();
    await until("the queued BLPOP went out and blocks in Redis", blocked, 10_000);
    proxy.cut();
    proxy.restore();
    // Before: ioredis dropped the call without settling it, and the transport had not registered it.
    await until("the call settles", () => outcome !== "pending", 5_000);
    expect(outcome).toBe("rejected");
    expect(failure).toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringContaining("closed before the reply"),
    });
  });

  it("refuses a retryMs or commandTimeoutMs that is not an integer a timer can wait", async () => {
    for (const options of [{ retryMs: -1 }, { commandTimeoutMs: 1.5 }, { commandTimeoutMs: 2 ** 31 }]) {
      await expect(RedisStore.open({ url: redisUrl(freshPrefix()), ...options })).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining(Object.keys(options)[0]!),
      });
    }
  });
});
