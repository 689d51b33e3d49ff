/**
 * The SQLite schema a fresh database gets, compared with the snapshot checked in at
 * test/schema/sqlite.sql, so an unintended schema change fails the build. After an intended
 * change (a new migration), refresh it: ERRAND_UPDATE_SCHEMA=1 npx vitest run test/unit/schema-snapshot.test.ts
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

const SNAPSHOT = new URL("../schema/sqlite.sql", import.meta.url);

it("matches the checked-in SQLite schema snapshot", async () => {
  const dir = mkdtempSync(join(tmpdir(), "errand-schema-"));
  try {
    const store = await SqliteStore.open({ filename: join(dir, "s.db"), crossProcessWake: false });
    await store.close();
    const db = new Database(join(dir, "s.db"), { readonly: true });
    const rows = db
      .prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
      .all() as Array<{ type: string; name: string; sql: string }>;
    const versions = db.prepare("SELECT version, name FROM errand_migration ORDER BY version").all();
    db.close();
    const dump = `${rows.map((r) => `-- ${r.type} ${r.name}\n${r.sql};\n`).join("\n")}\n-- migrations: ${JSON.stringify(versions)}\n`;
    if (process.env.ERRAND_UPDATE_SCHEMA) writeFileSync(SNAPSHOT, dump);
    expect(dump).toBe(readFileSync(SNAPSHOT, "utf8"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
