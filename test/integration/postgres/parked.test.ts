/**
 * Parked jobs on PostgreSQL (migration 0011), what the conformance suite cannot see: a claim that
 * passed over a key's jobs (keyConcurrency full, or `ordered`) parks the key's ready jobs out of
 * the claim index, and the trigger puts them back one at a time as the key may start one; later
 * claims do not read them, nothing is left parked once the work is done, and a parking that races
 * the end of the key's running job loses no wake-up.
 */
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { defineJob, ManualClock, openQueue, type Queue } from "../../../src/index.js";
import { dropSchema, freshSchema, PG_URL, pgUrl, someoneWaits, withPg } from "../../helpers/postgres.js";
import { enqueueRateBacklog } from "../../helpers/rate-backlog.js";

async function fresh(clock?: ManualClock): Promise<{ queue: Queue; schema: string }> {
  const schema = freshSchema("errand_park");
  const queue = await openQueue(clock ? { store: pgUrl(schema), clock } : pgUrl(schema));
  onTestFinished(async () => {
    await queue.close();
    await dropSchema(schema);
  });
  return { queue, schema };
}

/** The jobs by `parked`, and how many of type `tenant` a claim's walk of errand_job_claim sees. */
function inspect(schema: string) {
  return {
    parked: () =>
      withPg(async (c) =>
        (
          await c.query<{ parked: number | null; n: number }>(
            `SELECT parked, count(*)::int AS n FROM "${schema}".errand_job GROUP BY parked ORDER BY parked NULLS FIRST`,
          )
        ).rows.map((r) => ({ parked: r.parked, n: r.n })),
      ),
    inClaimIndex: () =>
      withPg(
        async (c) =>
          (
            await c.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM "${schema}".errand_job
               WHERE queue = 'default' AND type = 'tenant' AND state = 'pending' AND parked IS NULL`,
            )
          ).rows[0]!.n,
      ),
    parkedOf: (id: string) =>
      withPg(
        async (c) =>
          (await c.query(`SELECT parked FROM "${schema}".errand_job WHERE id = $1`, [id])).rows[0]?.parked as
            | number
            | null
            | undefined,
      ),
  };
}

/** A fresh queue with `n` jobs of one key of type `tenant` (keyConcurrency `limit`) enqueued. */
async function keyBacklog(limit: number, n: number) {
  const { queue, schema } = await fresh();
  const tenant = defineJob({ type: "tenant", keyConcurrency: limit, handler: async () => null });
  queue.register(tenant);
  const jobs = await queue.enqueueMany(
    tenant,
    Array.from({ length: n }, (_, i) => ({ i })),
    { key: "k" },
  );
  return { queue, schema, db: inspect(schema), tenant, jobs };
}

/** A connection of the test's own, in a transaction (another process's, caught halfway). */
async function otherTransaction(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  onTestFinished(() => client.end());
  await client.query("BEGIN");
  return client;
}

describe("PostgreSQL store: parked jobs", () => {
  for (const rule of [{ keyConcurrency: 1 }, { ordered: true }] as const) {
    const name = "keyConcurrency" in rule ? "keyConcurrency" : "ordered";
    for (const named of [false, true]) {
      it(`${name}: parks a closed key's ready jobs, puts them back one by one, leaves none parked${named ? " (claims naming the type)" : ""}`, {
        timeout: 60_000,
      }, async () => {
        const { queue, schema } = await fresh();
        const db = inspect(schema);
        const tenant = defineJob({ type: "tenant", ...rule, handler: async () => null });
        queue.register(tenant);
        const lease = (limit: number) => queue.lease({ limit, ...(named ? { types: ["tenant"] } : {}) });
        const busy = await queue.enqueueMany(
          tenant,
          Array.from({ length: 500 }, (_, i) => ({ i })),
          { key: "busy" },
        );
        const quiet = await queue.enqueue(tenant, { quiet: true }, { key: "quiet" });

        const first = await lease(10);
        expect(first.map((j) => j.id)).toEqual([busy[0]!.id, quiet.id]);
        const mark = name === "keyConcurrency" ? 1 : 2;
        expect(await db.parked()).toEqual([
          { parked: null, n: 2 },
          { parked: mark, n: 499 },
        ]);
        expect(await db.inClaimIndex()).toBe(0);
        // Still pending, listed and counted as ever, and held back in stats' sample.
        expect((await queue.get(busy[1]!.id))?.state).toBe("pending");
        const stats = await queue.stats();
        expect(stats.states.pending).toBe(499);
        expect(stats.limits.tenant?.heldBack).toMatchObject(
          name === "keyConcurrency" ? { keyConcurrency: 499 } : { order: 499 },
        );
        expect(await lease(10)).toEqual([]);

        // The running job ends: the key's next job is back in the claim index, and starts.
        expect(await queue.complete(first[0]!, null)).toBe(true);
        expect(await db.inClaimIndex()).toBe(1);
        let jobs = await lease(10);
        expect(jobs.map((j) => j.id)).toEqual([busy[1]!.id]);

        // A parked job cancelled, another rescheduled: out of the parked jobs either way (the
        // rescheduled one back in the claim index, its key's rules looked at by the next claim).
        expect((await queue.cancel(busy[499]!.id))?.state).toBe("cancelled");
        expect(await db.parkedOf(busy[499]!.id)).toBeUndefined();
        await queue.reschedule(busy[498]!.id, { priority: 1 });
        expect(await db.parkedOf(busy[498]!.id)).toBeNull();

        for (let n = 0; jobs.length > 0 && n < 600; n++) {
          expect(jobs).toHaveLength(1);
          expect(await queue.complete(jobs[0]!, null)).toBe(true);
          jobs = await lease(10);
        }
        expect(await queue.complete(first[1]!, null)).toBe(true);
        expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 0, completed: 500 });
        expect(await db.parked()).toEqual([]);
      });
    }
  }

  it("a failed running job (a retry) puts one parked job back, in claim order", {
    timeout: 30_000,
  }, async () => {
    const { queue, db, tenant } = await keyBacklog(2, 20);
    const urgent = await queue.enqueue(tenant, { urgent: true }, { key: "k", priority: 5 });
    const two = await queue.lease({ limit: 10 });
    expect(two.map((j) => j.payload)).toEqual([{ urgent: true }, { i: 0 }]);
    expect(await db.parked()).toEqual([
      { parked: null, n: 2 },
      { parked: 1, n: 19 },
    ]);
    // A retry (pending again, later) frees a slot: the first parked job in claim order comes back.
    expect(await queue.fail(two[0]!, new Error("again"))).toBe(true);
    expect(await db.inClaimIndex()).toBe(2);
    const next = await queue.lease({ limit: 10 });
    expect(next.map((j) => j.payload)).toEqual([{ i: 1 }]);
    expect(await db.parkedOf(urgent.id)).toBeNull();
  });

  it("a job put back and then moved out of reach puts the next one back", { timeout: 30_000 }, async () => {
    const { queue, db, jobs } = await keyBacklog(1, 10);
    const [head] = await queue.lease({ limit: 10 });
    expect(await queue.lease({ limit: 10 })).toEqual([]);
    expect(await queue.complete(head!, null)).toBe(true);
    // jobs[1] is back; rescheduled an hour on, it would hold the key's room while nothing runs.
    await queue.reschedule(jobs[1]!.id, { delayMs: 3_600_000 });
    expect(await db.inClaimIndex()).toBe(2);
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([jobs[2]!.id]);
  });

  it("keyRateLimit: parks a full window's key, puts back as many as the window holds when it opens", {
    timeout: 60_000,
  }, async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { queue, schema } = await fresh(clock);
    const db = inspect(schema);
    const { busy, quiet } = await enqueueRateBacklog(queue);
    const wakes = () =>
      withPg(async (c) => (await c.query(`SELECT key, at, n FROM "${schema}".errand_park_wake`)).rows);

    const first = await queue.lease({ limit: 10 });
    expect(first.map((j) => j.id)).toEqual([busy[0]!.id, busy[1]!.id, quiet.id]);
    expect(await db.parked()).toEqual([
      { parked: null, n: 3 },
      { parked: 3, n: 298 },
    ]);
    expect(await wakes()).toEqual([{ key: "busy", at: String(clock.now() + 1_000), n: 2 }]);
    expect(await db.inClaimIndex()).toBe(0);
    expect(await queue.lease({ limit: 10 })).toEqual([]);

    // The window opens: its limit's worth come back, in claim order, and start; the wake is set
    // again for the rest.
    clock.advance(1_000);
    const next = await queue.lease({ limit: 10 });
    expect(next.map((j) => j.id)).toEqual([busy[2]!.id, busy[3]!.id]);
    expect(await wakes()).toEqual([{ key: "busy", at: String(clock.now() + 1_000), n: 2 }]);
    expect(await queue.lease({ limit: 10 })).toEqual([]);

    // A window that opened with no claim of the type to see it: the lease sweep puts them back.
    clock.advance(1_000);
    await queue.store.expiredLeases({ now: clock.now(), limit: 100 });
    expect(await db.inClaimIndex()).toBe(2);
    expect(await wakes()).toEqual([]);
  });

  /**
   * A key whose one rate-parked job another transaction holds when its window opens: the claim
   * then cannot put it back, and the wake stays, due, for the next call rather than being spent.
   */
  async function heldWhenDue() {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { queue, schema } = await fresh(clock);
    const db = inspect(schema);
    const { busy } = await enqueueRateBacklog(queue, 3);
    const wakes = () =>
      withPg(
        async (c) =>
          (await c.query(`SELECT key, at::float8 AS at, n FROM "${schema}".errand_park_wake`)).rows as Array<{
            key: string;
            at: number;
            n: number;
          }>,
      );
    expect((await queue.lease({ limit: 10 })).length).toBe(3);
    expect(await db.parkedOf(busy[2]!.id)).toBe(3);
    const holder = await otherTransaction();
    await holder.query(`SELECT 1 FROM "${schema}".errand_job WHERE id = $1 FOR UPDATE`, [busy[2]!.id]);
    clock.advance(1_000);
    expect(await queue.lease({ limit: 10 })).toEqual([]);
    expect(await wakes()).toEqual([{ key: "busy", at: clock.now(), n: 2 }]);
    return { clock, queue, db, busy, holder, wakes };
  }

  it("keyRateLimit: a parked job another transaction holds and gives back unchanged is put back by the kept wake", {
    timeout: 30_000,
  }, async () => {
    const { queue, db, busy, holder, wakes } = await heldWhenDue();
    await holder.query("ROLLBACK");
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([busy[2]!.id]);
    expect(await wakes()).toEqual([]);
    expect(await db.parked()).toEqual([{ parked: null, n: 4 }]);
  });

  it("keyRateLimit: a key parked anew while its held wake is due waits for its window, not the due wake", {
    timeout: 30_000,
  }, async () => {
    const { clock, queue, db, busy, holder, wakes } = await heldWhenDue();
    // The key's window fills again (new jobs, not parked) and a claim parks the key anew: its wake
    // takes the time the window opens, not the kept one already due, which would have every claim
    // put back jobs for it to park again while the holder holds.
    const more = await queue.enqueueMany("tenant", [{ m: 1 }, { m: 2 }, { m: 3 }], { key: "busy" });
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([more[0]!.id, more[1]!.id]);
    expect(await wakes()).toEqual([{ key: "busy", at: clock.now() + 1_000, n: 2 }]);
    expect(await db.parkedOf(more[2]!.id)).toBe(3);
    clock.advance(1_000);
    await holder.query("ROLLBACK");
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([busy[2]!.id, more[2]!.id]);
    expect(await wakes()).toEqual([]);
    expect(await db.parked()).toEqual([{ parked: null, n: 7 }]);
  });

  it("a running job another transaction is changing keeps its key from being parked", {
    timeout: 30_000,
  }, async () => {
    const { queue, schema, db } = await keyBacklog(1, 10);
    const [head] = await queue.lease({ limit: 1 });
    const client = await otherTransaction();
    await client.query(`SELECT 1 FROM "${schema}".errand_job WHERE id = $1 FOR UPDATE`, [head!.id]);
    // The key is full, but its running job may be ending: not parked (its ending could not see it).
    expect(await queue.lease({ limit: 10 })).toEqual([]);
    expect(await db.parked()).toEqual([{ parked: null, n: 10 }]);
    await client.query("ROLLBACK");
    expect(await queue.lease({ limit: 10 })).toEqual([]);
    expect(await db.parked()).toEqual([
      { parked: null, n: 1 },
      { parked: 1, n: 9 },
    ]);
  });

  it("a running job that ends while its key is being parked waits for the parking, then puts a job back", {
    timeout: 30_000,
  }, async () => {
    const { queue, schema, db, jobs } = await keyBacklog(1, 10);
    const [head] = await queue.lease({ limit: 1 });
    // A parking under way on a connection of its own, not yet committed.
    const client = await otherTransaction();
    const { rows } = await client.query(
      `SELECT parked AS n FROM "${schema}".errand_key_park(ARRAY['tenant'], ARRAY['k'], ARRAY[1], ARRAY[false],
        ARRAY[NULL]::text[], ARRAY[NULL]::integer[], ARRAY[NULL]::bigint[], $1::bigint, 10000)`,
      [Date.now() + 1_000],
    );
    expect(rows[0].n).toBe(9);
    // The completion waits for the parking's share lock on the running job, so its trigger then
    // sees the parked jobs and puts the first back: no wake-up lost.
    const completing = queue.complete(head!, null);
    await someoneWaits(schema);
    await client.query("COMMIT");
    expect(await completing).toBe(true);
    expect(await db.parked()).toEqual([
      { parked: null, n: 1 },
      { parked: 1, n: 8 },
    ]);
    expect((await queue.lease({ limit: 10 })).map((j) => j.id)).toEqual([jobs[1]!.id]);
  });
});
