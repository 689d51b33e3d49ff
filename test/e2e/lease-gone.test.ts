/**
 * A lease request whose worker goes away while the server's claim for it runs: the jobs that
 * claim leased go back at once, their attempts unspent, instead of staying leased to no one until
 * their leases run out (an at-most-once job would then go dead without having run).
 *
 * Found by test/property/hostile-remote-worker.test.ts: a RemoteWorker closed while its lease
 * request's claim ran left the job that claim took leased to it, and the next worker, on the same
 * server, waited out the lease.
 */
import { request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { Queue } from "../../src/queue.js";
import type { Store } from "../../src/store/store.js";
import { selectedBackends } from "../conformance/backend.js";
import { serve } from "./harness.js";

/** Resolvable from outside. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

for (const backend of selectedBackends()) {
  describe(`a lease whose worker left during its claim, on ${backend.name}`, () => {
    it("gives the jobs it leased back, their attempts unspent", async () => {
      const bundle = await backend.setup();
      const inClaim = signal();
      const gate = signal();
      const released = signal();
      // The store as the server's queue sees it: its claims wait at the gate, and its releases
      // say when they are done.
      const store = new Proxy(bundle.store, {
        get(target, key) {
          const value = Reflect.get(target, key, target);
          if (typeof value !== "function") return value;
          if (key === "claim") {
            return async (...args: unknown[]) => {
              inClaim.resolve();
              await gate.promise;
              return value.apply(target, args);
            };
          }
          if (key === "release") {
            return async (...args: unknown[]) => {
              const r = await value.apply(target, args);
              released.resolve();
              return r;
            };
          }
          return value.bind(target);
        },
      }) as Store;
      const queue = new Queue(store, { clock: bundle.clock });
      const { app, base } = await serve(queue);
      const job = await bundle.queue.enqueue("gone", {}, { id: "gone-1", delivery: "at_most_once" });

      const serverSocket = signal<Socket>();
      app.server.once("connection", (socket: Socket) => serverSocket.resolve(socket));
      const req = httpRequest(`${base}/v1/lease`, {
        method: "POST",
        headers: { "content-type": "application/json" },
      });
      req.on("error", () => {}); // destroyed below, on purpose
      req.end(JSON.stringify({ types: ["gone"], waitMs: 5_000, workerId: "leaving" }));
      await inClaim.promise;
      // The worker leaves while the claim is under way; the server sees its connection close.
      const socket = await serverSocket.promise;
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      req.destroy();
      await closed;
      gate.resolve();
      await released.promise;

      // Released: pending, held by no one, the attempt given back (one more allowed).
      const after = await bundle.queue.get(job.id);
      expect(after).toMatchObject({ state: "pending", workerId: null, maxAttempts: job.maxAttempts + 1 });
      // And the next worker gets it.
      const [again] = await bundle.queue.lease({ types: ["gone"] });
      expect(again?.id).toBe(job.id);
    });
  });
}
