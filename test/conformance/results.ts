/**
 * Results, error history and checkpoints: what a handler returns is stored as `result`; each failed
 * attempt adds one error entry; a checkpoint saved by one attempt is what the next attempt resumes
 * from, and only the current attempt can save one.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { drain } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";

/** A promise and the function that resolves it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

class PaymentDeclined extends Error {
  override name = "PaymentDeclined";
}

export function exerciseResults(backend: Backend): void {
  describe("results", () => {
    it("stores the handler's return value as the completed job's result", async () => {
      const { queue, clock, connect } = await backend.setup();
      const invoice = defineJob({
        type: "invoice",
        handler: async (p: { amount: number }) => ({
          total: p.amount * 2,
          lines: [{ sku: "a", qty: 1 }],
          note: null,
          at: new Date(0),
        }),
      });
      const job = await queue.enqueue(invoice, { amount: 21 });
      await clock.advance(100);
      const { completed } = await drain(queue, { jobs: [invoice] });
      expect(completed).toBe(1);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({
        state: "completed",
        attempt: 1,
        // Stored as JSON: a Date comes back as its ISO string.
        result: { total: 42, lines: [{ sku: "a", qty: 1 }], note: null, at: "1970-01-01T00:00:00.000Z" },
        finishedAt: new Date(clock.now()),
        leaseExpiresAt: null,
        workerId: null,
      });
      expect(stored!.errors).toEqual([]);
      // Another connection reads the same result.
      const other = await connect();
      expect((await other.get(job.id))!.result).toEqual(stored!.result);
    });

    it("stores null as the result of a handler that returns nothing", async () => {
      const { queue } = await backend.setup();
      const quiet = defineJob({ type: "quiet", handler: async () => undefined });
      const job = await queue.enqueue(quiet, {});
      await drain(queue, { jobs: [quiet] });
      expect(await queue.get(job.id)).toMatchObject({ state: "completed", result: null });
    });

    it("adds one error entry per failed attempt, in order, with attempt, message, name, stack and time", async () => {
      const { queue, clock } = await backend.setup();
      const charge = defineJob({
        type: "charge",
        maxAttempts: 4,
        backoff: { type: "fixed", delayMs: 1000 },
        handler: async (_p: unknown, ctx) => {
          if (ctx.attempt === 1) throw new PaymentDeclined("card declined");
          if (ctx.attempt === 2) throw new TypeError("cannot read properties of undefined");
          if (ctx.attempt === 3) throw "a bare string";
          return { charged: true };
        },
      });
      const job = await queue.enqueue(charge, {});
      const failedAt: number[] = [];
      for (let i = 0; i < 3; i++) {
        failedAt.push(clock.now());
        expect((await drain(queue, { jobs: [charge] })).failed).toBe(1);
        await clock.advance(1000);
      }
      expect((await drain(queue, { jobs: [charge] })).completed).toBe(1);

      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "completed", attempt: 4, result: { charged: true } });
      const errors = stored!.errors;
      expect(errors).toHaveLength(3);
      expect(errors[0]).toMatchObject({
        attempt: 1,
        message: "card declined",
        name: "PaymentDeclined",
        at: failedAt[0],
      });
      expect(errors[0]!.stack).toContain("card declined");
      expect(errors[1]).toMatchObject({
        attempt: 2,
        message: "cannot read properties of undefined",
        name: "TypeError",
        at: failedAt[1],
      });
      expect(errors[1]!.stack).toContain("TypeError");
      expect(errors[2]).toMatchObject({ attempt: 3, message: "a bare string", at: failedAt[2] });
      expect(errors[2]!.stack).toBeUndefined();
    });

    it("names an error entry by the error's string code, or by its name when the code is not a string", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue("db-write", {}, { backoff: { type: "fixed", delayMs: 0 } });
      const failWith = async (error: unknown) => {
        const [leased] = await queue.lease({ types: ["db-write"] });
        expect(await queue.fail(leased!, error)).toBe(true);
      };
      await failWith(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
      class DuplicateKey extends Error {
        override name = "DuplicateKey";
        code = 11000;
      }
      await failWith(new DuplicateKey("E11000 duplicate key"));
      const stored = await queue.get(job.id);
      expect(stored!.errors.map((e) => [e.attempt, e.name, e.message])).toEqual([
        [1, "ECONNREFUSED", "connect ECONNREFUSED"],
        [2, "DuplicateKey", "E11000 duplicate key"],
      ]);
    });

    it("shows a checkpoint saved on one attempt as job.checkpoint on the retry, which resumes from it", async () => {
      const { queue } = await backend.setup();
      const seen: unknown[] = [];
      const importer = defineJob({
        type: "importer",
        backoff: { type: "fixed", delayMs: 0 },
        handler: async (p: { rows: number }, ctx) => {
          seen.push(ctx.job.checkpoint);
          const from = (ctx.job.checkpoint as { done: number } | null)?.done ?? 0;
          if (ctx.attempt === 1) {
            expect(await ctx.checkpoint({ done: 40 })).toBe(true);
            throw new Error("connection reset at row 41");
          }
          return { importedFrom: from, to: p.rows };
        },
      });
      const job = await queue.enqueue(importer, { rows: 100 });
      const result = await drain(queue, { jobs: [importer] });
      expect(result).toMatchObject({ completed: 1, failed: 1 });
      expect(seen).toEqual([null, { done: 40 }]);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({
        state: "completed",
        attempt: 2,
        checkpoint: { done: 40 },
        result: { importedFrom: 40, to: 100 },
      });
    });

    it("keeps the latest checkpoint of an attempt", async () => {
      const { queue } = await backend.setup();
      const job = await queue.enqueue("steps", {});
      const [leased] = await queue.lease({ types: ["steps"] });
      expect(await queue.checkpoint(leased!, { step: 1 })).toBe(true);
      expect(await queue.checkpoint(leased!, { step: 2, partial: ["a", "b"] })).toBe(true);
      expect((await queue.get(job.id))!.checkpoint).toEqual({ step: 2, partial: ["a", "b"] });
    });

    it("refuses a checkpoint from a stale attempt and keeps the current one", async () => {
      const { queue, clock } = await backend.setup();
      const job = await queue.enqueue("steps", {}, { backoff: { type: "fixed", delayMs: 0 } });
      const [first] = await queue.lease({ types: ["steps"], leaseMs: 1000 });
      expect(await queue.checkpoint(first!, { by: 1 })).toBe(true);
      await clock.advance(1000);
      await queue.sweep();
      const [second] = await queue.lease({ types: ["steps"], leaseMs: 1000 });
      expect(second!.checkpoint).toEqual({ by: 1 });
      expect(await queue.checkpoint(second!, { by: 2 })).toBe(true);

      expect(await queue.checkpoint(first!, { by: "stale" })).toBe(false);
      expect((await queue.get(job.id))!.checkpoint).toEqual({ by: 2 });
    });

    it("refuses ctx.checkpoint in a handler whose job was cancelled while it ran", async () => {
      const { queue } = await backend.setup();
      const saved = gate();
      const resume = gate();
      const late = gate<boolean>();
      const slow = defineJob({
        type: "slow",
        handler: async (_p: unknown, ctx) => {
          await ctx.checkpoint({ part: 1 });
          saved.open();
          await resume.promise;
          late.open(await ctx.checkpoint({ part: 2 }));
          return "late";
        },
      });
      const job = await queue.enqueue(slow, {});
      const worker = new Worker(queue, { jobs: [slow] });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await worker.start();
      await saved.promise;
      expect((await queue.get(job.id))!.checkpoint).toEqual({ part: 1 });

      await queue.cancel(job.id);
      resume.open();
      expect(await late.promise).toBe(false);
      expect(await queue.get(job.id)).toMatchObject({
        state: "cancelled",
        checkpoint: { part: 1 },
        result: null,
      });
    });
  });
}
