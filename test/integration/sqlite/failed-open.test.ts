/**
 * An open that fails after the file was opened (it is no database, its schema is newer than this
 * errand, it is read-only and needs a migration) closes the connection again and throws an
 * ErrandError with a code, the SQLite error as its cause: a process that retries does not pile up
 * open files, nor keep the file locked.
 */
import { readdirSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { ErrandError } from "../../../src/errors.js";
import { migrations } from "../../../src/store/generated/sqlite-migrations.js";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-failed-open-");

async function refusal(filename: string): Promise<ErrandError> {
  try {
    const store = await SqliteStore.open({ filename });
    await store.close();
  } catch (error) {
    if (error instanceof ErrandError) return error;
    throw error;
  }
  throw new Error(`expected opening ${filename} to fail`);
}

/** A database whose ledger lists a migration newer than this errand's. */
function newerDatabase(file: string): void {
  const db = new Database(file);
  db.exec(
    "CREATE TABLE errand_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  db.prepare("INSERT INTO errand_migration VALUES (?, ?, 0)").run(9999, "9999_future.sql");
  db.close();
}

const openFiles = () => readdirSync("/proc/self/fd").length;

describe("a SQLite open that fails", () => {
  it("gives INVALID_STORE_URL for a file that is not a database", async () => {
    const file = tempFile();
    writeFileSync(file, "not a database, only text\n".repeat(200));
    const e = await refusal(file);
    expect(e.code).toBe("INVALID_STORE_URL");
    expect(e.message).toMatch(/not a database/);
    expect(e.cause).toMatchObject({ code: "SQLITE_NOTADB" });
  });

  // A migration that cannot be applied (here a view in the way of its table; a read-only file
  // is the same path, but CI runs as root, which writes any file whatever its mode).
  it("gives STORE_ERROR for a file whose migration fails, and leaves it as it was", async () => {
    const file = tempFile();
    const db = new Database(file);
    db.exec("CREATE VIEW errand_job AS SELECT 1 AS id");
    db.close();
    const e = await refusal(file);
    expect(e.code).toBe("STORE_ERROR");
    expect(e.message).toMatch(/errand_job already exists/);
    expect((e.cause as { code?: string }).code).toBe("SQLITE_ERROR");
    // The migration's transaction was rolled back and the file closed: another connection
    // writes to it at once and finds no ledger.
    const after = new Database(file, { timeout: 0 });
    const tables = after.prepare("SELECT name FROM sqlite_master WHERE name = 'errand_migration'").all();
    after.exec("DROP VIEW errand_job");
    after.close();
    expect(tables).toEqual([]);
  });

  it.runIf(process.platform === "linux")("keeps no file open, however often it is retried", async () => {
    const file = tempFile();
    newerDatabase(file);
    const first = await refusal(file);
    expect(first.code).toBe("STORE_ERROR");
    expect(first.message).toMatch(/schema version 9999, newer than this errand/);
    const before = openFiles();
    for (let i = 0; i < 50; i++) await refusal(file);
    expect(openFiles()).toBeLessThanOrEqual(before);
    // Nor locked: another connection writes to it at once.
    const db = new Database(file, { timeout: 0 });
    db.prepare("DELETE FROM errand_migration").run();
    db.close();
    expect(migrations.length).toBeGreaterThan(0);
    const store = await SqliteStore.open({ filename: file });
    await store.close();
  });
});
