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
import { type Job, toJobSummary } from "../../src/job.js";
import type { JobPage, ListOptions, Queue } from "../../src/queue.js";
import { DEFAULT_RETENTION } from "../../src/queue-options.js";
import { MAX_DATE_MS, MAX_LIST_CURSOR_LENGTH } from "../../src/validation.js";
import type { Backend } from "./backend.js";

/** Every page of a listing, first to last (or from the page after the one `from` came with). */
async function pages(queue: Queue, filter: Omit<ListOptions, "cursor">, from?: string): Promise<JobPage[]> {
  const out: JobPage[] = [];
  let cursor: string | undefined = from;
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
    // A cursor is the position of the page's last job as it was listed, never looked up again: a
    // job that moves or goes away between pages takes the rest of the listing with it otherwise.
    // Ids of the longest length (255, JOB_ID_PATTERN) make the cursor longest (on Redis,
    // `<time>:<id>`).
    for (const length of [20, 255]) {
      const idOf = (n: number) => `${n}`.padEnd(length, "x");
      // Listed 3, 2, 1 on every store: by id, and by runAt (Redis lists pending jobs by runAt).
      const enqueueThree = async (queue: Queue, at: number) => {
        for (const n of [1, 2, 3]) await queue.enqueue("sync", { n }, { id: idOf(n), runAt: at + n * 1000 });
      };

      it(`pages on past a cursor job rescheduled between pages (ids of ${length} characters)`, async () => {
        const { queue, clock } = await backend.setup();
        const at = clock.now() + 3_600_000;
        await enqueueThree(queue, at);
        const first = await queue.list({ limit: 1 });
        expect(ids([first])).toEqual([idOf(3)]);
        // Before every other job: a store that placed the cursor by its job's time now would
        // start the next page below all of them.
        await queue.reschedule(idOf(3), { runAt: at });
        const rest = ids(await pages(queue, { limit: 10 }, first.nextCursor!));
        // Redis lists the moved job again at its new time; the SQL stores, by id, do not.
        expect(rest.filter((id) => id !== idOf(3))).toEqual([idOf(2), idOf(1)]);
      });

      it(`pages on past a cursor job deleted between pages (ids of ${length} characters)`, async () => {
        const { queue, clock } = await backend.setup();
        await enqueueThree(queue, clock.now() + 3_600_000);
        const first = await queue.list({ limit: 1 });
        expect(ids([first])).toEqual([idOf(3)]);
        await queue.cancel(idOf(3));
        clock.advance(DEFAULT_RETENTION.cancelled + 1);
        expect(await queue.prune()).toBe(1);
        expect(await queue.get(idOf(3))).toBeNull();
        expect(ids(await pages(queue, { limit: 10 }, first.nextCursor!))).toEqual([idOf(2), idOf(1)]);
      });
    }

    it("gives cursors within MAX_LIST_CURSOR_LENGTH, even for the longest id at the latest time, and refuses longer ones", async () => {
      const { queue } = await backend.setup();
      const idOf = (n: number) => `${n}`.padEnd(255, "x");
      for (const n of [1, 2]) await queue.enqueue("sync", { n }, { id: idOf(n), runAt: MAX_DATE_MS });
      const first = await queue.list({ limit: 1 });
      expect(ids([first])).toEqual([idOf(2)]);
      expect(first.nextCursor!.length).toBeLessThanOrEqual(MAX_LIST_CURSOR_LENGTH);
      expect(ids(await pages(queue, { limit: 1 }, first.nextCursor!))).toEqual([idOf(1)]);

      for (const cursor of ["9".repeat(MAX_LIST_CURSOR_LENGTH + 1), "", "a b", `${first.nextCursor}\n`]) {
        await expect(queue.list({ cursor }), JSON.stringify(cursor)).rejects.toMatchObject({
          name: "ErrandError",
          code: "INVALID_OPTION",
        });
      }
    });

    it("a summary page lists what a full one does, each job less the five fields a summary leaves out", async () => {
      const { queue } = await backend.setup();
      const big = "x".repeat(50_000);
      const opts = { owner: "o1", key: "k1" };
      // Every state, each with what a summary leaves out made large where it can be.
      const a = await queue.enqueue("sync", { big, n: 1 }, opts);
      const b = await queue.enqueue("sync", { big, n: 2 }, opts);
      await queue.enqueue("merge", { big, n: 3 }, { ...opts, dependsOn: [a.id, b.id] });
      const [done] = await queue.lease({ limit: 1, types: ["sync"] });
      await queue.complete(done!, { big });
      await queue.enqueue("other", { big, n: 4 });
      const [doomed] = await queue.lease({ limit: 1, types: ["other"] });
      await queue.fail(doomed!, new Error(big.slice(0, 1_000)), { retryable: false });
      await queue.enqueue("other", { big, n: 5 }, opts);
      const [running] = await queue.lease({ limit: 1, types: ["other"] });
      await queue.checkpoint(running!, { big });
      await queue.enqueue("sync", { big, n: 6 }, opts);
      // Long kept text (Redis keeps it in pieces, beside the payload's) and a cancelled job.
      await queue.enqueue("sync", { big, n: 7 }, { ...opts, uniqueKey: "u".repeat(250) });
      const gone = await queue.enqueue("sync", { big, n: 8 }, opts);
      await queue.cancel(gone.id);

      for (const filter of [
        {},
        { state: "pending" as const },
        { state: "active" as const },
        { state: "blocked" as const },
        { state: "completed" as const },
        { state: "dead" as const },
        { state: "cancelled" as const },
        { owner: "o1" },
        { key: "k1" },
        { owner: "o1", state: "completed" as const },
      ]) {
        const full = (await pages(queue, { ...filter, limit: 2 })).flatMap((p) => p.jobs);
        const summaries = [];
        let cursor: string | undefined;
        do {
          const page = await queue.list({ ...filter, limit: 2, view: "summary", cursor });
          summaries.push(...page.jobs);
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        expect(summaries, JSON.stringify(filter)).toEqual(full.map(toJobSummary));
        for (const job of summaries) {
          for (const field of ["payload", "checkpoint", "result", "errors", "dependsOn"]) {
            expect(Object.hasOwn(job, field), field).toBe(false);
          }
        }
      }
      // Each state is there, so each store's read of each table was compared.
      const states = new Set((await queue.list({ limit: 100, view: "summary" })).jobs.map((j) => j.state));
      expect([...states].sort()).toEqual(["active", "blocked", "cancelled", "completed", "dead", "pending"]);
      // The store reads none of them: its records carry the placeholders (ListParams.summary).
      const records = (await queue.store.list({ limit: 100, summary: true })).jobs;
      expect(records).toHaveLength(8);
      for (const r of records) {
        expect([r.payload, r.checkpoint, r.result, r.errors, r.dependsOn]).toEqual([
          "null",
          null,
          null,
          "[]",
          null,
        ]);
      }
      await expect(queue.list({ view: "brief" as "full" })).rejects.toMatchObject({ code: "INVALID_OPTION" });
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
