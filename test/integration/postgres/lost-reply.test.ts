/**
 * Operations whose COMMIT's reply was lost (a connection fault after the server committed) must
 * neither apply their change twice nor answer as if they had not made it. The store tracks such
 * operations (connection.ts, `OpOptions.tracked`): their transaction's id comes with the BEGIN,
 * and after the fault the server is asked (`txid_status`) whether it committed; a committed one is
 * answered with what it computed in that transaction. The drain's hot paths stay untracked.
 *
 * Each test loses one reply (see {@link lossyStore}) while another process, or a newer call,
 * moves the world on, as the review in .probe/lost-reply/ found.
 */
import pg from "pg";
import { expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

/**
 * What the armed fault does to the COMMIT it catches: `lose` runs it (it commits), runs
 * `meanwhile`, then fails as a dropped connection does; `abort` sends ROLLBACK in its place, then
 * fails the same way (the server says "aborted" when asked); `drop` never sends it, and holds
 * the broken connection open until the store has asked once for the transaction's status, so
 * that the server first says "in progress" and aborts it only once the connection closes.
 * `withhold` runs it (or the statement on the pool) and `withhold-abort` sends ROLLBACK in its
 * place, and each holds the reply back (a silent network) until the connection closes: only the
 * `queryTimeoutMs` watchdog ends the wait. `half-open` never sends it and never lets the
 * connection close (its close lost on the way, as over a black-holed network): the server's
 * backend waits inside the transaction until something terminates it. `withhold-statement` holds
 * back the reply of the matching statement itself inside a transaction, before any COMMIT.
 */
type Fault = "lose" | "abort" | "drop" | "withhold" | "withhold-abort" | "half-open" | "withhold-statement";

/**
 * A store on a pool whose connections record every statement and fail the first committing
 * statement that matches the armed pattern: on the pool, a statement matching it; in a
 * transaction, the COMMIT of a transaction in which a statement matched it. The store's op() then
 * sees a connection fault and retries (or, tracked, asks the server first).
 */
async function lossyStore(options: { retryMs?: number; queryTimeoutMs?: number } = {}) {
  const clock = new ManualClock(Date.now());
  const schema = freshSchema("errand_lost_reply");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
  // A held-open connection's backend terminated after the store closed fails on the pool.
  pool.on("error", () => {});
  let armed: RegExp | null = null;
  let fault: Fault = "lose";
  let meanwhile: () => Promise<void> = async () => {};
  let fired = 0;
  /** A `drop` fault's connection end, held back until the first status question is answered. */
  let heldEnd: (() => void) | null = null;
  /** A `half-open` fault's connection: its backend pid, its real end, and how it ended. */
  let halfOpen: { pid: number; end: () => void; ended: Promise<Error> } | null = null;
  /** Whether the next pg_terminate_backend statement is refused, as for another role's backend. */
  let refuseTermination = false;
  const statements: string[] = [];
  /** Transactions open, by client: whether a statement in it matched the armed pattern. */
  const inTransaction = new Map<pg.PoolClient, boolean>();
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
      config: unknown,
      ...rest: unknown[]
    ) => {
      const text =
        typeof config === "string"
          ? config
          : typeof config === "object" && config !== null && "text" in config
            ? String(config.text)
            : "";
      statements.push(text);
      const done = rest[0];
      if (refuseTermination && text.includes("pg_terminate_backend") && typeof done === "function") {
        refuseTermination = false;
        // The server would say so at once; the half-open connection's close gets through later.
        halfOpen?.end();
        const refused = Object.assign(new Error("permission denied to terminate process"), { code: "42501" });
        return void setImmediate(() => done(refused));
      }
      if (heldEnd && text.includes("txid_status") && typeof done === "function") {
        return query(config, (error: Error | null, result: unknown) => {
          const end = heldEnd;
          heldEnd = null;
          end?.();
          done(error, result);
        });
      }
      if (fault === "withhold-statement" && armed?.test(text) && typeof done === "function") {
        armed = null;
        fired++;
        return query(config, (error: Error | null, result: unknown) =>
          error
            ? done(error, result)
            : void client.once("end", () => done(new Error("Connection terminated"))),
        );
      }
      // "BEGIN", or a tracked operation's "BEGIN; SELECT txid_current()…".
      if (/^BEGIN\b/.test(text)) inTransaction.set(client, false);
      let commits = false;
      if (inTransaction.has(client)) {
        if (armed?.test(text)) inTransaction.set(client, true);
        if (/COMMIT$/.test(text)) commits = inTransaction.get(client)! || armed?.test(text) === true;
      } else commits = armed?.test(text) === true;
      if (/COMMIT$|^ROLLBACK$/.test(text)) inTransaction.delete(client);
      if (armed && commits && typeof done === "function") {
        armed = null;
        fired++;
        const lost = () => done(new Error("Connection terminated unexpectedly"));
        if (fault === "abort" && /COMMIT$/.test(text)) return query("ROLLBACK", () => lost());
        // The reply fails only when the watchdog has destroyed the socket (node-postgres's "end").
        const lostAtClose = () => void client.once("end", lost);
        if (fault === "withhold-abort" && /COMMIT$/.test(text)) return query("ROLLBACK", lostAtClose);
        if (fault === "withhold") {
          return query(config, (error: Error | null, result: unknown) =>
            error ? done(error, result) : lostAtClose(),
          );
        }
        if (fault === "half-open" && /COMMIT$/.test(text)) {
          const end = client.end.bind(client) as () => void;
          (client as unknown as { end: () => void }).end = () => {};
          halfOpen = {
            pid: (client as unknown as { processID: number }).processID,
            end,
            ended: new Promise((resolve) => client.once("error", resolve)),
          };
          return void setImmediate(lost);
        }
        if (fault === "drop" && /COMMIT$/.test(text)) {
          const end = client.end.bind(client) as (...args: unknown[]) => unknown;
          (client as unknown as { end: (...args: unknown[]) => void }).end = (...args) => {
            heldEnd = () => void end(...args);
          };
          return void setImmediate(lost);
        }
        return query(config, (error: Error | null, result: unknown) => {
          if (error) return done(error, result);
          meanwhile().then(lost, (e: Error) => done(e));
        });
      }
      return query(config, ...rest);
    };
  });
  const store = await PostgresStore.open({
    pool,
    schema,
    retryMs: options.retryMs ?? 5_000,
    queryTimeoutMs: options.queryTimeoutMs,
    logger: silentLogger,
  });
  const others: PostgresStore[] = [];
  onTestFinished(async () => {
    halfOpen?.end();
    await store.close();
    for (const o of others) await o.close();
    await pool.end();
    await dropSchema(schema);
  });
  return {
    store,
    clock,
    queue: new Queue(store, { clock, maintenance: false }),
    schema,
    statements,
    fired: () => fired,
    /** Another process's queue on the same schema and clock. */
    other: async () => {
      const s = await PostgresStore.open({ connectionString: PG_URL, schema, logger: silentLogger });
      others.push(s);
      return new Queue(s, { clock, maintenance: false });
    },
    /** Fails the next committing statement matching `re` (see {@link Fault}), `fn` run first. */
    arm: (re: RegExp, fn: () => Promise<void> = async () => {}, how: Fault = "lose") => {
      armed = re;
      meanwhile = fn;
      fault = how;
    },
    /** A `half-open` fault's connection, once it fired: its backend's pid, and how it ended. */
    halfOpen: () => halfOpen,
    /** Refuses the next termination (42501), then lets the half-open connection close. */
    refuseTermination: () => {
      refuseTermination = true;
    },
  };
}

