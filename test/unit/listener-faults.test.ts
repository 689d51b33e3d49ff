/**
 * A listener's fault is the listener's: a Queue, Worker or RemoteWorker listener that throws (or
 * returns a promise that rejects) used to reach the store write or the run that emitted it. An
 * enqueue rejected for a stored job, a claim was taken as failed (an at-most-once job went dead
 * unrun), a worker of concurrency 1 was wedged by a job left running, later listeners missed the
 * event, and `retrying` / `dead` went unsaid. Now each listener runs on its own and its fault goes
 * to the emitter's `error` event (or, with none at all, is thrown as an uncaught exception).
 */
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import { Queue } from "../../src/queue.js";
import { createServer } from "../../src/server/index.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { Worker } from "../../src/worker/worker.js";

const T0 = Date.UTC(2026, 0, 1);
const silent = pino({ level: "silent" });
const closing: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function openSqliteQueue(): Promise<{ queue: Queue; clock: ManualClock }> {
  const clock = new ManualClock(T0);
  const store = await SqliteStore.open({ filename: ":memory:" });
  closing.push(() => store.close());
  return { queue: new Queue(store, { clock }), clock };
}

/** A worker on `queue` whose handler records each payload it runs, closed after the test. */
function startWorker(queue: Queue, options: { concurrency?: number; fails?: boolean } = {}) {
  const runs: unknown[] = [];
  const job = defineJob({
    type: "t",
    handler: async (payload: unknown) => {
      runs.push(payload);
      if (options.fails) throw new Error("handler failed");
      return "ok";
    },
  });
  const worker = new Worker(queue, { jobs: [job], concurrency: options.concurrency ?? 1, logger: silent });
  const errors: unknown[] = [];
  worker.on("error", (e) => errors.push(e));
  closing.push(() => worker.close({ graceMs: 0 }));
  return { worker, runs, errors };
}

/** Resolves when `emitter` has emitted `event` `n` times from now (without `events.once`, which rejects on `error`). */
function heard(
  emitter: { on(event: string, fn: (...args: unknown[]) => void): unknown },
  event: string,
  n = 1,
): Promise<unknown[]> {
  return new Promise((resolve) => {
    let left = n;
    emitter.on(event, (...args) => {
      if (--left === 0) resolve(args);
    });
  });
}

const fault = new Error("listener bug");
const thrower = () => {
  throw fault;
};

describe("a Queue listener that throws", () => {
  it("does not fail the enqueue of a stored job; its fault reaches the queue's error event", async () => {
    const { queue } = await openSqliteQueue();
    const errors: unknown[] = [];
    queue.on("error", (e) => errors.push(e));
    queue.once("enqueued", thrower);
    await expect(queue.enqueue("t", 1, { id: "j1" })).resolves.toMatchObject({ id: "j1" });
    expect(errors).toEqual([fault]);
    expect(queue.listenerCount("enqueued")).toBe(0); // a `once` listener goes, as with emit
    expect((await queue.list({ limit: 10 })).jobs.map((j) => [j.id, j.state])).toEqual([["j1", "pending"]]);
  });

  it("keeps the listeners after it hearing every job of a batch, and the worker sees no fault", async () => {
    const { queue } = await openSqliteQueue();
    const queueErrors: unknown[] = [];
    queue.on("error", (e) => queueErrors.push(e));
    for (let i = 0; i < 5; i++) await queue.enqueue("t", i, { id: `c${i}` });
    queue.on("completed", thrower);
    const seen: string[] = [];
    queue.on("completed", (job) => seen.push(job.id));
    const all = heard(queue, "completed", 5);
    const { worker, errors } = startWorker(queue, { concurrency: 5 });
    await worker.start();
    await all;
    expect(seen.sort()).toEqual(["c0", "c1", "c2", "c3", "c4"]);
    expect(queueErrors).toEqual([fault, fault, fault, fault, fault]);
    expect(errors).toEqual([]);
    expect((await queue.stats()).states).toMatchObject({ completed: 5 });
  });

  it("does not keep an at-most-once job from running once when an active listener throws", async () => {
    const { queue } = await openSqliteQueue();
    queue.on("error", () => {});
    await queue.enqueue("t", 1, { id: "j1", delivery: "at_most_once" });
    queue.once("active", thrower);
    const { worker, runs, errors } = startWorker(queue);
    const done = heard(worker, "completed");
    await worker.start();
    await done;
    expect(runs).toEqual([1]);
    expect(errors).toEqual([]);
    expect(await queue.get("j1")).toMatchObject({ state: "completed", attempt: 1 });
  });

  it("does not keep `retrying` or `dead` from being heard when a failed listener throws", async () => {
    const { queue } = await openSqliteQueue();
    const errors: unknown[] = [];
    queue.on("error", (e) => errors.push(e));
    await queue.enqueue("t", 1, { id: "j1", maxAttempts: 1 });
    queue.on("failed", thrower);
    const dead = heard(queue, "dead");
    const [job] = await queue.lease({ types: ["t"] });
    await expect(queue.fail(job!, new Error("boom"))).resolves.toBeTruthy();
    expect(((await dead)[0] as { id: string }).id).toBe("j1");
    expect(errors).toEqual([fault]);
  });

  it("sends the rejection of an async listener to the error event", async () => {
    const { queue } = await openSqliteQueue();
    const error = heard(queue, "error");
    queue.on("enqueued", async () => {
      throw fault;
    });
    await expect(queue.enqueue("t", 1)).resolves.toBeTruthy();
    expect(await error).toEqual([fault]);
  });

  it("with no error listener, is thrown as an uncaught exception, outside the enqueue", async () => {
    const { queue } = await openSqliteQueue();
    queue.removeAllListeners("error"); // the Queue's own, which ignores every fault
    queue.once("enqueued", thrower);
    // Vitest's own handler is set aside while the fault is caught here, and put back after.
    const saved = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    try {
      const uncaught = new Promise<unknown>((resolve) => process.once("uncaughtException", resolve));
      await expect(queue.enqueue("t", 1, { id: "j1" })).resolves.toMatchObject({ id: "j1" });
      expect(await uncaught).toBe(fault);
    } finally {
      process.removeAllListeners("uncaughtException");
      for (const listener of saved) process.on("uncaughtException", listener);
    }
  });
});

