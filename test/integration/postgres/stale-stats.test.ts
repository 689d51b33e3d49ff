/**
 * A batch of outcomes (completeMany, completeLeaves, failMany, heartbeatMany) finds each job by
 * primary key, whatever the table's statistics say. With statistics taken while nearly every job was pending
 * (what autovacuum leaves after a bulk enqueue), `state = 'active'` looked like a row or two, and
 * the planner read every active job (errand_job_lease, whole) for each item: a 20,000-job drain
 * ran ×2.5–4 slower. So did one attempt's checkpoint, release and snooze, once each. Measured here
 * by the rows the plans' scans read, not by time.
 */
import { expect, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { statements } from "../../../src/store/generated/postgres-queries.js";
import { sqlFragments } from "../../../src/store/postgres/columns.js";
import { renderStatements } from "../../../src/store/sql-template.js";
import { openStores, type PlanNode, withPg } from "../../helpers/postgres.js";

/** Rows the plan's scans and changes of errand_job read (returned or filtered out), over all their loops. */
function jobRowsRead(node: PlanNode): number {
  const own =
    node["Relation Name"] === "errand_job"
      ? (node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0)) * node["Actual Loops"]
      : 0;
  return own + (node.Plans ?? []).reduce((n, child) => n + jobRowsRead(child), 0);
}

const BATCH = 50;

test("outcomes, heartbeats, checkpoints, releases and snoozes probe their jobs by primary key with 1,000 active jobs and statistics from when all were pending", async () => {
  const {
    schema,
    all: [store],
  } = await openStores(1, "errand_ss");
  const queue = new Queue(store!);
  await queue.enqueueMany(
    "work",
    Array.from({ length: 3_000 }, (_, i) => ({ i })),
  );
  // Statistics now say every job is pending, as autovacuum's analyze after a bulk enqueue would.
  await withPg((c) => c.query(`ANALYZE "${schema}".errand_job`));
  const active = await queue.lease({ limit: 1_000 });
  expect(active).toHaveLength(1_000);

  const sql = renderStatements(statements, sqlFragments(schema, `${schema}_wake`));
  const batch = active.slice(0, BATCH);
  const ids = batch.map((j) => j.id);
  const attempts = batch.map((j) => j.attempt);
  const now = Date.now();
  const cases: Array<[string, string, unknown[]]> = [
    ["completeMany", sql.completeMany, [ids, attempts, ids.map(() => "null"), now, false, false]],
    ["completeLeaves", sql.completeLeaves, [ids, attempts, ids.map(() => "null"), now]],
    ["completeLeavesDiscard", sql.completeLeavesDiscard, [ids, attempts]],
    [
      "failMany (retry)",
      sql.failMany,
      [
        ids,
        attempts,
        ids.map(() => 0),
        ids.map(() => now + 60_000),
        ids.map(() => null),
        ids.map(() => "{}"),
        now,
        "t",
        false,
      ],
    ],
    [
      "failMany (dead)",
      sql.failMany,
      [
        ids,
        attempts,
        ids.map(() => 0),
        ids.map(() => null),
        ids.map(() => null),
        ids.map(() => "{}"),
        now,
        "t",
        false,
      ],
    ],
    ["heartbeatMany", sql.heartbeatMany, [now + 60_000, ids, attempts]],
  ];
  const one = active[BATCH]!;
  const single: Array<[string, string, unknown[]]> = [
    ["checkpoint", sql.checkpoint, [one.id, one.attempt, "{}"]],
    ["release", sql.release, [one.id, one.attempt, now, "t"]],
    ["snooze", sql.snooze, [one.id, one.attempt, now + 60_000, now, "t"]],
  ];
  for (const [name, text, values] of [...cases, ...single]) {
    const items = cases.some(([n]) => n === name) ? BATCH : 1;
    const { read, changed } = await withPg(async (c) => {
      await c.query("BEGIN");
      try {
        // A prepared statement, as the store runs it, planned both ways PostgreSQL may: for these
        // values (custom, its first five runs) and for any (generic, what later runs may settle on).
        const plans: PlanNode[] = [];
        for (const mode of ["force_custom_plan", "force_generic_plan"]) {
          await c.query("SAVEPOINT run");
          await c.query(`SET LOCAL plan_cache_mode = ${mode}`);
          const { rows } = await c.query({
            name: `${name}_${mode}`,
            text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
            values,
          });
          plans.push(rows[0]["QUERY PLAN"][0].Plan as PlanNode);
          await c.query("ROLLBACK TO SAVEPOINT run");
        }
        const { rows, rowCount } = await c.query(text, values);
        return {
          read: plans.map(jobRowsRead),
          changed: items === 1 ? (rows[0].changed ?? rowCount) : rowCount,
        };
      } finally {
        await c.query("ROLLBACK");
      }
    });
    // Each item: one probe, then its change. Before, ~2,000 for a batch and 1,000 for one.
    for (const rows of read) expect(rows, name).toBeLessThanOrEqual(3 * items);
    expect(changed, name).toBe(items);
  }
});