async function storedRows(schema: string): Promise<{ hot: number; done: number }> {
  return withPg(async (c) => {
    const { rows } = await c.query(
      `SELECT (SELECT count(*) FROM "${schema}".errand_job)::integer AS hot,
              (SELECT count(*) FROM "${schema}".errand_job_done)::integer AS done`,
    );
    return rows[0];
  });
}

/** Another worker: claims every ready job and completes it. Returns the jobs it ran. */
async function runEverything(queue: Queue): Promise<Array<{ id: string; payload: unknown }>> {
  const ran: Array<{ id: string; payload: unknown }> = [];
  for (;;) {
    const leased = await queue.lease({ limit: 100 });
    if (leased.length === 0) return ran;
    for (const job of leased) {
      ran.push({ id: job.id, payload: job.payload });
      expect(await queue.complete(job, "ran")).toBe(true);
    }
  }
}

async function deadJob(queue: Queue) {
  const job = await queue.enqueue("t", { n: 1 });
  const [leased] = await queue.lease({ limit: 1 });
  expect(await queue.fail(leased!, new Error("boom"), { retryable: false })).toBe(true);
  expect((await queue.get(job.id))?.state).toBe("dead");
  return job;
}

const RETRY = /DELETE FROM "[^"]+"\.errand_job_done WHERE id = \$1 AND state IN \('dead'/;
const DEBOUNCE = /UPDATE "[^"]+"\.errand_job SET payload = \$2, run_at = \$3/;
const JOB_INSERT = /INSERT INTO "[^"]+"\.errand_job \(/;
const PAUSE = /INSERT INTO "[^"]+"\.errand_queue_pause /;

