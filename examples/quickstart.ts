/**
 * errand in one file: job types, enqueue (now, delayed, bulk, unique, cancelled), weighted
 * queues, retries with backoff, checkpoints, a cron schedule, events and a graceful shutdown,
 * all on the embedded SQLite store in ./errand.db.
 *
 *   npm run example            # runs until the demo jobs are done (about 10 s), then exits
 *   ERRAND_DB=/tmp/x.db npm run example
 */
import { setTimeout as sleep } from "node:timers/promises";
import { defineJob, NonRetryableError, openQueue, Worker } from "../src/index.js";

const sendEmail = defineJob({
  type: "send-email",
  queue: "critical",
  maxAttempts: 4,
  backoff: { type: "exponential", baseMs: 200, maxMs: 2_000, jitter: false },
  handler: async (payload: { to: string }, ctx) => {
    // A flaky mail server: the first attempt for bob fails, the retry goes through.
    if (payload.to.startsWith("bob") && ctx.attempt === 1) throw new Error("SMTP 421: try again later");
    if (payload.to.endsWith("@invalid")) throw new NonRetryableError(`no such domain for ${payload.to}`);
    return { messageId: `msg-${ctx.job.id.slice(-6)}` };
  },
});

const resizeImage = defineJob({
  type: "resize-image",
  weight: 2, // takes two of the worker's slots
  handler: async (payload: { file: string; sizes: number[] }, ctx) => {
    // Resume where an earlier attempt stopped.
    const done = new Set((ctx.job.checkpoint as number[] | null) ?? []);
    for (const size of payload.sizes) {
      if (done.has(size)) continue;
      await sleep(50, undefined, { signal: ctx.signal }); // stands in for real work
      done.add(size);
      await ctx.checkpoint([...done]);
    }
    return { file: payload.file, variants: payload.sizes.length };
  },
});

const report = defineJob({
  type: "nightly-report",
  handler: async (_payload: Record<string, never>, ctx) => ({
    generatedAt: new Date().toISOString(),
    by: ctx.job.id,
  }),
});

const dbFile = process.env.ERRAND_DB ?? "./errand.db";
const queue = await openQueue(`sqlite:${dbFile}`);
const t0 = Date.now();
const at = () => `${((Date.now() - t0) / 1000).toFixed(2).padStart(6)}s`;

// Enqueue: one now, one in two seconds, a bulk batch, a deduplicated one and one cancelled.
await queue.enqueue(sendEmail, { to: "alice@example.com" });
await queue.enqueue(sendEmail, { to: "bob@example.com" });
await queue.enqueue(sendEmail, { to: "carol@invalid" });
await queue.enqueue(sendEmail, { to: "dave@example.com" }, { delayMs: "2s" });
await queue.enqueueMany(
  resizeImage,
  ["cat.jpg", "dog.png", "owl.gif"].map((file) => ({ file, sizes: [64, 256, 1024] })),
);
const first = await queue.enqueue(sendEmail, { to: "erin@example.com" }, { uniqueKey: "welcome:erin" });
const again = await queue.enqueue(sendEmail, { to: "erin@example.com" }, { uniqueKey: "welcome:erin" });
console.log(
  `${at()} enqueued welcome:erin twice → one job (${first.id === again.id ? "same id" : "DIFFERENT"})`,
);
const doomed = await queue.enqueue(sendEmail, { to: "frank@example.com" }, { delayMs: "1h" });
await queue.cancel(doomed.id);
console.log(`${at()} cancelled ${doomed.id} before it ran`);

// A schedule with seconds, so the demo sees it fire: every 3 seconds.
await queue.schedule("report-every-3s", { cron: "*/3 * * * * *", job: report, payload: {} });

const worker = new Worker(queue, {
  jobs: [sendEmail, resizeImage, report],
  queues: { critical: 6, default: 1 },
  concurrency: 4,
  sweepIntervalMs: 250,
});
worker.on("active", (job) =>
  console.log(`${at()} ▶ ${job.type.padEnd(14)} ${job.id} attempt ${job.attempt}`),
);
worker.on("completed", (job, result) =>
  console.log(`${at()} ✔ ${job.type.padEnd(14)} ${job.id} → ${JSON.stringify(result)}`),
);
worker.on("retrying", (job, error) =>
  console.log(
    `${at()} ↻ ${job.type.padEnd(14)} ${job.id} failed (${(error as Error).message}); retry at ${job.runAt.toISOString()}`,
  ),
);
worker.on("dead", (job, error) =>
  console.log(`${at()} ✖ ${job.type.padEnd(14)} ${job.id} dead: ${(error as Error).message}`),
);

const stop = async () => {
  await worker.close({ graceMs: 5_000 });
  await queue.unschedule("report-every-3s");
  const stats = await queue.stats();
  console.log(`\n${at()} stopped. Jobs by state:`, stats.states);
  await queue.close();
};
process.once("SIGINT", () => void stop().then(() => process.exit(130)));

await worker.start();
console.log(`${at()} worker started on ${dbFile} (queues critical:6, default:1; concurrency 4)`);

// Run until the demo's one-off jobs are all finished and the schedule has fired twice.
let reports = 0;
await new Promise<void>((resolve) => {
  const check = async () => {
    const s = await queue.stats();
    const oneOffPending = (s.types["send-email"]?.pending ?? 0) + (s.types["resize-image"]?.pending ?? 0);
    const running = (s.types["send-email"]?.active ?? 0) + (s.types["resize-image"]?.active ?? 0);
    if (oneOffPending === 0 && running === 0 && reports >= 2) resolve();
  };
  worker.on("completed", (job) => {
    if (job.type === "nightly-report") reports++;
    void check();
  });
  worker.on("dead", () => void check());
});
await stop();
