/**
 * Rate limits over HTTP (issue 15): `rateLimit` and `keyRateLimit` set with `PUT /v1/types/{type}`
 * hold leases back; a long-poll held back by one is answered when the window opens (a timer on
 * the server's clock, not its `leasePollMs`); a bad limit is INVALID_RATE_LIMIT and changes nothing.
 */
import { describe, expect, it, vi } from "vitest";
import { ErrandClient } from "../../src/client/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { type Harness, serve, startServer } from "./harness.js";

async function lease(
  h: Harness,
  type: string,
  limit = 10,
): Promise<Array<{ id: string; key: string | null }>> {
  const r = await h.http("POST", "/v1/lease", { body: { types: [type], limit } });
  expect(r.status).toBe(200);
  return r.body.jobs;
}

async function enqueue(h: Harness, jobs: Array<{ type: string; key?: string }>): Promise<string[]> {
  const r = await h.http("POST", "/v1/jobs", { body: { jobs } });
  expect(r.status).toBe(201);
  return r.body.jobs.map((j: { id: string }) => j.id);
}

for (const backend of selectedBackends()) {
  describe(`rate limits over HTTP on ${backend.name}`, () => {
    it("takes rateLimit and keyRateLimit as type settings and limits leases by them", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/types/call-api", {
        body: { rateLimit: { limit: 2, periodMs: "1s" } },
      });
      expect(put).toMatchObject({
        status: 201,
        body: { type: "call-api", rateLimit: { limit: 2, periodMs: "1s" } },
      });
      const client = new ErrandClient(h.base);
      await client.setType({ type: "sync", keyRateLimit: { limit: 1, periodMs: 1000 } });
      expect(await client.getType("sync")).toEqual({
        type: "sync",
        keyRateLimit: { limit: 1, periodMs: 1000 },
      });

      await enqueue(
        h,
        Array.from({ length: 5 }, () => ({ type: "call-api" })),
      );
      expect(await lease(h, "call-api")).toHaveLength(2);
      expect(await lease(h, "call-api")).toEqual([]);
      await h.clock.advance(999);
      expect(await lease(h, "call-api")).toEqual([]);
      await h.clock.advance(1);
      expect(await lease(h, "call-api")).toHaveLength(2);

      // Per key: one start per key and second; jobs without a key are not limited by it.
      await enqueue(h, [
        { type: "sync", key: "a" },
        { type: "sync", key: "a" },
        { type: "sync", key: "b" },
        { type: "sync" },
        { type: "sync" },
      ]);
      const first = await lease(h, "sync");
      expect(first.map((j) => j.key).sort()).toEqual(["a", "b", null, null].sort());
      expect(await lease(h, "sync")).toEqual([]);
      await h.clock.advance(1000);
      expect((await lease(h, "sync")).map((j) => j.key)).toEqual(["a"]);
    });

    it("takes `ahead` off a lease in steps when a rate limit is set while it waits", async () => {
      // At a 16 MiB payload bound a lease claims 4 jobs at a time (lease-claims.ts): this one of
      // 10 takes three claims, each of which must know the type became rate-ruled meanwhile.
      const bundle = await backend.setup({ maxPayloadBytes: 16 * 1_048_576 });
      const h = { ...bundle, ...(await serve(bundle.queue)) };
      const waiting = h.http("POST", "/v1/lease", {
        body: { types: ["call-api"], limit: 10, ahead: 8, waitMs: 60_000 },
      });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      await new ErrandClient(h.base).setType({ type: "call-api", rateLimit: { limit: 100, periodMs: 1000 } });
      await enqueue(
        h,
        Array.from({ length: 10 }, () => ({ type: "call-api" })),
      );
      const r = await waiting;
      expect(r.status).toBe(200);
      // Ten asked for, eight of them ahead: two can start at once; and the answer says so.
      expect(r.body.jobs).toHaveLength(2);
      expect(r.body.ahead).toBe(false);
    });

    it("leases a rate-ruled type only for what can start at once, and tells a prefetching RemoteWorker so", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      await client.setType({ type: "call-api", rateLimit: { limit: 3, periodMs: 1000 } });
      await enqueue(
        h,
        Array.from({ length: 6 }, () => ({ type: "call-api" })),
      );
      await enqueue(h, [{ type: "other" }, { type: "other" }]);
      // Five asked for, four ahead: one.
      const r = await h.http("POST", "/v1/lease", { body: { types: ["call-api"], limit: 5, ahead: 4 } });
      expect(r).toMatchObject({ status: 200, body: { ahead: false } });
      expect(r.body.jobs).toHaveLength(1);
      // Nothing that can start at once: answered now, whatever waitMs says.
      const none = await h.http("POST", "/v1/lease", {
        body: { types: ["call-api"], limit: 2, ahead: 2, waitMs: 60_000 },
      });
      expect(none).toMatchObject({ status: 200, body: { jobs: [], ahead: false } });
      const other = await h.http("POST", "/v1/lease", { body: { types: ["other"], limit: 2, ahead: 1 } });
      expect(other.body.jobs).toHaveLength(2);
      expect(other.body).not.toHaveProperty("ahead");

      const { RemoteWorker } = await import("../../src/client/index.js");
      const { defineJob } = await import("../../src/index.js");
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let started!: () => void;
      const first = new Promise<void>((resolve) => (started = resolve));
      const worker = new RemoteWorker(client, {
        jobs: [
          defineJob({
            type: "call-api",
            handler: () => {
              started();
              return held;
            },
          }),
        ],
        concurrency: 1,
        prefetch: 10,
      });
      await worker.start();
      // Its first lease's jobs were all taken (started or buffered) when its first handler began.
      await first;
      expect((await client.stats()).states.active).toBe(4);
      // The window (one of three started) had room for two more, and one slot: none held ahead.
      expect(worker.prefetched).toBe(0);
      expect((await client.stats()).states.pending).toBe(4);
      release();
      await worker.close();
    });

    it("answers a waiting long-poll when the window opens, not at its next poll", async () => {
      // leasePollMs far beyond the window: only the held-back timer can answer in time.
      const h = await startServer(backend, { leasePollMs: 600_000 });
      await h.http("PUT", "/v1/types/call-api", { body: { rateLimit: { limit: 1, periodMs: 5000 } } });
      const [first, second] = await enqueue(h, [{ type: "call-api" }, { type: "call-api" }]);
      expect((await lease(h, "call-api")).map((j) => j.id)).toEqual([first]);

      const waiting = h.http("POST", "/v1/lease", { body: { types: ["call-api"], waitMs: 60_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      await h.clock.advance(4999);
      expect(h.app.errand.leaseWaiters()).toBe(1);
      await h.clock.advance(1);
      const answered = await waiting;
      expect(answered.status).toBe(200);
      expect(answered.body.jobs.map((j: { id: string }) => j.id)).toEqual([second]);
      expect(h.app.errand.leaseWaiters()).toBe(0);
    });

    it("keeps no window timer for a held-back lease once no poll of its types and queues waits", async () => {
      const h = await startServer(backend);
      await h.http("PUT", "/v1/types/call-api", { body: { rateLimit: { limit: 1, periodMs: 3_600_000 } } });
      await enqueue(h, [{ type: "call-api" }, { type: "call-api" }]);
      expect(await lease(h, "call-api")).toHaveLength(1);
      const timers = h.clock.pendingTimers;
      // Each set of types is a group of its own; a window of an hour held every group's timer that
      // long, so a client naming fresh sets grew the server without end.
      for (let i = 0; i < 20; i++) {
        const r = await h.http("POST", "/v1/lease", { body: { types: ["call-api", `other-${i}`] } });
        expect(r.body.jobs).toEqual([]);
      }
      expect(h.clock.pendingTimers).toBe(timers);
      expect(h.app.errand.leaseWaiters()).toBe(0);
    });

    it("refuses a bad rate limit as INVALID_RATE_LIMIT and changes nothing", async () => {
      const h = await startServer(backend);
      const good = { type: "call-api", rateLimit: { limit: 2, periodMs: 1000 } };
      expect((await h.http("PUT", "/v1/types/call-api", { body: good })).status).toBe(201);
      for (const body of [
        { rateLimit: { limit: 0, periodMs: 1000 } },
        { rateLimit: { limit: 2, periodMs: 0 } },
        { rateLimit: { limit: 2, periodMs: "soon" } },
        { keyRateLimit: { limit: -1, periodMs: "1s" } },
        { keyRateLimit: { limit: 1, periodMs: "30d" } },
      ]) {
        const bad = await h.http("PUT", "/v1/types/call-api", { body });
        expect(bad, JSON.stringify(body)).toMatchObject({
          status: 400,
          body: { code: "INVALID_RATE_LIMIT" },
        });
        const fresh = await h.http("PUT", "/v1/types/other", { body });
        expect(fresh.body.code).toBe("INVALID_RATE_LIMIT");
      }
      expect((await h.http("GET", "/v1/types/call-api")).body).toEqual(good);
      expect((await h.http("GET", "/v1/types/other")).status).toBe(404);
      // The limit in force is still the good one.
      await enqueue(h, [{ type: "call-api" }, { type: "call-api" }, { type: "call-api" }]);
      expect(await lease(h, "call-api")).toHaveLength(2);
    });
  });
}
