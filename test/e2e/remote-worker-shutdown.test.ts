/**
 * A RemoteWorker around its close and a server going away: a lease answer arriving as the worker
 * closes is read and its jobs given back (not left leased to a closed worker), close() cuts short
 * the wait after a failed lease, and a report that fails on the way (a server restarting or
 * draining) is sent again, its resend recognised when the first one had landed, until close's
 * grace period ends.
 *
 * Time is the bundle's ManualClock; nothing here sleeps. A `fetch` wrapper stands in for the
 * network: it holds a lease answer's body, drops a report's answer after the server acted on it,
 * or refuses a request before it reaches the server.
 */
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { advanceUntil, serve, startServer } from "./harness.js";

/** Resolvable from outside. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** What undici rejects with when the connection is refused or reset. */
function connectionError(code: "ECONNREFUSED" | "ECONNRESET"): TypeError {
  return new TypeError("fetch failed", { cause: Object.assign(new Error(code), { code }) });
}

const silent = pino({ level: "silent" });

const pathOf = (input: Parameters<typeof fetch>[0]) => new URL(String(input)).pathname;

for (const backend of selectedBackends()) {
  describe(`RemoteWorker shutdown on ${backend.name}`, () => {
    it("gives back the jobs of a lease answer arriving as it closes, their attempts unspent", async () => {
      const h = await startServer(backend);
      const reading = signal();
      const gate = signal();
      const client = new ErrandClient({
        url: h.base,
        fetch: async (input, init) => {
          const r = await fetch(input, init);
          if (pathOf(input) !== "/v1/lease") return r;
          const text = await r.text();
          // The answer's head is in; its body is still arriving, and fails if the request is
          // aborted meanwhile, as a real one does.
          const requestSignal = init?.signal;
          const body = new ReadableStream<Uint8Array>({
            async pull(controller) {
              reading.resolve();
              await gate.promise;
              if (requestSignal?.aborted) controller.error(requestSignal.reason);
              else {
                controller.enqueue(new TextEncoder().encode(text));
                controller.close();
              }
            },
          });
          return new Response(body, { status: r.status, headers: r.headers });
        },
      });
      const runs: string[] = [];
      const task = defineJob({
        type: "arriving",
        handler: async (_p: unknown, ctx) => {
          runs.push(ctx.job.id);
        },
      });
      const jobs = await h.queue.enqueueMany(
        task,
        Array.from({ length: 20 }, (_, n) => ({
          payload: { n },
          options: { delivery: n % 2 === 0 ? ("at_most_once" as const) : ("at_least_once" as const) },
        })),
      );
      const worker = new RemoteWorker(client, {
        jobs: [task],
        concurrency: 2,
        prefetch: 18,
        waitMs: 60_000,
        clock: h.clock,
        logger: silent,
      });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      await worker.start();
      await reading.promise;
      // close() as a SIGTERM handler calls it: the lease's answer has begun, its jobs leased.
      const closing = worker.close({ graceMs: 0 });
      await new Promise<void>((resolve) => setImmediate(resolve));
      gate.resolve();
      await closing;

      expect(runs).toEqual([]);
      expect(errors).toEqual([]);
      for (const job of jobs) {
        // Released: pending, held by no one, the attempt given back (one more allowed).
        expect(await h.queue.get(job.id)).toMatchObject({
          state: "pending",
          workerId: null,
          attempt: 1,
          maxAttempts: job.maxAttempts + 1,
          errors: [],
        });
      }
    });

    it("cuts short the wait after a failed lease when it closes", async () => {
      const h = await startServer(backend);
      // The server cannot be reached.
      const client = new ErrandClient({
        url: h.base,
        fetch: async () => {
          throw connectionError("ECONNREFUSED");
        },
      });
      const task = defineJob({ type: "unreachable", handler: async () => null });
      const worker = new RemoteWorker(client, {
        jobs: [task],
        retryDelayMs: 20_000,
        clock: h.clock,
        logger: silent,
      });
      const failed = signal<unknown>();
      worker.on("error", (e) => failed.resolve(e));
      const serverTimers = h.clock.pendingTimers;
      await worker.start();
      expect(await failed.promise).toMatchObject({ code: "UNAVAILABLE" });
      // Waiting 20 s of the clock, which does not move: close must not wait for it.
      let closed = false;
      const closing = worker.close().then(() => {
        closed = true;
      });
      await vi.waitFor(() => expect(closed).toBe(true), { interval: 5 });
      await closing;
      // No timer of the worker's is left on the clock (the wait's was dropped).
      expect(h.clock.pendingTimers).toBe(serverTimers);
    });

    it("waits out a draining server's Retry-After without an error event, then leases from the next", async () => {
      const h = await startServer(backend);
      // Two servers at one address, as behind a load balancer: the first drains, the second answers.
      let target = h.base;
      const leases: string[] = [];
      const client = new ErrandClient({
        url: h.base,
        fetch: async (input, init) => {
          const url = new URL(String(input));
          if (url.pathname === "/v1/lease") leases.push(target);
          return fetch(`${target}${url.pathname}${url.search}`, init);
        },
      });
      const ran = signal<string>();
      const task = defineJob({ type: "drained", handler: async (_p: null, { job }) => ran.resolve(job.id) });
      const worker = new RemoteWorker(client, {
        jobs: [task],
        retryDelayMs: 30_000,
        clock: h.clock,
        logger: silent,
      });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await h.app.errand.drain({ graceMs: 0 });
      const start = h.clock.now();
      await worker.start();
      await vi.waitFor(() => expect(leases.length).toBeGreaterThanOrEqual(1), { interval: 5 });
      const second = await serve(h.queue);
      target = second.base;
      await h.queue.enqueue("drained", null, { id: "after-drain" });
      // Retry-After is 1 s: the worker comes back after it, not after its own 30 s retryDelayMs.
      await advanceUntil(h.clock, () => leases.includes(second.base), 250);
      expect(h.clock.now() - start).toBeGreaterThanOrEqual(1000);
      expect(h.clock.now() - start).toBeLessThan(30_000);
      expect(await ran.promise).toBe("after-drain");
      expect(errors).toEqual([]);
    });

    it("sends a report again when it fails on the way, and takes a resend of one that landed as done", async () => {
      const h = await startServer(backend);
      const sent: string[] = [];
      /** What the network does to the next request to a path: lose its answer, refuse it, or 503. */
      const faults = new Map<string, Array<"lose-answer" | "refuse" | "503">>();
      const client = new ErrandClient({
        url: h.base,
        fetch: async (input, init) => {
          const path = pathOf(input);
          const fault = faults.get(path)?.shift();
          if (fault !== "lose-answer") sent.push(`${path}${fault ? ` ${fault}` : ""}`);
          if (fault === "refuse") throw connectionError("ECONNREFUSED");
          if (fault === "503") {
            return new Response(JSON.stringify({ code: "UNAVAILABLE", message: "shutting down" }), {
              status: 503,
              headers: { "content-type": "application/json" },
            });
          }
          const r = await fetch(input, init);
          if (fault === "lose-answer") {
            await r.text(); // the server has acted on it; its answer never arrives
            sent.push(`${path} ${fault}`);
            throw connectionError("ECONNRESET");
          }
          return r;
        },
      });
      const task = defineJob({
        type: "flaky-net",
        maxAttempts: 3,
        // Not due again while the test moves the clock on.
        backoff: { type: "fixed", delayMs: 3_600_000 },
        handler: async (p: { fail: boolean }) => {
          if (p.fail) throw new Error("handler failed");
          return { done: true };
        },
      });
      const worker = new RemoteWorker(client, {
        jobs: [task],
        concurrency: 1,
        waitMs: 60_000,
        clock: h.clock,
        logger: silent,
      });
      const errors: unknown[] = [];
      const events: string[] = [];
      worker.on("error", (e) => errors.push(e));
      worker.on("completed", (j, result) => events.push(`completed ${j.id} ${JSON.stringify(result)}`));
      worker.on("retrying", (j) => events.push(`retrying ${j.id}`));
      onTestFinished(() => worker.close({ graceMs: 0 }));

      // A completion: its report lands but the answer is lost, then the resend meets a 503.
      faults.set("/v1/report", ["lose-answer", "503"]);
      const ok = await h.queue.enqueue(task, { fail: false }, { id: "ok" });
      await worker.start();
      // Resent, answered 503, resent again: answered as the repeat of a recorded completion.
      await advanceUntil(h.clock, () => events.length > 0);
      expect(events).toEqual(['completed ok {"done":true}']);
      expect(sent.filter((s) => s.startsWith("/v1/report"))).toEqual([
        "/v1/report lose-answer",
        "/v1/report 503",
        "/v1/report",
      ]);
      expect(await h.queue.get(ok.id)).toMatchObject({
        state: "completed",
        attempt: 1,
        result: { done: true },
      });

      // A failure refused before it reached the server: the resend records it, with its events.
      faults.set("/v1/jobs/refused/fail", ["refuse"]);
      const refused = await h.queue.enqueue(task, { fail: true }, { id: "refused" });
      await advanceUntil(h.clock, () => events.includes(`retrying ${refused.id}`));
      expect(sent.filter((s) => s.startsWith(`/v1/jobs/${refused.id}/fail`))).toEqual([
        `/v1/jobs/${refused.id}/fail refuse`,
        `/v1/jobs/${refused.id}/fail`,
      ]);
      const afterRefused = await h.queue.get(refused.id);
      expect(afterRefused).toMatchObject({ state: "pending", attempt: 1 });
      expect(afterRefused?.errors.map((e) => e.message)).toEqual(["handler failed"]);

      // A failure whose answer is lost: the resend finds it recorded and is answered as the first
      // was, so the worker tells of the retry once, with no error and no second failure.
      faults.set("/v1/jobs/lost/fail", ["lose-answer"]);
      const lost = await h.queue.enqueue(task, { fail: true }, { id: "lost" });
      await advanceUntil(h.clock, () => events.includes(`retrying ${lost.id}`));
      expect(sent.filter((s) => s.startsWith(`/v1/jobs/${lost.id}/fail`))).toEqual([
        `/v1/jobs/${lost.id}/fail lose-answer`,
        `/v1/jobs/${lost.id}/fail`,
      ]);
      await worker.close({ graceMs: 0 });
      const afterLost = await h.queue.get(lost.id);
      expect(afterLost).toMatchObject({ state: "pending", attempt: 1 });
      expect(afterLost?.errors.map((e) => e.message)).toEqual(["handler failed"]);
      expect(events.filter((e) => e === `retrying ${lost.id}`)).toHaveLength(1);
      expect(errors).toEqual([]);
    });

    it("resends while closing until its grace period ends, then leaves the outcome to its lease", async () => {
      const h = await startServer(backend);
      let down = false;
      const reports: number[] = [];
      const client = new ErrandClient({
        url: h.base,
        fetch: async (input, init) => {
          if (pathOf(input) === "/v1/report") {
            reports.push(h.clock.now());
            if (down) throw connectionError("ECONNREFUSED");
          }
          return fetch(input, init);
        },
      });
      const gates = new Map<string, () => void>();
      const task = defineJob({
        type: "draining",
        handler: (_p: unknown, ctx) =>
          new Promise<string>((resolve) => {
            gates.set(ctx.job.id, () => resolve(ctx.job.id));
          }),
      });
      const worker = new RemoteWorker(client, {
        jobs: [task],
        concurrency: 2,
        waitMs: 60_000,
        clock: h.clock,
        logger: silent,
      });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      await h.queue.enqueue(task, {}, { id: "back-in-time" });
      await h.queue.enqueue(task, {}, { id: "too-late" });
      const serverTimers = h.clock.pendingTimers;
      await worker.start();
      await vi.waitFor(() => expect(gates.size).toBe(2), { interval: 5 });

      // The server goes away as the worker closes: the first completion fails on the way, and is
      // sent again until the server is back, within the grace period.
      down = true;
      let closed = false;
      const closing = worker.close({ graceMs: 5000 }).then(() => {
        closed = true;
      });
      gates.get("back-in-time")!();
      await advanceUntil(h.clock, () => reports.length >= 2);
      down = false;
      await advanceUntil(h.clock, async () => (await h.queue.get("back-in-time"))?.state === "completed");

      // Down again: the second is resent until the grace period ends, then given up.
      down = true;
      gates.get("too-late")!();
      await advanceUntil(h.clock, () => closed);
      await closing;
      const start = reports[0]!;
      // Resent within the grace period only, never after it; close did not wait for reportRetryMs
      // (leaseMs, 30 s) to run out.
      expect(reports.length).toBeGreaterThan(5);
      expect(reports.at(-1)! - start).toBeLessThanOrEqual(5000);
      expect(h.clock.now() - start).toBeLessThan(10_000);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: "UNAVAILABLE" });
      // Left as it was: its lease runs out and it is recovered, as after a crash.
      expect(await h.queue.get("too-late")).toMatchObject({ state: "active", attempt: 1 });
      expect(h.clock.pendingTimers).toBe(serverTimers);
    });
  });
}