describe("a Queue listener that throws, with no error listener but the Queue's own", () => {
  it("is a process warning, once per queue, and the enqueues still resolve", async () => {
    const { queue } = await openSqliteQueue();
    queue.on("enqueued", thrower);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => {
      if ((w as Error & { code?: string }).code === "ERRAND_LISTENER_FAULT") warnings.push(w);
    };
    process.on("warning", onWarning);
    try {
      await expect(queue.enqueue("t", 1, { id: "w1" })).resolves.toMatchObject({ id: "w1" });
      await expect(queue.enqueue("t", 2, { id: "w2" })).resolves.toMatchObject({ id: "w2" });
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toContain("listener bug");
    } finally {
      process.off("warning", onWarning);
    }
  });
});

describe("a Worker listener that throws", () => {
  it("does not wedge a worker of concurrency 1 when its active listener throws", async () => {
    const { queue } = await openSqliteQueue();
    await queue.enqueue("t", 1, { id: "j1" });
    await queue.enqueue("t", 2, { id: "j2" });
    const { worker, runs, errors } = startWorker(queue);
    worker.once("active", thrower);
    const both = heard(worker, "completed", 2);
    await worker.start();
    await both;
    expect(runs).toEqual([1, 2]);
    expect(errors).toEqual([fault]);
    await worker.close({ graceMs: 0 });
    expect([(await queue.get("j1"))?.state, (await queue.get("j2"))?.state]).toEqual([
      "completed",
      "completed",
    ]);
  });

  it("reports a throwing completed listener as the worker's error, and later listeners still hear", async () => {
    const { queue } = await openSqliteQueue();
    await queue.enqueue("t", 1, { id: "j1" });
    const { worker, errors } = startWorker(queue);
    worker.on("completed", thrower);
    const later = heard(worker, "completed");
    const error = heard(worker, "error");
    await worker.start();
    expect(((await later)[0] as { id: string }).id).toBe("j1");
    expect(await error).toEqual([fault]);
    expect(errors).toEqual([fault]);
  });

  it("does not keep `dead` from being heard when a failed listener rejects", async () => {
    const { queue } = await openSqliteQueue();
    await queue.enqueue("t", 1, { id: "j1", maxAttempts: 1 });
    const { worker, errors } = startWorker(queue, { fails: true });
    worker.on("failed", async () => {
      throw fault;
    });
    const dead = heard(worker, "dead");
    const error = heard(worker, "error");
    await worker.start();
    expect(((await dead)[0] as { id: string }).id).toBe("j1");
    expect(await error).toEqual([fault]);
    expect(errors).toEqual([fault]);
  });
});

describe("a RemoteWorker listener that throws", () => {
  it("does not wedge a remote worker of concurrency 1 when its active listener throws", async () => {
    const { queue, clock } = await openSqliteQueue();
    const app = await createServer({ queue, maintenance: false, logger: false });
    await app.listen({ port: 0 });
    closing.push(() => app.close());
    const client = new ErrandClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    await queue.enqueue("t", 1, { id: "j1" });
    await queue.enqueue("t", 2, { id: "j2" });
    const runs: unknown[] = [];
    const job = defineJob({ type: "t", handler: async (p: unknown) => runs.push(p) });
    const worker = new RemoteWorker(client, { jobs: [job], concurrency: 1, clock, logger: silent });
    closing.push(() => worker.close({ graceMs: 0 }));
    const errors: unknown[] = [];
    worker.on("error", (e) => errors.push(e));
    worker.once("active", thrower);
    const both = heard(worker, "completed", 2);
    await worker.start();
    await both;
    expect(runs).toEqual([1, 2]);
    expect(errors).toEqual([fault]);
  });
});
