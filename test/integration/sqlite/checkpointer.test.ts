import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import {
  BACKSTOP_PAGES,
  Checkpointer,
  START_LATEST_MS,
  START_QUIET_MS,
} from "../../../src/store/sqlite/checkpointer.js";

/** SQLite's automatic checkpoint threshold by default: 1,000 pages of 4 KiB. */
const SQLITE_THRESHOLD_BYTES = 1000 * 4096;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A WAL database on a fresh file, with its writer's wal_autocheckpoint as the checkpointer sets it. */
function fresh(): { db: Database.Database; file: string; checkpointer: Checkpointer; pages: () => number } {
  const dir = mkdtempSync(join(tmpdir(), "errand-ckpt-"));
  dirs.push(dir);
  const file = join(dir, "q.db");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE t (x TEXT NOT NULL)");
  const checkpointer = new Checkpointer(file, "NORMAL", (pages) =>
    db.pragma(`wal_autocheckpoint = ${pages}`),
  );
  return {
    db,
    file,
    checkpointer,
    pages: () => db.pragma("wal_autocheckpoint", { simple: true }) as number,
  };
}

/** Commits about `bytes` of rows in one transaction. */
function write(db: Database.Database, bytes: number): void {
  const insert = db.prepare("INSERT INTO t (x) VALUES (?)");
  const row = "x".repeat(1000);
  db.transaction(() => {
    for (let n = 0; n < bytes; n += row.length) insert.run(row);
  })();
}

/** A fresh database whose checkpointer has seen a large write commit (its thread due to start). */
function afterLargeWrite(): ReturnType<typeof fresh> {
  const f = fresh();
  f.checkpointer.expectLargeWrite();
  write(f.db, 100_000);
  f.checkpointer.afterCommit();
  return f;
}

/** {@link afterLargeWrite} with the start's timers (and Date) faked until the test ends. */
function afterLargeWriteOnFakeTimers(): ReturnType<typeof fresh> {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  onTestFinished(() => {
    vi.useRealTimers();
  });
  return afterLargeWrite();
}

describe("the SQLite store's checkpoint thread", () => {
  it("starts only for a large write: until then, SQLite checkpoints as by default", async () => {
    const { db, file, checkpointer, pages } = fresh();
    expect(pages()).toBe(1000);
    write(db, SQLITE_THRESHOLD_BYTES * 2);
    checkpointer.afterCommit();
    expect(checkpointer.running).toBe(false);
    // The writer's own checkpoint copied the WAL into the file.
    expect(statSync(file).size).toBeGreaterThan(SQLITE_THRESHOLD_BYTES);
    await checkpointer.close();
    db.close();
  });

  it("copies a large write's WAL into the database file from its thread, not the writer's", async () => {
    const { db, file, checkpointer, pages } = fresh();
    checkpointer.expectLargeWrite();
    expect(pages()).toBe(BACKSTOP_PAGES);
    write(db, SQLITE_THRESHOLD_BYTES * 2);
    // The writer did not checkpoint: the rows are in the WAL only.
    expect(statSync(file).size).toBeLessThan(SQLITE_THRESHOLD_BYTES);
    // The thread starts after the large write's commit, then checkpoints.
    expect(checkpointer.running).toBe(false);
    checkpointer.afterCommit();
    await checkpointer.whenIdle();
    expect(checkpointer.running).toBe(true);
    expect(statSync(file).size).toBeGreaterThan(SQLITE_THRESHOLD_BYTES * 2);
    // Every frame is in the database now: a checkpoint has nothing left to copy.
    const [result] = db.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number; checkpointed: number }>;
    expect(result!.checkpointed).toBe(result!.log);
    await checkpointer.close();
    await checkpointer.close();
    checkpointer.afterCommit();
    checkpointer.expectLargeWrite();
    expect(checkpointer.running).toBe(false);
    db.close();
  });

  it("starts one thread however many large writes come before it is up", async () => {
    const { db, checkpointer } = afterLargeWrite();
    // The next large write is queued before the thread has started.
    checkpointer.expectLargeWrite();
    write(db, 100_000);
    checkpointer.afterCommit();
    await checkpointer.whenIdle();
    checkpointer.expectLargeWrite();
    checkpointer.afterCommit();
    await checkpointer.whenIdle();
    expect(checkpointer.threadsStarted).toBe(1);
    await checkpointer.close();
    expect(checkpointer.running).toBe(false);
    db.close();
  });

  it("starts the thread once the commits after a large write pause, not at the next commit", async () => {
    const { db, checkpointer } = afterLargeWriteOnFakeTimers();
    // Another write right behind it (a second bulk enqueue) puts the start back.
    vi.advanceTimersByTime(START_QUIET_MS - 1);
    write(db, 100_000);
    checkpointer.afterCommit();
    vi.advanceTimersByTime(START_QUIET_MS - 1);
    expect(checkpointer.running).toBe(false);
    vi.advanceTimersByTime(1);
    expect(checkpointer.running).toBe(true);
    vi.useRealTimers();
    await checkpointer.whenIdle();
    expect(checkpointer.threadsStarted).toBe(1);
    await checkpointer.close();
    db.close();
  });

  it("starts the thread at the latest a while after the large write, however busy the writer", async () => {
    const { db, checkpointer } = afterLargeWriteOnFakeTimers();
    // A commit every half quiet spell: never quiet, so only the latest start time starts it.
    const step = START_QUIET_MS / 2;
    for (let t = step; t < START_LATEST_MS; t += step) {
      vi.advanceTimersByTime(step);
      expect(checkpointer.running).toBe(false);
      write(db, 1_000);
      checkpointer.afterCommit();
    }
    vi.advanceTimersByTime(step);
    expect(checkpointer.running).toBe(true);
    vi.useRealTimers();
    await checkpointer.whenIdle();
    await checkpointer.close();
    db.close();
  });

  it("closes without starting a thread that was still due", async () => {
    const { db, checkpointer } = afterLargeWrite();
    await checkpointer.close();
    await checkpointer.whenIdle();
    expect(checkpointer.threadsStarted).toBe(0);
    db.close();
  });
});
