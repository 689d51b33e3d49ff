/**
 * A flow goes in with as many statements at any depth: a job waiting for a job earlier in the
 * call counts it as the call inserts it, so the call is planned whole, not level by level (a
 * 10,000-deep chain once took three statements per level, 7.6 s). When a job that others of the
 * call wait for might be skipped (an id the caller chose, a unique key), the plan is tried under a
 * savepoint, and rolled back for the level-by-level inserts only when one was skipped.
 */
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import type { FlowNode } from "../../../src/flow-plan.js";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { EnqueueManyParams } from "../../../src/store/store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

/** A store on a pool that records each statement's text; `taken()` hands them over and forgets them. */
async function recordingStore() {
  const schema = freshSchema("errand_flow");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const seen: string[] = [];
  // Every statement runs on some client of the pool (pool.query checks one out too).
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
      config: unknown,
      ...rest: unknown[]
    ) => {
      seen.push(typeof config === "string" ? config : String((config as { text?: unknown }).text));
      return query(config, ...rest);
    };
  });
  const store = await PostgresStore.open({ pool, schema, retryMs: 0, logger: silentLogger });
  onTestFinished(async () => {
    await store.close();
    await pool.end();
    await dropSchema(schema);
  });
  const taken = () => seen.splice(0);
  const queue = new Queue(store);
  // The store's first operations read what it keeps of its schema: not the flows' statements.
  await queue.enqueueFlow(chain(2));
  taken();
  /** The store's enqueueMany parameters, as the Queue sent them, for a retry by hand. */
  const sent: EnqueueManyParams[] = [];
  const enqueueMany = store.enqueueMany.bind(store);
  store.enqueueMany = (params) => {
    sent.push(params);
    return enqueueMany(params);
  };
  const states = () =>
    withPg(async (c) =>
      Object.fromEntries(
        (
          await c.query(
            `SELECT state, count(*)::integer AS n FROM "${schema}".errand_job GROUP BY state ORDER BY state`,
          )
        ).rows.map((r) => [r.state, r.n]),
      ),
    );
  return { queue, taken, sent, enqueueMany, states };
}

/** A chain of `n` nodes, each waiting for the one before; `id` gives each node an id of its own. */
function chain(n: number, id?: (i: number) => string): FlowNode[] {
  return Array.from({ length: n }, (_, i) => ({
    ref: `n${i}`,
    job: "link",
    payload: { i },
    ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}),
    ...(id ? { options: { id: id(i) } } : {}),
  }));
}

test("a chain's enqueue sends as many statements at a depth of 1,000 as at 3, none a savepoint", async () => {
  const { queue, taken } = await recordingStore();
  await queue.enqueueFlow(chain(3));
  const shallow = taken();
  const flow = await queue.enqueueFlow(chain(1_000));
  const deep = taken();
  expect(deep.length).toBe(shallow.length);
  expect(deep.filter((t) => /SAVEPOINT/.test(t))).toEqual([]);
  expect(flow.jobs.n999).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [flow.jobs.n998!.id] });
});

test("with node ids, a first run and a re-run each send as many statements at any depth", async () => {
  const { queue, taken, states } = await recordingStore();
  const counts: number[][] = [];
  for (const n of [3, 1_000]) {
    const nodes = chain(n, (i) => `run-${n}:${i}`);
    const first = await queue.enqueueFlow(nodes);
    const firstSent = taken();
    expect(first.jobs[`n${n - 1}`]).toMatchObject({ duplicate: false, state: "blocked", blockedBy: 1 });
    const again = await queue.enqueueFlow(nodes);
    const againSent = taken();
    expect(Object.values(again.jobs).every((j) => j.duplicate)).toBe(true);
    // Tried under a savepoint, which held: nothing rolled back.
    expect(firstSent.filter((t) => /ROLLBACK/.test(t))).toEqual([]);
    expect(againSent.filter((t) => /ROLLBACK/.test(t))).toEqual([]);
    counts.push([firstSent.length, againSent.length]);
  }
  expect(counts[1]).toEqual(counts[0]);
  expect(await states()).toEqual({ blocked: 1 + 2 + 999, pending: 1 + 2 });
});

test("sent again as a retry whose first try committed, a deep chain finds every job it stored", async () => {
  const { queue, sent, enqueueMany, states } = await recordingStore();
  const flow = await queue.enqueueFlow(chain(1_000));
  const again = await enqueueMany(sent[0]!);
  expect(again.map((r) => r.inserted)).toEqual(new Array(1_000).fill(false));
  expect(again.map((r) => (r.inserted ? null : r.existing.id))).toEqual(
    Array.from({ length: 1_000 }, (_, i) => flow.jobs[`n${i}`]!.id),
  );
  expect(await states()).toEqual({ blocked: 1 + 999, pending: 1 + 1 });
});

test("a node midway down a chain whose unique key is held: rolled back, then level by level, its dependents wait for the holder", async () => {
  const { queue, taken, states } = await recordingStore();
  const holder = await queue.enqueue("other", {}, { uniqueKey: "mid" });
  taken();
  const nodes = chain(200);
  nodes[100]!.options = { uniqueKey: "mid" };
  const flow = await queue.enqueueFlow(nodes);
  expect(taken().filter((t) => /SAVEPOINT/.test(t))).toEqual([
    "SAVEPOINT errand_dependencies",
    "ROLLBACK TO SAVEPOINT errand_dependencies",
    "RELEASE SAVEPOINT errand_dependencies",
  ]);
  expect(flow.jobs.n100).toMatchObject({ id: holder.id, duplicate: true });
  expect(flow.jobs.n101).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [holder.id] });
  expect(flow.jobs.n199).toMatchObject({ state: "blocked", dependsOn: [flow.jobs.n198!.id] });
  // The holder and the chain's head pending; 199 nodes blocked (n100 is the holder).
  expect(await states()).toEqual({ blocked: 1 + 198, pending: 1 + 2 });
});
