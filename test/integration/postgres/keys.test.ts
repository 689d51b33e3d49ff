/**
 * Issue 15 on PostgreSQL, across connections (separate pools, as separate processes would be):
 * two enqueues with one debounce key make one job even when they race (the loser's insert waits
 * on the winner's uncommitted row, then updates it), and per-key caps and order hold while many
 * claimers with several queues claim the same keys at once (advisory locks per (type, key), no
 * deadlock between claimers meeting the keys in different orders).
 */
import pg from "pg";
import { expect, onTestFinished, test, vi } from "vitest";
import type { JobRecord } from "../../../src/job.js";
import { CAP_LOCK, KEY_LOCK } from "../../../src/store/postgres/columns.js";
import { PgConnection } from "../../../src/store/postgres/connection.js";
import type { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { KeyRules, NewJob } from "../../../src/store/store.js";
import { newJob } from "../../helpers/new-job.js";
import { openStores, PG_URL, someoneWaits } from "../../helpers/postgres.js";

const NOW = Date.UTC(2026, 0, 1);

function stores(n: number) {
  return openStores(n, "errand_keys");
}

/**
 * A claimer caught halfway, on a connection of its own: in a transaction, it holds the advisory
 * lock (args[0], `hash`) and has started job `id`, not yet committed; COMMIT lets go. In `hash`,
 * $2 is the schema's channel and $3 on the rest of `args`, as the store hashes its locks.
 */
async function halfwayClaimer(schema: string, id: string, hash: string, args: unknown[]): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  const [lock, ...rest] = args;
  await client.query(`SELECT pg_advisory_xact_lock($1, ${hash})`, [lock, `${schema}_wake`, ...rest]);
  await client.query(
    `UPDATE "${schema}".errand_job SET state = 'active', attempt = 1, worker_id = 'other', lease_expires_at = $1 WHERE id = $2`,
    [NOW + 60_000, id],
  );
  return client;
}

function job(id: string, over: Partial<NewJob> = {}): NewJob {
  return newJob({ id, queue: "q", payload: "null", runAt: NOW, ...over });
}

test("an enqueue racing another with the same debounce key updates that job instead of making a second", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(2);
  const [a, b] = all as [PostgresStore, PostgresStore];
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  const [first] = await b.enqueueMany({
    now: NOW,
    jobs: [job("d1", { debounceKey: "k", payload: '"one"' })],
    connection: client,
  });
  expect(first).toMatchObject({ inserted: true });
  // The second enqueue's insert meets the first's uncommitted row in errand_job_debounce and waits.
  const second = a.enqueueMany({
    now: NOW,
    jobs: [job("d2", { debounceKey: "k", payload: '"two"', runAt: NOW + 5_000 })],
    idsGenerated: true,
  });
  await someoneWaits(schema);
  await client.query("COMMIT");
  const [r] = await second;
  expect(r).toMatchObject({ inserted: false, existing: { id: "d1", payload: '"two"', runAt: NOW + 5_000 } });
  const { jobs } = await a.list({ limit: 10 });
  expect(jobs.map((j) => [j.id, j.payload])).toEqual([["d1", '"two"']]);
});

test("a claim that waits for a key's lock counts the job the lock's holder started before it let go", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(1);
  const [a] = all as [PostgresStore];
  await a.enqueueMany({
    now: NOW,
    jobs: [
      job("k1", { type: "t", key: "k" }),
      job("k2", { type: "t", key: "k" }),
      job("o1", { type: "t", key: "o" }),
    ],
    idsGenerated: true,
  });
  // Another claimer, halfway: it holds key k's lock and has started k1, not yet committed.
  const client = await halfwayClaimer(schema, "k1", "hashtext($2 || $3 || chr(31) || $4)", [
    KEY_LOCK,
    "t",
    "k",
  ]);
  const keyRules: Record<string, KeyRules> = Object.create(null);
  keyRules.t = { keyConcurrency: 1 };
  const claim = a.claim({
    now: NOW + 1,
    workerId: "w",
    queues: [{ name: "q", weight: 1 }],
    limit: 10,
    leaseMs: 60_000,
    keyRules,
  });
  // The claim waits for k's lock; its count of k's running jobs must be read after the lock is
  // granted (a statement's own snapshot, taken before, would see none and start k2 too).
  await someoneWaits(schema);
  await client.query("COMMIT");
  const taken = await claim;
  expect(taken.map((j) => j.id)).toEqual(["o1"]);
});

test("a claim of one capped type that waits for its cap lock counts the job the holder started", {
  timeout: 30_000,
}, async () => {
  const { schema, all } = await stores(1);
  const [a] = all as [PostgresStore];
  await a.enqueueMany({
    now: NOW,
    jobs: [job("c1", { type: "t" }), job("c2", { type: "t" })],
    idsGenerated: true,
  });
  // Another claimer, halfway: it holds t's cap lock and has started c1, not yet committed.
  const client = await halfwayClaimer(schema, "c1", "hashtext($2 || $3)", [CAP_LOCK, "t"]);
  const claim = a.claim({
    now: NOW + 1,
    workerId: "w",
    queues: [{ name: "q", weight: 1 }],
    types: ["t"],
    limit: 10,
    leaseMs: 60_000,
    concurrencyLimits: { t: 1 },
  });
  // The count of t's running jobs must be read after the lock is granted (errand_cap_room).
  await someoneWaits(schema);
  await client.query("COMMIT");
  expect(await claim).toEqual([]);
});

