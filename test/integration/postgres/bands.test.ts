/**
 * A PostgreSQL claim walks each type by priority band (postgres/bands.ts): within one priority the
 * claim index is in run_at order, so a walk stops at the first job not yet due, where a walk over
 * a range of priorities read every one of them. Measured by the claim index's pages the claim
 * reads in its transaction (pg_stat_get_xact_blocks_fetched), not by time.
 */
import { expect, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { statements } from "../../../src/store/generated/postgres-queries.js";
import { bandedTexts } from "../../../src/store/postgres/bands.js";
import { sqlFragments } from "../../../src/store/postgres/columns.js";
import { oneTypeStatements } from "../../../src/store/postgres/one-type.js";
import { renderStatements } from "../../../src/store/sql-template.js";
import { openStores, withPg } from "../../helpers/postgres.js";

test("a claim reads past no job not yet due at its type's two highest priorities", async () => {
  const {
    schema,
    all: [store],
  } = await openStores(1, "errand_bands");
  const queue = new Queue(store!);
  const later = Array.from({ length: 10_000 }, (_, i) => ({ i }));
  await queue.enqueueManyIds("t", later, { priority: 5, delayMs: 3_600_000 });
  await queue.enqueueManyIds("t", later, { priority: 0, delayMs: 3_600_000 });
  const ready = await queue.enqueueManyIds("t", [{ r: 1 }, { r: 2 }], { priority: 0 });
  await withPg((c) => c.query(`VACUUM ANALYZE "${schema}".errand_job`));

  const sql = renderStatements(statements, sqlFragments(schema, `${schema}_wake`));
  const plain = oneTypeStatements(sql).claim;
  const banded = bandedTexts(sql)(plain);
  expect(banded).not.toBe(plain);
  // The claim statement as the store runs it, inside a transaction rolled back: the jobs it took
  // and the claim index's pages it read.
  const claim = (text: string) =>
    withPg(async (c) => {
      await c.query("BEGIN");
      try {
        const now = Date.now();
        const { rows } = await c.query<{ id: string | null }>(text, [
          "default",
          now,
          50,
          null,
          null,
          "w",
          now + 30_000,
          ["t"],
        ]);
        const pages = await c.query<{ n: string }>(
          `SELECT pg_stat_get_xact_blocks_fetched('"${schema}".errand_job_claim'::regclass) AS n`,
        );
        return { ids: rows.flatMap((r) => (r.id === null ? [] : [r.id])), pages: Number(pages.rows[0]!.n) };
      } finally {
        await c.query("ROLLBACK");
      }
    });
  const before = await claim(plain);
  const after = await claim(banded);
  expect(before.ids).toEqual(ready);
  expect(after.ids).toEqual(ready);
  // 20,000 entries not yet due fill ~200 leaf pages, which the walk over all priorities read.
  expect(before.pages).toBeGreaterThan(150);
  expect(after.pages).toBeLessThan(50);
});
