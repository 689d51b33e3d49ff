import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openQueue } from "../../../src/index.js";
import { PENDING_FIELDS_SQL, PENDING_REST } from "../../../src/store/sqlite/pending-row.js";
import { prepareEvery, prepareStatements } from "../../../src/store/sqlite/statements.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-stmts-");

/** A second connection to a file errand has opened (and so migrated). */
async function migrated(): Promise<Database.Database> {
  const file = tempFile();
  const queue = await openQueue(`sqlite:${file}`);
  await queue.close();
  return new Database(file);
}

describe("the SQLite store's statements", () => {
  it("all prepare against the migrated schema, record statements yielding JobRecord's keys", async () => {
    const db = await migrated();
    try {
      expect(() => prepareEvery(db)).not.toThrow();
    } finally {
      db.close();
    }
  });

  it("are prepared on first use, not at open", () => {
    // A connection without errand's tables: every statement would fail to prepare, so making
    // the set must prepare none of them, and the first use of one prepares it (and fails here).
    const db = new Database(tempFile());
    try {
      const q = prepareStatements(db);
      expect(() => q.getHot).toThrow(/no such table: errand_job/);
      expect(() => prepareEvery(db)).toThrow(/no such table/);
    } finally {
      db.close();
    }
  });

  it("prepare each statement once per connection", async () => {
    const db = await migrated();
    try {
      const q = prepareStatements(db);
      expect(q.getHot).toBe(q.getHot);
      expect(q.getHot).not.toBe(prepareStatements(db).getHot);
    } finally {
      db.close();
    }
  });
});

describe("the SQLite claim's packed row (pending-row.ts)", () => {
  it("reads a new job's every other field as a NULL rest, and a changed one's as JSON", async () => {
    const file = tempFile();
    const queue = await openQueue(`sqlite:${file}`);
    const fresh = await queue.enqueue("t", { n: 1 });
    const changed = await queue.enqueue("t", { n: 2 }, { key: "k", timeoutMs: 5000 });
    // The key is a column of its own: a keyed job with every other field as new packs nothing.
    const keyed = await queue.enqueue("t", { n: 3 }, { key: "k2" });
    await queue.close();
    const db = new Database(file, { readonly: true });
    try {
      const rows = db
        .prepare(`SELECT id, key, rest FROM (SELECT ${PENDING_FIELDS_SQL} FROM errand_job) ORDER BY id`)
        .raw(true)
        .all() as Array<[string, string | null, string | null]>;
      expect(rows).toEqual([
        [fresh.id, null, null],
        [changed.id, "k", expect.any(String)],
        [keyed.id, "k2", null],
      ]);
      expect(PENDING_REST.some((f) => f.name === "key")).toBe(false);
      const packed = JSON.parse(rows[1]![2]!) as unknown[];
      expect(packed).toHaveLength(PENDING_REST.length);
      expect(packed[PENDING_REST.findIndex((f) => f.name === "timeoutMs")]).toBe(5000);
    } finally {
      db.close();
    }
  });
});
