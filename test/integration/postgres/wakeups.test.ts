/**
 * Issue 3: wake-ups by LISTEN/NOTIFY, and polling as the fallback when the LISTEN connection is
 * lost. The worker polls only when its ManualClock is advanced, so which path started a job is
 * known: without an advance, only a wake-up can have.
 */
import { once } from "node:events";
import { expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import type { Job } from "../../../src/job.js";
import { openQueue, Queue } from "../../../src/queue.js";
import { PostgresStore, type PostgresStoreOptions } from "../../../src/store/postgres/postgres-store.js";
import { Worker } from "../../../src/worker/worker.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

const POLL_MS = 1_000;

/**
 * A worker's store (whose LISTEN connection the test kills), an idle worker on it that polls
 * only when the clock is advanced, and a producer on a store of its own, as another process.
 */
async function setup(options: Partial<PostgresStoreOptions> = {}) {
  const schema = freshSchema("errand_wake");
  const clock = new ManualClock();
  const open = (o: Partial<PostgresStoreOptions> = {}) =>
    PostgresStore.open({ connectionString: PG_URL, schema, poolSize: 2, logger: silentLogger, ...o });
  const store = await open(options);
  const producerStore = await open();
  const queue = new Queue(store, { clock });
  const producer = new Queue(producerStore, { clock });
  const starts: Job[] = [];
  const started: Array<(job: Job) => void> = [];
  const job = defineJob({
    type: "wake-me",
    handler: async (_p: unknown, ctx) => {
      starts.push(ctx.job);
      for (const resolve of started.splice(0)) resolve(ctx.job);
      return null;
    },
  });
  const worker = new Worker(queue, { jobs: [job], pollIntervalMs: POLL_MS, maintenance: false });
  onTestFinished(async () => {
    const closed = worker.close({ graceMs: 0 });
    await clock.advance(0);
    await closed;
    await store.close();
    await producerStore.close();
    await dropSchema(schema);
  });
  const idle = once(worker, "idle");
  await worker.start();
  await idle;
  const nextStart = () => new Promise<Job>((resolve) => started.push(resolve));
  return { schema, store, producer, worker, job, clock, starts, nextStart };
}

async function killListener(store: PostgresStore): Promise<void> {
  const pid = store.listenerPid;
  expect(pid).not.toBeNull();
  const lost = once(store, "unlisten");
  await withPg((c) => c.query("SELECT pg_terminate_backend($1)", [pid]));
  await lost;
}

test("an idle worker starts a job enqueued in another process by NOTIFY, without polling", async () => {
  const { producer, job, nextStart } = await setup();
  for (let i = 0; i < 3; i++) {
    const started = nextStart();
    const enqueued = await producer.enqueue(job, { i });
    expect((await started).id).toBe(enqueued.id);
  }
});

test("when the LISTEN connection is killed, polling still finds the job", async () => {
  // No reconnect within the test: only polling is left.
  const { store, producer, job, clock, starts, nextStart } = await setup({
    reconnectDelayMs: { min: 3_600_000, max: 3_600_000 },
  });
  await killListener(store);
  expect(store.listening).toBe(false);

  const enqueued = await producer.enqueue(job, {});
  // The NOTIFY went out with the commit, to no one: the job waits for the next poll.
  expect((await producer.get(enqueued.id))?.state).toBe("pending");
  expect(starts).toEqual([]);
  const started = nextStart();
  await clock.advance(POLL_MS);
  expect((await started).id).toBe(enqueued.id);
});

test("after the LISTEN connection drops it comes back by itself, catches up and wakes again", async () => {
  const { store, producer, job, starts, nextStart } = await setup({
    reconnectDelayMs: { min: 200, max: 200 },
  });
  const back = once(store, "listen");
  await killListener(store);
  // Enqueued while no one listens (the reconnect waits 200 ms): the reconnect's catch-up wake-up
  // finds it, no poll needed.
  const startedMissed = nextStart();
  const missed = await producer.enqueue(job, { missed: true });
  expect(starts).toEqual([]);
  const [pid] = (await back) as [number];
  expect(store.listening).toBe(true);
  expect(store.listenerPid).toBe(pid);
  expect((await startedMissed).id).toBe(missed.id);

  // And NOTIFY works again on the new connection.
  const started = nextStart();
  const fresh = await producer.enqueue(job, { fresh: true });
  expect((await started).id).toBe(fresh.id);
});

test("a wake-up sent just before its process closes the queue still reaches an idle worker", async () => {
  // A CLI's `queues resume`, say: a process opens a queue, resumes and closes at once. The
  // resume's NOTIFY is a statement of its own after the resume commits; close must wait for it,
  // or the workers elsewhere sleep until their next poll.
  const { schema, producer, worker, job, clock, starts, nextStart } = await setup();
  await producer.pauseQueue("default");
  const enqueued = await producer.enqueue(job, {});
  // The worker has looked (the enqueue's wake-up, then a poll) and found the queue paused.
  const idle = once(worker, "idle");
  await clock.advance(POLL_MS);
  await idle;
  expect(starts).toEqual([]);
  const started = nextStart();
  const cli = await openQueue(`${PG_URL}?schema=${schema}`);
  await cli.resumeQueue("default");
  await cli.close();
  // No clock advance from here: only the resume's wake-up can start the job.
  expect((await started).id).toBe(enqueued.id);
});
