/**
 * A worker process for `npm run bench:compare`: opens one queue through its adapter, runs one
 * worker, and reports over IPC.
 *
 * parent → child: `init` { lib, ns, env, mode: "enqueue" | "drain" | "latency", expect,
 *   concurrency }, `go` (drain), `ping`, `exit`
 * child → parent: `ready`, `done`, `pong`, `error`
 *
 * `enqueue`: opens the queue, then times its bulk call with `expect` jobs twice: the first call
 * in this fresh process (cold: whatever the queue prepares, compiles or loads on first use is
 * in it, as in a user's first call) and the second (warm); reports `done` { coldMs, warmMs }.
 * `drain`: on `go`, starts the worker and reports once every one of the `expect` jobs (payload.i
 * in [0, expect)) has reached the handler and the store holds none still to do: the time covers
 * the completions being written, for every queue alike.
 * `latency`: starts the worker, reports `ready` once it is idle, and `done` with each job's handler
 * start time (indexed by payload.i) once `expect` jobs have run.
 */

import { now, send, serve } from "../child-ipc.mjs";
import { ADAPTERS } from "./adapters/index.mjs";

serve(init);

async function init(o) {
  const adapter = await ADAPTERS[o.lib]();
  const session = await adapter.open(o.ns, o.env);
  if (o.mode === "enqueue") {
    const timed = async () => {
      const payloads = Array.from({ length: o.expect }, (_, i) => ({ i }));
      const t0 = now();
      await session.enqueueBulk(payloads);
      return now() - t0;
    };
    const coldMs = await timed();
    const warmMs = await timed();
    await session.close();
    send({ type: "done", coldMs, warmMs });
    return;
  }
  const counts = new Uint32Array(o.expect);
  let strays = 0;
  let seen = 0;
  const starts = new Array(o.expect);
  let allSeen;
  const everyJob = new Promise((resolve) => {
    allSeen = resolve;
  });
  const onJob = (payload) => {
    const i = payload?.i;
    if (!Number.isInteger(i) || i < 0 || i >= o.expect) {
      strays++;
      return;
    }
    if (counts[i]++ === 0) {
      starts[i] = now();
      if (++seen === o.expect) allSeen();
    }
  };

  if (o.mode === "latency") {
    await session.work(o.concurrency, onJob);
    send({ type: "ready" });
    await everyJob;
    send({ type: "done", starts });
    return;
  }

  send({ type: "ready", rssBytes: process.memoryUsage().rss });
  await new Promise((resolve) => process.on("message", (m) => m.type === "go" && resolve()));
  const t0 = now();
  const cpu0 = process.cpuUsage();
  await session.work(o.concurrency, onJob);
  await everyJob;
  // Every job has reached its handler; the drain ends when the store has recorded them all.
  while ((await session.remaining()) > 0) await new Promise((resolve) => setTimeout(resolve, 2));
  const elapsedMs = now() - t0;
  const { user, system } = process.cpuUsage(cpu0);
  const rssBytes = process.memoryUsage().rss;
  let calls = strays;
  let repeated = strays;
  for (const n of counts) {
    calls += n;
    if (n > 1) repeated++;
  }
  send({ type: "done", elapsedMs, cpuMs: (user + system) / 1000, rssBytes, calls, distinct: seen, repeated });
}