// ---- double effects ----------------------------------------------------------------------------

test("retry: reply lost, the job run and dead again meanwhile: not put back a third time", async () => {
  const { queue, arm, other, fired } = await lossyStore();
  const job = await deadJob(queue);
  const elsewhere = await other();
  arm(RETRY, async () => {
    const [leased] = await elsewhere.lease({ limit: 1 });
    await elsewhere.fail(leased!, new Error("boom again"), { retryable: false });
  });
  const retried = await queue.retry(job.id);
  expect(fired()).toBe(1);
  // Answered as the retry left it: pending for its second attempt.
  expect(retried).toMatchObject({ id: job.id, state: "pending" });
  // It had that attempt, and died again: the retry asked for one run, not two.
  expect(await queue.get(job.id)).toMatchObject({ state: "dead", attempt: 2 });
});

test("retry: reply lost, nothing meanwhile: answered as retried, not INVALID_STATE", async () => {
  const { queue, arm, fired } = await lossyStore();
  const job = await deadJob(queue);
  arm(RETRY);
  const retried = await queue.retry(job.id);
  expect(fired()).toBe(1);
  expect(retried).toMatchObject({ id: job.id, state: "pending" });
});

test("debounce: reply lost, the job it debounced onto run meanwhile: no second job", async () => {
  const { queue, arm, other, fired, schema } = await lossyStore();
  const opts = { debounce: { key: "k", delayMs: 0 } };
  const holder = await queue.enqueue("t", { n: 1 }, opts);
  const elsewhere = await other();
  let ran: Array<{ id: string; payload: unknown }> = [];
  arm(DEBOUNCE, async () => {
    ran = await runEverything(elsewhere);
  });
  const j = await queue.enqueue("t", { n: 2 }, opts);
  expect(fired()).toBe(1);
  expect(ran).toEqual([{ id: holder.id, payload: { n: 2 } }]);
  // The payload { n: 2 } ran once; nothing is queued to run it again.
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 1 });
  expect(j).toMatchObject({ id: holder.id, duplicate: true });
});

test("debounce: reply lost, a newer enqueue of the key meanwhile: the older payload is not put back", async () => {
  const { queue, arm, other, fired } = await lossyStore();
  const opts = { debounce: { key: "k", delayMs: "1h" } } as const;
  const holder = await queue.enqueue("t", { n: 1 }, opts);
  const elsewhere = await other();
  arm(DEBOUNCE, async () => {
    await elsewhere.enqueue("t", { n: 3 }, opts);
  });
  await queue.enqueue("t", { n: 2 }, opts);
  expect(fired()).toBe(1);
  // The burst's last enqueue decides.
  expect((await queue.get(holder.id))?.payload).toEqual({ n: 3 });
});

test("enqueueMany of two jobs of one unique key: reply lost, the first run meanwhile: the second not inserted", async () => {
  const { queue, arm, other, fired, schema } = await lossyStore();
  const elsewhere = await other();
  arm(JOB_INSERT, async () => {
    await runEverything(elsewhere);
  });
  const [a, b] = await queue.enqueueMany("t", [{ n: 1 }, { n: 2 }], { uniqueKey: "u" });
  expect(fired()).toBe(1);
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 1 });
  // Answered as the committed insert found it: the first inserted, the second its duplicate.
  expect(a!.duplicate).toBe(false);
  expect(b).toMatchObject({ id: a!.id, duplicate: true });
});

