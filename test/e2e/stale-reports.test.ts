/**
 * Issue 12, item 7: a report the server refuses (409 STALE_ATTEMPT) says what really conflicts.
 * A repeated complete of the current attempt with another result used to read "attempt 2 is not
 * current" while attempt 2 was current.
 */
import { describe, expect, it } from "vitest";
import { selectedBackends } from "../conformance/backend.js";
import { type Harness, snapshot, startServer } from "./harness.js";

/** POSTs a report and checks it was refused with exactly `message`, changing nothing. */
async function refused(
  h: Harness,
  path: string,
  body: object,
  message: string,
  state: string,
): Promise<void> {
  const before = await snapshot(h);
  const r = await h.http("POST", path, { body });
  expect(r.status, path).toBe(409);
  expect(r.body).toMatchObject({ code: "STALE_ATTEMPT", message, details: { state } });
  expect(await snapshot(h)).toEqual(before);
}

async function leaseOne(h: Harness, leaseMs = 30_000): Promise<{ id: string; attempt: number }> {
  const r = await h.http("POST", "/v1/lease", { body: { types: ["t"], leaseMs } });
  expect(r.body.jobs).toHaveLength(1);
  return r.body.jobs[0];
}

for (const backend of selectedBackends()) {
  describe(`409 messages on ${backend.name}`, () => {
    it("a repeated complete with another result: the attempt already completed", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "j" });
      const job = await leaseOne(h);
      expect(job.attempt).toBe(1);
      const done = await h.http("POST", "/v1/jobs/j/complete", { body: { attempt: 1, result: 1 } });
      expect(done.status).toBe(200);
      await refused(
        h,
        "/v1/jobs/j/complete",
        { attempt: 1, result: 2 },
        "job j attempt 1 already completed with a different result; nothing changed",
        "completed",
      );
      await refused(
        h,
        "/v1/jobs/j/fail",
        { attempt: 1, error: "late" },
        "job j attempt 1 already completed; nothing changed",
        "completed",
      );
    });

    it("a report from an earlier attempt: not current, and which attempt is", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "j", backoff: { type: "fixed", delayMs: 0 } });
      await leaseOne(h, 1000);
      await h.clock.advance(1000);
      await h.queue.sweep();
      expect((await leaseOne(h)).attempt).toBe(2);
      await refused(
        h,
        "/v1/jobs/j/complete",
        { attempt: 1, result: "late" },
        "attempt 1 of job j is not current: the job is on attempt 2 (active); nothing changed",
        "active",
      );
      await refused(
        h,
        "/v1/jobs/j/heartbeat",
        { attempt: 1 },
        "attempt 1 of job j is not current: the job is on attempt 2 (active); nothing changed",
        "active",
      );
    });

    it("a report naming an attempt never handed out", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "j" });
      await refused(
        h,
        "/v1/jobs/j/complete",
        { attempt: 1, result: 1 },
        "job j has no attempt 1: it has not been handed out yet (it is pending); nothing changed",
        "pending",
      );
      await leaseOne(h);
      await refused(
        h,
        "/v1/jobs/j/fail",
        { attempt: 7, error: "x" },
        "job j has no attempt 7: it is on attempt 1 (active); nothing changed",
        "active",
      );
    });

    it("a report for a cancelled or expired job says so", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "c" });
      await leaseOne(h);
      await h.queue.cancel("c");
      await refused(
        h,
        "/v1/jobs/c/complete",
        { attempt: 1, result: 1 },
        "job c is cancelled; nothing changed",
        "cancelled",
      );

      await h.queue.enqueue("t", null, {
        id: "e",
        expiresInMs: 5000,
        backoff: { type: "fixed", delayMs: 0 },
      });
      await leaseOne(h);
      expect((await h.http("POST", "/v1/jobs/e/fail", { body: { attempt: 1, error: "x" } })).status).toBe(
        200,
      );
      await h.clock.advance(5000);
      await h.queue.sweep();
      await refused(
        h,
        "/v1/jobs/e/heartbeat",
        { attempt: 1 },
        "job e is expired; nothing changed",
        "expired",
      );
    });

    it("a report for an attempt that already failed: retrying or dead", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "r", backoff: { type: "fixed", delayMs: 60_000 } });
      await leaseOne(h);
      expect((await h.http("POST", "/v1/jobs/r/fail", { body: { attempt: 1, error: "x" } })).status).toBe(
        200,
      );
      await refused(
        h,
        "/v1/jobs/r/complete",
        { attempt: 1, result: 1 },
        "job r attempt 1 has already ended; the job is pending for attempt 2; nothing changed",
        "pending",
      );

      await h.queue.enqueue("t", null, { id: "d" });
      await leaseOne(h);
      const dead = await h.http("POST", "/v1/jobs/d/fail", {
        body: { attempt: 1, error: "x", retryable: false },
      });
      expect(dead.body.state).toBe("dead");
      await refused(
        h,
        "/v1/jobs/d/fail",
        { attempt: 1, error: "again" },
        "job d attempt 1 already failed, and the job is dead; nothing changed",
        "dead",
      );
      await refused(
        h,
        "/v1/jobs/d/release",
        { attempt: 1 },
        "job d attempt 1 already failed, and the job is dead; nothing changed",
        "dead",
      );
    });

    it("a repeated fail with the same error: answered as the first was, nothing changed", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "r", backoff: { type: "fixed", delayMs: 60_000 } });
      await leaseOne(h);
      // An error with a name and a stack past what is kept: the repeat is told by what was kept.
      const error = {
        message: "upstream 502",
        name: "FetchError",
        stack: `FetchError\n${"  at x\n".repeat(1000)}`,
      };
      const first = await h.http("POST", "/v1/jobs/r/fail", { body: { attempt: 1, error } });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ ok: true, state: "pending", duplicate: false });
      const before = await snapshot(h);
      const again = await h.http("POST", "/v1/jobs/r/fail", { body: { attempt: 1, error } });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ ...first.body, duplicate: true });
      expect(await snapshot(h)).toEqual(before);
      // In a batch report too, beside a first failure.
      await h.queue.enqueue("t", null, { id: "d", maxAttempts: 1 });
      await leaseOne(h);
      const batch = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            { id: "r", attempt: 1, outcome: "fail", error },
            { id: "d", attempt: 1, outcome: "fail", error: "x" },
            { id: "d", attempt: 1, outcome: "fail", error: "x" },
          ],
        },
      });
      expect(batch.body.results).toEqual([
        { id: "r", ok: true, state: "pending" },
        { id: "d", ok: true, state: "dead" },
        { id: "d", ok: true, state: "dead" },
      ]);
      expect((await h.queue.get("r"))?.errors).toHaveLength(1);
      expect((await h.queue.get("d"))?.errors).toHaveLength(1);
      // Another error for the same attempt is no repeat: refused, the first kept.
      await refused(
        h,
        "/v1/jobs/r/fail",
        { attempt: 1, error: { ...error, message: "upstream 503" } },
        "job r attempt 1 has already ended; the job is pending for attempt 2; nothing changed",
        "pending",
      );
      await refused(
        h,
        "/v1/jobs/r/fail",
        { attempt: 1, error: { ...error, name: "TypeError" } },
        "job r attempt 1 has already ended; the job is pending for attempt 2; nothing changed",
        "pending",
      );
      expect((await h.queue.get("r"))?.errors.map((e) => e.message)).toEqual(["upstream 502"]);
    });
  });
}
