/**
 * PostgreSQL keeps the history's counts as it changes (migration 12: errand_done_delta, folded
 * into errand_done_count by the retention pass), so stats() does not read every finished job.
 * These check that the counts stay exact through every writer of the history and a fold, that
 * stats() no longer reads errand_job_done, and that the migration counts the history an older
 * errand left.
 */
import { expect, onTestFinished, test } from "vitest";
import { openQueue, type Queue } from "../../../src/queue.js";
import { DEFAULT_BACKOFF_TEXT } from "../../../src/store/packed-row.js";
import { ManualClock } from "../../../src/testing/index.js";
import { historyGroups, mail, report, writeHistory } from "../../helpers/history.js";
import { dropSchema, freshSchema, pgUrl, schemaAt, withPg } from "../../helpers/postgres.js";

async function open(schema: string, clock: ManualClock): Promise<Queue> {
  const queue = await openQueue({ store: pgUrl(schema), clock, retention: { completed: "1h", dead: "1h" } });
  onTestFinished(() => queue.close());
  queue.register(mail);
  queue.register(report);
  return queue;
}

/** The history counted row by row, by state, queue and type, as stats() once counted it. */
async function counted(schema: string): Promise<Record<string, number>> {
  return withPg(async (c) => {
    const { rows } = await c.query(
      `SELECT state, queue, type, count(*)::integer AS n FROM "${schema}".errand_job_done GROUP BY 1, 2, 3`,
    );
    return Object.fromEntries(rows.map((r) => [`${r.state} ${r.queue} ${r.type}`, r.n as number]));
  });
}

async function deltaRows(schema: string): Promise<number> {
  return withPg(
    async (c) =>
      (await c.query(`SELECT count(*)::integer AS n FROM "${schema}".errand_done_delta`)).rows[0].n,
  );
}

test("stats() counts the history exactly through every writer, a prune and a fold", async () => {
  const schema = freshSchema("errand_done_counts");
  onTestFinished(() => dropSchema(schema));
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const queue = await open(schema, clock);

  await writeHistory(queue, clock, () => counted(schema));
  expect(await deltaRows(schema)).toBeGreaterThan(0);

  await clock.advance(3_600_001);
  await queue.prune();
  expect(await deltaRows(schema)).toBe(0);
  expect(await historyGroups(queue)).toEqual(await counted(schema));
  // Every group pruned to nothing: its count row goes too.
  const left = await withPg(
    async (c) =>
      (await c.query(`SELECT count(*)::integer AS n FROM "${schema}".errand_done_count WHERE n = 0`)).rows[0]
        .n,
  );
  expect(left).toBe(0);
});

test("stats() reads no row of errand_job_done: it answers while another session holds the table", async () => {
  const schema = freshSchema("errand_done_lock");
  onTestFinished(() => dropSchema(schema));
  const queue = await open(schema, new ManualClock(Date.UTC(2026, 0, 1)));
  await queue.enqueueMany(mail, [{}, {}]);
  for (const job of await queue.lease({ limit: 2 })) await queue.complete(job, null);

  await withPg(async (c) => {
    await c.query("BEGIN");
    await c.query(`LOCK TABLE "${schema}".errand_job_done IN ACCESS EXCLUSIVE MODE`);
    try {
      // A read of the table would wait for this lock until the test timed out.
      expect((await queue.stats()).states.completed).toBe(2);
    } finally {
      await c.query("ROLLBACK");
    }
  });
});

test("two queues completing at once leave exact counts: deltas are inserts, never a shared row", async () => {
  const schema = freshSchema("errand_done_race");
  onTestFinished(() => dropSchema(schema));
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const a = await open(schema, clock);
  const b = await open(schema, clock);
  await a.enqueueMany(
    mail,
    Array.from({ length: 400 }, (_, i) => ({ i })),
  );
  const drain = async (q: Queue) => {
    for (let jobs = await q.lease({ limit: 16 }); jobs.length > 0; jobs = await q.lease({ limit: 16 })) {
      await Promise.all(jobs.map((j) => q.complete(j, null)));
    }
  };
  await Promise.all([drain(a), drain(b), drain(a), drain(b)]);
  expect((await a.stats()).states.completed).toBe(400);
  expect(await historyGroups(a)).toEqual(await counted(schema));
});

test("the migration counts the history a version 11 schema holds", async () => {
  const schema = freshSchema("errand_mig11");
  onTestFinished(() => dropSchema(schema));
  await schemaAt(schema, 11);
  await withPg(async (c) => {
    await c.query(`SET search_path TO "${schema}"`);
    await c.query(
      `INSERT INTO errand_job_done (id, type, queue, state, payload, priority, weight, run_at, attempt,
         max_attempts, backoff, delivery, errors, lease_expirations, created_at, finished_at)
       SELECT 'h' || g, 'mail', 'default', CASE WHEN g % 4 = 0 THEN 'dead' ELSE 'completed' END, '{}', 0, 1,
         0, 1, 3, $1, 'at_least_once', '[]', 0, 0, 0
       FROM generate_series(1, 100) g`,
      [DEFAULT_BACKOFF_TEXT],
    );
  });
  const queue = await open(schema, new ManualClock(Date.UTC(2026, 0, 1)));
  const { states } = await queue.stats();
  expect([states.completed, states.dead]).toEqual([75, 25]);
  expect(await historyGroups(queue)).toEqual(await counted(schema));
});
