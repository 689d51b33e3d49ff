/**
 * Issue 14 on PostgreSQL, across connections (separate pools, as separate processes would be):
 * completions of several dependencies of one job at the same moment unblock it exactly once, and
 * an enqueue that names a dependency while that dependency is finishing (or the reverse) never
 * leaves the new job blocked on a job that has finished. The interleavings that matter are forced,
 * not hoped for: a caller's transaction holds the enqueue open while the completion or the cancel
 * is seen waiting for its lock in pg_stat_activity.
 */
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import type { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { NewJob, Store } from "../../../src/store/store.js";
import { newJob } from "../../helpers/new-job.js";
import { openStores, PG_URL, someoneWaits } from "../../helpers/postgres.js";

const NOW = Date.UTC(2026, 0, 1);

function stores(n: number) {
  return openStores(n, "errand_deps");
}

function job(id: string, dependsOn: string[] | null = null, type = "t"): NewJob {
  const deps = dependsOn === null ? null : JSON.stringify(dependsOn);
  return newJob({ id, type, queue: "q", payload: "null", runAt: NOW, dependsOn: deps });
}

async function claimAll(store: Store, types: string[], limit: number) {
  return store.claim({
    now: NOW,
    workerId: "w",
    queues: [{ name: "q", weight: 1 }],
    types,
    limit,
    leaseMs: 60_000,
  });
}

test("several connections completing the dependencies of one job at once unblock it exactly once", {
  timeout: 60_000,
}, async () => {
  const { all } = await stores(4);
  const [a] = all as [PostgresStore];
  for (let round = 0; round < 8; round++) {
    const deps = Array.from({ length: 16 }, (_, i) => `r${round}-d${String(i).padStart(2, "0")}`);
    const join = `r${round}-join`;
    await a.enqueueMany({ now: NOW, jobs: deps.map((id) => job(id)) });
    const [r] = await a.enqueueMany({ now: NOW, jobs: [job(join, deps, "join")] });
    expect(r).toMatchObject({ inserted: true, record: { state: "blocked", blockedBy: 16 } });
    const claimed = await claimAll(a, ["t"], 16);
    expect(claimed).toHaveLength(16);
    // Each store completes four of them, in an order of its own, all at the same moment.
    const results = await Promise.all(
      all.map((store, s) => {
        const mine = claimed.filter((_, i) => i % all.length === s);
        if (s % 2 === 1) mine.reverse();
        return store.completeMany({
          now: NOW,
          items: mine.map((c) => ({ id: c.id, attempt: c.attempt, result: "1" })),
        });
      }),
    );
    expect(results.flat().every(Boolean)).toBe(true);
    expect(await a.get({ id: join })).toMatchObject({ state: "pending", blockedBy: 0 });
    const taken = await Promise.all(all.map((store) => claimAll(store, ["join"], 5)));
    expect(taken.flat().map((j) => j.id)).toEqual([join]);
  }
});

test("a completion waiting on an enqueue that names its job sees the new dependent and unblocks it", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(2);
  const [a, b] = all as [PostgresStore, PostgresStore];
  await a.enqueueMany({ now: NOW, jobs: [job("dep")] });
  const [claimed] = await claimAll(a, ["t"], 1);
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  const [r] = await b.enqueueMany({ now: NOW, jobs: [job("after", ["dep"], "after")], connection: client });
  expect(r).toMatchObject({ inserted: true, record: { state: "blocked", blockedBy: 1 } });
  // The completion starts while the enqueue holds the dependency's row lock, and waits for it.
  const completing = a.completeMany({
    now: NOW,
    items: [{ id: "dep", attempt: claimed!.attempt, result: "1" }],
  });
  await someoneWaits(schema);
  await client.query("COMMIT");
  expect(await completing).toEqual([true]);
  expect(await a.get({ id: "after" })).toMatchObject({ state: "pending", blockedBy: 0 });
});

test("an enqueue racing the completion of its dependency never leaves the new job blocked", {
  timeout: 60_000,
}, async () => {
  const { all } = await stores(2);
  const [a, b] = all as [PostgresStore, PostgresStore];
  for (let round = 0; round < 40; round++) {
    const dep = `dep-${round}`;
    await a.enqueueMany({ now: NOW, jobs: [job(dep)] });
    const [claimed] = await claimAll(a, ["t"], 1);
    const [done, [enqueued]] = await Promise.all([
      a.completeMany({ now: NOW, items: [{ id: dep, attempt: claimed!.attempt, result: "1" }] }),
      b.enqueueMany({ now: NOW, jobs: [job(`after-${round}`, [dep], "after")] }),
    ]);
    expect(done).toEqual([true]);
    expect(enqueued).toMatchObject({ inserted: true });
    expect(await a.get({ id: `after-${round}` })).toMatchObject({ state: "pending", blockedBy: 0 });
  }
});

test("a cancel cascading through a job that an open enqueue names reaches the new dependent too", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(2);
  const [a, b] = all as [PostgresStore, PostgresStore];
  await a.enqueueMany({ now: NOW, jobs: [job("root"), job("mid", ["root"], "mid")] });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  await b.enqueueMany({ now: NOW, jobs: [job("leaf", ["mid"], "leaf")], connection: client });
  const cancelling = a.cancel({ id: "root", now: NOW });
  await someoneWaits(schema);
  await client.query("COMMIT");
  expect((await cancelling)?.record.state).toBe("cancelled");
  const [mid, leaf] = await a.getMany({ ids: ["mid", "leaf"] });
  expect(mid).toMatchObject({ state: "cancelled" });
  expect(leaf).toMatchObject({ state: "cancelled" });
  expect(JSON.parse(leaf!.errors).at(-1)).toMatchObject({ kind: "dependency_failed", dependency: "mid" });
});

test("a cancel waiting on an enqueue of a chain that names its job cascades down the whole chain", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(2);
  const [a, b] = all as [PostgresStore, PostgresStore];
  await a.enqueueMany({ now: NOW, jobs: [job("root")] });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  // Each link waits for the one before it in the same call: marked as having dependents as it
  // goes in, so the cascade that reaches the first one goes on down.
  const links = Array.from({ length: 5 }, (_, i) => job(`link-${i}`, [i === 0 ? "root" : `link-${i - 1}`]));
  for (const idsGenerated of [true, false]) {
    const ids = idsGenerated ? links : links.map((l) => ({ ...l, id: `${l.id}-b` }));
    const chained = ids.map((l, i) => (i === 0 ? l : { ...l, dependsOn: JSON.stringify([ids[i - 1]!.id]) }));
    const results = await b.enqueueMany({ now: NOW, jobs: chained, connection: client, idsGenerated });
    expect(results.map((r) => r.inserted && r.record?.state)).toEqual(new Array(5).fill("blocked"));
  }
  const cancelling = a.cancel({ id: "root", now: NOW });
  await someoneWaits(schema);
  await client.query("COMMIT");
  expect((await cancelling)?.record.state).toBe("cancelled");
  const ids = links.flatMap((l) => [l.id, `${l.id}-b`]);
  const stored = await a.getMany({ ids });
  expect(stored.map((j) => j?.state)).toEqual(new Array(10).fill("cancelled"));
});
