/**
 * A child process for the PostgreSQL integration tests (spawned through child-process.ts's
 * WorkerProcess with this script).
 *
 * parent → child: `init` {mode, url, …}, `sweep` {at} (scheduler mode), `close`
 * child → parent: `ready`, `completed` {ids} (batched per tick), `swept` {fired}, `closed`, `error`
 *
 * Modes:
 * - `capped`: a Worker (concurrency `concurrency`) for type "capped" under a cluster-wide cap of
 *   `cap`. Each handler bumps a gauge row in the test schema on entry and drops it on exit, in
 *   one atomic UPDATE each, recording the peak: the most handlers running at once across every
 *   process, a lower bound on the jobs active in the store at that moment.
 * - `scheduler`: a Queue on a ManualClock that sweeps (fires due schedules) when told to.
 */
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { ManualClock } from "../../../src/clock.js";
import { defineJob, openQueue, Worker } from "../../../src/index.js";

interface Init {
  mode: "capped" | "scheduler";
  url: string;
  concurrency?: number;
  cap?: number;
  holdMs?: [number, number];
  /** Schema holding the `gauge` table (capped mode). */
  schema?: string;
  pgUrl?: string;
}

const send = (m: object) => {
  if (process.connected) process.send!(m);
};

process.on("message", (m: { type: string }) => {
  if (m.type === "init") void main(m as unknown as Init).catch(fail);
});
process.on("disconnect", () => process.exit(0));

function fail(error: unknown): void {
  send({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}

async function main(init: Init): Promise<void> {
  if (init.mode === "scheduler") return scheduler(init);
  // A pool: handlers bump the gauge concurrently.
  const gauge = new pg.Pool({ connectionString: init.pgUrl, max: 5 });
  const queue = await openQueue(init.url);
  const [lo, hi] = init.holdMs ?? [5, 15];
  const capped = defineJob({
    type: "capped",
    concurrency: init.cap,
    handler: async () => {
      await gauge.query(
        `UPDATE "${init.schema}".gauge SET running = running + 1, peak = greatest(peak, running + 1)`,
      );
      try {
        await sleep(lo + Math.random() * (hi - lo));
      } finally {
        await gauge.query(`UPDATE "${init.schema}".gauge SET running = running - 1`);
      }
      return { pid: process.pid };
    },
  });
  const worker = new Worker(queue, { jobs: [capped], concurrency: init.concurrency ?? 20 });
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
  process.on("message", (m: { type: string }) => {
    if (m.type !== "close") return;
    void (async () => {
      await worker.close({ graceMs: 5_000 });
      await queue.close();
      await gauge.end();
      process.send!({ type: "closed" }, () => process.exit(0));
    })().catch(fail);
  });
  await worker.start();
  send({ type: "ready" });
}

async function scheduler(init: Init): Promise<void> {
  const clock = new ManualClock(0);
  const queue = await openQueue({ store: init.url, clock });
  process.on("message", (m: { type: string; at?: number }) => {
    if (m.type === "sweep") {
      void (async () => {
        await clock.set(m.at!);
        const { fired } = await queue.sweep();
        send({ type: "swept", fired });
      })().catch(fail);
    } else if (m.type === "close") {
      void queue.close().then(() => process.send!({ type: "closed" }, () => process.exit(0)), fail);
    }
  });
  send({ type: "ready" });
}
