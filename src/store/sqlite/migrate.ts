/**
 * Migrations of the SQLite store: numbered files (migrations/*.sql, embedded by `npm run gen`)
 * recorded in an `errand_migration` ledger, applied when a store opens.
 * @module
 */
import type Database from "better-sqlite3";
import { ErrandError } from "../../errors.js";
import { migrations } from "../generated/sqlite-migrations.js";

/**
 * Applies the numbered migrations this database has not seen, in order, in one `BEGIN IMMEDIATE`
 * transaction, so two processes opening a new file at once apply each migration exactly once.
 */
export function migrate(db: Database.Database): void {
  const run = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS errand_migration (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const row = db.prepare("SELECT max(version) AS v FROM errand_migration").get() as { v: number | null };
    const current = row.v ?? 0;
    const latest = migrations[migrations.length - 1]?.version ?? 0;
    if (current > latest) {
      throw new ErrandError(
        "STORE_ERROR",
        `the database is at schema version ${current}, newer than this errand (${latest}); upgrade errand`,
      );
    }
    for (const m of migrations) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      db.prepare("INSERT INTO errand_migration (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        Date.now(),
      );
    }
  });
  run.immediate();
}