// ---- wrong answers -----------------------------------------------------------------------------

test("cancel with a dependent: reply lost: answered changed, both cancelled events emitted", async () => {
  const { queue, arm, fired, schema } = await lossyStore();
  const { jobs } = await queue.enqueueFlow([
    { ref: "a", job: "t", payload: { n: 1 } },
    { ref: "b", job: "t", payload: { n: 2 }, dependsOn: ["a"] },
  ]);
  const cancelled: string[] = [];
  queue.on("cancelled", (j) => cancelled.push(j.id));
  arm(/WITH moved AS \(DELETE FROM "[^"]+"\.errand_job WHERE id = \$1 RETURNING \*\)/);
  const r = await queue.cancel(jobs.a!.id);
  expect(fired()).toBe(1);
  expect(r.state).toBe("cancelled");
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 2 });
  expect(cancelled.sort()).toEqual([jobs.a!.id, jobs.b!.id].sort());
});

test("reschedule: reply lost, the job claimed meanwhile: answered as rescheduled, not INVALID_STATE", async () => {
  const { queue, arm, other, fired } = await lossyStore();
  const job = await queue.enqueue("t", { n: 1 });
  const elsewhere = await other();
  arm(/SET run_at = coalesce\(\$2, run_at\)/, async () => {
    expect(await elsewhere.lease({ limit: 1 })).toHaveLength(1);
  });
  const r = await queue.reschedule(job.id, { priority: 7 });
  expect(fired()).toBe(1);
  expect(r).toMatchObject({ id: job.id, priority: 7 });
  expect(await queue.get(job.id)).toMatchObject({ state: "active", priority: 7 });
});

test("fireSchedule: reply lost, the tick's job run meanwhile: one job, the tick reported fired", async () => {
  const { queue, clock, arm, other, fired, schema } = await lossyStore();
  const elsewhere = await other();
  await queue.schedule("s", { cron: "* * * * *", job: "t", payload: { n: 1 } });
  await clock.advance(120_000);
  arm(/SET next_run_at = \$3/, async () => {
    await runEverything(elsewhere);
  });
  const enqueued: string[] = [];
  queue.on("enqueued", (j) => enqueued.push(j.id));
  const swept = await queue.sweep();
  expect(fired()).toBe(1);
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 1 });
  expect({ fired: swept.fired, enqueued: enqueued.length }).toEqual({ fired: 1, enqueued: 1 });
});

test("pauseQueue: reply lost: answered true (this call paused it)", async () => {
  const { queue, arm, fired } = await lossyStore();
  arm(PAUSE);
  expect(await queue.pauseQueue("q")).toBe(true);
  expect(fired()).toBe(1);
  expect(await queue.pausedQueues()).toEqual(["q"]);
});

test("resumeQueue: reply lost: answered true, and this process's workers are woken", async () => {
  const { queue, arm, fired } = await lossyStore();
  await queue.pauseQueue("q");
  let wakes = 0;
  queue.onWake(() => wakes++);
  arm(/DELETE FROM "[^"]+"\.errand_queue_pause WHERE name = \$1/);
  expect(await queue.resumeQueue("q")).toBe(true);
  expect(fired()).toBe(1);
  expect(wakes).toBeGreaterThan(0);
  expect(await queue.pausedQueues()).toEqual([]);
});

test("unschedule: reply lost: answered true (it existed)", async () => {
  const { queue, arm, fired } = await lossyStore();
  await queue.schedule("s", { cron: "0 * * * *", job: "t", payload: {} });
  arm(/DELETE FROM "[^"]+"\.errand_schedule/);
  expect(await queue.unschedule("s")).toBe(true);
  expect(fired()).toBe(1);
});

test("putJobType: reply lost: answered inserted (it was created)", async () => {
  const { store, arm, fired } = await lossyStore();
  arm(/errand_job_type/);
  expect(await store.putJobType({ name: "t", config: "{}", createdAt: 1, updatedAt: 1 })).toBe(true);
  expect(fired()).toBe(1);
});

test("deleteJobType: reply lost: answered true (it existed)", async () => {
  const { store, arm, fired } = await lossyStore();
  await store.putJobType({ name: "t", config: "{}", createdAt: 1, updatedAt: 1 });
  arm(/DELETE FROM "[^"]+"\.errand_job_type/);
  expect(await store.deleteJobType({ name: "t" })).toBe(true);
  expect(fired()).toBe(1);
});

