/**
 * Bad input: every invalid call is refused with an ErrandError and a stable `code`, and leaves the
 * store exactly as it was.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../src/define-job.js";
import { ErrandError, type ErrandErrorCode } from "../../src/errors.js";
import type { Queue } from "../../src/queue.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

const noop = defineJob({ type: "noop", handler: async () => null });

/** Runs `action` (sync or async) and returns the ErrandError it must raise with `code`. */
async function refused(action: () => unknown, code: ErrandErrorCode): Promise<ErrandError> {
  let error: unknown;
  try {
    await action();
  } catch (e) {
    error = e;
  }
  expect(error, `expected ${code}`).toBeInstanceOf(ErrandError);
  expect((error as ErrandError).code).toBe(code);
  return error as ErrandError;
}

/** Everything observable about the store, to compare before and after a refused call. */
async function snapshot(queue: Queue) {
  const page = await queue.list({ limit: 1000 });
  return { stats: await queue.stats(), jobs: page.jobs, schedules: await queue.schedules() };
}

/** Asserts that each refused call leaves the store unchanged. */
async function unchanged(queue: Queue, body: () => Promise<void>): Promise<void> {
  // Something in the store, so "unchanged" is not trivially "empty".
  await queue.enqueue(noop, { seed: true });
  await queue.schedule("existing", { cron: "0 * * * *", job: noop, payload: {} });
  const before = await snapshot(queue);
  await body();
  expect(await snapshot(queue)).toEqual(before);
}

const BAD_NAMES = ["", "x".repeat(300), "../x", "{a}", "'; DROP TABLE errand_job; --"];

