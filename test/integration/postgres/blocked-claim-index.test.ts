/**
 * Issue 14: blocked jobs cost claims nothing on PostgreSQL because they never enter the claim's
 * partial index (`WHERE state = 'pending'`), not even as a first pending version for vacuum to
 * clear: a job with unfinished dependencies is inserted blocked. Measured by the index's size,
 * which an entry per blocked job (live or dead) would grow by dozens of pages.
 */
import { expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

const PAGE = 8192;

test("5,000 blocked jobs leave the claim index at its one-leaf size, and still expire", async () => {
  const schema = freshSchema("errand_blk");
  const store = await PostgresStore.open({ connectionString: PG_URL, schema, logger: silentLogger });
  onTestFinished(async () => {
    await store.close();
    await dropSchema(schema);
  });
  const clock = new ManualClock();
  const queue = new Queue(store, { clock });
  const root = await queue.enqueue("root", {});
  const blocked = await queue.enqueueMany(
    "leaf",
    Array.from({ length: 5_000 }, (_, i) => ({ i })),
    { dependsOn: [root.id], expiresInMs: 60_000 },
  );
  expect(blocked.every((j) => j.state === "blocked")).toBe(true);
  const size = (index: string) =>
    withPg(async (c) => {
      const { rows } = await c.query("SELECT pg_relation_size($1::regclass)::int AS n", [
        `"${schema}".${index}`,
      ]);
      return rows[0].n as number;
    });
  // The metapage and one leaf holding the root job's entry.
  expect(await size("errand_job_claim")).toBeLessThanOrEqual(2 * PAGE);
  // The measure is sharp enough: as many pending jobs take dozens of pages.
  await queue.enqueueMany(
    "free",
    Array.from({ length: 5_000 }, (_, i) => ({ i })),
    { queue: "other" },
  );
  expect(await size("errand_job_claim")).toBeGreaterThan(10 * PAGE);
  await clock.advance(60_001);
  expect(await store.expirePending({ now: clock.now(), limit: 10_000 })).toHaveLength(5_000);
  expect((await queue.stats()).states).toMatchObject({ blocked: 0, expired: 5_000, pending: 5_001 });
});
