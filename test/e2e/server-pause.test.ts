/**
 * Pausing queues over HTTP: `POST /v1/queues/{name}/pause` and `/resume` (admin only), the paused
 * flag in `GET /v1/queues` and `GET /v1/stats`, leases that skip a paused queue, and a resume that
 * answers a long-polling lease on another server at once.
 */
import { describe, expect, it, vi } from "vitest";
import { ErrandClient } from "../../src/client/client.js";
import { selectedBackends } from "../conformance/backend.js";
import { ALL_TOKENS, serve, startServer, TOKENS } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`paused queues over HTTP on ${backend.name}`, () => {
    it("pauses and resumes a queue, shows it in /v1/queues and /v1/stats, and leases skip it", async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const admin = TOKENS.admin;
      await h.queue.enqueue("t", { n: 1 }, { id: "m1", queue: "mail" });
      await h.queue.enqueue("t", { n: 2 }, { id: "b1", queue: "bulk" });

      const paused = await h.http("POST", "/v1/queues/mail/pause", { token: admin });
      expect(paused).toMatchObject({ status: 200, body: { name: "mail", paused: true, changed: true } });
      expect((await h.http("POST", "/v1/queues/mail/pause", { token: admin })).body.changed).toBe(false);
      // A queue with no jobs can be paused, and is listed so it can be found again.
      expect((await h.http("POST", "/v1/queues/idle/pause", { token: admin })).body.changed).toBe(true);
      const queues = await h.http("GET", "/v1/queues", { token: TOKENS.viewer });
      expect(queues.body.queues).toEqual([
        { name: "bulk", counts: { pending: 1 }, paused: false },
        { name: "idle", counts: {}, paused: true },
        { name: "mail", counts: { pending: 1 }, paused: true },
      ]);
      expect((await h.http("GET", "/v1/stats", { token: admin })).body.paused).toEqual(["idle", "mail"]);

      const leased = await h.http("POST", "/v1/lease", {
        body: { types: ["t"], queues: { mail: 5, bulk: 1 }, limit: 10 },
        token: TOKENS.worker,
      });
      expect(leased.body.jobs.map((j: { id: string }) => j.id)).toEqual(["b1"]);

      const resumed = await h.http("POST", "/v1/queues/mail/resume", { token: admin });
      expect(resumed).toMatchObject({ status: 200, body: { name: "mail", paused: false, changed: true } });
      expect((await h.http("POST", "/v1/queues/mail/resume", { token: admin })).body.changed).toBe(false);
      const after = await h.http("POST", "/v1/lease", {
        body: { types: ["t"], queues: ["mail"] },
        token: TOKENS.worker,
      });
      expect(after.body.jobs.map((j: { id: string }) => j.id)).toEqual(["m1"]);
    });

    it("refuses a bad queue name (INVALID_QUEUE_NAME) and every role but admin", async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const bad = await h.http("POST", `/v1/queues/${encodeURIComponent("has space")}/pause`, {
        token: TOKENS.admin,
      });
      expect(bad).toMatchObject({ status: 400, body: { code: "INVALID_QUEUE_NAME" } });
      for (const role of ["producer", "worker", "viewer"] as const) {
        for (const verb of ["pause", "resume"]) {
          const r = await h.http("POST", `/v1/queues/mail/${verb}`, { token: TOKENS[role] });
          expect(r, `${verb} as ${role}`).toMatchObject({ status: 403, body: { code: "FORBIDDEN" } });
        }
      }
      expect(await h.queue.pausedQueues()).toEqual([]);
      // The client checks the name before sending, with the same code.
      const client = new ErrandClient({ url: h.base, token: TOKENS.admin });
      await expect(client.pauseQueue("has space")).rejects.toMatchObject({ code: "INVALID_QUEUE_NAME" });
      await expect(
        new ErrandClient({ url: h.base, token: TOKENS.viewer }).pauseQueue("mail"),
      ).rejects.toMatchObject({ code: "FORBIDDEN" });
    });

    it("a resume through one server answers a lease long-polling on another server at once", async () => {
      const first = await startServer(backend);
      const second = await serve(await first.connect());
      const client = new ErrandClient({ url: first.base });
      await first.queue.enqueue("t", {}, { id: "m1", queue: "mail" });
      expect(await client.pauseQueue("mail")).toBe(true);
      expect((await second.http("GET", "/v1/queues")).body.queues).toEqual([
        { name: "mail", counts: { pending: 1 }, paused: true },
      ]);
      const waiting = second.http("POST", "/v1/lease", {
        body: { types: ["t"], queues: ["mail"], waitMs: 60_000 },
      });
      await vi.waitFor(() => expect(second.app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      // The clock stands still: only the resume's wake-up can end the wait with a job.
      expect(await client.resumeQueue("mail")).toBe(true);
      expect((await waiting).body.jobs.map((j: { id: string }) => j.id)).toEqual(["m1"]);
      expect(await client.queues()).toEqual([{ name: "mail", counts: { active: 1 }, paused: false }]);
    });
  });
}
