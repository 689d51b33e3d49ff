/**
 * List pages: a page holds at most `limit` jobs, newest first, and paging with `nextCursor` until
 * it is null lists every matching job exactly once. A state, queue, type or key filter is checked
 * job by job, so a filtered page reads at most the store's `listScan` (LIST_SCAN on the SQL stores)
 * jobs of each source it walks: it may be
 * short, even empty, and still have a cursor, and one call never holds the store long however few
 * jobs match. A page without such a filter, or whose filter every job it reads matches, is full
 * but for the last.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import type { JobPage, ListOptions, Queue } from "../../src/queue.js";
import type { Backend } from "./backend.js";

/** Every page of a listing, first to last. */
async function pages(queue: Queue, filter: Omit<ListOptions, "cursor">): Promise<JobPage[]> {
  const out: JobPage[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({ ...filter, cursor });
    expect(page.jobs.length).toBeLessThanOrEqual(filter.limit ?? 50);
    out.push(page);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

const ids = (ps: JobPage[]): string[] => ps.flatMap((p) => p.jobs.map((j: Job) => j.id));

/** Pages but the last are full, and together they list `count` distinct jobs, newest first. */
function expectFull(ps: JobPage[], limit: number, count: number): void {
  for (const p of ps.slice(0, -1)) expect(p.jobs).toHaveLength(limit);
  const all = ids(ps);
  expect(all).toHaveLength(count);
  expect(new Set(all).size).toBe(count);
  expect(all).toEqual([...all].sort().reverse());
}

export function exerciseListPages(backend: Backend): void {
  const scan = backend.capabilities.listScan;
  describe("list pages", () => {
    it("finds a job few match behind more newer ones than a page reads, a stretch per call, and pages the rest full", async () => {
      const { queue, clock } = await backend.setup();
      const needle = await queue.enqueue("sync", { n: 0 }, { key: "needle", owner: "alice" });
      clock.advance(1);
      const payloads = Array.from({ length: scan + 500 }, (_, i) => ({ n: i + 1 }));
      await queue.enqueueManyIds("sync", payloads, { owner: "alice" });
      const total = payloads.length + 1;

      for (const filter of [
        { key: "needle" },
        { key: "needle", state: "pending" as const },
        { owner: "alice", key: "needle" },
      ]) {
        const first = await queue.list({ ...filter, limit: 10 });
        expect(first.jobs).toEqual([]);
        expect(first.nextCursor).not.toBeNull();
        expect(ids(await pages(queue, { ...filter, limit: 10 }))).toEqual([needle.id]);
      }

      expectFull(await pages(queue, { limit: 1000 }), 1000, total);
      expectFull(await pages(queue, { owner: "alice", limit: 1000 }), 1000, total);
      expectFull(await pages(queue, { type: "sync", limit: 1000 }), 1000, total);
      expectFull(await pages(queue, { state: "pending", queue: "default", limit: 1000 }), 1000, total);
    });

    it("finds a finished job behind more newer unfinished ones than a page reads", async () => {
      const { queue, clock } = await backend.setup();
      const needle = await queue.enqueue("sync", { n: 0 }, { key: "needle" });
      const [leased] = await queue.lease({ limit: 1 });
      expect(leased?.id).toBe(needle.id);
      await queue.complete(leased!, "found");
      clock.advance(1);
      await queue.enqueueManyIds(
        "sync",
        Array.from({ length: scan + 500 }, (_, i) => ({ n: i + 1 })),
      );

      // Without a state a page reads both the waiting jobs and the history, each as far back as
      // the other: the newer jobs' stretch ends above the finished needle.
      const first = await queue.list({ key: "needle", limit: 10 });
      expect(first.jobs).toEqual([]);
      expect(first.nextCursor).not.toBeNull();
      expect(ids(await pages(queue, { key: "needle", limit: 10 }))).toEqual([needle.id]);
      // The history holds one job: a page of it reads no more than that.
      const done = await queue.list({ key: "needle", state: "completed" });
      expect(done.jobs.map((j) => [j.id, j.state, j.result])).toEqual([[needle.id, "completed", "found"]]);
      expect(done.nextCursor).toBeNull();
    });
    it("pages every filter to exactly the jobs it matches, with both the waiting jobs and the history past what a page reads", async () => {
      const { queue } = await backend.setup();
      // Four kinds of job, interleaved in id order; each half of the jobs is more than a page reads.
      const rounds = Math.ceil(scan / 1000) + 1;
      const kinds: Array<{ type: string; options: { key?: string; owner?: string; queue?: string } }> = [
        { type: "a", options: {} },
        { type: "b", options: { key: "k2" } },
        { type: "c", options: { owner: "o1" } },
        { type: "a", options: { key: "k2", owner: "o1", queue: "q2" } },
      ];
      const half = async () => {
        for (let round = 0; round < rounds; round++) {
          for (const kind of kinds) {
            await queue.enqueueManyIds(
              kind.type,
              Array.from({ length: 250 }, (_, i) => i),
              kind.options,
            );
          }
        }
      };
      await half();
      // The first half finishes: some dead, the rest completed.
      for (let batch = 0; ; batch++) {
        const jobs = await queue.lease({ limit: 1000, queues: ["default", "q2"] });
        if (jobs.length === 0) break;
        const doomed = batch === 0 ? jobs.slice(0, 50) : [];
        for (const j of doomed) await queue.fail(j, new Error("no"), { retryable: false });
        await queue.attempts.completeMany(
          jobs
            .slice(doomed.length)
            .map((j) => ({ id: j.id, attempt: j.attempt, result: "null", value: null })),
        );
      }
      await half();

      const truth = (await pages(queue, { limit: 1000 })).flatMap((p) => p.jobs);
      expect(truth).toHaveLength(2 * rounds * 1000);
      expect(truth.filter((j) => j.state === "pending")).toHaveLength(rounds * 1000);
      // Each table the page reads (state), with and without the owner indexes, and row filters
      // that match some jobs or none.
      for (const state of [undefined, "pending", "completed", "dead"] as const) {
        for (const owner of [undefined, "o1"]) {
          for (const rows of [{}, { key: "k2" }, { type: "c", key: "k2" }]) {
            const filter = { state, owner, ...rows };
            if (!state && !owner && !("key" in rows)) continue;
            const want = truth
              .filter(
                (j) =>
                  (!state || j.state === state) &&
                  (!owner || j.owner === owner) &&
                  (!("key" in rows) || j.key === rows.key) &&
                  (!("type" in rows) || j.type === rows.type),
              )
              .map((j) => j.id);
            const got = ids(await pages(queue, { ...filter, limit: 1000 }));
            expect(got, JSON.stringify(filter)).toEqual(want);
          }
        }
      }
    }, 120_000);
  });
}
