/**
 * Issue 4, resilience: a worker whose Redis connections are killed mid-drain reports the errors,
 * reconnects and finishes, losing nothing; a Redis that comes back empty (a restart without
 * persistence, here FLUSHALL) makes workers report the loss, not crash, and leaves no phantom jobs.
 * On a Redis of the test's own, since both tests act on the whole server (CLIENT PAUSE, FLUSHALL).
 */
import type { EventEmitter } from "node:events";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import type { ErrandError } from "../../../src/errors.js";
import type { Job } from "../../../src/job.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { Worker } from "../../../src/worker/worker.js";
import { keysOf, privateRedis, redisSelected } from "../../helpers/redis.js";

const silent = pino({ level: "silent" });

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * The next of these events, with its arguments. (events.once would reject on an "error" event
 * while waiting for another, and errors are expected here.)
 */
function next(emitter: EventEmitter, ...names: string[]): Promise<unknown[]> {
  return new Promise((resolve) => {
    const listeners = names.map((name) => {
      const listener = (...args: unknown[]) => {
        for (const [i, n] of names.entries()) emitter.off(n, listeners[i]!);
        resolve(args);
      };
      emitter.on(name, listener);
      return listener;
    });
  });
}

/**
 * A job type whose first `held` runs wait until `release()`; counts runs per id.
 * `started` resolves once `held` runs are waiting.
 */
function heldJobs(held: number) {
  const runs = new Map<string, number>();
  const gate = deferred();
  const started = deferred();
  let waiting = 0;
  const def = defineJob({
    type: "task",
    handler: async (_payload: unknown, ctx) => {
      runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
      if (waiting < held) {
        if (++waiting === held) started.resolve();
        await gate.promise;
      }
      return ctx.attempt;
    },
  });
  return { def, runs, started: started.promise, release: () => gate.resolve() };
}

