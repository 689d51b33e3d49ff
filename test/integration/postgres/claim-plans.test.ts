/**
 * A claim statement keeps one plan (postgres/literal-limit.ts): with its row limit written into
 * the text, PostgreSQL's generic plan costs what the custom one does and is kept after the fifth
 * call; with `LIMIT $3` every claim was planned again. Read from pg_prepared_statements of the
 * one connection the store runs its statements on (its pool's other one holds LISTEN).
 * The claim's other values are out of the planner's sight, so a custom plan costs the walk as the
 * generic one does, however the table is shared between queues and types.
 * Only a claim with one open type is written so (see claim.ts).
 */
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import { Queue } from "../../../src/queue.js";
import { LITERAL_LIMITS } from "../../../src/store/postgres/literal-limit.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";

interface Prepared {
  statement: string;
  generic_plans: string;
  custom_plans: string;
}

async function openOnOneConnection(): Promise<{ queue: Queue; prepared: () => Promise<Prepared[]> }> {
  const schema = freshSchema("errand_plans");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const store = await PostgresStore.open({ pool, schema, retryMs: 0, logger: silentLogger });
  onTestFinished(async () => {
    await store.close();
    await pool.end();
    await dropSchema(schema);
  });
  return {
    queue: new Queue(store),
    prepared: async () =>
      (
        await pool.query<Prepared>(
          "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FOR UPDATE OF j SKIP LOCKED%'",
        )
      ).rows,
  };
}

/**
 * The claim statements prepared with `LIMIT <limit>` written in: a walk's LIMIT, ending its line
 * (a priority band's probe, `… LIMIT 1)`, is not one; postgres/bands.ts).
 */
function withLimit(rows: Prepared[], limit: number | string): Prepared[] {
  return rows.filter((r) => new RegExp(`LIMIT ${limit === "$3" ? "\\$3" : limit}\n`).test(r.statement));
}

test("a claim of one type keeps its generic plan after the fifth call", async () => {
  const { queue, prepared } = await openOnOneConnection();
  await queue.enqueueMany(
    "send",
    Array.from({ length: 80 }, (_, i) => ({ i })),
  );
  const order: number[] = [];
  for (let round = 0; round < 8; round++) {
    for (const job of await queue.lease({ types: ["send"], limit: 5 }))
      order.push((job.payload as { i: number }).i);
  }
  // The claims took the jobs as before: 40 of them, in claim order.
  expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i));
  const [claim] = withLimit(await prepared(), 5);
  expect(claim).toBeDefined();
  expect(Number(claim!.custom_plans)).toBe(5);
  expect(Number(claim!.generic_plans)).toBe(3);
});

test("a claim of several types keeps its plan too, whatever the types' shares of the table", async () => {
  const { queue, prepared } = await openOnOneConnection();
  // Shares a custom plan would see (and a generic one would not): a large type, a small one, and
  // a third the claims never name.
  for (const [type, n] of [
    ["a", 300],
    ["b", 20],
    ["c", 100],
  ] as const) {
    await queue.enqueueMany(
      type,
      Array.from({ length: n }, (_, i) => ({ i })),
    );
  }
  const taken: string[] = [];
  for (let round = 0; round < 8; round++) {
    for (const job of await queue.lease({ types: ["a", "b"], limit: 4 })) {
      taken.push(`${job.type}${(job.payload as { i: number }).i}`);
    }
  }
  // Claim order across the two types: a's first (enqueued first, same priority).
  expect(taken).toEqual(Array.from({ length: 32 }, (_, i) => `a${i}`));
  const [claim] = withLimit(await prepared(), 4);
  expect(claim!.statement).toContain("unnest((SELECT $7::text[]))");
  expect(Number(claim!.custom_plans)).toBe(5);
  expect(Number(claim!.generic_plans)).toBe(3);
});

test(`past ${LITERAL_LIMITS} distinct limits a claim runs the statement as written`, async () => {
  const { queue, prepared } = await openOnOneConnection();
  await queue.enqueueMany(
    "send",
    Array.from({ length: 200 }, (_, i) => ({ i })),
  );
  const order: number[] = [];
  const limits = Array.from({ length: LITERAL_LIMITS + 2 }, (_, i) => i + 1);
  for (const limit of limits) {
    const jobs = await queue.lease({ types: ["send"], limit });
    expect(jobs).toHaveLength(limit);
    for (const job of jobs) order.push((job.payload as { i: number }).i);
  }
  expect(order).toEqual(Array.from({ length: order.length }, (_, i) => i));
  const rows = await prepared();
  for (const limit of limits.slice(0, LITERAL_LIMITS)) expect(withLimit(rows, limit)).toHaveLength(1);
  for (const limit of limits.slice(LITERAL_LIMITS)) expect(withLimit(rows, limit)).toHaveLength(0);
  // The last two ran the written statement, planned for their limits.
  const [written] = withLimit(rows, "$3");
  expect(Number(written!.custom_plans)).toBe(2);
});
