/**
 * Rate limits across processes, on each store that several processes may share: four worker
 * processes, each with room for fewer jobs than the limit, never start more than `limit` jobs of a
 * rate-limited type (of a type and key, with `keyRateLimit`) in any window of `periodMs`. Checked
 * from the stored claim times (`job.startedAt`: the `now` each claim counted its window with;
 * every process reads the same machine clock), which is what the limit holds exactly. Nothing here
 * depends on how fast the machine is: a slow machine starts fewer jobs per window, never more.
 * Most of a test's few seconds go to starting the four children under tsx.
 */
import { afterEach, describe, expect, test } from "vitest";
import { maxInWindow } from "../../bench/scenarios/rate-limit.js";
import { type Job, openQueue, type Queue } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { killAll, untilNone, type WorkerInit, WorkerProcess } from "./child-process.js";

/** The child's limits (worker-process.ts): `mp-rate` 5 per 500 ms, `mp-keyrate` 3 per 500 ms per key. */
const PERIOD_MS = 500;
const RATE_LIMIT = 5;
const KEY_RATE_LIMIT = 3;

let queue: Queue | undefined;
const children: WorkerProcess[] = [];

afterEach(async () => {
  await killAll(children);
  await queue?.close();
  queue = undefined;
});

/**
 * Starts four workers (concurrency 2 each, below the limit, so a window's starts are spread over
 * processes) on the jobs already enqueued, waits until the store has nothing left to run, and
 * returns every completed job of `type`. The queue stays paused until all four are ready: a child
 * that starts seconds before the others (tsx on a loaded machine) would otherwise run the whole
 * backlog alone, and the limit would be kept within one process only.
 */
async function runAll(url: string, type: string, count: number): Promise<Job[]> {
  await queue!.pauseQueue("default");
  const init: WorkerInit = { url, concurrency: 2, workMs: [2, 8], pollIntervalMs: 5_000 };
  for (let i = 0; i < 4; i++) children.push(new WorkerProcess(init));
  await Promise.all(children.map((c) => c.next("ready")));
  await queue!.resumeQueue("default");
  await untilNone(queue!, children);
  await Promise.all(children.map((c) => c.close()));
  const { jobs } = await queue!.list({ type, state: "completed", limit: 1000 });
  expect(jobs).toHaveLength(count);
  return jobs;
}

const startedAt = (jobs: readonly Job[]) => jobs.map((j) => j.startedAt!.getTime());
const processesOf = (jobs: readonly Job[]) => new Set(jobs.map((j) => (j.result as { pid: number }).pid));

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(backend.name, () => {
    test("4 processes never start more than rateLimit jobs of the type in any period", {
      timeout: 30_000,
    }, async () => {
      const { url } = await backend.setup();
      queue = await openQueue(url);
      const count = 30; // six windows' worth: about 2.5 s at the limit
      await queue.enqueueMany(
        "mp-rate",
        Array.from({ length: count }, (_, i) => ({ i })),
      );
      const jobs = await runAll(url, "mp-rate", count);
      // At the limit (the backlog always had more) and never past it, by the claims' own clock.
      expect(maxInWindow(startedAt(jobs), PERIOD_MS)).toBe(RATE_LIMIT);
      // More than one process took part, or the limit was only kept within one.
      expect(processesOf(jobs).size).toBeGreaterThan(1);
    });

    test("4 processes never start more than keyRateLimit jobs of one key in any period", {
      timeout: 30_000,
    }, async () => {
      const { url } = await backend.setup();
      queue = await openQueue(url);
      const keys = ["k0", "k1", "k2"];
      const perKey = 9; // three windows' worth per key
      // Each key's jobs together, so that without the limit one claim would take many of one key.
      for (const key of keys) {
        for (let i = 0; i < perKey; i++) await queue.enqueue("mp-keyrate", { i }, { key });
      }
      const jobs = await runAll(url, "mp-keyrate", keys.length * perKey);
      for (const key of keys) {
        const ofKey = jobs.filter((j) => j.key === key);
        expect(ofKey, key).toHaveLength(perKey);
        expect(maxInWindow(startedAt(ofKey), PERIOD_MS), key).toBe(KEY_RATE_LIMIT);
      }
      // Keys do not share one limit: the type as a whole started more than one key's limit in a window.
      expect(maxInWindow(startedAt(jobs), PERIOD_MS)).toBeGreaterThan(KEY_RATE_LIMIT);
      expect(processesOf(jobs).size).toBeGreaterThan(1);
    });
  });
}
