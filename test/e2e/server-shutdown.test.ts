/**
 * The server's way out: `drain()` (no more work handed out, reports still taken), `close()` (the
 * requests in flight answered, within `closeGraceMs`), and `errand serve` doing both on SIGTERM.
 */
import { once } from "node:events";
import { type AddressInfo, connect } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { ErrandClient } from "../../src/client/index.js";
import { Queue } from "../../src/queue.js";
import type { Store } from "../../src/store/store.js";
import { selectedBackends } from "../conformance/backend.js";
import { startErrand } from "./cli-process.js";
import { serve, startServer } from "./harness.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * `store` with its `method` held at a gate: `entered` resolves when a call arrives, and the call
 * goes on once `gate` resolves.
 */
function gated(store: Store, method: keyof Store, entered: () => void, gate: Promise<void>): Store {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key !== method) return value.bind(target);
      return async (...args: unknown[]) => {
        entered();
        await gate;
        return value.apply(target, args);
      };
    },
  }) as Store;
}

for (const backend of selectedBackends()) {
  describe(`server shutdown on ${backend.name}`, () => {
    it("close answers a request in flight before it resolves, rather than cut it off", async () => {
      const bundle = await backend.setup();
      const inWrite = deferred();
      const gate = deferred();
      const queue = new Queue(gated(bundle.store, "enqueueMany", inWrite.resolve, gate.promise), {
        clock: bundle.clock,
      });
      const { app, base } = await serve(queue);
      const call = new ErrandClient({ url: base }).enqueue("t", { n: 1 }, { id: "in-flight" }).then(
        (job) => job.id,
        (error: Error) => `error ${error.message}`,
      );
      await inWrite.promise;
      let closed = false;
      const closing = app.close().then(() => {
        closed = true;
      });
      // The server stops listening once its preClose hooks are done; the write is still held.
      await vi.waitFor(() => expect(app.server.listening).toBe(false), { interval: 2 });
      expect(closed).toBe(false);
      gate.resolve();
      // Before: the connection was cut at close, the client told UNAVAILABLE, the job stored
      // all the same (a client retrying without an id enqueued it twice).
      expect(await call).toBe("in-flight");
      await closing;
      expect(await bundle.queue.get("in-flight")).toMatchObject({ state: "pending" });
    });

    it("close cuts a request still unanswered after closeGraceMs, on the queue's clock", async () => {
      const bundle = await backend.setup();
      const inWrite = deferred();
      const gate = deferred();
      const queue = new Queue(gated(bundle.store, "enqueueMany", inWrite.resolve, gate.promise), {
        clock: bundle.clock,
      });
      const { app, base } = await serve(queue, { closeGraceMs: 5000 });
      const call = new ErrandClient({ url: base }).enqueue("t", {}, { id: "stuck" }).then(
        () => "answered",
        (error: Error & { code?: string }) => error.code,
      );
      await inWrite.promise;
      const closing = app.close();
      await vi.waitFor(() => expect(app.server.listening).toBe(false), { interval: 2 });
      await bundle.clock.advance(4999);
      expect(bundle.clock.pendingTimers).toBeGreaterThan(0);
      await bundle.clock.advance(1);
      await closing;
      expect(await call).toBe("UNAVAILABLE");
      expect(bundle.clock.pendingTimers).toBe(0);
      gate.resolve();
    });

    it("close ends idle connections at once: a keep-alive one, and one that never sent a request", async () => {
      const h = await startServer(backend);
      expect((await h.http("GET", "/healthz")).status).toBe(200); // leaves a keep-alive connection
      const { port } = h.app.server.address() as AddressInfo;
      const silent = connect(port, "127.0.0.1");
      await once(silent, "connect");
      const ended = once(silent, "close");
      // The clock never moves: only closing them at once lets the close end (Node's own idle
      // check spared the silent one until the grace ended).
      await h.app.close();
      await ended;
    });

    it("close answers a waiting long-poll at once (503, Retry-After), without waiting out the grace", async () => {
      const h = await startServer(backend);
      const waiting = h.http("POST", "/v1/lease", { body: { types: ["none"], waitMs: 120_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      // The clock never moves: only answering the poll in preClose lets the close end.
      await h.app.close();
      const answered = await waiting;
      expect(answered).toMatchObject({ status: 503, body: { code: "UNAVAILABLE" } });
      expect(answered.headers.get("retry-after")).toBe("1");
    });

    it("drain hands out no more jobs, says not ready, and takes reports until the ones it handed out are in", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("a", {}, { id: "out" });
      const leased = await h.http("POST", "/v1/lease", { body: { types: ["a"], leaseMs: 60_000 } });
      expect(leased.body.jobs.map((j: { id: string }) => j.id)).toEqual(["out"]);
      const waiting = h.http("POST", "/v1/lease", { body: { types: ["b"], waitMs: 120_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });

      let drained = false;
      const draining = h.app.errand.drain({ graceMs: 60_000 }).then(() => {
        drained = true;
      });
      expect(h.app.errand.draining()).toBe(true);
      // The waiting poll is answered at once, and every lease after it refused alike.
      const answered = await waiting;
      expect(answered).toMatchObject({ status: 503, body: { code: "UNAVAILABLE" } });
      expect(answered.headers.get("retry-after")).toBe("1");
      await h.queue.enqueue("a", {}, { id: "new" });
      const refused = await h.http("POST", "/v1/lease", { body: { types: ["a"] } });
      expect(refused).toMatchObject({ status: 503, body: { code: "UNAVAILABLE" } });
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(await h.queue.get("new")).toMatchObject({ state: "pending", attempt: 0 });
      expect((await h.http("GET", "/readyz")).status).toBe(503);
      expect((await h.http("GET", "/healthz")).status).toBe(200);

      // The attempt handed out before is still served: heartbeat, checkpoint, then its report.
      const hb = await h.http("POST", "/v1/jobs/out/heartbeat", { body: { attempt: 1, leaseMs: 60_000 } });
      expect(hb.status).toBe(200);
      const cp = await h.http("POST", "/v1/jobs/out/checkpoint", { body: { attempt: 1, data: { p: 1 } } });
      expect(cp.status).toBe(200);
      expect(drained).toBe(false);
      const done = await h.http("POST", "/v1/report", {
        body: { reports: [{ id: "out", attempt: 1, outcome: "complete", result: "r" }] },
      });
      expect(done.body.results).toEqual([{ id: "out", ok: true }]);
      // Resolved by the report: the clock never moved.
      await draining;
      expect(await h.queue.get("out")).toMatchObject({ state: "completed", result: "r" });
    });

    it("drain ends at its grace, or when the leases it handed out run out, whichever is first", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("a", {}, { id: "short" });
      await h.queue.enqueue("a", {}, { id: "long" });
      await h.http("POST", "/v1/lease", { body: { types: ["a"], limit: 1, leaseMs: 3000 } });
      let drained = false;
      const draining = h.app.errand.drain({ graceMs: 5000 }).then(() => {
        drained = true;
      });
      await h.clock.advance(3000);
      await draining;
      expect(drained).toBe(true);

      const again = await startServer(backend);
      await again.queue.enqueue("a", {}, { id: "held" });
      await again.http("POST", "/v1/lease", { body: { types: ["a"], leaseMs: 60_000 } });
      const bounded = again.app.errand.drain({ graceMs: 5000 });
      await again.clock.advance(5000);
      await bounded;
      await expect(again.app.errand.drain({ graceMs: -1 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    });

    it("gives back what a lease's claim took once the server began draining, unspent", async () => {
      const bundle = await backend.setup();
      const inClaim = deferred();
      const gate = deferred();
      let holding = false;
      const store = new Proxy(bundle.store, {
        get(target, key) {
          const value = Reflect.get(target, key, target);
          if (typeof value !== "function") return value;
          if (key !== "claim") return value.bind(target);
          return async (...args: unknown[]) => {
            if (holding) {
              inClaim.resolve();
              await gate.promise;
            }
            return value.apply(target, args);
          };
        },
      }) as Store;
      const { app, http } = await serve(new Queue(store, { clock: bundle.clock }));
      await bundle.queue.enqueue("a", {}, { id: "j" });
      holding = true;
      const lease = http("POST", "/v1/lease", { body: { types: ["a"] } });
      await inClaim.promise;
      const draining = app.errand.drain({ graceMs: 60_000 });
      gate.resolve();
      expect(await lease).toMatchObject({ status: 503, body: { code: "UNAVAILABLE" } });
      expect(await bundle.queue.get("j")).toMatchObject({ state: "pending", attempt: 1, errors: [] });
      // Nothing was handed out: nothing to wait for.
      await draining;
    });
  });

  if (backend.conformanceOnly) continue;
  describe(`errand serve on ${backend.name}`, () => {
    it("SIGTERM: drains at once, takes a remote worker's report during the grace, then exits 0", async () => {
      const bundle = await backend.setup();
      const serving = startErrand(["serve", "--port", "0", "--no-dashboard", "--store", bundle.url]);
      const [, base] = await serving.seen(/errand serving (http:\/\/\S+)/);
      const client = new ErrandClient({ url: base! });
      await client.enqueue("remote", {}, { id: "r1" });
      const [job] = await client.lease({ types: ["remote"], leaseMs: 60_000 });
      expect(job?.id).toBe("r1");
      await client.enqueue("remote", {}, { id: "r2" });
      const exited = serving.stop("SIGTERM");
      // Not ready from the signal on (before: the server was gone at once, the report refused).
      await vi.waitFor(async () => expect((await fetch(`${base}/readyz`)).status).toBe(503), {
        interval: 10,
        timeout: 5000,
      });
      await expect(client.lease({ types: ["remote"] })).rejects.toMatchObject({
        code: "UNAVAILABLE",
        details: { status: 503 },
      });
      expect(await client.heartbeat(job!, { leaseMs: 60_000 })).toBe(true);
      expect(await client.complete(job!, "done")).toBe(true);
      // The one attempt it handed out is reported: it closes without waiting out the grace.
      expect(await exited).toBe(0);
      expect(await bundle.queue.get("r1")).toMatchObject({ state: "completed", result: "done" });
      expect(await bundle.queue.get("r2")).toMatchObject({ state: "pending", attempt: 0 });
    });
  });
}