test("expirePending: reply lost: the expired job reported, its expired event emitted", async () => {
  const { queue, clock, arm, fired, schema } = await lossyStore();
  const job = await queue.enqueue("t", { n: 1 }, { expiresAt: clock.now() + 50 });
  await clock.advance(100);
  const expired: string[] = [];
  queue.on("expired", (j) => expired.push(j.id));
  arm(/AND expires_at IS NOT NULL AND expires_at <= \$1/);
  const swept = await queue.sweepJobs();
  expect(fired()).toBe(1);
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 1 });
  expect(swept.expired).toBe(1);
  expect(expired).toEqual([job.id]);
});

test("fail ending dead with a dependent: reply lost: answered applied, dead and cancelled events emitted", async () => {
  const { queue, arm, fired, schema } = await lossyStore();
  const { jobs } = await queue.enqueueFlow([
    { ref: "a", job: "t", payload: { n: 1 } },
    { ref: "b", job: "t", payload: { n: 2 }, dependsOn: ["a"] },
  ]);
  const [a] = await queue.lease({ limit: 10 });
  const cancelled: string[] = [];
  const dead: string[] = [];
  queue.on("cancelled", (j) => cancelled.push(j.id));
  queue.on("dead", (j) => dead.push(j.id));
  // The failure's statement on the pool defers a job with dependents; the transaction that then
  // ends it dead and cancels its dependent is the one whose reply is lost.
  arm(/COMMIT$/);
  expect(await queue.fail(a!, new Error("boom"), { retryable: false })).toBe(true);
  expect(fired()).toBe(1);
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 2 });
  expect({ dead, cancelled }).toEqual({ dead: [jobs.a!.id], cancelled: [jobs.b!.id] });
});

// ---- the machinery -----------------------------------------------------------------------------

// Untracked enqueues of errand-made ids: a retry checks the ids against the history too.
test.each([
  ["a bulk enqueue of one shape", (queue: Queue) => queue.enqueueMany("t", [{ n: 1 }, { n: 2 }, { n: 3 }])],
  [
    "a bulk enqueue of mixed jobs",
    (queue: Queue) =>
      queue.enqueueBatch([
        { job: "t", payload: { n: 1 } },
        { job: "u", payload: { n: 2 }, options: { priority: 5 } },
        { job: "t", payload: { n: 3 } },
      ]),
  ],
  ["one enqueue", async (queue: Queue) => [await queue.enqueue("t", { n: 1 })]],
  [
    "a flow (its second job waits for its first)",
    async (queue: Queue) => {
      const { jobs } = await queue.enqueueFlow([
        { ref: "a", job: "t", payload: { n: 1 } },
        { ref: "b", job: "t", payload: { n: 2 }, dependsOn: ["a"] },
      ]);
      return [jobs.a!, jobs.b!];
    },
  ],
])("%s: reply lost, its jobs run meanwhile: not inserted again by the retry", async (_name, enqueue) => {
  const { queue, schema, other, arm } = await lossyStore();
  const worker = await other();
  arm(JOB_INSERT, async () => void (await runEverything(worker)));
  const jobs = await enqueue(queue);
  // Every job ran once, in the other worker, and is in history: none is back in the hot table.
  expect(await storedRows(schema)).toEqual({ hot: 0, done: jobs.length });
  for (const job of jobs) {
    expect(job.duplicate).toBe(true);
    expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: "ran", attempt: 1 });
  }
});

test("replay: reply lost, the copy run meanwhile: not copied again by the retry", async () => {
  const { queue, schema, other, arm } = await lossyStore();
  const worker = await other();
  const job = await queue.enqueue("t", { n: 1 });
  await runEverything(worker);
  arm(JOB_INSERT, async () => void (await runEverything(worker)));
  const copy = await queue.replay(job.id);
  expect(copy.id).not.toBe(job.id);
  expect(copy).toMatchObject({ state: "completed", result: "ran", attempt: 1 });
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 2 });
});

