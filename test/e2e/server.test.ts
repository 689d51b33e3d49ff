import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { ErrandClient } from "../../src/client/index.js";
import { createServer } from "../../src/server/index.js";
import {
  MAX_DATE_MS,
  MAX_ERROR_STACK_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  MAX_LIST_CURSOR_LENGTH,
} from "../../src/validation.js";
import { selectedBackends, someBackend } from "../conformance/backend.js";
import { scheduleRecord } from "../helpers/new-job.js";
import { serve, snapshot, startServer } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`server on ${backend.name}`, () => {
    it("answers { ids } for return=ids: each job's id in order, 200 when every job existed", async () => {
      const h = await startServer(backend);
      const many = await h.http("POST", "/v1/jobs?return=ids", {
        body: {
          jobs: [
            { type: "a", payload: 1 },
            { type: "b", payload: 2, id: "b-1" },
            { type: "a", payload: 3 },
          ],
        },
      });
      expect(many.status).toBe(201);
      expect(Object.keys(many.body)).toEqual(["ids"]);
      expect(many.body.ids).toHaveLength(3);
      expect(many.body.ids[1]).toBe("b-1");
      const payloads = await Promise.all(
        many.body.ids.map(async (id: string) => (await h.http("GET", `/v1/jobs/${id}`)).body.payload),
      );
      expect(payloads).toEqual([1, 2, 3]);

      const again = await h.http("POST", "/v1/jobs?return=ids", {
        body: { jobs: [{ type: "b", payload: 9, id: "b-1" }] },
      });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ ids: ["b-1"] });
      const one = await h.http("POST", "/v1/jobs?return=ids", { body: { type: "c", payload: null } });
      expect(one.status).toBe(201);
      expect(one.body.ids).toHaveLength(1);
      expect((await h.http("POST", "/v1/jobs?return=jobs", { body: { type: "c" } })).body.type).toBe("c");

      for (const query of ["return=all", "return=", "ids=1"]) {
        const bad = await h.http("POST", `/v1/jobs?${query}`, { body: { type: "c" } });
        expect(bad.status, query).toBe(400);
      }
      expect((await h.queue.stats()).states.pending).toBe(5);
    });

    it("enqueues one job and many in one request, and reads them back", async () => {
      const h = await startServer(backend);
      const one = await h.http("POST", "/v1/jobs", {
        body: { type: "send-email", payload: { to: "a@b.c" }, queue: "emails", priority: 3, delayMs: "2h" },
      });
      expect(one.status).toBe(201);
      expect(one.body).toMatchObject({ type: "send-email", queue: "emails", priority: 3, state: "pending" });
      expect(Date.parse(one.body.runAt)).toBe(h.clock.now() + 7_200_000);

      const many = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "a", payload: 1 }, { type: "b", payload: 2, queue: "other" }, { type: "a" }] },
      });
      expect(many.status).toBe(201);
      expect(many.body.jobs.map((j: { type: string }) => j.type)).toEqual(["a", "b", "a"]);

      const got = await h.http("GET", `/v1/jobs/${one.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.payload).toEqual({ to: "a@b.c" });

      const page1 = await h.http("GET", "/v1/jobs?limit=2");
      expect(page1.body.jobs).toHaveLength(2);
      const page2 = await h.http("GET", `/v1/jobs?limit=2&cursor=${page1.body.nextCursor}`);
      expect(page2.body.jobs).toHaveLength(2);
      expect(page2.body.nextCursor).toBeNull();
      const filtered = await h.http("GET", "/v1/jobs?type=a&state=pending");
      expect(filtered.body.jobs).toHaveLength(2);

      const missing = await h.http("GET", "/v1/jobs/nope");
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe("JOB_NOT_FOUND");
    });

    it("pages jobs of the longest ids past a cursor job rescheduled between pages; a longer cursor is a 400", async () => {
      const h = await startServer(backend);
      const idOf = (n: number) => `${n}`.padEnd(255, "x");
      const at = h.clock.now() + 3_600_000;
      // Listed 3, 2, 1 on every store: by id, and by runAt on Redis.
      for (const n of [1, 2, 3]) await h.queue.enqueue("t", { n }, { id: idOf(n), runAt: at + n * 1000 });
      const first = await h.http("GET", "/v1/jobs?limit=1");
      expect(first.body.jobs.map((j: { id: string }) => j.id)).toEqual([idOf(3)]);
      const cursor = encodeURIComponent(first.body.nextCursor);
      expect((await h.http("POST", `/v1/jobs/${idOf(3)}/reschedule`, { body: { runAt: at } })).status).toBe(
        200,
      );
      const second = await h.http("GET", `/v1/jobs?limit=10&cursor=${cursor}`);
      expect(second.status).toBe(200);
      const rest = second.body.jobs.map((j: { id: string }) => j.id).filter((id: string) => id !== idOf(3));
      expect(rest).toEqual([idOf(2), idOf(1)]);

      const longest = `${MAX_DATE_MS}:${idOf(1)}`;
      expect(longest).toHaveLength(MAX_LIST_CURSOR_LENGTH);
      expect((await h.http("GET", `/v1/jobs?cursor=${longest}`)).status).toBe(200);
      const longer = await h.http("GET", `/v1/jobs?cursor=9${longest}`);
      expect(longer).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
    });

    it("bulk enqueue stores all jobs or none", async () => {
      const h = await startServer(backend);
      const r = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "a" }, { type: "a", delayMs: "soon" }] },
      });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("INVALID_DURATION");
      expect((await h.queue.stats()).states.pending).toBe(0);
    });

    it("answers 400 in errand's shape, never 5xx, for numbers past their bounds and text no store keeps", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", { n: 1 }, { id: "held" });
      const [held] = await h.queue.lease({ types: ["t"] });
      await h.queue.enqueue("t", { n: 2 }, { id: "waiting" });
      const timer = "25d";
      const cases: Array<[string, string, unknown, string]> = [];
      // On PostgreSQL the NULs and the 1e308s were 503s; elsewhere stored as `runAt: null`.
      for (const [options, code] of [
        [{ uniqueKey: "a\u0000b" }, "INVALID_REQUEST"],
        [{ uniqueKey: "a\ud800b" }, "INVALID_REQUEST"],
        [{ delayMs: 1e308 }, "INVALID_REQUEST"],
        [{ expiresInMs: 1e308 }, "INVALID_REQUEST"],
        [{ timeoutMs: 1e308 }, "INVALID_REQUEST"],
        [{ delayMs: 2 ** 53 }, "INVALID_REQUEST"],
        [{ runAt: 8.64e15 + 1 }, "INVALID_REQUEST"],
        [{ timeoutMs: 2 ** 31 }, "INVALID_REQUEST"],
        [{ priority: 2 ** 53 }, "INVALID_REQUEST"],
        [{ delayMs: "999999999999h" }, "INVALID_DURATION"],
        [{ expiresInMs: "999999999999h" }, "INVALID_DURATION"],
        [{ timeoutMs: timer }, "INVALID_DURATION"],
        [{ runAt: "+275760-09-13T00:00:00.000Z" }, "INVALID_DATE"],
        [{ expiresAt: "10000-01-01T00:00:00.000Z" }, "INVALID_DATE"],
      ] as const) {
        cases.push(["POST", "/v1/jobs", { type: "t", ...options }, code]);
        cases.push(["POST", "/v1/jobs", { jobs: [{ type: "t" }, { type: "t", ...options }] }, code]);
        cases.push(["PUT", "/v1/jobs/new-id", { type: "t", ...options }, code]);
      }
      cases.push(
        ["POST", "/v1/jobs/waiting/reschedule", { delayMs: 2 ** 53 }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs/waiting/reschedule", { delayMs: "999999999999h" }, "INVALID_DURATION"],
        ["POST", "/v1/jobs/waiting/reschedule", { runAt: 8.64e15 + 1 }, "INVALID_REQUEST"],
        ["POST", "/v1/lease", { types: ["t"], workerId: "w\u0000x" }, "INVALID_REQUEST"],
        ["POST", "/v1/lease", { types: ["t"], workerId: "w\udc00" }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs/held/fail", { attempt: 1, error: "bad\u0000byte" }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs/held/fail", { attempt: 1, error: { message: "\ud800" } }, "INVALID_REQUEST"],
        [
          "POST",
          "/v1/jobs/held/fail",
          { attempt: 1, error: { message: "m", stack: "a\u0000" } },
          "INVALID_REQUEST",
        ],
        [
          "POST",
          "/v1/jobs/held/fail",
          { attempt: 1, error: { message: "m", name: "\udfff" } },
          "INVALID_REQUEST",
        ],
        [
          "POST",
          "/v1/report",
          { reports: [{ id: "held", attempt: 1, outcome: "fail", error: "x\u0000" }] },
          "INVALID_REQUEST",
        ],
        ["POST", "/v1/jobs/held/complete", { attempt: 2 ** 31, result: 1 }, "INVALID_REQUEST"],
        ["POST", "/v1/jobs/held/heartbeat", { attempt: 1, leaseMs: 2 ** 31 }, "INVALID_REQUEST"],
        ["PUT", "/v1/types/t", { timeoutMs: timer }, "INVALID_DURATION"],
        ["PUT", "/v1/types/t", { timeoutMs: 2 ** 31 }, "INVALID_REQUEST"],
        [
          "PUT",
          "/v1/schedules/s",
          { cron: "* * * * *", type: "t", options: { timeoutMs: timer } },
          "INVALID_DURATION",
        ],
        [
          "PUT",
          "/v1/schedules/s",
          { cron: "* * * * *", type: "t", options: { expiresInMs: 1e308 } },
          "INVALID_REQUEST",
        ],
        [
          "PUT",
          "/v1/schedules/s",
          { cron: "* * * * *", type: "t", options: { uniqueKey: "\u0000" } },
          "INVALID_REQUEST",
        ],
      );
      const before = await snapshot(h);
      for (const [method, path, body, code] of cases) {
        const r = await h.http(method, path, { body });
        const what = `${method} ${path} ${JSON.stringify(body)}`;
        expect(r.status, what).toBe(400);
        expect(r.body, what).toMatchObject({ code, message: expect.any(String) });
        expect(r.body, what).toHaveProperty("details");
      }
      expect(await snapshot(h)).toEqual(before);
      expect(await h.queue.get(held!.id)).toMatchObject({ state: "active", attempt: 1, errors: [] });
      expect((await h.http("GET", "/v1/types")).body.types).toEqual([]);

      // The bounds themselves are accepted, and an astral character is text like any other.
      const far = await h.http("POST", "/v1/jobs", {
        body: { type: "t", runAt: 253_402_300_799_999, timeoutMs: 2 ** 31 - 1, uniqueKey: "😀" },
      });
      expect(far.status).toBe(201);
      expect(far.body).toMatchObject({
        runAt: "9999-12-31T23:59:59.999Z",
        timeoutMs: 2 ** 31 - 1,
        uniqueKey: "😀",
      });
      const failed = await h.http("POST", "/v1/jobs/held/fail", { body: { attempt: 1, error: "é 😀" } });
      expect(failed.status).toBe(200);
      expect((await h.queue.get("held"))?.errors[0]?.message).toBe("é 😀");
    });

    it("refuses a date-time without an offset or on no calendar day with INVALID_DATE naming the field, storing nothing", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "waiting" });
      const client = new ErrandClient({ url: h.base });
      const before = await snapshot(h);
      // Without an offset each server read it in its own time zone (two servers, two instants);
      // the impossible ones rolled over into the next day or month.
      const bad = ["2030-01-01T00:00:00", "2026-02-30T00:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01"];
      for (const value of bad) {
        const cases: Array<[string, string, object, string]> = [
          ["POST", "/v1/jobs", { type: "t", runAt: value }, "runAt"],
          ["POST", "/v1/jobs", { type: "t", expiresAt: value }, "expiresAt"],
          ["POST", "/v1/jobs", { jobs: [{ type: "t" }, { type: "t", runAt: value }] }, "runAt"],
          ["PUT", "/v1/jobs/new-id", { type: "t", expiresAt: value }, "expiresAt"],
          ["POST", "/v1/jobs/waiting/reschedule", { runAt: value }, "runAt"],
        ];
        for (const [method, path, body, field] of cases) {
          const r = await h.http(method, path, { body });
          const what = `${method} ${path} ${JSON.stringify(body)}`;
          expect(r.status, what).toBe(400);
          expect(r.body, what).toMatchObject({ code: "INVALID_DATE" });
          expect(r.body.message, what).toMatch(new RegExp(`^${field} must be`));
        }
        await expect(client.enqueue("t", null, { runAt: value })).rejects.toMatchObject({
          code: "INVALID_DATE",
        });
        await expect(client.reschedule("waiting", { runAt: value })).rejects.toMatchObject({
          code: "INVALID_DATE",
        });
      }
      expect(await snapshot(h)).toEqual(before);
      // With an offset, the instant it names, whatever the server's time zone.
      const ok = await h.http("POST", "/v1/jobs", {
        body: { type: "t", runAt: "2030-01-01T00:00:00-05:00" },
      });
      expect(ok.status).toBe(201);
      expect(ok.body.runAt).toBe("2030-01-01T05:00:00.000Z");
    });

    it("PUT with a client id is idempotent: 201 the first time, 200 with the existing job after", async () => {
      const h = await startServer(backend);
      const first = await h.http("PUT", "/v1/jobs/order-42", { body: { type: "charge", payload: { n: 1 } } });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ id: "order-42", duplicate: false, payload: { n: 1 } });
      const again = await h.http("PUT", "/v1/jobs/order-42", { body: { type: "charge", payload: { n: 2 } } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: "order-42", duplicate: true, payload: { n: 1 } });
      expect((await h.queue.stats()).states.pending).toBe(1);
    });

    it("leases, completes once, answers a repeated identical complete 200, and refuses stale attempts", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", { n: 1 }, { id: "j1" });
      const lease = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 5, leaseMs: 10_000 } });
      expect(lease.status).toBe(200);
      expect(lease.body.jobs).toHaveLength(1);
      const job = lease.body.jobs[0];
      expect(job).toMatchObject({ id: "j1", attempt: 1, state: "active" });

      for (const attempt of [2, 99]) {
        const before = await snapshot(h);
        const forged = await h.http("POST", "/v1/jobs/j1/complete", { body: { attempt, result: "x" } });
        expect(forged.status).toBe(409);
        expect(forged.body.code).toBe("STALE_ATTEMPT");
        expect(await snapshot(h)).toEqual(before);
      }

      const done = await h.http("POST", "/v1/jobs/j1/complete", { body: { attempt: 1, result: { ok: 1 } } });
      expect(done).toMatchObject({ status: 200, body: { ok: true, duplicate: false } });
      const repeat = await h.http("POST", "/v1/jobs/j1/complete", {
        body: { attempt: 1, result: { ok: 1 } },
      });
      expect(repeat).toMatchObject({ status: 200, body: { ok: true, duplicate: true } });
      const different = await h.http("POST", "/v1/jobs/j1/complete", {
        body: { attempt: 1, result: { ok: 2 } },
      });
      expect(different.status).toBe(409);
      const stored = await h.queue.get("j1");
      expect(stored).toMatchObject({ state: "completed", result: { ok: 1 } });

      for (const op of ["fail", "heartbeat", "checkpoint", "release"]) {
        const before = await snapshot(h);
        const r = await h.http("POST", `/v1/jobs/j1/${op}`, {
          body:
            op === "fail"
              ? { attempt: 1, error: "x" }
              : op === "checkpoint"
                ? { attempt: 1, data: 1 }
                : { attempt: 1 },
        });
        expect(r.status, op).toBe(409);
        expect(r.body.code).toBe("STALE_ATTEMPT");
        expect(await snapshot(h)).toEqual(before);
      }
      const none = await h.http("POST", "/v1/jobs/ghost/heartbeat", { body: { attempt: 1 } });
      expect(none.status).toBe(404);
    });

    it("fails with backoff or to dead, heartbeats, checkpoints and releases", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, {
        id: "a",
        maxAttempts: 3,
        backoff: { type: "fixed", delayMs: 5000 },
      });
      await h.queue.enqueue("t", null, { id: "b" });
      const { body } = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2, leaseMs: 1000 } });
      expect(body.jobs).toHaveLength(2);

      const hb = await h.http("POST", "/v1/jobs/a/heartbeat", { body: { attempt: 1, leaseMs: 60_000 } });
      expect(hb.status).toBe(200);
      expect(+(await h.queue.get("a"))!.leaseExpiresAt!).toBe(h.clock.now() + 60_000);
      const cp = await h.http("POST", "/v1/jobs/a/checkpoint", { body: { attempt: 1, data: { page: 3 } } });
      expect(cp.status).toBe(200);

      const failed = await h.http("POST", "/v1/jobs/a/fail", {
        body: { attempt: 1, error: { message: "boom", name: "SmtpError", stack: "remote stack" } },
      });
      expect(failed.status).toBe(200);
      expect(failed.body).toMatchObject({ ok: true, state: "pending" });
      const a = (await h.queue.get("a"))!;
      expect(a.state).toBe("pending");
      expect(+a.runAt).toBe(h.clock.now() + 5000);
      expect(a.checkpoint).toEqual({ page: 3 });
      expect(a.errors[0]).toMatchObject({
        attempt: 1,
        message: "boom",
        name: "SmtpError",
        stack: "remote stack",
      });

      const dead = await h.http("POST", "/v1/jobs/b/fail", {
        body: { attempt: 1, error: "bad input", retryable: false },
      });
      expect(dead.body.state).toBe("dead");

      await h.clock.advance(5000);
      const again = await h.http("POST", "/v1/lease", { body: { types: ["t"] } });
      expect(again.body.jobs[0]).toMatchObject({ id: "a", attempt: 2, checkpoint: { page: 3 } });
      const released = await h.http("POST", "/v1/jobs/a/release", { body: { attempt: 2 } });
      expect(released.status).toBe(200);
      expect((await h.queue.get("a"))!.state).toBe("pending");
    });

    it("keeps a reported stack cut to MAX_ERROR_STACK_LENGTH, as a handler's own, and refuses none", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "a", maxAttempts: 3, backoff: { type: "fixed", delayMs: 1 } });
      await h.queue.enqueue("t", null, { id: "b" });
      await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2 } });
      const stack = `Error: boom\n${"    at frame (remote.js:1:1)\n".repeat(3000)}`.slice(
        0,
        MAX_ERROR_TEXT_LENGTH,
      );
      expect(stack).toHaveLength(65_536);
      const failed = await h.http("POST", "/v1/jobs/a/fail", {
        body: { attempt: 1, error: { message: "boom", name: "RemoteError", stack } },
      });
      expect(failed.status).toBe(200);
      const reported = await h.http("POST", "/v1/report", {
        body: { reports: [{ id: "b", attempt: 1, outcome: "fail", error: { message: "bang", stack } }] },
      });
      expect(reported.status).toBe(200);
      for (const id of ["a", "b"]) {
        const [entry] = (await h.queue.get(id))!.errors;
        expect(entry!.stack, id).toHaveLength(MAX_ERROR_STACK_LENGTH);
        expect(entry!.stack, id).toBe(stack.slice(0, MAX_ERROR_STACK_LENGTH));
      }
      // As the job reads over HTTP too.
      expect((await h.http("GET", "/v1/jobs/a")).body.errors[0].stack).toHaveLength(4000);
    });

    it("answers a heartbeat for a cancelled job with 409 and the state", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "c" });
      await h.http("POST", "/v1/lease", { body: { types: ["t"] } });
      expect((await h.http("POST", "/v1/jobs/c/cancel")).status).toBe(200);
      const hb = await h.http("POST", "/v1/jobs/c/heartbeat", { body: { attempt: 1 } });
      expect(hb.status).toBe(409);
      expect(hb.body.details.state).toBe("cancelled");
    });

    it("holds a lease request open until a job is enqueued, and answers empty when waitMs passes", async () => {
      const h = await startServer(backend);
      const waiting = h.http("POST", "/v1/lease", { body: { types: ["t"], waitMs: 60_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      await h.queue.enqueue("t", { hello: 1 }, { id: "w" });
      const r = await waiting;
      expect(r.body.jobs.map((j: { id: string }) => j.id)).toEqual(["w"]);

      const empty = h.http("POST", "/v1/lease", { body: { types: ["t"], waitMs: 5000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      await h.clock.advance(5000);
      expect((await empty).body.jobs).toEqual([]);
    });

    it("wakes a waiting lease on a job enqueued over HTTP from another request", async () => {
      const h = await startServer(backend);
      const waiting = h.http("POST", "/v1/lease", {
        body: { queues: { critical: 3, default: 1 }, waitMs: 60_000 },
      });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      await h.http("POST", "/v1/jobs", { body: { type: "x", queue: "critical" } });
      expect((await waiting).body.jobs).toHaveLength(1);
    });

    it("wakes one of many identical waiting leases per enqueue, not all of them", async () => {
      const h = await startServer(backend);
      const claim = vi.spyOn(h.store, "claim");
      const polls = Array.from({ length: 20 }, () =>
        h.http("POST", "/v1/lease", { body: { types: ["herd"], waitMs: 60_000 } }),
      );
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(20), { interval: 2 });
      const before = claim.mock.calls.length;
      await h.queue.enqueue("herd", {}, { id: "one" });
      const first = await Promise.race(polls);
      expect(first.body.jobs.map((j: { id: string }) => j.id)).toEqual(["one"]);
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(19), { interval: 2 });
      // The oldest waiter claimed the job and passed the wake-up on once; that one found nothing.
      expect(claim.mock.calls.length - before).toBeLessThanOrEqual(3);
      await h.clock.advance(60_000);
      const rest = await Promise.all(polls);
      expect(rest.filter((r) => r.body.jobs.length > 0)).toHaveLength(1);
    });

    it("wakes a waiting lease for another type even when an older waiter wants something else", async () => {
      const h = await startServer(backend);
      const other = h.http("POST", "/v1/lease", { body: { types: ["a-type"], waitMs: 60_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      const mine = h.http("POST", "/v1/lease", { body: { types: ["b-type"], waitMs: 60_000 } });
      await vi.waitFor(() => expect(h.app.errand.leaseWaiters()).toBe(2), { interval: 2 });
      await h.queue.enqueue("b-type", {}, { id: "for-b" });
      expect((await mine).body.jobs.map((j: { id: string }) => j.id)).toEqual(["for-b"]);
      await h.clock.advance(60_000);
      expect((await other).body.jobs).toEqual([]);
    });

    it("reports many outcomes in one request", async () => {
      const h = await startServer(backend);
      await h.queue.enqueueMany("t", [1, 2, 3]);
      const { body } = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 3 } });
      const [j1, j2, j3] = body.jobs;
      const r = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            { id: j1.id, attempt: 1, outcome: "complete", result: "one" },
            { id: j2.id, attempt: 1, outcome: "fail", error: "nope", retryable: false },
            { id: j3.id, attempt: 7, outcome: "complete" },
          ],
        },
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toEqual([
        { id: j1.id, ok: true },
        { id: j2.id, ok: true, state: "dead" },
        { id: j3.id, ok: false, code: "STALE_ATTEMPT" },
      ]);
      expect((await h.queue.get(j1.id))!.result).toBe("one");
    });

    it("holds a reported result to maxPayloadBytes, as /complete does", async () => {
      const bundle = await backend.setup({ maxPayloadBytes: 100 });
      const h = { ...bundle, ...(await serve(bundle.queue)) };
      await h.queue.enqueueMany("t", [1, 2]);
      const { body } = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2 } });
      const [j1, j2] = body.jobs;
      // 4 bytes a number in the request, 21 once stored: the bound is on the stored text.
      const result = Array.from({ length: 10 }, () => 1e20);
      const complete = await h.http("POST", `/v1/jobs/${j1.id}/complete`, { body: { attempt: 1, result } });
      expect(complete).toMatchObject({ status: 400, body: { code: "INVALID_PAYLOAD" } });
      const r = await h.http("POST", "/v1/report", {
        body: { reports: [{ id: j2.id, attempt: 1, outcome: "complete", result }] },
      });
      expect(r.body.results).toEqual([{ id: j2.id, ok: false, code: "INVALID_PAYLOAD" }]);
      expect(await h.queue.get(j2.id)).toMatchObject({ state: "active", result: null });
    });

    it("takes over HTTP a payload and a result as large as the queue takes, at the default bodyLimit", async () => {
      const max = 2 * 1024 * 1024;
      const bundle = await backend.setup({ maxPayloadBytes: max });
      const h = { ...bundle, ...(await serve(bundle.queue)) };
      // JSON text of exactly maxPayloadBytes: a string of max - 2 characters and its quotes.
      const largest = "x".repeat(max - 2);
      const put = await h.http("POST", "/v1/jobs", { body: { type: "t", payload: largest } });
      expect(put.status).toBe(201);
      const { body } = await h.http("POST", "/v1/lease", { body: { types: ["t"] } });
      const done = await h.http("POST", `/v1/jobs/${body.jobs[0].id}/complete`, {
        body: { attempt: 1, result: largest },
      });
      expect(done.status).toBe(200);
      expect((await h.queue.get(body.jobs[0].id))!.result).toHaveLength(max - 2);
      // Past the request's room, the body limit still answers first.
      const tooLarge = await h.http("POST", "/v1/jobs", {
        body: { type: "t", payload: "x".repeat(max + 65_536) },
      });
      expect(tooLarge).toMatchObject({ status: 413, body: { code: "PAYLOAD_TOO_LARGE" } });
    });

    it("records a report's failures in one store write, each answered on its own terms", async () => {
      const h = await startServer(backend);
      await h.queue.enqueueMany("t", [1, 2, 3]);
      const { body } = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 3 } });
      const [j1, j2, j3] = body.jobs;
      const failMany = vi.spyOn(h.queue.store, "failMany");
      const r = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            { id: j1.id, attempt: 1, outcome: "fail", error: "try again" },
            {
              id: j2.id,
              attempt: 1,
              outcome: "fail",
              error: { message: "fatal", name: "TypeError" },
              retryable: false,
            },
            { id: j1.id, attempt: 1, outcome: "fail", error: "the same attempt again" },
            { id: j3.id, attempt: 2, outcome: "fail", error: "never handed out" },
            { id: "no-such-job", attempt: 1, outcome: "fail", error: "ghost" },
          ],
        },
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toEqual([
        { id: j1.id, ok: true, state: "pending" },
        { id: j2.id, ok: true, state: "dead" },
        { id: j1.id, ok: false, code: "STALE_ATTEMPT" },
        { id: j3.id, ok: false, code: "STALE_ATTEMPT" },
        { id: "no-such-job", ok: false, code: "JOB_NOT_FOUND" },
      ]);
      expect(failMany).toHaveBeenCalledTimes(1);
      expect(failMany.mock.calls[0]![0].items.map((i) => i.id)).toEqual([j1.id, j2.id, j1.id]);
      expect((await h.queue.get(j1.id))!.errors.map((e) => e.message)).toEqual(["try again"]);
      expect((await h.queue.get(j2.id))!.errors.map((e) => [e.name, e.message])).toEqual([
        ["TypeError", "fatal"],
      ]);
      expect(await h.queue.get(j3.id)).toMatchObject({ state: "active", attempt: 1, errors: [] });
    });

    it("cancels, retries, replays and reschedules jobs", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", { v: 1 }, { id: "p" });
      const moved = await h.http("POST", "/v1/jobs/p/reschedule", { body: { priority: 9, delayMs: 1000 } });
      expect(moved.body).toMatchObject({ priority: 9 });
      const cancelled = await h.http("POST", "/v1/jobs/p/cancel");
      expect(cancelled.body.state).toBe("cancelled");
      const wrong = await h.http("POST", "/v1/jobs/p/reschedule", { body: { priority: 1 } });
      expect(wrong).toMatchObject({ status: 409, body: { code: "INVALID_STATE" } });
      const retried = await h.http("POST", "/v1/jobs/p/retry");
      expect(retried.body.state).toBe("pending");
      await h.http("POST", "/v1/jobs/p/cancel");
      const replayed = await h.http("POST", "/v1/jobs/p/replay");
      expect(replayed.status).toBe(201);
      expect(replayed.body).toMatchObject({ type: "t", payload: { v: 1 }, state: "pending" });
      expect(replayed.body.id).not.toBe("p");
      expect((await h.http("POST", "/v1/jobs/zzz/cancel")).status).toBe(404);
    });

    it("applies a job type's defaults at enqueue and its concurrency cap at lease", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/types/resize", {
        body: {
          queue: "images",
          priority: 5,
          maxAttempts: 2,
          concurrency: 1,
          delivery: "at_most_once",
          timeoutMs: "5m",
        },
      });
      expect(put.status).toBe(201);
      expect((await h.http("PUT", "/v1/types/resize", { body: put.body })).status).toBe(200);
      const got = await h.http("GET", "/v1/types/resize");
      expect(got.body).toMatchObject({ type: "resize", queue: "images", concurrency: 1 });
      expect((await h.http("GET", "/v1/types")).body.types).toHaveLength(1);
      expect((await h.http("GET", "/v1/types/none")).status).toBe(404);

      const job = await h.http("POST", "/v1/jobs", { body: { type: "resize", payload: 1 } });
      expect(job.body).toMatchObject({
        queue: "images",
        priority: 5,
        maxAttempts: 2,
        delivery: "at_most_once",
        timeoutMs: 300_000,
      });
      await h.http("POST", "/v1/jobs", { body: { type: "resize", payload: 2 } });
      const first = await h.http("POST", "/v1/lease", { body: { types: ["resize"], limit: 5 } });
      expect(first.body.jobs).toHaveLength(1);
      const second = await h.http("POST", "/v1/lease", { body: { types: ["resize"], limit: 5 } });
      expect(second.body.jobs).toHaveLength(0);

      const bad = await h.http("PUT", "/v1/types/x", { body: { maxAttempts: 0 } });
      expect(bad.status).toBe(400);
      expect((await h.http("DELETE", "/v1/types/resize")).status).toBe(204);
      expect((await h.http("DELETE", "/v1/types/resize")).status).toBe(404);
    });

    it("creates, reads, lists and deletes schedules", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/schedules/nightly", {
        body: { cron: "0 3 * * *", timezone: "Europe/Berlin", type: "report", payload: { full: true } },
      });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ name: "nightly", type: "report", timezone: "Europe/Berlin" });
      // One schedule is one read, not a list of them all.
      const listed = vi.spyOn(h.queue.store, "listSchedules");
      expect((await h.http("GET", "/v1/schedules/nightly")).body.cron).toBe("0 3 * * *");
      expect(listed).not.toHaveBeenCalled();
      listed.mockRestore();
      expect((await h.http("GET", "/v1/schedules")).body.schedules).toHaveLength(1);
      for (const cron of ["nope", "0 0 31 4,6,9,11 *"]) {
        const badCron = await h.http("PUT", "/v1/schedules/x", { body: { cron, type: "r" } });
        expect(badCron, cron).toMatchObject({ status: 400, body: { code: "INVALID_CRON" } });
      }
      const gated = await h.http("PUT", "/v1/schedules/x", {
        body: { cron: "0 3 * * *", type: "r", options: { dependsOn: ["a"] } },
      });
      expect(gated).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
      expect((await h.http("GET", "/v1/schedules")).body.schedules).toHaveLength(1);
      expect((await h.http("DELETE", "/v1/schedules/nightly")).status).toBe(204);
      expect((await h.http("GET", "/v1/schedules/nightly")).status).toBe(404);
      expect((await h.http("DELETE", "/v1/schedules/nightly")).status).toBe(404);
    });

    it("pages schedules over HTTP and through the client; a bad limit or cursor is a 400", async () => {
      const h = await startServer(backend);
      for (const name of ["c", "a", "b"]) {
        await h.http("PUT", `/v1/schedules/${name}`, { body: { cron: "0 3 * * *", type: "report" } });
      }
      const first = await h.http("GET", "/v1/schedules?limit=2");
      expect(first.body.schedules.map((s: { name: string }) => s.name)).toEqual(["a", "b"]);
      expect(first.body.nextCursor).toBe("b");
      const second = await h.http("GET", `/v1/schedules?limit=2&cursor=${first.body.nextCursor}`);
      expect(second.body).toMatchObject({ schedules: [{ name: "c" }], nextCursor: null });
      for (const query of ["limit=0", "limit=1001", "limit=x", "cursor=", "cursor=a%20b", "other=1"]) {
        const bad = await h.http("GET", `/v1/schedules?${query}`);
        expect(bad.status, query).toBe(400);
      }
      const client = new ErrandClient({ url: h.base });
      expect((await client.schedules()).map((s) => s.name)).toEqual(["a", "b", "c"]);
      const page = await client.schedulePage({ limit: 1, cursor: "a" });
      expect(page.schedules.map((s) => [s.name, s.nextRunAt instanceof Date])).toEqual([["b", true]]);
      expect(page.nextCursor).toBe("b");
    });

    it("logs the queue's faults no request sees: a schedule's skipped tick", async () => {
      const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
      const logger = pino({ level: "error" }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const bundle = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const h = { ...bundle, ...(await serve(bundle.queue, { logger })) };
      const start = h.clock.now();
      await h.queue.store.putSchedule(
        scheduleRecord({ name: "broken", options: JSON.stringify({ priority: "high" }), createdAt: start }),
      );
      await h.clock.advance(5 * 60_000);
      await h.queue.sweep();
      expect(lines).toEqual([
        expect.objectContaining({
          msg: "queue error",
          err: expect.objectContaining({ message: expect.stringMatching(/"broken"/) }),
        }),
      ]);
      // Once closed, the server no longer listens.
      await h.app.close();
      await h.clock.advance(5 * 60_000);
      await h.queue.sweep();
      expect(lines).toHaveLength(1);
    });

    it("serves stats, queues, metrics, health and readiness", async () => {
      const h = await startServer(backend);
      await h.http("POST", "/v1/jobs", { body: { jobs: [{ type: "a" }, { type: "a", queue: "q2" }] } });
      const { body: lease } = await h.http("POST", "/v1/lease", { body: { types: ["a"] } });
      await h.http("POST", `/v1/jobs/${lease.jobs[0].id}/complete`, { body: { attempt: 1 } });
      const stats = await h.http("GET", "/v1/stats");
      expect(stats.body.states).toMatchObject({ pending: 1, completed: 1 });
      const queues = await h.http("GET", "/v1/queues");
      expect(queues.body.queues.map((q: { name: string }) => q.name)).toEqual(["default", "q2"]);
      const metrics = await h.http("GET", "/metrics");
      expect(metrics.headers.get("content-type")).toMatch(/text\/plain/);
      expect(metrics.body).toContain('errand_jobs_enqueued_total{type="a"} 2');
      expect(metrics.body).toContain('errand_jobs_completed_total{type="a"} 1');
      expect(metrics.body).toMatch(/errand_jobs\{queue="q2",state="pending"\} 1/);
      expect(metrics.body).toContain("errand_claim_duration_seconds_bucket");
      expect((await h.http("GET", "/healthz")).body).toEqual({ ok: true });
      expect((await h.http("GET", "/readyz")).body).toEqual({ ok: true });
      expect((await h.http("POST", "/v1/prune")).body).toEqual({ deleted: 0 });
    });

    it("refuses bad input with a 4xx and a code, and changes nothing", async () => {
      const h = await startServer(backend, { bodyLimit: 64 * 1024 });
      const names = ["'; DROP TABLE errand_job; --", "../x", "{a}", "x".repeat(300), "", "a b"];
      const cases: Array<
        [string, string, { body?: unknown; raw?: string; headers?: Record<string, string> }]
      > = [
        ["POST", "/v1/jobs", { raw: '{"type": "a",' }],
        ["POST", "/v1/jobs", { raw: "[1,2" }],
        ["POST", "/v1/jobs", { raw: "nonsense" }],
        ["POST", "/v1/jobs", { body: { type: "a", priority: "5" } }],
        ["POST", "/v1/jobs", { body: { type: "a", maxAttempts: 1.5 } }],
        ["POST", "/v1/jobs", { body: { type: "a", unknownOption: 1 } }],
        ["POST", "/v1/jobs", { body: { type: 7 } }],
        ["POST", "/v1/jobs", { body: { jobs: [] } }],
        ["POST", "/v1/jobs", { body: { type: "a", runAt: "tomorrow" } }],
        [
          "POST",
          "/v1/jobs",
          { body: { type: "a", payload: JSON.parse(`${"[".repeat(500)}${"]".repeat(500)}`) } },
        ],
        ["POST", "/v1/jobs", { body: { type: "a", payload: "x".repeat(70 * 1024) } }],
        [
          "POST",
          "/v1/jobs",
          { raw: "x=1", headers: { "content-type": "application/x-www-form-urlencoded" } },
        ],
        ["POST", "/v1/lease", { body: { limit: 0 } }],
        ["POST", "/v1/lease", { body: { waitMs: -1 } }],
        ["POST", "/v1/jobs/x/complete", { body: { attempt: 0 } }],
        ["POST", "/v1/jobs/x/complete", { body: { attempt: "1" } }],
        ["POST", "/v1/jobs/x/fail", { body: { attempt: 1 } }],
        ["GET", "/v1/jobs?limit=abc", {}],
        ["GET", "/v1/jobs?limit=5000", {}],
        ["GET", "/v1/jobs?state=weird", {}],
        ["PUT", "/v1/types/a", { body: { push: { url: "ftp://x" } } }],
        ["PUT", "/v1/schedules/s", { body: { cron: "* * * * *", type: "a", timezone: "Mars/Base" } }],
      ];
      for (const n of names) {
        cases.push(["POST", "/v1/jobs", { body: { type: n } }]);
        cases.push(["POST", "/v1/jobs", { body: { type: "a", queue: n } }]);
        cases.push(["POST", "/v1/lease", { body: { types: [n] } }]);
        cases.push(["POST", "/v1/lease", { body: { queues: { [n]: 1 } } }]);
        cases.push(["PUT", "/v1/schedules/s", { body: { cron: "* * * * *", type: n } }]);
        if (n) {
          const enc = encodeURIComponent(n);
          cases.push(["PUT", `/v1/schedules/${enc}`, { body: { cron: "* * * * *", type: "a" } }]);
          cases.push(["PUT", `/v1/types/${enc}`, { body: {} }]);
          cases.push(["GET", `/v1/jobs?queue=${enc}`, {}]);
        }
      }
      const before = await snapshot(h);
      for (const [method, path, o] of cases) {
        const r = await h.http(method, path, o);
        const what = `${method} ${path} ${o.raw ?? JSON.stringify(o.body)?.slice(0, 80)}`;
        expect(r.status, what).toBeGreaterThanOrEqual(400);
        expect(r.status, what).toBeLessThan(500);
        expect(typeof r.body?.code, what).toBe("string");
      }
      expect(await snapshot(h)).toEqual(before);
      expect((await h.http("GET", "/v1/types")).body.types).toEqual([]);
      const big = await h.http("POST", "/v1/jobs", { body: { type: "a", payload: "x".repeat(70 * 1024) } });
      expect(big).toMatchObject({ status: 413, body: { code: "PAYLOAD_TOO_LARGE" } });
      const unknownRoute = await h.http("GET", "/v1/nothing");
      expect(unknownRoute).toMatchObject({ status: 404, body: { code: "NOT_FOUND" } });
    });
  });
}

describe("server setup", () => {
  it("answers a stats request waiting for its count's turn when it closes, rather than cut it off", async () => {
    const backend = someBackend();
    const h = await startServer(backend);
    const count = h.store.stats.bind(h.store);
    // A count that takes 0.5 s: the next waits 2 s for its turn.
    vi.spyOn(h.store, "stats").mockImplementationOnce(async (p) => {
      await new Promise((r) => setTimeout(r, 500));
      return count(p);
    });
    const asked = vi.spyOn(h.queue, "stats");
    expect((await h.http("GET", "/v1/stats")).status).toBe(200);
    const waiting = h.http("GET", "/v1/stats");
    await vi.waitFor(() => expect(asked).toHaveBeenCalledTimes(2));
    // Closed well before that turn: the close lets the waiting count go (without it, the close cut
    // the request off).
    await h.app.close();
    expect((await waiting).status).toBe(200);
  });

  it("refuses to listen beyond loopback without auth", async () => {
    const backend = someBackend();
    const { queue } = await backend.setup();
    const app = await createServer({ queue, maintenance: false });
    await expect(app.listen({ host: "0.0.0.0", port: 0 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await app.close();
    const open = await createServer({
      queue,
      maintenance: false,
      auth: { tokens: [{ token: "t".repeat(20), role: "admin" }] },
    });
    const address = await open.listen({ host: "0.0.0.0", port: 0 });
    expect(address).toMatch(/^http:/);
    await open.close();
  });

  it("refuses timer options past 2^31 − 1 ms when it is created, naming the option", async () => {
    const backend = someBackend();
    const { queue } = await backend.setup();
    for (const [options, field] of [
      [{ sweepIntervalMs: 2 ** 31 }, "sweepIntervalMs"],
      [{ pruneIntervalMs: 1e308 }, "pruneIntervalMs"],
      [{ leasePollMs: 2 ** 31 }, "leasePollMs"],
      [{ typesRefreshMs: 2 ** 31 }, "typesRefreshMs"],
      [{ push: { pollIntervalMs: 2 ** 31 } }, "push.pollIntervalMs"],
      [{ push: { leaseMs: 2 ** 31 } }, "push.leaseMs"],
    ] as const) {
      await expect(createServer({ queue, ...options })).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining(`${field} must be an integer between 1 and 2147483647`),
      });
    }
  });
});
