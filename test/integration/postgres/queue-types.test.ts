/**
 * A claim that names no types (`Queue.lease()` without `types`, an HTTP lease without them) first
 * finds the queue's pending types with a loose index scan (queueTypes): one descent of the claim
 * index per type, whatever the number of jobs. Written with min(), the planner walked every
 * pending entry of the queue instead whenever the table's statistics predated its jobs (a new
 * schema, autovacuum not yet round): O(jobs) per claim. Measured here by the rows the plan's
 * scans return, with the statistics made stale on purpose.
 */
import { expect, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { statements } from "../../../src/store/generated/postgres-queries.js";
import { sqlFragments } from "../../../src/store/postgres/columns.js";
import { renderStatements } from "../../../src/store/sql-template.js";
import { openStores, type PlanNode, withPg } from "../../helpers/postgres.js";

/** Rows the plan's scans of errand_job returned, over all their loops. */
function jobRowsRead(node: PlanNode): number {
  const own = node["Relation Name"] === "errand_job" ? node["Actual Rows"] * node["Actual Loops"] : 0;
  return own + (node.Plans ?? []).reduce((n, child) => n + jobRowsRead(child), 0);
}

test("finds a queue's pending types in a few index descents with 20,000 pending jobs and stale statistics", async () => {
  const {
    schema,
    all: [store],
  } = await openStores(1, "errand_qt");
  // Statistics taken while the table is empty, then 20,000 jobs: what a new install sees until
  // autovacuum's next analyze.
  await withPg((c) => c.query(`ANALYZE "${schema}".errand_job`));
  const queue = new Queue(store!);
  for (const type of ["alpha", "beta"]) {
    await queue.enqueueMany(
      type,
      Array.from({ length: 10_000 }, (_, i) => ({ i })),
    );
  }
  await queue.enqueue("gamma", {}, { queue: "elsewhere" });

  const sql = renderStatements(statements, sqlFragments(schema, `${schema}_wake`));
  const plan = await withPg(async (c) => {
    const { rows } = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql.queueTypes}`, ["default"]);
    return rows[0]["QUERY PLAN"][0].Plan as PlanNode;
  });
  // Two types: three descents (alpha, beta, none after), a row or so each.
  expect(jobRowsRead(plan)).toBeLessThanOrEqual(10);
  const found = await withPg((c) => c.query(sql.queueTypes, ["default"]));
  expect(found.rows.map((r) => r.type)).toEqual(["alpha", "beta"]);

  // And a claim naming no types takes the queue's first jobs, in claim order.
  const jobs = await queue.lease({ limit: 3 });
  expect(jobs.map((j) => j.type)).toEqual(["alpha", "alpha", "alpha"]);
});