describe.runIf(redisSelected())("Redis store: resilience", () => {
  let server: Awaited<ReturnType<typeof privateRedis>>;
  let admin: Redis;
  beforeAll(async () => {
    server = await privateRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  async function open(prefix: string, clock: ManualClock): Promise<Queue> {
    const store = await RedisStore.open({ url: server.url, prefix });
    onTestFinished(() => store.close());
    return new Queue(store, { clock });
  }

  function start(worker: Worker, clock: ManualClock): void {
    onTestFinished(async () => {
      const closed = worker.close({ graceMs: 0 });
      await clock.advance(0);
      await closed;
    });
  }

  it("reports errors when its connections are killed mid-drain, reconnects, and loses no job", async () => {
    const clock = new ManualClock();
    const queue = await open("dropped", clock);
    const producer = await open("dropped", clock);
    const JOBS = 200;
    const jobs = await producer.enqueueMany(
      "task",
      Array.from({ length: JOBS }, (_, i) => ({ i })),
    );
    const task = heldJobs(10);
    const worker = new Worker(queue, { jobs: [task.def], concurrency: 10, logger: silent });
    start(worker, clock);
    const errors: unknown[] = [];
    worker.on("error", (e) => errors.push(e));
    await worker.start();
    await task.started;

    // Hold writes at the server, let the ten running jobs finish, and kill the worker's
    // connections while their completion is on its way: it is never applied, and never resent.
    const store = queue.store as RedisStore;
    const ids = [await store.client.client("ID")];
    const sent = deferred();
    const complete = vi.spyOn(store, "completeMany");
    complete.mockImplementationOnce((params) => {
      const result = RedisStore.prototype.completeMany.call(store, params);
      sent.resolve();
      return result;
    });
    await admin.client("PAUSE", 60_000, "WRITE");
    try {
      task.release();
      await sent.promise;
      const list = await admin.client("LIST");
      for (const line of (list as string).split("\n")) {
        if (/ name=errand:dropped:wake /.test(` ${line} `)) ids.push(Number(/id=(\d+)/.exec(line)![1]));
      }
      expect(ids).toHaveLength(2);
      for (const id of ids) await admin.client("KILL", "ID", String(id));
    } finally {
      await admin.client("UNPAUSE");
    }

    // The worker carries on: each poll (and, after a lease's 30 s, each sweep) is one clock step.
    for (let step = 0; step < 120; step++) {
      const { states } = await producer.stats();
      if (states.completed === JOBS) break;
      const settled = next(worker, "idle", "error");
      await clock.advance(1000);
      await settled;
    }

    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toMatchObject({ name: "ErrandError", code: "STORE_ERROR" });
    const { states } = await producer.stats();
    expect(states).toEqual({
      blocked: 0,
      pending: 0,
      active: 0,
      completed: JOBS,
      dead: 0,
      cancelled: 0,
      expired: 0,
    });
    // Every job ran; the ten whose completion was lost ran again after their lease ran out.
    expect(task.runs.size).toBe(JOBS);
    const again = jobs.filter((j) => task.runs.get(j.id)! > 1);
    expect(again).toHaveLength(10);
    for (const j of again) {
      const stored = await producer.get(j.id);
      expect(stored).toMatchObject({ state: "completed", attempt: 2, result: 2 });
      expect(stored!.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
    }
  });

  it("reports lost data when Redis comes back empty: no crash, no phantom job, new jobs run", async () => {
    const clock = new ManualClock();
    const queue = await open("emptied", clock);
    const producer = await open("emptied", clock);
    const old = await producer.enqueueMany(
      "task",
      Array.from({ length: 50 }, (_, i) => ({ i })),
    );
    const task = heldJobs(10);
    const worker = new Worker(queue, { jobs: [task.def], concurrency: 10, logger: silent });
    start(worker, clock);
    const errors: unknown[] = [];
    const firstError = next(worker, "error");
    worker.on("error", (e) => errors.push(e));
    const completed: Job[] = [];
    worker.on("completed", (j) => completed.push(j));
    await worker.start();
    await task.started;

    // Redis restarts with nothing on disk.
    await admin.flushall();
    // Listen before the release: on a loaded machine the worker can idle before the error is read.
    let idled = false;
    worker.once("idle", () => {
      idled = true;
    });
    task.release();
    const [lost] = (await firstError) as [ErrandError];
    expect(lost).toMatchObject({ name: "ErrandError", code: "STORE_ERROR" });
    expect(lost.message).toMatch(/lost errand's data/);
    // The worker goes on claiming: it finds nothing, and idles. (A claim that met the loss ends that
    // round; the next comes at the worker's poll, so time moves on while waiting.)
    await vi.waitFor(
      async () => {
        if (!idled) await clock.advance(1000);
        expect(idled).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(completed).toEqual([]);

    // Nothing came back to life: no job, no lease, no count; only the new epoch and the schema version.
    expect((await keysOf(admin, "emptied")).sort()).toEqual(["{emptied}:meta", "{emptied}:schema_version"]);
    for (const j of old.slice(0, 12)) expect(await producer.get(j.id)).toBeNull();
    expect((await queue.stats()).states).toEqual({
      blocked: 0,
      pending: 0,
      active: 0,
      completed: 0,
      dead: 0,
      cancelled: 0,
      expired: 0,
    });

    // The producer learns of the loss on its next write (which is not applied), then carries on.
    await expect(producer.enqueue("task", { late: 0 })).rejects.toMatchObject({ code: "STORE_ERROR" });
    const fresh = await producer.enqueueMany("task", [{ late: 1 }, { late: 2 }, { late: 3 }]);
    await vi.waitFor(
      async () => {
        if (completed.length < 3) await clock.advance(1000);
        expect(completed).toHaveLength(3);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(completed.map((j) => j.id).sort()).toEqual(fresh.map((j) => j.id).sort());
    const stats = await producer.stats();
    expect(stats.states).toMatchObject({ pending: 0, active: 0, completed: 3 });
    expect((await producer.list()).jobs.map((j) => j.id).sort()).toEqual(fresh.map((j) => j.id).sort());
    expect(errors.every((e) => (e as ErrandError).code === "STORE_ERROR")).toBe(true);
  });
});