test("a tracked operation whose COMMIT was aborted (the server says so) runs again, once", async () => {
  const { queue, arm, fired, statements } = await lossyStore();
  arm(PAUSE, async () => {}, "abort");
  statements.length = 0;
  expect(await queue.pauseQueue("q")).toBe(true);
  expect(fired()).toBe(1);
  expect(await queue.pausedQueues()).toEqual(["q"]);
  // Asked, found aborted, and run again in a second tracked transaction.
  expect(statements.filter((s) => s.includes("txid_status"))).toHaveLength(1);
  expect(statements.filter((s) => s.startsWith("BEGIN; SELECT txid_current()"))).toHaveLength(2);
  expect(statements.filter((s) => PAUSE.test(s))).toHaveLength(2);
});

test("a tracked operation whose COMMIT never reached the server waits out 'in progress', then runs again, once", async () => {
  const { queue, arm, fired, statements } = await lossyStore();
  arm(PAUSE, async () => {}, "drop");
  statements.length = 0;
  expect(await queue.pauseQueue("q")).toBe(true);
  expect(fired()).toBe(1);
  expect(await queue.pausedQueues()).toEqual(["q"]);
  // Asked while in progress, then again once the server had aborted it.
  expect(statements.filter((s) => s.includes("txid_status")).length).toBeGreaterThanOrEqual(2);
  expect(statements.filter((s) => PAUSE.test(s))).toHaveLength(2);
});

// The watchdog (queryTimeoutMs) closing a connection whose COMMIT's reply never came: for a
// tracked operation the server settles it, as for any other lost reply. The reply is held back
// until the watchdog's close, so each of these takes queryTimeoutMs and a watchdog period.

const KEYED = { uniqueKey: "k" } as const;
const statuses = (statements: string[]) => statements.filter((s) => s.includes("txid_status")).length;
const inserts = (statements: string[]) => statements.filter((s) => JOB_INSERT.test(s)).length;

for (const [fault, outcome, runs] of [
  ["withhold", "it committed: answered from that transaction", 1],
  ["withhold-abort", "it was aborted: run again, once", 2],
] as const) {
  test(`the watchdog closes a tracked COMMIT whose reply is held back, and ${outcome}`, async () => {
    const { queue, arm, fired, statements, schema } = await lossyStore({ queryTimeoutMs: 200 });
    arm(JOB_INSERT, async () => {}, fault);
    statements.length = 0;
    const job = await queue.enqueue("t", { n: 1 }, KEYED);
    expect(fired()).toBe(1);
    // A committed transaction rerun would have found its own job and said duplicate.
    expect(job.duplicate).toBe(false);
    expect(await storedRows(schema)).toEqual({ hot: 1, done: 0 });
    expect(await queue.get(job.id)).toMatchObject({ state: "pending", payload: { n: 1 } });
    // Asked once; an aborted one runs again in a second tracked transaction.
    expect({ statuses: statuses(statements), inserts: inserts(statements) }).toEqual({
      statuses: 1,
      inserts: runs,
    });
  });
}

test("the watchdog past retryMs: a committed COMMIT is still answered; an aborted one says it did not commit", async () => {
  // As by default (retryMs 10 s, queryTimeoutMs 30 s), the watchdog fires after the retries' deadline.
  const { queue, arm, statements, schema } = await lossyStore({ retryMs: 50, queryTimeoutMs: 200 });
  arm(JOB_INSERT, async () => {}, "withhold");
  expect((await queue.enqueue("t", { n: 1 }, { uniqueKey: "a" })).duplicate).toBe(false);
  arm(JOB_INSERT, async () => {}, "withhold-abort");
  statements.length = 0;
  await expect(queue.enqueue("t", { n: 2 }, { uniqueKey: "b" })).rejects.toMatchObject({
    code: "STORE_ERROR",
    message: expect.stringContaining("its transaction did not commit"),
  });
  // Not run again (no time left for it), and nothing of it stored.
  expect({ statuses: statuses(statements), inserts: inserts(statements) }).toEqual({
    statuses: 1,
    inserts: 1,
  });
  expect(await storedRows(schema)).toEqual({ hot: 1, done: 0 });
});

