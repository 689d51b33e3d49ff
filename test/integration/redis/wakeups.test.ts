/**
 * Wake-ups on Redis travel over pub/sub: an idle worker with polling off starts a job enqueued on
 * another connection, and keeps doing so after its subscription connection dropped and came back.
 */
import type { EventEmitter } from "node:events";
import { Redis } from "ioredis";
import { describe, expect, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import type { Job } from "../../../src/job.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { Worker } from "../../../src/worker/worker.js";
import { deleteKeys, freshPrefix, REDIS_URL, redisSelected } from "../../helpers/redis.js";

function next<T extends unknown[]>(emitter: EventEmitter, name: string): Promise<T> {
  return new Promise((resolve) => emitter.once(name, (...args: unknown[]) => resolve(args as T)));
}

describe.runIf(redisSelected())("Redis store: wake-ups", () => {
  it("starts jobs enqueued on another connection at once, with polling off, also after its subscription dropped", async () => {
    const prefix = freshPrefix();
    onTestFinished(() => deleteKeys(prefix));
    const clock = new ManualClock();
    const open = async () => {
      const store = await RedisStore.open({ url: REDIS_URL, prefix });
      onTestFinished(() => store.close());
      return new Queue(store, { clock });
    };
    const producer = await open();
    const queue = await open();
    const task = defineJob({ type: "task", handler: async (p: { n: number }) => p.n });
    const worker = new Worker(queue, { jobs: [task], pollIntervalMs: 3_600_000, maintenance: false });
    onTestFinished(async () => {
      const closed = worker.close({ graceMs: 0 });
      await clock.advance(0);
      await closed;
    });
    await worker.start();

    let done = next<[Job]>(worker, "completed");
    const first = await producer.enqueue(task, { n: 1 });
    expect((await done)[0].id).toBe(first.id);

    // Drop the worker's subscription connection; a job enqueued meanwhile may lose its wake-up,
    // and the store looks again once it has resubscribed.
    const admin = new Redis(REDIS_URL);
    onTestFinished(() => admin.disconnect());
    const list = (await admin.client("LIST")) as string;
    const line = list.split("\n").find((l) => l.includes(` name=errand:${prefix}:wake `));
    await admin.client("KILL", "ID", /id=(\d+)/.exec(line!)![1]!);
    done = next<[Job]>(worker, "completed");
    const second = await producer.enqueue(task, { n: 2 });
    expect((await done)[0].id).toBe(second.id);

    // And wake() reaches other processes' workers: a job made due by the clock is found.
    const later = await producer.enqueue(task, { n: 3 }, { delayMs: 1000 });
    await clock.advance(1000);
    done = next<[Job]>(worker, "completed");
    producer.store.wake();
    expect((await done)[0].id).toBe(later.id);
  });
});
