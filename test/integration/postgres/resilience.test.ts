/**
 * Issue 3, resilience: every connection the store holds is terminated (`pg_terminate_backend`)
 * three times during a drain. The store logs, backs off and retries; the LISTEN connection comes
 * back by itself; the worker carries on; no job is lost or left active.
 */

import pino from "pino";
import { expect, onTestFinished, test } from "vitest";
import { defineJob } from "../../../src/define-job.js";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { Worker } from "../../../src/worker/worker.js";
import { dropSchema, freshSchema, PG_URL, terminateBackends } from "../../helpers/postgres.js";

test("backends terminated mid-drain: the store logs, retries and reconnects; every job completes", {
  timeout: 30_000,
}, async () => {
  const JOBS = 3_000;
  const KILL_AT = [500, 1_200, 2_000];
  const schema = freshSchema("errand_res");
  // Named connections, so only this test's are terminated.
  const app = `${schema}_app`;
  const url = new URL(PG_URL);
  url.searchParams.set("application_name", app);
  const logs: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: "info" }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const store = await PostgresStore.open({
    connectionString: url.toString(),
    schema,
    poolSize: 4,
    logger,
    reconnectDelayMs: { min: 20, max: 200 },
  });
  const queue = new Queue(store);
  const calls = new Map<string, number>();
  const job = defineJob({
    type: "resilient",
    handler: async (_p: unknown, ctx) => {
      calls.set(ctx.job.id, (calls.get(ctx.job.id) ?? 0) + 1);
      await new Promise((r) => setImmediate(r));
      return null;
    },
  });
  const worker = new Worker(queue, {
    jobs: [job],
    concurrency: 20,
    leaseMs: 2_000,
    sweepIntervalMs: 200,
    pollIntervalMs: 100,
    logger,
  });
  onTestFinished(async () => {
    await worker.close({ graceMs: 1_000 });
    await store.close();
    await dropSchema(schema);
  });
  await queue.enqueueMany(
    job,
    Array.from({ length: JOBS }, (_, i) => ({ i })),
  );

  const kills: Array<Promise<number>> = [];
  let completed = 0;
  worker.on("completed", () => {
    if (++completed >= KILL_AT[kills.length]!) kills.push(terminateBackends(app));
  });
  // Done when the store holds no pending or active job; checked whenever the worker runs dry.
  const drained = new Promise<void>((resolve, reject) => {
    let checking = false;
    worker.on("idle", () => {
      if (checking) return;
      checking = true;
      queue.stats().then(
        ({ states }) => {
          checking = false;
          if (states.pending === 0 && states.active === 0) resolve();
        },
        (error) => reject(error),
      );
    });
  });
  await worker.start();
  await drained;

  expect(kills).toHaveLength(KILL_AT.length);
  // Each kill hit the store's connections (the LISTEN one at least).
  for (const hit of await Promise.all(kills)) expect(hit).toBeGreaterThan(0);
  // Logged, not thrown: the LISTEN loss and the retried operations, at warn level.
  expect(logs.filter((l) => l.msg.includes("LISTEN connection lost")).length).toBeGreaterThanOrEqual(1);
  expect(logs.some((l) => l.level === 40)).toBe(true);
  if (!store.listening) await new Promise((resolve) => store.once("listen", resolve));
  expect(store.listening).toBe(true);

  // Nothing lost: every job completed, and ran (at least once: at-least-once delivery).
  const { states } = await queue.stats();
  expect(states).toMatchObject({ pending: 0, active: 0, completed: JOBS, dead: 0 });
  expect(calls.size).toBe(JOBS);
});
