/**
 * Four worker processes on one store (each store that several processes may share), 10,000 jobs:
 * each is handled exactly once.
 */
import { afterEach, describe, expect, test } from "vitest";
import { openQueue, type Queue } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { killAll, type Message, WorkerProcess } from "./child-process.js";

const JOBS = 10_000;
const PROCESSES = 4;

/** The test's own queue, closed after it (before the store is removed). */
let opened: Queue | undefined;
const children: WorkerProcess[] = [];

afterEach(async () => {
  await killAll(children);
  await opened?.close();
  opened = undefined;
});

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(backend.name, () => {
    test("4 processes, 10,000 jobs: every job handled exactly once", { timeout: 45_000 }, async () => {
      // A fresh store (its own file, schema or key prefix), removed after the test.
      const { url } = await backend.setup();
      const queue = await openQueue(url);
      opened = queue;
      for (let i = 0; i < PROCESSES; i++) children.push(new WorkerProcess({ url, concurrency: 20 }));
      await Promise.all(children.map((c) => c.next("ready")));

      // Every completion any child reports; resolved once all 10,000 distinct ids are in.
      const completedBy = new Map<string, number[]>();
      const allCompleted = new Promise<void>((resolve, reject) => {
        children.forEach((c, n) => {
          c.on("completed", (m) => {
            for (const id of m.ids as string[]) {
              const by = completedBy.get(id) ?? [];
              by.push(n);
              completedBy.set(id, by);
            }
            if (completedBy.size === JOBS) resolve();
          });
          c.on("error", (m) => reject(new Error(String(m.message))));
          c.on("exit", () => reject(new Error(`worker ${n} exited early`)));
        });
      });

      // Enqueued in chunks while the workers run, so they compete for each new batch.
      const ids = new Set<string>();
      for (let chunk = 0; chunk < 10; chunk++) {
        const payloads = Array.from({ length: JOBS / 10 }, (_, i) => ({ n: chunk * 1000 + i }));
        for (const job of await queue.enqueueMany("mp-noop", payloads)) ids.add(job.id);
      }
      expect(ids.size).toBe(JOBS);

      await allCompleted;
      const closed = await Promise.all(
        children.map((c) => c.close<Message & { started: [string, number][] }>()),
      );

      // No handler started twice, in any process.
      const starts = new Map<string, number>();
      closed.forEach(({ started }) => {
        for (const [id] of started) starts.set(id, (starts.get(id) ?? 0) + 1);
      });
      expect(starts.size).toBe(JOBS);
      expect([...starts.values()].filter((n) => n !== 1)).toEqual([]);
      expect([...completedBy.values()].filter((by) => by.length !== 1)).toEqual([]);
      // They really ran side by side. (Not "every process": SQLite's write lock is not fair, and on a
      // loaded machine three processes can drain no-op jobs before the fourth wins it once.)
      expect(closed.filter(({ started }) => started.length > 0).length).toBeGreaterThanOrEqual(2);

      // The store agrees: 10,000 completed jobs, each on its first attempt, by the process that ran it.
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ pending: 0, active: 0, completed: JOBS, dead: 0 });
      const pids = children.map((c) => c.proc.pid);
      let seen = 0;
      let cursor: string | undefined;
      do {
        const page = await queue.list({ state: "completed", limit: 1000, cursor });
        for (const job of page.jobs) {
          expect(ids.has(job.id)).toBe(true);
          expect(job.attempt).toBe(1);
          const runner = completedBy.get(job.id)![0]!;
          expect((job.result as { pid: number }).pid).toBe(pids[runner]);
          seen++;
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(seen).toBe(JOBS);
    });
  });
}
