/**
 * A page of `list()` or `dependents()` reads about a page of rows, whatever the history, in the
 * plan PostgreSQL keeps for a pooled connection (the generic plan: after five calls it is the one
 * that runs). Written as "$4 IS NULL OR id < $4" with one UNION ALL under the outer ORDER BY, that
 * plan read and sorted both tables whole for every page (691 ms beside 1,000,000 finished jobs)
 * and a deep cursor walked every newer row. Measured by the rows the plan's scans return.
 */
import { expect, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { statements } from "../../../src/store/generated/postgres-queries.js";
import { sqlFragments } from "../../../src/store/postgres/columns.js";
import { renderStatements } from "../../../src/store/sql-template.js";
import { openStores, type PlanNode, withPg } from "../../helpers/postgres.js";

/**
 * What the plan did with the history table (errand_job_done, 3,000 rows here): the rows its scans
 * returned over all their loops, the rows they read (those and the ones a filter dropped), and how
 * it read it. (The hot table holds one job: any plan of it
 * is cheap.)
 */
function history(node: PlanNode, seen = { rows: 0, read: 0, scans: [] as string[] }): typeof seen {
  if (node["Relation Name"] === "errand_job_done") {
    seen.rows += node["Actual Rows"] * node["Actual Loops"];
    seen.read += (node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0)) * node["Actual Loops"];
    seen.scans.push(node["Node Type"]);
  }
  for (const child of node.Plans ?? []) history(child, seen);
  return seen;
}

test("pages of list() and dependents() read about a page in the generic plan, from the cursor on", async () => {
  const {
    schema,
    all: [store],
  } = await openStores(1, "errand_lp");
  const queue = new Queue(store!);
  const ids = await queue.enqueueManyIds(
    "t",
    Array.from({ length: 3000 }, (_, i) => ({ i })),
  );
  const dependent = await queue.enqueue("t", null, { dependsOn: [ids[0]!] });
  for (let leased = await queue.lease({ limit: 500, leaseMs: 60_000 }); leased.length > 0; ) {
    await queue.attempts.completeMany(
      leased.map((j) => ({ id: j.id, attempt: j.attempt, result: "null", value: null })),
    );
    leased = await queue.lease({ limit: 500, leaseMs: 60_000 });
  }
  await withPg((c) => c.query(`ANALYZE "${schema}".errand_job_done`));
  const sorted = [...ids].sort();
  const deep = sorted[2000]!;
  const floor = sorted[1900]!;

  const sql = renderStatements(statements, sqlFragments(schema, `${schema}_wake`));
  const plans = await withPg(async (c) => {
    await c.query("SET plan_cache_mode = force_generic_plan");
    const explain = async (name: string, text: string, types: string, args: string) => {
      await c.query(`PREPARE ${name}(${types}) AS ${text}`);
      const { rows } = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`);
      return history(rows[0]["QUERY PLAN"][0].Plan as PlanNode);
    };
    const list = "text, text, text, text, integer, text, text";
    return {
      all: await explain("la", sql.listAll, list, "NULL, NULL, NULL, NULL, 26, NULL, NULL"),
      allDeep: await explain("lad", sql.listAll, list, `NULL, NULL, NULL, '${deep}', 26, NULL, NULL`),
      doneDeep: await explain(
        "ldd",
        sql.listDone,
        list,
        `'completed', NULL, NULL, '${deep}', 26, NULL, NULL`,
      ),
      // A type no job has, down to a floor 100 ids below the cursor: those 100 rows and no more.
      rare: await explain("lr", sql.listAll, list, `NULL, NULL, 'rare', '${deep}', 26, NULL, '${floor}'`),
      floor: await explain(
        "lf",
        sql.listFloor,
        "text, integer, boolean, boolean",
        `'${deep}', 99, true, true`,
      ),
      dependents: await explain("dp", sql.dependents, "text, text, integer", `'${ids[0]}', NULL, 26`),
    };
  });
  for (const [name, plan] of Object.entries(plans)) {
    if (name === "dependents" || name === "rare" || name === "floor") continue;
    expect(plan.scans, name).toEqual(["Index Scan"]);
    // A page and the one row more that says whether another follows.
    expect(plan.rows, name).toBeLessThanOrEqual(27);
  }
  // A filtered page reads its stretch of the key, and the floor the stretch's ids alone.
  expect(plans.rare.scans).toEqual(["Index Scan"]);
  expect(plans.rare.rows).toBe(0);
  expect(plans.rare.read).toBe(100);
  expect(plans.floor.scans).toHaveLength(1);
  expect(plans.floor.scans[0]).toMatch(/^Index (Only )?Scan$/);
  expect(plans.floor.rows).toBe(100);
  // The dependents' page reads the edges' key, then each job by its own.
  expect(plans.dependents.rows).toBeLessThanOrEqual(27);
  // And the pages are right: newest first, below the cursor.
  const page = await queue.list({ limit: 26 });
  expect(page.jobs[0]!.id).toBe(dependent.id);
  const below = await queue.list({ cursor: deep, limit: 26 });
  expect(below.jobs.map((j) => j.id)).toEqual(sorted.slice(1974, 2000).reverse());
});
