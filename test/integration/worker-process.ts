/**
 * A worker process for the integration tests (spawned by child-process.ts).
 *
 * parent → child: `init` (a WorkerInit), `close`
 * child → parent: `ready` (worker started), `started` {id, type, attempt} (when asked),
 *   `completed` {ids} (batched per tick), `idle`, `closed` {started: [id, attempt][]}, `error`
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { defineJob, openQueue, Worker } from "../../src/index.js";
import type { WorkerInit } from "./child-process.js";

const send = (m: object) => {
  if (process.connected) process.send!(m);
};

process.on("message", (m: { type: string }) => {
  if (m.type === "init") void main(m as unknown as WorkerInit).catch(fail);
});
// The parent went away (a test that failed): do not linger.
process.on("disconnect", () => process.exit(0));

function fail(error: unknown): void {
  send({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}

async function main(init: WorkerInit): Promise<void> {
  const queue = await openQueue(init.url);
  const started: Array<[string, number]> = [];
  const [lo, hi] = init.workMs ?? [0, 0];

  async function run(id: string, type: string, attempt: number): Promise<{ pid: number }> {
    if (init.startLog) appendFileSync(init.startLog, `${id} ${attempt}\n`);
    const begin = Date.now();
    started.push([id, attempt]);
    if (init.reportStarts) send({ type: "started", id, jobType: type, attempt });
    if (hi > 0) await sleep(lo + Math.random() * (hi - lo));
    else await new Promise((r) => setImmediate(r));
    // Wall-clock spans of a handler, for the per-key tests: the same clock in every process.
    if (init.spanLog) appendFileSync(init.spanLog, `${id} ${begin} ${Date.now()}\n`);
    return { pid: process.pid };
  }
  const jobs = ["mp-noop", "mp-join", "crash-alo", "crash-amo"].map((type) =>
    defineJob({ type, handler: (_payload: unknown, ctx) => run(ctx.job.id, type, ctx.attempt) }),
  );
  // Per-key rules across processes (test/integration/key-rules.test.ts).
  jobs.push(
    defineJob({
      type: "mp-keycap",
      keyConcurrency: 2,
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-keycap", ctx.attempt),
    }),
    defineJob({
      type: "mp-ordered",
      ordered: true,
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-ordered", ctx.attempt),
    }),
    // The same rules on fair types: keys take turns (PostgreSQL claims these in one statement).
    defineJob({
      type: "mp-keycap-fair",
      keyConcurrency: 2,
      fair: true,
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-keycap-fair", ctx.attempt),
    }),
    defineJob({
      type: "mp-ordered-fair",
      ordered: true,
      fair: true,
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-ordered-fair", ctx.attempt),
    }),
    // Rate limits across processes (test/integration/rate-limits.test.ts).
    defineJob({
      type: "mp-rate",
      rateLimit: { limit: 5, periodMs: 500 },
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-rate", ctx.attempt),
    }),
    defineJob({
      type: "mp-keyrate",
      keyRateLimit: { limit: 3, periodMs: 500 },
      handler: (_p: unknown, ctx) => run(ctx.job.id, "mp-keyrate", ctx.attempt),
    }),
  );

  const worker = new Worker(queue, {
    jobs: init.only ? jobs.filter((j) => init.only!.includes(j.type)) : jobs,
    concurrency: init.concurrency,
    prefetch: init.prefetch ?? 0,
    leaseMs: init.leaseMs ?? 30_000,
    sweepIntervalMs: init.sweepIntervalMs ?? 1_000,
    pollIntervalMs: init.pollIntervalMs ?? 1_000,
  });
  worker.on("error", fail);

  let completed: string[] = [];
  worker.on("completed", (job) => {
    if (completed.length === 0) {
      setImmediate(() => {
        send({ type: "completed", ids: completed });
        completed = [];
      });
    }
    completed.push(job.id);
  });
  let lastIdle = 0;
  worker.on("idle", () => {
    const now = Date.now();
    if (now - lastIdle < 20) return;
    lastIdle = now;
    send({ type: "idle" });
  });

  process.on("message", (m: { type: string }) => {
    if (m.type !== "close") return;
    void (async () => {
      await worker.close({ graceMs: 5_000 });
      await queue.close();
      if (completed.length > 0) send({ type: "completed", ids: completed });
      process.send!({ type: "closed", started }, () => process.exit(0));
    })().catch(fail);
  });

  await worker.start();
  send({ type: "ready" });
}