export function exerciseBadInput(backend: Backend): void {
  describe("bad input", () => {
    it("refuses a payload that fails the job type's zod schema (INVALID_PAYLOAD with details)", async () => {
      const { queue } = await backend.setup();
      const send = defineJob({
        type: "send-email",
        schema: z.object({ to: z.email(), subject: z.string().min(1) }),
        handler: async (p: { to: string; subject: string }) => p.to,
      });
      await unchanged(queue, async () => {
        const e = await refused(
          () => queue.enqueue(send, { to: "not-an-email", subject: "" }),
          "INVALID_PAYLOAD",
        );
        expect(Array.isArray(e.details)).toBe(true);
        const paths = (e.details as Array<{ path?: unknown[] }>).map((i) => i.path?.join("."));
        expect(paths).toEqual(expect.arrayContaining(["to", "subject"]));
        expect(e.message).toMatch(/send-email/);
        // One bad payload in a batch refuses the whole batch.
        await refused(
          () =>
            queue.enqueueMany(send, [
              { to: "a@b.co", subject: "ok" },
              { to: "a@b.co", subject: 42 as unknown as string },
            ]),
          "INVALID_PAYLOAD",
        );
        await refused(
          () => queue.schedule("mail", { cron: "0 * * * *", job: send, payload: { to: "x", subject: "s" } }),
          "INVALID_PAYLOAD",
        );
      });
      // A valid payload passes.
      expect((await queue.enqueue(send, { to: "a@b.co", subject: "hi" })).state).toBe("pending");
    });

    it("refuses payloads that are not JSON-serialisable (INVALID_PAYLOAD)", async () => {
      const { queue } = await backend.setup();
      const cycle: Record<string, unknown> = { a: 1 };
      cycle.self = cycle;
      const bad: unknown[] = [
        { n: 10n },
        { f: () => 1 },
        cycle,
        undefined,
        { n: Number.NaN },
        { n: Number.POSITIVE_INFINITY },
        [Symbol("s")],
      ];
      await unchanged(queue, async () => {
        for (const payload of bad) await refused(() => queue.enqueue("noop", payload), "INVALID_PAYLOAD");
        await refused(() => queue.enqueueMany("noop", [{ ok: 1 }, { n: 1n }]), "INVALID_PAYLOAD");
      });
    });

    it("refuses a payload over maxPayloadBytes (INVALID_PAYLOAD)", async () => {
      const { queue } = await backend.setup({ maxPayloadBytes: 100 });
      await unchanged(queue, async () => {
        const e = await refused(() => queue.enqueue(noop, { text: "x".repeat(200) }), "INVALID_PAYLOAD");
        expect(e.message).toMatch(/100/);
        // Multi-byte characters count as bytes, not characters.
        await refused(() => queue.enqueue(noop, { text: "é".repeat(60) }), "INVALID_PAYLOAD");
      });
      expect((await queue.enqueue(noop, { text: "x".repeat(50) })).state).toBe("pending");
    });

    it("refuses a negative or unreadable delay (INVALID_DURATION) and a runAt that is not a date (INVALID_DATE)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        await refused(() => queue.enqueue(noop, {}, { delayMs: -1 }), "INVALID_DURATION");
        await refused(() => queue.enqueue(noop, {}, { delayMs: "-5m" }), "INVALID_DURATION");
        await refused(() => queue.enqueue(noop, {}, { delayMs: "soon" }), "INVALID_DURATION");
        await refused(() => queue.enqueue(noop, {}, { delayMs: Number.NaN }), "INVALID_DURATION");
        await refused(() => queue.enqueue(noop, {}, { expiresInMs: -1000 }), "INVALID_DURATION");
        await refused(() => queue.enqueue(noop, {}, { runAt: "tomorrow" }), "INVALID_DATE");
        await refused(() => queue.enqueue(noop, {}, { runAt: new Date("x") }), "INVALID_DATE");
        await refused(() => queue.enqueue(noop, {}, { expiresAt: "next week" }), "INVALID_DATE");
        await refused(() => queue.reschedule("any-id", { runAt: "tomorrow" }), "INVALID_DATE");
      });
    });

    it("refuses bad queue and type names (INVALID_QUEUE_NAME / INVALID_TYPE_NAME)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        for (const name of BAD_NAMES) {
          await refused(() => queue.enqueue(noop, {}, { queue: name }), "INVALID_QUEUE_NAME");
          await refused(() => queue.enqueue(name, {}), "INVALID_TYPE_NAME");
          await refused(() => queue.lease({ queues: [name] }), "INVALID_QUEUE_NAME");
          await refused(() => queue.lease({ types: [name] }), "INVALID_TYPE_NAME");
          await refused(() => queue.list({ queue: name }), "INVALID_QUEUE_NAME");
          await refused(() => defineJob({ type: name, handler: async () => null }), "INVALID_TYPE_NAME");
          await refused(
            () => defineJob({ type: "ok", queue: name, handler: async () => null }),
            "INVALID_QUEUE_NAME",
          );
        }
      });
    });

    it("refuses bad schedule names (INVALID_SCHEDULE_NAME) and job ids (INVALID_JOB_ID)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        for (const name of BAD_NAMES) {
          await refused(
            () => queue.schedule(name, { cron: "0 * * * *", job: noop, payload: {} }),
            "INVALID_SCHEDULE_NAME",
          );
          await refused(() => queue.unschedule(name), "INVALID_SCHEDULE_NAME");
        }
        for (const id of ["", "x".repeat(300), "/etc/passwd", "a b", "'; DROP TABLE errand_job; --"]) {
          await refused(() => queue.enqueue(noop, {}, { id }), "INVALID_JOB_ID");
          await refused(() => queue.get(id), "INVALID_JOB_ID");
          await refused(() => queue.cancel(id), "INVALID_JOB_ID");
          await refused(() => queue.complete({ id, attempt: 1 }, null), "INVALID_JOB_ID");
        }
        await refused(() => queue.reschedule("any-id", { delayMs: -1 }), "INVALID_DURATION");
      });
    });

    it("refuses a malformed cron (INVALID_CRON) and an unknown timezone (INVALID_TIMEZONE)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        for (const cron of ["", "not a cron", "61 * * * *", "* * *", "*/0 * * * *"]) {
          await refused(() => queue.schedule("bad", { cron, job: noop, payload: {} }), "INVALID_CRON");
        }
        for (const timezone of ["Mars/Olympus_Mons", "", "UTC+25"]) {
          await refused(
            () => queue.schedule("bad", { cron: "0 3 * * *", timezone, job: noop, payload: {} }),
            "INVALID_TIMEZONE",
          );
        }
        // Replacing an existing schedule with a bad one leaves the old one as it was.
        await refused(
          () => queue.schedule("existing", { cron: "0 25 * * *", job: noop, payload: {} }),
          "INVALID_CRON",
        );
      });
    });

    it("refuses attempt numbers that are not positive integers (INVALID_ATTEMPT)", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue(noop, {});
      const [leased] = await queue.lease();
      expect(leased?.attempt).toBe(1);
      const before = await snapshot(queue);
      for (const attempt of [0, -1, 1.5, Number.NaN]) {
        await refused(() => queue.complete({ id: job.id, attempt }, "x"), "INVALID_ATTEMPT");
        await refused(() => queue.fail({ id: job.id, attempt }, new Error("x")), "INVALID_ATTEMPT");
        await refused(() => queue.heartbeat({ id: job.id, attempt }), "INVALID_ATTEMPT");
        await refused(() => queue.checkpoint({ id: job.id, attempt }, {}), "INVALID_ATTEMPT");
      }
      expect(await snapshot(queue)).toEqual(before);
      expect(await queue.complete(leased!, "ok")).toBe(true);
    });

    it("refuses unknown option keys with a did-you-mean (INVALID_OPTION)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        const w = await refused(
          () => new Worker(queue, { jobs: [noop], concurency: 5 } as never),
          "INVALID_OPTION",
        );
        expect(w.message).toMatch(/concurency/);
        expect(w.message).toMatch(/did you mean "concurrency"/);
        const d = await refused(
          () => defineJob({ type: "x", handler: async () => null, concurency: 2 } as never),
          "INVALID_OPTION",
        );
        expect(d.message).toMatch(/did you mean "concurrency"/);
        const e = await refused(() => queue.enqueue(noop, {}, { priorty: 1 } as never), "INVALID_OPTION");
        expect(e.message).toMatch(/did you mean "priority"/);
        const l = await refused(() => queue.lease({ limt: 5 } as never), "INVALID_OPTION");
        expect(l.message).toMatch(/did you mean "limit"/);
      });
    });

    it("refuses out-of-range options (INVALID_OPTION)", async () => {
      const { queue } = await backend.setup();
      await unchanged(queue, async () => {
        await refused(() => queue.enqueue(noop, {}, { weight: 0 }), "INVALID_OPTION");
        await refused(() => queue.enqueue(noop, {}, { maxAttempts: 0 }), "INVALID_OPTION");
        await refused(() => queue.enqueue(noop, {}, { priority: 1.5 }), "INVALID_OPTION");
        await refused(() => queue.enqueue(noop, {}, { delivery: "exactly_once" as never }), "INVALID_OPTION");
        await refused(() => queue.enqueue(noop, {}, { delayMs: 1, runAt: new Date() }), "INVALID_OPTION");
        await refused(() => new Worker(queue, { jobs: [noop], concurrency: 0 }), "INVALID_OPTION");
        await refused(() => new Worker(queue, { jobs: [] }), "INVALID_OPTION");
        await refused(() => queue.lease({ limit: 0 }), "INVALID_OPTION");
      });
    });

    it("never claims jobs of types a Worker does not know: they stay pending", async () => {
      const { queue } = await backend.setup();
      const known = await queue.enqueue(noop, {});
      const unknown = await queue.enqueue("unknown-type", { x: 1 });
      const other = await queue.enqueue("also-unknown", {}, { priority: 100 });
      const result = await drain(queue, { jobs: [noop] });
      expect(result.jobs.map((j) => j.id)).toEqual([known.id]);
      expect(result.completed).toBe(1);
      for (const id of [unknown.id, other.id]) {
        expect(await queue.get(id)).toMatchObject({ state: "pending", attempt: 0, errors: [] });
      }
      expect((await queue.stats()).states).toMatchObject({ pending: 2, active: 0, completed: 1 });
    });

    it.runIf(!backend.capabilities.transactionalEnqueue)(
      "refuses the db option on a store that cannot join the caller's transaction, storing nothing",
      async () => {
        const { queue } = await backend.setup();
        const before = await queue.stats();
        const fakeClient = { query: () => Promise.resolve({ rows: [] }) };
        for (const attempt of [
          () => queue.enqueue("t", {}, { db: fakeClient }),
          () => queue.enqueueMany("t", [{}, {}], { db: fakeClient }),
          () => queue.enqueueBatch([{ job: "t", payload: {}, options: { db: fakeClient } }]),
        ]) {
          await expect(attempt()).rejects.toMatchObject({ code: "INVALID_OPTION" });
        }
        expect(await queue.stats()).toEqual(before);
      },
    );
  });
}
