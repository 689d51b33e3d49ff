/**
 * Job types live in the store: a server started again without `types` still has them, and every
 * server on the store follows a type created, changed or deleted through another one (its
 * defaults at enqueue, its cap at lease, its push target).
 */

import { describe, expect, it, vi } from "vitest";
import { ErrandClient } from "../../src/client/client.js";
import { type JobTypeConfig, JobTypeRegistry } from "../../src/server/job-types.js";
import { selectedBackends } from "../conformance/backend.js";
import { type Harness, serve, startServer } from "./harness.js";

/** The servers' `typesRefreshMs` default. */
const REFRESH_MS = 1000;

const resize = { type: "resize", queue: "images", priority: 5, maxAttempts: 2, concurrency: 1 };

for (const backend of selectedBackends()) {
  describe(`job types in the store on ${backend.name}`, () => {
    it("a server started again without types still has the ones it was given and the ones PUT", async () => {
      const first = await startServer(backend, { types: [resize] });
      const put = await first.http("PUT", "/v1/types/email", { body: { maxAttempts: 9 } });
      expect(put.status).toBe(201);
      await first.app.close();

      const again = await serve(await first.connect());
      const listed = await again.http("GET", "/v1/types");
      expect(listed.body.types).toEqual([{ type: "email", maxAttempts: 9 }, resize]);
      expect((await again.http("GET", "/v1/types/resize")).body).toEqual(resize);
      // Its defaults and cap are in force from the start, with no request for the type first.
      expect(again.app.errand.types.get("resize")).toEqual(resize);
      for (const n of [1, 2]) {
        const job = await again.http("POST", "/v1/jobs", { body: { type: "resize", payload: n } });
        expect(job.body).toMatchObject({ queue: "images", priority: 5, maxAttempts: 2 });
      }
      expect((await again.http("POST", "/v1/jobs", { body: { type: "email" } })).body.maxAttempts).toBe(9);
      const leased = await again.http("POST", "/v1/lease", { body: { types: ["resize"], limit: 5 } });
      expect(leased.body.jobs).toHaveLength(1);
    });

    it("starting with the types the store already holds writes nothing", async () => {
      const first = await startServer(backend, { types: [resize] });
      const stored = await first.store.getJobType({ name: "resize" });
      await first.clock.advance(60_000);
      await serve(await first.connect(), { types: [resize] });
      expect(await first.store.getJobType({ name: "resize" })).toEqual(stored);
      // Changed settings are written, keeping the type's createdAt.
      await serve(await first.connect(), { types: [{ ...resize, concurrency: 3 }] });
      expect(await first.store.getJobType({ name: "resize" })).toMatchObject({
        createdAt: stored!.createdAt,
        updatedAt: stored!.createdAt + 60_000,
      });
      // One bad type among several: nothing is written, and the server does not start.
      await expect(
        serve(await first.connect(), { types: [{ type: "ok" }, { type: "bad", maxAttempts: 0 }] }),
      ).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringMatching(/^types\[1\]/) });
      expect(await first.store.getJobType({ name: "ok" })).toBeNull();
    });

    it("refuses in code a push target the HTTP schema refuses, before writing anything", async () => {
      const first = await startServer(backend);
      const url = "http://127.0.0.1:9/hook";
      const bad: Array<[unknown, RegExp]> = [
        [{ url, timeoutMs: -1 }, /push\.timeoutMs/],
        [{ url, timeoutMs: Number.NaN }, /push\.timeoutMs/],
        [{ url, timeoutMs: 700_000 }, /push\.timeoutMs/],
        [{ url, secret: 42 }, /push\.secret/],
        [{ url, secret: "short" }, /push\.secret/],
        [{ url, secret: `${"s".repeat(16)}\u0000` }, /push\.secret/],
        [{ url, secret: `${"s".repeat(16)}\ud800` }, /push\.secret/],
        [{ url, timeout: 500 }, /did you mean "timeoutMs"/],
        [{ url: `http://x/${"a".repeat(2048)}` }, /push\.url/],
        [{ url: 7 }, /push\.url/],
      ];
      for (const [push, message] of bad) {
        const config = { type: "hook", push } as JobTypeConfig;
        await expect(serve(await first.connect(), { types: [config] })).rejects.toMatchObject({
          code: "INVALID_OPTION",
          message,
        });
        await expect(first.app.errand.types.set(config)).rejects.toMatchObject({
          code: "INVALID_OPTION",
          message,
        });
        // The HTTP route refuses the same target with a 400.
        expect((await first.http("PUT", "/v1/types/hook", { body: { push } })).status).toBe(400);
      }
      expect(await first.store.getJobType({ name: "hook" })).toBeNull();
      const good = { url, secret: "s".repeat(16), timeoutMs: 100 };
      expect(await first.app.errand.types.set({ type: "hook", push: good })).toBe(true);
    });

    it("holds at most maxJobTypes: a new type past it is a 409 LIMIT_REACHED that stores nothing", async () => {
      const first = await startServer(backend, { types: [resize, { type: "email" }], maxJobTypes: 3 });
      expect((await first.http("PUT", "/v1/types/sms", { body: {} })).status).toBe(201);
      const full = await first.http("PUT", "/v1/types/fax", { body: { maxAttempts: 2 } });
      expect(full.status).toBe(409);
      expect(full.body).toMatchObject({ code: "LIMIT_REACHED", details: { limit: 3 } });
      expect(await first.store.getJobType({ name: "fax" })).toBeNull();
      // A type it holds may still change at the limit.
      expect((await first.http("PUT", "/v1/types/sms", { body: { maxAttempts: 4 } })).status).toBe(200);
      // Room made through another server counts at once: the full server reads the store again.
      const other = await serve(await first.connect(), { maxJobTypes: 3 });
      expect((await other.http("DELETE", "/v1/types/email")).status).toBe(204);
      expect((await first.http("PUT", "/v1/types/fax", { body: {} })).status).toBe(201);
      expect((await first.http("GET", "/v1/types")).body.types.map((t: { type: string }) => t.type)).toEqual([
        "fax",
        "resize",
        "sms",
      ]);
      // Types given at start count too, and the option itself is bounded.
      await expect(
        serve(await first.connect(), { types: [{ type: "one" }], maxJobTypes: 3 }),
      ).rejects.toMatchObject({ code: "LIMIT_REACHED" });
      expect(await first.store.getJobType({ name: "one" })).toBeNull();
      // Several new types past it: refused before any is written.
      await expect(
        serve(await first.connect(), { types: [resize, { type: "two" }, { type: "three" }], maxJobTypes: 4 }),
      ).rejects.toMatchObject({ code: "LIMIT_REACHED" });
      expect(await first.store.getJobType({ name: "two" })).toBeNull();
      for (const maxJobTypes of [0, 100_001, 1.5, Number.NaN]) {
        await expect(serve(await first.connect(), { maxJobTypes })).rejects.toMatchObject({
          code: "INVALID_OPTION",
          message: expect.stringMatching(/maxJobTypes/),
        });
        // The registry, exported from errand/server, checks it itself.
        expect(() => new JobTypeRegistry(first.queue, maxJobTypes)).toThrow(/maxJobTypes/);
      }
    });

    it("a lease that names no queues or types takes a type's retries from its retryQueue", async () => {
      const h = await startServer(backend);
      const type = { retryQueue: "slow-lane", backoff: { type: "fixed", delayMs: 0 } };
      expect((await h.http("PUT", "/v1/types/laned", { body: type })).status).toBe(201);
      const { body: job } = await h.http("POST", "/v1/jobs", { body: { type: "laned" } });
      const [first] = (await h.http("POST", "/v1/lease", { body: {} })).body.jobs;
      expect(first).toMatchObject({ id: job.id, attempt: 1 });
      expect(
        (await h.http("POST", `/v1/jobs/${job.id}/fail`, { body: { attempt: 1, error: "boom" } })).status,
      ).toBe(200);
      const [retry] = (await h.http("POST", "/v1/lease", { body: {} })).body.jobs;
      expect(retry).toMatchObject({ id: job.id, attempt: 2, queue: "slow-lane" });
    });

    it("holds maxJobTypes against new types PUT at the same moment through one server", async () => {
      const h = await startServer(backend, { maxJobTypes: 3 });
      const puts = await Promise.all(
        Array.from({ length: 12 }, (_, i) => h.http("PUT", `/v1/types/race${i}`, { body: {} })),
      );
      expect(puts.filter((r) => r.status === 201)).toHaveLength(3);
      expect(puts.filter((r) => r.status === 409 && r.body.code === "LIMIT_REACHED")).toHaveLength(9);
      expect(await h.store.listJobTypes()).toHaveLength(3);
    });

    it("pages types by name in byte order over HTTP and through the client; a bad limit or cursor is a 400", async () => {
      // Byte order: upper case, then "_", then lower case.
      const names = ["z", "_x", "a", "B", "m"];
      const h = await startServer(backend, { types: names.map((type) => ({ type, maxAttempts: 2 })) });
      const page = async (query: string) => (await h.http("GET", `/v1/types?${query}`)).body;
      const first = await page("limit=2");
      expect(first.types.map((t: { type: string }) => t.type)).toEqual(["B", "_x"]);
      expect(first.nextCursor).toBe("_x");
      // A cursor need not name a type that still exists: the next page starts after it all the same.
      expect((await h.http("DELETE", "/v1/types/_x")).status).toBe(204);
      expect(await page(`limit=2&cursor=${first.nextCursor}`)).toEqual({
        types: [
          { type: "a", maxAttempts: 2 },
          { type: "m", maxAttempts: 2 },
        ],
        nextCursor: "m",
      });
      // A type made through another server since shows on the next page read.
      const other = await serve(await h.connect());
      expect((await other.http("PUT", "/v1/types/n", { body: {} })).status).toBe(201);
      expect(await page("limit=2&cursor=m")).toEqual({
        types: [{ type: "n" }, { type: "z", maxAttempts: 2 }],
        nextCursor: "z",
      });
      expect(await page("cursor=z")).toEqual({ types: [], nextCursor: null });
      // Without a limit, a page of 50.
      expect(await page("")).toMatchObject({ types: { length: 5 }, nextCursor: null });
      for (const query of [
        "limit=0",
        "limit=1001",
        "limit=x",
        "limit=-1",
        "cursor=",
        "cursor=a%20b",
        "other=1",
      ]) {
        const bad = await h.http("GET", `/v1/types?${query}`);
        expect(bad.status, query).toBe(400);
      }
      const client = new ErrandClient({ url: h.base });
      expect((await client.types()).map((t) => t.type)).toEqual(["B", "a", "m", "n", "z"]);
      expect(await client.typePage({ limit: 1, cursor: "m" })).toEqual({
        types: [{ type: "n" }],
        nextCursor: "n",
      });
      // The route's schema bounds the limit: INVALID_REQUEST, as every schema refusal.
      await expect(client.typePage({ limit: 0 })).rejects.toMatchObject({ code: "INVALID_REQUEST" });
      // The registry checks its options itself, as errand/server exports it.
      const types = h.app.errand.types;
      expect(() => types.page({ limit: 1001 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
      expect(() => types.page({ cursor: "" })).toThrow(
        expect.objectContaining({ code: "INVALID_TYPE_NAME" }),
      );
      expect(() => types.page({ after: "a" } as never)).toThrow(
        expect.objectContaining({ code: "INVALID_OPTION" }),
      );
    });

    it("a type PUT, changed or deleted on one server takes effect on another on the same store", async () => {
      const a = await startServer(backend);
      const b = await serve(await a.connect());
      /** Moves the shared clock until `b` has picked up what `check` expects. */
      const untilB = (check: (h: Pick<Harness, "app">) => void) =>
        vi.waitFor(
          async () => {
            await a.clock.advance(REFRESH_MS);
            check(b);
          },
          { interval: 20, timeout: 5000 },
        );

      expect((await a.http("PUT", "/v1/types/resize", { body: resize })).status).toBe(201);
      // A read through B answers from the store at once.
      expect((await b.http("GET", "/v1/types/resize")).body).toEqual(resize);
      await untilB((h) => expect(h.app.errand.types.get("resize")).toEqual(resize));

      // B applies the defaults and, with A, keeps to the cap across both servers.
      for (const n of [1, 2, 3]) {
        const job = await b.http("POST", "/v1/jobs", { body: { type: "resize", payload: n } });
        expect(job.body).toMatchObject({ queue: "images", priority: 5, maxAttempts: 2 });
      }
      const lease = { body: { types: ["resize"], limit: 5 } };
      expect((await b.http("POST", "/v1/lease", lease)).body.jobs).toHaveLength(1);
      expect((await a.http("POST", "/v1/lease", lease)).body.jobs).toHaveLength(0);
      expect((await b.http("POST", "/v1/lease", lease)).body.jobs).toHaveLength(0);

      // A raises the cap: B follows.
      await a.http("PUT", "/v1/types/resize", { body: { ...resize, concurrency: 2 } });
      await untilB((h) => expect(h.app.errand.types.get("resize")?.concurrency).toBe(2));
      expect((await b.http("POST", "/v1/lease", lease)).body.jobs).toHaveLength(1);
      expect((await b.http("POST", "/v1/lease", lease)).body.jobs).toHaveLength(0);

      // A deletes it: B forgets it, and its jobs get the built-in defaults again.
      expect((await a.http("DELETE", "/v1/types/resize")).status).toBe(204);
      await untilB((h) => expect(h.app.errand.types.get("resize")).toBeUndefined());
      expect((await b.http("GET", "/v1/types")).body.types).toEqual([]);
      const plain = await b.http("POST", "/v1/jobs", { body: { type: "resize" } });
      expect(plain.body).toMatchObject({ queue: "default", priority: 0, maxAttempts: 5 });
      // Deleting it again, through either server, is a 404.
      expect((await b.http("DELETE", "/v1/types/resize")).status).toBe(404);
    });

    it("GET /v1/types/:type reads that one type from the store, its change or deletion elsewhere too", async () => {
      const a = await startServer(backend);
      const other = await a.connect();
      const b = await serve(other);
      expect((await a.http("PUT", "/v1/types/resize", { body: resize })).status).toBe(201);
      for (let i = 0; i < 20; i++) await a.http("PUT", `/v1/types/t${i}`, { body: { maxAttempts: 2 } });
      const listed = vi.spyOn(other.store, "listJobTypes");
      const read = vi.spyOn(other.store, "getJobType");
      expect((await b.http("GET", "/v1/types/resize")).body).toEqual(resize);
      await a.http("PUT", "/v1/types/resize", { body: { ...resize, concurrency: 2 } });
      expect((await b.http("GET", "/v1/types/resize")).body).toEqual({ ...resize, concurrency: 2 });
      expect(b.app.errand.types.get("resize")?.concurrency).toBe(2);
      expect((await a.http("DELETE", "/v1/types/resize")).status).toBe(204);
      expect((await b.http("GET", "/v1/types/resize")).status).toBe(404);
      expect(b.app.errand.types.get("resize")).toBeUndefined();
      // One read of one type each time, not a read of all 21.
      expect(read).toHaveBeenCalledTimes(3);
      expect(listed).not.toHaveBeenCalled();
    });

    it("push delivery follows a type with a push target found in the store", async () => {
      const delivered: string[] = [];
      const fetch = (async (_url: string, init: { body: string }) => {
        delivered.push(JSON.parse(init.body).id);
        return new Response(JSON.stringify({ ok: true }), { status: 200 });
      }) as unknown as typeof globalThis.fetch;
      const a = await startServer(backend);
      const b = await serve(await a.connect(), { push: { fetch } });
      // PUT through another server (closed before any job exists): B learns of it from the store.
      await a.http("PUT", "/v1/types/hook", { body: { push: { url: "http://127.0.0.1:9/hook" } } });
      await a.app.close();
      await vi.waitFor(
        async () => {
          await a.clock.advance(REFRESH_MS);
          expect(b.app.errand.types.get("hook")?.push).toBeDefined();
        },
        { interval: 20, timeout: 5000 },
      );
      await b.http("PUT", "/v1/jobs/h1", { body: { type: "hook", payload: 1 } });
      await vi.waitFor(async () => expect((await a.queue.get("h1"))?.state).toBe("completed"), {
        interval: 20,
        timeout: 5000,
      });
      expect(delivered).toEqual(["h1"]);
    });
  });
}