test("per-key caps and order hold while many claimers take the same keys from several queues at once", {
  timeout: 60_000,
}, async () => {
  const { all } = await stores(4);
  const [a] = all as [PostgresStore];
  const keys = ["k0", "k1", "k2", "k3", "k4", "k5"];
  const jobs: NewJob[] = [];
  for (let i = 0; i < 60; i++) {
    const key = keys[i % keys.length]!;
    // Capped types and ordered ones, in two queues; every job created at its own instant.
    jobs.push(job(`c${String(i).padStart(2, "0")}`, { type: "capped", key, queue: i % 2 ? "q1" : "q2" }));
    jobs.push(job(`o${String(i).padStart(2, "0")}`, { type: "ordered", key, queue: i % 2 ? "q2" : "q1" }));
  }
  for (const [i, j] of jobs.entries()) await a.enqueueMany({ now: NOW + i, jobs: [j], idsGenerated: true });
  const keyRules: Record<string, KeyRules> = Object.create(null);
  keyRules.capped = { keyConcurrency: 2 };
  keyRules.ordered = { ordered: true };
  const active = new Map<string, JobRecord>();
  const started: string[] = [];
  for (let turn = 0; turn < 200 && started.length < jobs.length; turn++) {
    const taken = await Promise.all(
      all.map((store, s) =>
        store.claim({
          now: NOW + 1_000,
          workerId: `w${s}`,
          queues:
            s % 2
              ? [
                  { name: "q1", weight: 1 },
                  { name: "q2", weight: 1 },
                ]
              : [
                  { name: "q2", weight: 1 },
                  { name: "q1", weight: 1 },
                ],
          limit: 3 + s,
          leaseMs: 60_000,
          keyRules,
          random: () => (s % 2 ? 0.1 : 0.9),
        }),
      ),
    );
    for (const j of taken.flat()) {
      active.set(j.id, j);
      started.push(j.id);
    }
    const perKey = new Map<string, JobRecord[]>();
    for (const j of active.values()) {
      const k = `${j.type}/${j.key}`;
      perKey.set(k, [...(perKey.get(k) ?? []), j]);
    }
    for (const [k, list] of perKey) {
      expect(list.length, k).toBeLessThanOrEqual(k.startsWith("ordered/") ? 1 : 2);
    }
    // Finish one running job of each key, the earliest, as workers would at different speeds.
    const done = [...perKey.values()].map((list) => list[0]!);
    if (done.length > 0) {
      const ok = await a.completeMany({
        now: NOW + 1_000,
        items: done.map((j) => ({ id: j.id, attempt: j.attempt, result: "null" })),
      });
      expect(ok.every(Boolean)).toBe(true);
      for (const j of done) active.delete(j.id);
    }
  }
  expect(new Set(started).size).toBe(jobs.length);
  // An ordered key's jobs started in enqueue order.
  for (const key of keys) {
    const mine = started.filter((id) => id.startsWith("o") && jobs.find((j) => j.id === id)!.key === key);
    expect(mine).toEqual([...mine].sort());
  }
});

test("a claim of several types, only a keyed one with jobs, is queueTypes then one statement, and keeps the key rule", async () => {
  const { all } = await stores(1);
  const [store] = all as [PostgresStore];
  const jobs = ["a", "b", "c"].flatMap((key) => [1, 2].map((n) => job(`${key}${n}`, { type: "keyed", key })));
  await store.enqueueMany({ now: NOW, jobs, idsGenerated: true });
  const keyRules: Record<string, KeyRules> = Object.create(null);
  keyRules.keyed = { keyConcurrency: 1, fair: true };
  keyRules.keyed2 = { keyConcurrency: 1 };
  const claim = (types: string[]) =>
    store.claim({
      now: NOW + 1_000,
      workerId: "w",
      queues: [{ name: "q", weight: 1 }],
      types,
      limit: 10,
      leaseMs: 30_000,
      keyRules,
    });
  const texts: string[] = [];
  const query = PgConnection.prototype.query;
  const spy = vi.spyOn(PgConnection.prototype, "query").mockImplementation(function (
    this: PgConnection,
    ...args: Parameters<PgConnection["query"]>
  ) {
    texts.push(args[1]);
    return query.apply(this, args);
  });
  onTestFinished(() => spy.mockRestore());

  // "plain" and "idle" have no jobs in the queue: the claim is the keyed type's alone.
  const taken = await claim(["plain", "keyed", "idle"]);
  expect(taken.map((j) => j.key).sort()).toEqual(["a", "b", "c"]);
  // queueTypes, then the one statement that locks, counts and claims (fairClaimKeyed: it calls
  // errand_key_room and updates), not the general path's first read (fairSlots). Its leftover
  // rounds (it found 3 keys for a limit of 10) go on as a lone keyed type's claim does.
  expect(texts[0]).toContain("WITH RECURSIVE seen(type)");
  expect(texts[1]).toContain("errand_key_room(");
  expect(texts[1]).toContain("UPDATE");

  // None of the named types (one of them keyed, so narrowed) has a pending job: queueTypes alone
  // answers.
  texts.length = 0;
  expect(await claim(["plain", "keyed2"])).toEqual([]);
  expect(texts).toHaveLength(1);
  expect(texts[0]).toContain("WITH RECURSIVE seen(type)");
  await store.enqueueMany({ now: NOW, jobs: [job("p1", { type: "plain" })], idsGenerated: true });
  texts.length = 0;
  // Keys a, b, c are each at their one running job: the plain job is all there is to take.
  expect((await claim(["idle", "keyed", "plain"])).map((j) => j.id)).toEqual(["p1"]);
  expect(texts[0]).toContain("WITH RECURSIVE seen(type)");
});
