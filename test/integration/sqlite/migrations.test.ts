import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { defineJob, openQueue } from "../../../src/index.js";
import { migrations } from "../../../src/store/generated/sqlite-migrations.js";
import { ManualClock } from "../../../src/testing/index.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-migrate-");

/** A database made by the migrations up to `version`, as an older errand left it. */
function databaseAt(file: string, version: number): void {
  const db = new Database(file);
  db.exec(
    "CREATE TABLE errand_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  for (const m of migrations.filter((x) => x.version <= version)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO errand_migration VALUES (?, ?, ?)").run(m.version, m.name, 0);
  }
  db.close();
}

const noop = defineJob({ type: "noop", handler: async () => null });

describe("the SQLite store's migrations", () => {
  it("take a version 9 database's waiting keyed jobs into version 10's parking", async () => {
    const file = tempFile();
    databaseAt(file, 9);
    const queueAt9 = new Database(file);
    const insert = queueAt9.prepare(`INSERT INTO errand_job (id, type, queue, state, payload, priority,
      weight, run_at, max_attempts, backoff, delivery, created_at, key, attempt, lease_expires_at, worker_id)
      VALUES (?, 'one', 'default', ?, '{}', 0, 1, 1000, 5, '', 'at_least_once', ?, ?, ?, ?, ?)`);
    insert.run("a1", "active", 900, "a", 1, 60_000, "w");
    for (let i = 2; i <= 5; i++) insert.run(`a${i}`, "pending", 900 + i, "a", 0, null, null);
    insert.run("b1", "pending", 1000, "b", 0, null, null);
    queueAt9.close();

    const queue = await openQueue({ store: `sqlite:${file}`, clock: new ManualClock(5000) });
    try {
      const one = defineJob({ type: "one", keyConcurrency: 1, handler: async () => null });
      queue.register(one);
      // a1 runs: a's waiting jobs are parked by this claim, b's job starts.
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(["b1"]);
      const db = new Database(file, { readonly: true });
      expect(db.prepare("SELECT id FROM errand_job WHERE parked = 1 ORDER BY id").pluck().all()).toEqual([
        "a2",
        "a3",
        "a4",
        "a5",
      ]);
      db.close();
      const a1 = (await queue.get("a1"))!;
      expect(await queue.complete(a1, null)).toBe(true);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual(["a2"]);
    } finally {
      await queue.close();
    }
  });

  it("give a version 12 database's key whose rate-parked jobs have no wake a way back (version 13)", async () => {
    const file = tempFile();
    databaseAt(file, 12);
    const at12 = new Database(file);
    // What version 12 could leave: a key's jobs parked by its rate limit, no wake, nothing running.
    const insert = at12.prepare(`INSERT INTO errand_job (id, type, queue, state, payload, priority,
      weight, run_at, max_attempts, backoff, delivery, created_at, key, attempt, parked)
      VALUES (?, 'krate', 'default', 'pending', '{}', 0, 1, 1000, 5, '', 'at_least_once', ?, 'a', 0, 3)`);
    for (let i = 2; i <= 4; i++) insert.run(`a${i}`, 900 + i);
    at12.close();

    const clock = new ManualClock(5000);
    const queue = await openQueue({ store: `sqlite:${file}`, clock });
    try {
      queue.register(
        defineJob({
          type: "krate",
          keyConcurrency: 1,
          keyRateLimit: { limit: 1, periodMs: 100 },
          handler: async () => null,
        }),
      );
      const ran: string[] = [];
      for (let step = 0; step < 5; step++) {
        for (const j of await queue.lease({ limit: 10, maintenance: false })) {
          ran.push(j.id);
          expect(await queue.complete(j, null)).toBe(true);
        }
        await clock.advance(1_000);
      }
      expect(ran).toEqual(["a2", "a3", "a4"]);
    } finally {
      await queue.close();
    }
  });

  it("keep every finished job, field for field, through version 9's rebuild of the history table", async () => {
    const file = tempFile();
    databaseAt(file, 8);
    const done = new Database(file);
    const insert =
      done.prepare(`INSERT INTO errand_job_done (id, type, queue, state, payload, checkpoint, result,
      priority, weight, run_at, expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms,
      unique_key, errors, lease_expirations, created_at, started_at, finished_at, owner, depends_on,
      on_dependency_failure, key, debounce_key, snoozes)
      VALUES (?, 'noop', 'default', ?, '{"n":1}', '{"c":1}', ?, 2, 3, 1000, 9000, 2, 5,
      '{"type":"fixed","delayMs":5}', 'r', 'at_most_once', 700, 'u', '[{"attempt":1,"message":"x","at":1}]',
      1, 900, 950, 2000, 'team', '["d"]', 'run', 'k', 'dk', 4)`);
    insert.run("a", "completed", '{"ok":true}');
    insert.run("b", "dead", null);
    insert.run("c", "cancelled", null);
    insert.run("d", "expired", null);
    const before = done.prepare("SELECT * FROM errand_job_done ORDER BY id").all();
    done.close();

    const queue = await openQueue({ store: `sqlite:${file}`, clock: new ManualClock(5000) });
    try {
      expect((await queue.get("a"))!.result).toEqual({ ok: true });
      expect((await queue.get("b"))!.state).toBe("dead");
      const { jobs } = await queue.list({ state: "cancelled" });
      expect(jobs.map((j) => j.id)).toEqual(["c"]);
      // A new completion goes into the rebuilt table.
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease();
      expect(await queue.complete(leased!, 1)).toBe(true);
      expect((await queue.get(job.id))!.state).toBe("completed");
    } finally {
      await queue.close();
    }
    const db = new Database(file);
    try {
      const after = db
        .prepare("SELECT * FROM errand_job_done WHERE id IN ('a','b','c','d') ORDER BY id")
        .all();
      expect(after).toEqual(before);
      expect(db.prepare("SELECT max(version) FROM errand_migration").pluck().get()).toBe(
        migrations[migrations.length - 1]!.version,
      );
      // The check still holds, and compiles to no ephemeral table per insert.
      expect(() => db.prepare("UPDATE errand_job_done SET state = 'pending' WHERE id = 'a'").run()).toThrow(
        /CHECK constraint failed/,
      );
      const program = db
        .prepare(`EXPLAIN INSERT INTO errand_job_done (id, type, queue, state, payload, priority, weight, run_at,
          attempt, max_attempts, backoff, delivery, errors, lease_expirations, created_at, finished_at)
          VALUES ('z', 't', 'q', 'completed', '{}', 0, 1, 0, 1, 5, '{}', 'at_least_once', '[]', 0, 0, 0)`)
        .all() as Array<{ opcode: string }>;
      expect(program.some((op) => op.opcode === "OpenEphemeral")).toBe(false);
    } finally {
      db.close();
    }
  });
});
