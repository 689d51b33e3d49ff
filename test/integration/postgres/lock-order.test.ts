/**
 * Issue 12, item 7: statements that update several jobs take their row locks in one order (by
 * id), so two of them never deadlock (40P01). Two stores (two processes, as far as PostgreSQL can
 * tell) report the same overlapping batch of attempts in opposite orders, at the same moment, a
 * bounded number of times. The stores do not retry (`retryMs: 0`), so a deadlock would surface
 * as a rejected call with 40P01 as its cause instead of being retried away.
 */
import { expect, onTestFinished, test } from "vitest";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { AttemptRef, Store } from "../../../src/store/store.js";
import { newJob } from "../../helpers/new-job.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";

const JOBS = 400;
const ROUNDS = 6;
const NOW = Date.UTC(2026, 0, 1);

async function twoStores(): Promise<[PostgresStore, PostgresStore]> {
  const schema = freshSchema("errand_lock");
  const open = () =>
    PostgresStore.open({ connectionString: PG_URL, schema, poolSize: 2, retryMs: 0, logger: silentLogger });
  const a = await open();
  const b = await open();
  onTestFinished(async () => {
    await a.close();
    await b.close();
    await dropSchema(schema);
  });
  return [a, b];
}

/** Enqueues `JOBS` jobs (ids shuffled against their order) and leases them all: attempt 1 each. */
async function leased(store: Store, round: number): Promise<AttemptRef[]> {
  const ids = Array.from(
    { length: JOBS },
    (_, i) => `r${round}-${String((i * 7919) % JOBS).padStart(4, "0")}`,
  );
  await store.enqueueMany({
    now: NOW,
    jobs: ids.map((id) => newJob({ id, queue: "q", payload: "null", runAt: NOW })),
  });
  const claimed = await store.claim({
    now: NOW,
    workerId: "w",
    queues: [{ name: "q", weight: 1 }],
    limit: JOBS,
    leaseMs: 60_000,
  });
  expect(claimed).toHaveLength(JOBS);
  return claimed.map((r) => ({ id: r.id, attempt: r.attempt }));
}

/** Runs both at once; returns the SQLSTATE of each rejection's cause (none expected). */
async function together(...calls: Array<() => Promise<unknown>>): Promise<string[]> {
  const settled = await Promise.allSettled(calls.map((call) => call()));
  return settled
    .filter((s): s is PromiseRejectedResult => s.status === "rejected")
    .map((s) => String((s.reason as { cause?: { code?: unknown } }).cause?.code ?? s.reason));
}

test("heartbeatMany, completeMany and failMany over the same attempts in opposite orders never deadlock", {
  timeout: 60_000,
}, async () => {
  const [a, b] = await twoStores();
  for (let round = 0; round < ROUNDS; round++) {
    const items = await leased(a, round);
    const reversed = [...items].reverse();
    const error = { attempt: 1, message: "x", at: NOW };
    const heartbeat = (store: Store, list: AttemptRef[]) => () =>
      store.heartbeatMany({ now: NOW, leaseMs: 60_000, items: list });
    expect(await together(heartbeat(a, items), heartbeat(b, reversed))).toEqual([]);
    // Half the attempts are completed by one store while the other fails all of them, backwards,
    // and heartbeats race both: each attempt ends exactly one way.
    const half = items.filter((_, i) => i % 2 === 0);
    let completed: boolean[] = [];
    let failed: Array<string | null> = [];
    expect(
      await together(
        async () => {
          completed = await a.completeMany({ now: NOW, items: half.map((i) => ({ ...i, result: "1" })) });
        },
        async () => {
          failed = await b.failMany({
            now: NOW,
            items: reversed.map((i) => ({ ...i, error, retryAt: i.id.endsWith("0") ? null : NOW })),
          });
        },
        heartbeat(
          b,
          reversed.filter((_, i) => i % 3 === 0),
        ),
      ),
    ).toEqual([]);
    const won = new Set(half.filter((_, i) => completed[i]).map((i) => i.id));
    reversed.forEach((item, i) => {
      expect(failed[i] !== null, item.id).toBe(!won.has(item.id));
    });
  }
});
