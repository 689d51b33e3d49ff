/** A drain in a worker child process (worker-child.mjs), shared by drain, drain-fail and drain-backlog. */
import type { Queue } from "../../src/index.js";
import { Child } from "../child.js";
import { round } from "../common.js";
import { serverCpuSpan } from "../cpu.js";
import type { Runtime } from "../runtime.js";
import { type BenchStore, type Database, withQueue } from "../stores.js";
import { CHILD_DEADLINE_MS, noop, payloads, type ScenarioContext } from "./scenario.js";

/** What drain and drain-fail report alike. */
export interface DrainFigures {
  jobs: number;
  concurrency: number;
  elapsedMs: number;
  jobsPerSec: number;
}

export interface DrainDone {
  type: "done";
  rssBeforeBytes: number;
  elapsedMs: number;
  completed: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** The worker process's CPU time over the drain (user + system). */
  cpuMs: number;
  /** The store server's over the same span; null when it cannot be read. */
  serverCpuMs: number | null;
  calls: number;
  distinct: number;
  repeated: number;
  /** With `join`: when the join's handler started, and when the last other job's handler returned. */
  joinStart: number | null;
  lastDepDone: number | null;
}

/**
 * Drains `measure` jobs from a database already holding `waiting` jobs, in a worker child
 * (`drain-fail`: every job fails for good, and `measure` jobs dead end it). `join`: the payload
 * index of a job that waits on the others, whose start the child times (deps-fan-in).
 * `typeOptions`: defineJob options the child's no-op type takes (keys-drain's `keyConcurrency`).
 * `heldType`: a second type the child's worker runs, `{ type, ...defineJob options }` (rate-held's
 * rate-limited type), its jobs not counted.
 */
export async function drainIn(
  store: BenchStore,
  db: Database,
  measure: number,
  concurrency: number,
  rt: Runtime,
  mode: "drain" | "drain-fail" = "drain",
  indices = measure,
  join?: number,
  typeOptions?: Record<string, unknown>,
  heldType?: { type: string } & Record<string, unknown>,
): Promise<DrainDone> {
  const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, "drain worker", rt.tsx);
  try {
    child.send({
      type: "init",
      entry: rt.entry,
      url: db.url,
      mode,
      concurrency,
      expect: measure,
      indices,
      join,
      typeOptions,
      heldType,
    });
    const ready = await child.next<{ type: "ready"; rssBytes: number }>("ready");
    const serverCpu = serverCpuSpan(store);
    child.send({ type: "go" });
    const done = await child.next<DrainDone>("done");
    return { ...done, rssBeforeBytes: ready.rssBytes, serverCpuMs: serverCpu() };
  } finally {
    await child.stop();
  }
}

/**
 * Drains `--jobs` jobs, enqueued on a fresh database, in a worker child at concurrency 50, and
 * checks each ran once: `drain` ends each completed, `drain-fail` each dead, none left to do.
 * @returns `ended`: the jobs the store holds as completed (`drain`) or dead (`drain-fail`).
 */
export async function drainFresh(
  { store, options: o, runtime: rt }: ScenarioContext,
  label: string,
  mode: "drain" | "drain-fail",
): Promise<{ figures: DrainFigures; exactlyOnce: boolean; ended: number; done: DrainDone }> {
  const db = store.fresh(label);
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    const done = await drainIn(store, db, o.jobs, 50, rt, mode);
    const stats = await withQueue(db, (q) => q.stats());
    const ended = mode === "drain" ? stats.states.completed : stats.states.dead;
    const exactlyOnce =
      done.calls === o.jobs &&
      done.distinct === o.jobs &&
      done.repeated === 0 &&
      ended === o.jobs &&
      stats.states.pending + stats.states.active === 0;
    const figures = {
      jobs: o.jobs,
      concurrency: 50,
      elapsedMs: round(done.elapsedMs, 1),
      jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
    };
    return { figures, exactlyOnce, ended, done };
  } finally {
    await db.dispose();
  }
}

/**
 * Drains `--jobs` jobs that `enqueue` puts on a fresh database, in a worker child at `concurrency`
 * whose no-op type takes `typeOptions` (the key rules of keys-drain and keys-backlog), and checks
 * each ran once and ended completed.
 */
export async function drainEnqueued(
  { store, options: o, runtime: rt }: ScenarioContext,
  label: string,
  concurrency: number,
  enqueue: (q: Queue) => Promise<void>,
  typeOptions?: Record<string, unknown>,
): Promise<{ jobsPerSec: number; exactlyOnce: boolean }> {
  const db = store.fresh(label);
  try {
    await withQueue(db, enqueue);
    const done = await drainIn(store, db, o.jobs, concurrency, rt, "drain", o.jobs, undefined, typeOptions);
    const stats = await withQueue(db, (q) => q.stats());
    return {
      jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
      exactlyOnce:
        done.calls === o.jobs &&
        done.distinct === o.jobs &&
        done.repeated === 0 &&
        stats.states.completed === o.jobs,
    };
  } finally {
    await db.dispose();
  }
}