test("an untracked statement the watchdog closes still fails as 'may have run', no status asked", async () => {
  const { queue, arm, fired, statements } = await lossyStore({ queryTimeoutMs: 200 });
  arm(JOB_INSERT, async () => {}, "withhold");
  statements.length = 0;
  // A keyless enqueue runs on the pool, outside a transaction: its statement is the one held back.
  await expect(queue.enqueue("t", { n: 1 })).rejects.toMatchObject({
    code: "STORE_ERROR",
    message: expect.stringContaining("may have run"),
  });
  expect(fired()).toBe(1);
  expect(statuses(statements)).toBe(0);
});

test("the watchdog closes a transaction before its COMMIT went out: it did not commit, and says so", async () => {
  const { queue, arm, fired, statements, schema } = await lossyStore({ queryTimeoutMs: 200 });
  arm(JOB_INSERT, async () => {}, "withhold-statement");
  statements.length = 0;
  await expect(queue.enqueue("t", { n: 1 }, KEYED)).rejects.toMatchObject({
    code: "STORE_ERROR",
    message: expect.stringContaining("its transaction did not commit"),
  });
  expect(fired()).toBe(1);
  expect(statements.some((s) => /COMMIT$/.test(s))).toBe(false);
  expect(statuses(statements)).toBe(0);
  expect(await storedRows(schema)).toEqual({ hot: 0, done: 0 });
  // Calling again is safe: one job.
  expect((await queue.enqueue("t", { n: 1 }, KEYED)).duplicate).toBe(false);
  expect(await storedRows(schema)).toEqual({ hot: 1, done: 0 });
});

// A half-open connection: errand has let it go, but its close never reached the server, whose
// backend still holds the transaction idle; txid_status says "in progress" until TCP keep-alive.

for (const refused of [false, true]) {
  const outcome = refused
    ? "a termination refused (another role's backend) falls back to waiting for the server to end the transaction"
    : "that backend terminated, the operation run again, once";
  test(`a tracked transaction held idle by a half-open connection's backend: ${outcome}`, async () => {
    // Without the termination the status stays "in progress" past retryMs: STORE_ERROR, "unknown".
    const { queue, arm, fired, statements, schema, halfOpen, refuseTermination } = await lossyStore();
    arm(JOB_INSERT, async () => {}, "half-open");
    if (refused) refuseTermination();
    statements.length = 0;
    const job = await queue.enqueue("t", { n: 1 }, KEYED);
    expect(fired()).toBe(1);
    expect(job.duplicate).toBe(false);
    expect(await storedRows(schema)).toEqual({ hot: 1, done: 0 });
    expect(inserts(statements)).toBe(2);
    // Tried once (refused: not tried again), asked while "in progress", then found aborted.
    expect(statements.filter((s) => s.includes("pg_terminate_backend"))).toHaveLength(1);
    expect(statuses(statements)).toBeGreaterThanOrEqual(2);
    // The backend that ended was the one that ran the transaction, ended by the terminate.
    if (!refused) expect(await halfOpen()!.ended).toMatchObject({ code: "57P01" });
  });
}

test("the bulk enqueue of fresh ids is not tracked: no transaction id fetched, no status asked", async () => {
  const { queue, statements } = await lossyStore();
  statements.length = 0;
  const jobs = await queue.enqueueMany("t", [{ n: 1 }, { n: 2 }, { n: 3 }]);
  await queue.enqueue("t", { n: 4 });
  expect(jobs).toHaveLength(3);
  expect(statements.some((s) => /txid_/.test(s) || /^BEGIN/.test(s))).toBe(false);
  // A keyed enqueue is.
  await queue.enqueue("t", { n: 5 }, { uniqueKey: "k" });
  expect(statements.filter((s) => s.startsWith("BEGIN; SELECT txid_current()"))).toHaveLength(1);
});

test("an untracked operation (a completion) keeps its retry: no status asked, answered stale", async () => {
  const { queue, arm, fired, statements } = await lossyStore();
  const job = await queue.enqueue("t", { n: 1 });
  const [leased] = await queue.lease({ limit: 1 });
  arm(/./);
  statements.length = 0;
  // README: a completion whose reply was lost says the attempt is no longer current.
  expect(await queue.complete(leased!, "x")).toBe(false);
  expect(fired()).toBe(1);
  expect(statements.some((s) => /txid_/.test(s))).toBe(false);
  expect(await queue.get(job.id)).toMatchObject({ state: "completed" });
});
