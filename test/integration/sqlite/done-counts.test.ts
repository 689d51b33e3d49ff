/**
 * SQLite keeps the history's counts as it changes (migration 12, errand_done_count: completions
 * and deletes counted by the store's code, other inserts by a trigger), so stats() does not read
 * every finished job. These check the counts stay exact through every writer of the history and a
 * prune, and that the migration counts the history an older errand left.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { openQueue, type Queue } from "../../../src/queue.js";
import { migrations } from "../../../src/store/generated/sqlite-migrations.js";
import { historyGroups, mail, report, writeHistory } from "../../helpers/history.js";

function freshFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "errand-counts-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "q.db");
}

async function open(file: string, clock: ManualClock): Promise<Queue> {
  const queue = await openQueue({
    store: `sqlite:${file}`,
    clock,
    retention: { completed: "1h", dead: "1h" },
  });
  onTestFinished(() => queue.close());
  queue.register(mail);
  queue.register(report);
  return queue;
}

/** The history counted row by row, by state, queue and type. */
function counted(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT state, queue, type, count(*) AS n FROM errand_job_done GROUP BY 1, 2, 3")
      .all() as Array<{ state: string; queue: string; type: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [`${r.state} ${r.queue} ${r.type}`, r.n]));
  } finally {
    db.close();
  }
}

test("stats() counts the history exactly through every writer and a prune", async () => {
  const file = freshFile();
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const queue = await open(file, clock);

  await writeHistory(queue, clock, () => counted(file));

  await clock.advance(3_600_001);
  await queue.prune();
  expect(await historyGroups(queue)).toEqual(counted(file));
  const db = new Database(file, { readonly: true });
  expect(db.prepare("SELECT count(*) FROM errand_done_count WHERE n = 0").pluck().get()).toBe(0);
  db.close();
});

test("the migration counts the history a version 11 file holds", async () => {
  const file = freshFile();
  const db = new Database(file);
  db.exec(
    "CREATE TABLE errand_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  for (const m of migrations.filter((x) => x.version <= 11)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO errand_migration VALUES (?, ?, 0)").run(m.version, m.name);
  }
  db.prepare(
    `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100)
     INSERT INTO errand_job_done (id, type, queue, state, payload, priority, weight, run_at, attempt,
       max_attempts, backoff, delivery, errors, lease_expirations, created_at, finished_at)
     SELECT 'h' || n, 'mail', 'default', CASE WHEN n % 4 = 0 THEN 'dead' ELSE 'completed' END, '{}', 0, 1,
       0, 1, 3, 'e', 'at_least_once', '[]', 0, 0, 0 FROM g`,
  ).run();
  db.close();
  const queue = await open(file, new ManualClock(Date.UTC(2026, 0, 1)));
  const { states } = await queue.stats();
  expect([states.completed, states.dead]).toEqual([75, 25]);
  expect(await historyGroups(queue)).toEqual(counted(file));
});

test("stats() shows no negative count when an errand older than migration 12 completed jobs in the file", async () => {
  const file = freshFile();
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const queue = await open(file, clock);
  // Completions by the older errand, still running on the file: history rows nothing counted.
  const db = new Database(file);
  db.prepare(
    `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 10)
     INSERT INTO errand_job_done (id, type, queue, state, payload, priority, weight, run_at, attempt,
       max_attempts, backoff, delivery, errors, lease_expirations, created_at, finished_at)
     SELECT 'old' || n, 'mail', 'default', 'completed', '{}', 0, 1, 0, 1, 3, 'e', 'at_least_once', '[]',
       0, 0, ? FROM g`,
  ).run(clock.now());
  db.close();
  expect((await queue.stats()).states.completed).toBe(0);

  // This errand's prune takes them out of counts that never had them.
  await clock.advance(3_600_001);
  await queue.prune();
  expect(counted(file)).toEqual({});
  const stats = await queue.stats();
  expect(stats.states.completed).toBe(0);
  expect(stats.queues.default?.completed ?? 0).toBe(0);
  expect(stats.types.mail?.completed ?? 0).toBe(0);
});
