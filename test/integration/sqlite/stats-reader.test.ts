/**
 * SQLite's stats() off the event loop: once a count on the store's connection takes
 * STATS_THREAD_AFTER_MS (or the hot table is large from the start), later counts run on a reader
 * thread, which answers the same counts, sees later writes, shares one count among callers who ask
 * while one runs, and ends with the store. The history is not counted row by row at all (its
 * counts are kept, migration 12): a large one alone starts no thread.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { Queue } from "../../../src/queue.js";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { STATS_THREAD_AFTER_MS, StatsReader } from "../../../src/store/sqlite/stats-reader.js";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const noop = defineJob({ type: "noop", handler: async () => "ok" });

async function openOn(file: string) {
  const store = await SqliteStore.open({ filename: file });
  const queue = new Queue(store, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
  cleanup.push(() => queue.close());
  return { store, queue };
}

/** A store on a fresh file whose hot table holds `rows` pending jobs (100 enqueued, then copied). */
async function withBacklog(rows: number) {
  const dir = mkdtempSync(join(tmpdir(), "errand-stats-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "q.db");
  const { store, queue } = await openOn(file);
  await queue.enqueueMany(
    noop,
    Array.from({ length: 100 }, (_, i) => ({ i })),
  );
  if (rows > 100) copyRows(file, "errand_job", rows / 100 - 1, "c");
  return { store, queue, file };
}

/**
 * Copies every row of `table` `times` times over, under new ids (`tag` keeps them apart from
 * earlier copies').
 */
function copyRows(file: string, table: "errand_job" | "errand_job_done", times: number, tag: string): void {
  const db = new Database(file);
  const cols = (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{ name: string }>)
    .map((r) => r.name)
    .filter((c) => c !== "id")
    .join(", ");
  db.prepare(
    `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?)
     INSERT INTO ${table} (id, ${cols}) SELECT d.id || '-${tag}' || c.n, ${cols.replace(/(\w+)/g, "d.$1")}
     FROM ${table} d, c`,
  ).run(times);
  db.close();
}

/** Awaits `count` while counting the event loop's turns meanwhile. */
async function turnsDuring<T>(count: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let counting = true;
  const spin = () => {
    turns++;
    if (counting) setImmediate(spin);
  };
  setImmediate(spin);
  const result = await count();
  counting = false;
  return { result, turns };
}

describe("SQLite stats() on a reader thread", () => {
  it("counts a large backlog on the thread from the first count, with the same counts, and sees later writes", async () => {
    const { store, queue } = await withBacklog(300_000);
    // On the thread the event loop keeps turning while it counts; on the store's connection a
    // count is one synchronous call, and not one turn passes.
    const first = await turnsDuring(() => queue.stats());
    expect(first.result.states).toMatchObject({ pending: 300_000, completed: 0 });
    expect(first.result.types.noop).toMatchObject({ pending: 300_000 });
    expect(first.turns).toBeGreaterThan(10);
    expect(store.statsReader?.reads).toBe(1);

    const [job] = await queue.lease({ types: ["noop"], limit: 1, leaseMs: 60_000, workerId: "w" });
    await queue.attempts.complete(job!, "ok");
    const later = await queue.stats();
    expect(later.states).toMatchObject({ completed: 1, pending: 299_999 });
    expect(later.types.noop).toMatchObject({ completed: 1 });
  });

  it("counts a large history from its kept counts, on the store's connection, at once", async () => {
    const { store, queue, file } = await withBacklog(100);
    const leased = await queue.lease({ types: ["noop"], limit: 100, leaseMs: 60_000, workerId: "w" });
    for (const job of leased) await queue.fail(job, new Error("no"), { retryable: false });
    // 100 dead jobs copied 2,000 times over by SQL: the trigger counts each row (migration 12).
    copyRows(file, "errand_job_done", 2_000, "d");
    const counted = await turnsDuring(() => queue.stats());
    expect(counted.result.states).toMatchObject({ dead: 200_100, pending: 0 });
    expect(store.statsReader).toBeNull();
    // The rows are not what it reads: with them gone behind the store's back, it says the same.
    const db = new Database(file);
    db.prepare("DELETE FROM errand_job_done").run();
    db.close();
    expect((await queue.stats()).states).toMatchObject({ dead: 200_100 });
  });

  it("moves counts to the thread once one on the store's connection took STATS_THREAD_AFTER_MS", async () => {
    const { store, queue, file } = await withBacklog(100);
    await queue.stats();
    // Sized at the first count (100 rows): later counts stay on the connection while they are quick.
    expect(store.statsReader).toBeNull();
    // The store's own counts: the Queue's stats() would add its spacing's wait (event-loop turns).
    const count = () => store.stats({ now: Date.UTC(2026, 0, 1) });
    // The backlog doubles until a count on the connection takes the threshold, however fast the
    // host: up to 100 × 2^15 (3.3 million) rows, far past what any host here counts in 50 ms.
    let onConnection: Awaited<ReturnType<typeof count>> | null = null;
    for (let round = 0; round < 15 && onConnection === null; round++) {
      copyRows(file, "errand_job", 1, `r${round}-`);
      const t0 = performance.now();
      const counted = await turnsDuring(count);
      const tookMs = performance.now() - t0;
      // On the connection: one synchronous call, not one turn of the event loop meanwhile.
      expect(counted.turns).toBe(0);
      // The store times the count itself, inside what this measures: a count measured here under
      // the threshold stays on the connection; one the store found over it moves, and one far
      // over it here must have (at the threshold, this host's load decides which side it falls).
      const moved = store.statsReader !== null;
      if (tookMs < STATS_THREAD_AFTER_MS) expect(moved, `a count of ${tookMs} ms`).toBe(false);
      if (tookMs > 2 * STATS_THREAD_AFTER_MS) expect(moved, `a count of ${tookMs} ms`).toBe(true);
      if (moved) onConnection = counted.result;
    }
    expect(onConnection, "no count took the threshold").not.toBeNull();
    const onThread = await turnsDuring(count);
    expect(onThread.result).toEqual(onConnection);
    expect(onThread.turns).toBeGreaterThan(10);
    expect(store.statsReader?.reads).toBe(1);
  });

  it("shares one count among callers who ask while one runs, and refuses counts once closed", async () => {
    const { store, queue } = await withBacklog(200_000);
    await queue.stats();
    const reader = store.statsReader!;
    const before = reader.reads;
    const all = await Promise.all(Array.from({ length: 10 }, () => queue.stats()));
    for (const s of all) expect(s).toEqual(all[0]);
    // The count before took tens of ms, so the first of the ten waits its turn (Queue.stats'
    // spacing) and the nine who asked meanwhile share that one count.
    expect(reader.reads - before).toBe(1);

    // A count under way when the store closes is refused, not left hanging.
    const late = expect(store.stats({ now: Date.UTC(2026, 0, 1) })).rejects.toMatchObject({ code: "CLOSED" });
    await store.close();
    await late;
    await expect(store.stats({ now: Date.UTC(2026, 0, 1) })).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("starts no thread for a small backlog in a file that once held many jobs", async () => {
    const { store, queue, file } = await withBacklog(200_000);
    await queue.close();
    // What is left of a long-lived file: the hot table's last rowid far past its few rows.
    const db = new Database(file);
    const last = db.prepare("SELECT max(rowid) FROM errand_job").pluck().get() as number;
    db.prepare("DELETE FROM errand_job WHERE rowid <= ?").run(last - 100);
    db.close();
    expect(store.statsReader).toBeNull();
    const again = await openOn(file);
    expect((await again.queue.stats()).states.pending).toBe(100);
    expect(again.store.statsReader).toBeNull();
  });

  it("starts no thread while counts are quick", async () => {
    const { store, queue } = await withBacklog(100);
    for (let i = 0; i < 3; i++) await queue.stats();
    expect(store.statsReader).toBeNull();
  });

  it("reports a thread that cannot count as failed, so the store counts on its own connection", async () => {
    const reader = new StatsReader(join(tmpdir(), "errand-no-such-dir", "gone.db"), 1000);
    cleanup.push(() => reader.close());
    await expect(reader.read(0)).rejects.toMatchObject({ code: "STORE_ERROR" });
    expect(reader.failed).toBe(true);
    await expect(reader.read(0)).rejects.toMatchObject({ code: "STORE_ERROR" });
  });
});
