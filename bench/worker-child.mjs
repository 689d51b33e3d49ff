/**
 * The benchmark's worker process: opens the store, runs one Worker, and reports over IPC.
 * Plain JavaScript, so it runs both under tsx (importing errand's TypeScript source) and under
 * plain node (importing a compiled build): `entry` in the init message says which.
 *
 * parent → child: `init` { entry, url, mode: "drain" | "drain-fail" | "latency" | "scale", concurrency, expect,
 *   indices? (payload.i runs over [0, indices); default expect), warm? (scale: the worker starts
 *   at once and runs the parent's warm-up jobs, payload { warm: true }, before `go`),
 *   join? (drain: the payload.i of a job waiting on all the others; `done` then carries joinStart,
 *   when its handler started, and lastDepDone, when the last other job's handler returned) },
 *   `go`, `ping`, `exit`
 * child → parent: `ready` (worker built; for latency: started and idle), `done` {..., cpuMs}, `pong`, `error`
 *
 * `scale`: one of several workers draining the same jobs; it cannot know its share, so it reports
 * `done` {t0, tLast, completed, …} when its worker first runs dry (a claim finds nothing and
 * nothing runs): the others hold the rest.
 *
 * `drain-fail`: as `drain`, but every job throws a NonRetryableError, and `done` comes when
 * `expect` jobs are dead.
 *
 * `rate`: runs from `go` until the parent's `stop`, then closes the worker and reports `done`
 * {starts, claimedAt, ran, …}: each handler's start (this machine's clock), each job's claim time
 * (`job.startedAt`, the store's `now`) and payload index, for the rate-limit precision check.
 *
 * `typeOptions` (any mode): defineJob options laid over the no-op type (`keyConcurrency`,
 * `rateLimit`, …), so the claims this worker makes keep them.
 *
 * `heldType` (any mode): { type, ...defineJob options } of a second no-op type the worker also
 * runs (rate-held: one held back by its rate limit); its jobs are not counted.
 */

import { fail, now, send, serve } from "./child-ipc.mjs";

serve(init);

async function init(o) {
  const { defineJob, NonRetryableError, openQueue, Worker } = await import(o.entry);
  const queue = await openQueue(o.url);
  // Each job's payload carries its index, so deliveries are counted in a flat array: a Map keyed
  // by job id would keep 20,000 strings alive through the drain and the harness's own garbage
  // would inflate the worker's measured RSS (about 15 MB on PostgreSQL, by growing V8's new space).
  const calls = new Calls(o.indices ?? o.expect);
  const starts = [];
  let joinStart = null;
  let lastDepDone = null;
  const claimedAt = [];
  const ran = [];
  const noop = defineJob({
    type: "noop",
    ...o.typeOptions,
    handler: async (payload, ctx) => {
      // A scale-out warm-up job (the parent's, before the measured jobs exist): run, not counted.
      if (payload.warm === true) return;
      if (o.mode === "latency") starts[payload.i] = now();
      if (o.mode === "rate") {
        starts.push(now());
        claimedAt.push(+ctx.job.startedAt);
        ran.push(payload.i);
      }
      if (payload.i === o.join) joinStart = now();
      // Not the completed event: the completion's write and the claim it prompts both come
      // before that event is emitted, so the join would seem to start before its last dependency ended.
      else if (o.join !== undefined) lastDepDone = now();
      calls.add(payload.i);
      if (o.mode === "drain-fail") throw new NonRetryableError("bench: every job fails");
    },
  });
  const jobs = [noop];
  if (o.heldType) jobs.push(defineJob({ ...o.heldType, handler: async () => {} }));
  const worker = new Worker(queue, { jobs, concurrency: o.concurrency });
  worker.on("error", fail);

  let completed = 0;
  const finished = new Promise((resolve) => {
    worker.on(o.mode === "drain-fail" ? "dead" : "completed", () => {
      if (++completed === o.expect) resolve(now());
    });
  });

  if (o.mode === "latency") {
    await worker.start();
    send({ type: "ready" });
    await finished;
    send({ type: "done", starts, ...calls.summary() });
    return;
  }

  if (o.mode === "rate") {
    send({ type: "ready" });
    await new Promise((resolve) => process.on("message", (m) => m.type === "go" && resolve()));
    await worker.start();
    await new Promise((resolve) => process.on("message", (m) => m.type === "stop" && resolve()));
    await worker.close();
    send({ type: "done", starts, claimedAt, ran, completed, ...calls.summary() });
    return;
  }

  if (o.mode === "scale") {
    let tLast = 0;
    worker.on("completed", () => {
      tLast = now();
    });
    // Warm: this worker, started now, runs the parent's warm-up jobs until `go`. The same Worker
    // then drains: a second one's closures and object shapes would deoptimise what the first had
    // V8 optimise, and the drain would compile it again (bench/RESULTS.md, session 24).
    if (o.warm) await worker.start();
    send({ type: "ready" });
    await new Promise((resolve) => process.on("message", (m) => m.type === "go" && resolve()));
    completed = 0;
    // Dry: idle once it has run some of the measured jobs (an idle from before they were
    // claimable does not count), or, having run none, idle with none left to anyone.
    const dry = new Promise((resolve) => {
      const check = async () => {
        if (completed === 0) {
          const { states } = await queue.stats();
          if (states.pending + states.active > 0) return;
        }
        worker.off("idle", check);
        resolve();
      };
      worker.on("idle", check);
    });
    const t0 = now();
    const cpu0 = process.cpuUsage();
    if (!o.warm) await worker.start();
    await dry;
    send({ type: "done", t0, tLast, completed, cpuMs: cpuMs(cpu0), ...calls.summary() });
    return;
  }

  send({ type: "ready", rssBytes: process.memoryUsage().rss });
  await new Promise((resolve) => process.on("message", (m) => m.type === "go" && resolve()));
  const t0 = now();
  const cpu0 = process.cpuUsage();
  await worker.start();
  const t1 = await finished;
  const cpu = cpuMs(cpu0);
  const { rss, heapUsed, heapTotal } = process.memoryUsage();
  send({
    type: "done",
    elapsedMs: t1 - t0,
    completed,
    rssBytes: rss,
    heapUsedBytes: heapUsed,
    heapTotalBytes: heapTotal,
    cpuMs: cpu,
    joinStart,
    lastDepDone,
    ...calls.summary(),
  });
}

/** CPU time (user + system) since `from`, in ms. */
function cpuMs(from) {
  const { user, system } = process.cpuUsage(from);
  return (user + system) / 1000;
}

/** Deliveries per job index (payload.i in [0, expect)); an index out of range counts as a stray. */
class Calls {
  constructor(n) {
    this.counts = new Uint32Array(n);
    this.strays = 0;
  }
  add(i) {
    if (Number.isInteger(i) && i >= 0 && i < this.counts.length) this.counts[i]++;
    else this.strays++;
  }
  /** `calls`: every delivery; `distinct`: jobs run at least once; `repeated`: jobs run more than once (strays included). */
  summary() {
    let total = this.strays;
    let distinct = 0;
    let repeated = this.strays;
    for (const n of this.counts) {
      total += n;
      if (n > 0) distinct++;
      if (n > 1) repeated++;
    }
    return { calls: total, distinct, repeated };
  }
}
