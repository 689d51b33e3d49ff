/**
 * Names that are keys of Object.prototype, over HTTP (issue 12, prototype pollution): the server
 * refuses the reserved names with a 400 in errand's error shape; it lists, counts and exports
 * metrics for valid ones such as `toString` like any other; and a job stored with a reserved name
 * anyway leaves `/v1/stats`, `/v1/queues`, `/metrics` and the client answering, with
 * `Object.prototype` untouched. The dashboard's side is in dashboard.test.ts (one build of it).
 */
import { describe, expect, it } from "vitest";
import { ErrandClient } from "../../src/client/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { guardPrototype, PROTO, storedJob } from "../conformance/names.js";
import { snapshot, startServer } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`names that are keys of Object.prototype, server on ${backend.name}`, () => {
    it("refuses __proto__, constructor and prototype with a 400 and a code, and stores nothing", async () => {
      const h = await startServer(backend);
      const unpolluted = guardPrototype();
      await h.queue.enqueue("seed", 1);
      const before = await snapshot(h);
      // Each request names NAME once; with a valid name in its place it succeeds (checked last).
      const schedule = { cron: "0 * * * *", type: "t", payload: {} };
      const cases: Array<[string, string, unknown, string]> = [
        ["POST", "/v1/jobs", { type: "t", queue: "NAME" }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs", { type: "NAME" }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs", { jobs: [{ type: "t" }, { type: "NAME" }] }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs", { type: "t", retryQueue: "NAME" }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs", { type: "t", owner: "NAME" }, "INVALID_REQUEST"],
        ["PUT", "/v1/jobs/j1", { type: "NAME" }, "INVALID_REQUEST"],
        ["POST", "/v1/lease", { queues: ["NAME"] }, "INVALID_REQUEST"],
        ["POST", "/v1/lease", { types: ["NAME"] }, "INVALID_REQUEST"],
        ["GET", "/v1/jobs?queue=NAME", undefined, "INVALID_REQUEST"],
        ["GET", "/v1/jobs?type=NAME", undefined, "INVALID_REQUEST"],
        ["POST", "/v1/queues/NAME/pause", undefined, "INVALID_QUEUE_NAME"],
        ["POST", "/v1/queues/NAME/resume", undefined, "INVALID_QUEUE_NAME"],
        ["PUT", "/v1/schedules/NAME", schedule, "INVALID_REQUEST"],
        ["PUT", "/v1/schedules/hourly", { ...schedule, type: "NAME" }, "INVALID_REQUEST"],
        ["PUT", "/v1/types/NAME", {}, "INVALID_REQUEST"],
      ];
      const request = (method: string, path: string, body: unknown, name: string) =>
        h.http(
          method,
          path.replace("NAME", name),
          body === undefined ? {} : { body: JSON.parse(JSON.stringify(body).replace("NAME", name)) },
        );
      for (const name of ["__proto__", "constructor", "prototype"]) {
        for (const [method, path, body, code] of cases) {
          const r = await request(method, path, body, name);
          expect({ method, path, name, status: r.status, code: r.body?.code }).toEqual({
            method,
            path,
            name,
            status: 400,
            code,
          });
          expect(typeof r.body.message).toBe("string");
        }
      }
      // A key "__proto__" in a body is refused by the JSON parser itself.
      const raw = await h.http("POST", "/v1/lease", { raw: '{"queues": {"__proto__": 1}}' });
      expect(raw.status).toBe(400);
      expect(raw.body.code).toBe("INVALID_REQUEST");

      expect(await snapshot(h)).toEqual(before);
      for (const [method, path, body] of cases) {
        const r = await request(method, path, body, "toString");
        expect(r.status, `${method} ${path} with a valid name`).toBeLessThan(300);
      }
      unpolluted();
    });

    it("lists queues and job types in byte order, as the stores list names, whatever the locale", async () => {
      const h = await startServer(backend);
      for (const name of ["b", "B", "a", "_"]) {
        expect((await h.http("PUT", `/v1/types/${name}`, { body: { maxAttempts: 2 } })).status).toBe(201);
        expect((await h.http("POST", `/v1/queues/${name}/pause`)).status).toBe(200);
      }
      const types = await h.http("GET", "/v1/types");
      expect(types.body.types.map((t: { type: string }) => t.type)).toEqual(["B", "_", "a", "b"]);
      const queues = await h.http("GET", "/v1/queues");
      expect(queues.body.queues.map((q: { name: string }) => q.name)).toEqual(["B", "_", "a", "b"]);
      expect((await h.http("GET", "/v1/stats")).body.paused).toEqual(["B", "_", "a", "b"]);
    });

    it("lists, counts and exports queues and types named toString, hasOwnProperty, valueOf", async () => {
      const h = await startServer(backend);
      const unpolluted = guardPrototype();
      const enqueued = await h.http("POST", "/v1/jobs", {
        body: {
          jobs: [
            { type: "hasOwnProperty", queue: "toString" },
            { type: "toString", queue: "valueOf" },
          ],
        },
      });
      expect(enqueued.status).toBe(201);
      expect((await h.http("POST", "/v1/queues/toString/pause")).status).toBe(200);
      // Paused and without a single job: still listed.
      expect((await h.http("POST", "/v1/queues/hasOwnProperty/pause")).status).toBe(200);

      const stats = await h.http("GET", "/v1/stats");
      expect(stats.status).toBe(200);
      expect(stats.body.queues).toEqual({ toString: { pending: 1 }, valueOf: { pending: 1 } });
      expect(stats.body.types).toEqual({ hasOwnProperty: { pending: 1 }, toString: { pending: 1 } });
      expect(stats.body.paused).toEqual(["hasOwnProperty", "toString"]);

      const queues = await h.http("GET", "/v1/queues");
      expect(queues.status).toBe(200);
      expect(queues.body.queues).toEqual([
        { name: "hasOwnProperty", counts: {}, paused: true },
        { name: "toString", counts: { pending: 1 }, paused: true },
        { name: "valueOf", counts: { pending: 1 }, paused: false },
      ]);

      const metrics = await h.http("GET", "/metrics");
      expect(metrics.status).toBe(200);
      expect(metrics.body).toContain('errand_jobs{queue="toString",state="pending"} 1');
      expect(metrics.body).toContain('errand_jobs_by_type{type="hasOwnProperty",state="pending"} 1');
      expect(metrics.body).toContain('errand_jobs_enqueued_total{type="toString"} 1');

      const client = new ErrandClient({ url: h.base });
      const remote = await client.stats();
      expect(Object.getPrototypeOf(remote.queues)).toBeNull();
      expect(Object.getPrototypeOf(remote.types)).toBeNull();
      expect(remote.queues.hasOwnProperty).toBeUndefined();
      expect(remote.types.valueOf).toBeUndefined();
      expect(remote.queues.toString).toEqual({ pending: 1 });
      expect((await client.queues()).map((q) => [q.name, q.paused])).toEqual([
        ["hasOwnProperty", true],
        ["toString", true],
        ["valueOf", false],
      ]);
      unpolluted();
    });

    it("answers stats, queues, metrics and the client for jobs stored with a reserved name, unpolluted", async () => {
      const h = await startServer(backend);
      const unpolluted = guardPrototype();
      const now = h.clock.now();
      // As an older version, or a write straight into the database, would have left them.
      await h.store.enqueueMany({
        jobs: [
          storedJob("p", "__proto__", now),
          storedJob("c", "constructor", now),
          storedJob("r", "prototype", now),
        ],
        now,
      });
      await h.store.pauseQueue({ name: "constructor", now });

      for (let round = 0; round < 2; round++) {
        const stats = await h.http("GET", "/v1/stats");
        expect(stats.status).toBe(200);
        // JSON.parse makes "__proto__" an own key, as the server wrote it.
        expect(Object.keys(stats.body.queues).sort()).toEqual(["__proto__", "constructor", "prototype"]);
        expect(Object.hasOwn(stats.body.types, "__proto__")).toBe(true);
        expect(stats.body.queues[PROTO]).toEqual({ pending: 1 });
        expect(stats.body.paused).toEqual(["constructor"]);

        const queues = await h.http("GET", "/v1/queues");
        expect(queues.status).toBe(200);
        expect(queues.body.queues).toEqual([
          { name: "__proto__", counts: { pending: 1 }, paused: false },
          { name: "constructor", counts: { pending: 1 }, paused: true },
          { name: "prototype", counts: { pending: 1 }, paused: false },
        ]);

        const metrics = await h.http("GET", "/metrics");
        expect(metrics.status).toBe(200);
        expect(metrics.body).toContain('errand_jobs{queue="__proto__",state="pending"} 1');
        expect(metrics.body).toContain('errand_jobs_by_type{type="constructor",state="pending"} 1');
      }

      const client = new ErrandClient({ url: h.base });
      const remote = await client.stats();
      expect(Object.hasOwn(remote.queues, "__proto__")).toBe(true);
      expect(remote.queues[PROTO]).toEqual({ pending: 1 });
      expect(Object.getPrototypeOf(remote.types)).toBeNull();

      // Validated routes still validate as before: a good job in, a bad one out.
      expect((await h.http("POST", "/v1/jobs", { body: { type: "t", queue: "q" } })).status).toBe(201);
      expect((await h.http("POST", "/v1/jobs", { body: { type: "t", nope: 1 } })).status).toBe(400);
      unpolluted();
    });
  });
}
