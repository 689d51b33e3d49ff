/**
 * The error history is bounded: a job keeps the most recent MAX_ERROR_HISTORY entries, oldest
 * first, each with its attempt. The write that would make it one more drops the oldest, whichever
 * write appends: a failed attempt (retried or dead), an expired lease, a dependency's failure.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { MAX_ERROR_HISTORY } from "../../src/validation.js";
import type { Backend } from "./backend.js";

const N = MAX_ERROR_HISTORY;
const task = defineJob({ type: "task", handler: async () => null });

/** A handler's message, with text that reads like the history's own JSON, which must stay text. */
const boom = (attempt: number): string => `boom ${attempt} },{"attempt":${attempt},"message":"\\"}] \\ é`;

/** from, from + 1, …, to. */
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

export function exerciseErrorHistory(backend: Backend): void {
  describe("error history", () => {
    it("keeps the most recent MAX_ERROR_HISTORY entries of a job failed MAX_ERROR_HISTORY + 5 times, in order", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const job = await queue.enqueue(
        task,
        {},
        { maxAttempts: N + 5, backoff: { type: "fixed", delayMs: 1 } },
      );
      // Attempts 1 … N + 3 fail as a handler's errors; the history fills, then slides.
      for (const attempt of range(1, N + 3)) {
        const [leased] = await queue.lease();
        expect(leased).toMatchObject({ id: job.id, attempt });
        expect(await queue.fail(leased!, new Error(boom(attempt)))).toBe(true);
        await clock.advance(1);
      }
      const slid = await queue.get(job.id);
      expect(slid!.errors.map((e) => e.attempt)).toEqual(range(4, N + 3));

      // Attempt N + 4's lease runs out: the sweeper's failure slides it too.
      await queue.lease({ leaseMs: 1000 });
      await clock.advance(1000);
      expect((await queue.sweep()).recovered).toBe(1);
      const pending = await queue.get(job.id);
      expect(pending).toMatchObject({ state: "pending", attempt: N + 4 });
      expect(pending!.errors.map((e) => e.attempt)).toEqual(range(5, N + 4));
      expect(pending!.errors.at(-1)).toMatchObject({ attempt: N + 4, kind: "lease_expired" });
      await clock.advance(1);

      // The last attempt ends dead: the move into history slides it as the retry did.
      const dead: Job[] = [];
      queue.on("dead", (j) => dead.push(j));
      const [last] = await queue.lease();
      expect(await queue.fail(last!, new Error(boom(N + 5)))).toBe(true);
      const stored = await queue.get(job.id);
      expect(stored).toMatchObject({ state: "dead", attempt: N + 5 });
      expect(stored!.errors).toHaveLength(N);
      expect(stored!.errors.map((e) => e.attempt)).toEqual(range(6, N + 5));
      expect(stored!.errors.map((e) => e.message)).toEqual([
        ...range(6, N + 3).map(boom),
        expect.stringMatching(/lease expired/),
        boom(N + 5),
      ]);
      // The entries kept are those written, untouched by the trimming.
      expect(stored!.errors[0]).toMatchObject({ attempt: 6, message: boom(6), name: "Error" });
      expect(stored!.errors[0]!.stack).toContain(boom(6));
      // The job the event carries has the history the store kept.
      expect(dead.map((j) => j.errors)).toEqual([stored!.errors]);
    });

    it("keeps the most recent MAX_ERROR_HISTORY entries when a dependency's failures cancel a job again and again", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const dependency = await queue.enqueue("dependency", {});
      const dependent = await queue.enqueue("dependent", {}, { dependsOn: [dependency.id] });
      const cancelledAt: number[] = [];
      for (const round of range(1, N + 5)) {
        const [leased] = await queue.lease({ types: ["dependency"] });
        expect(leased).toMatchObject({ id: dependency.id, attempt: round });
        await clock.advance(1);
        // Its end cancels the blocked dependent, with a dependency_failed entry.
        expect(await queue.fail(leased!, new Error(`broken ${round}`), { retryable: false })).toBe(true);
        cancelledAt.push(clock.now());
        // Retried by hand, both again (only a finished job can be: the dependent was cancelled),
        // the dependent is blocked on its unfinished dependency.
        expect((await queue.retry(dependency.id)).state).toBe("pending");
        expect((await queue.retry(dependent.id)).state).toBe("blocked");
      }
      const stored = await queue.get(dependent.id);
      expect(stored!.errors).toHaveLength(N);
      expect(stored!.errors.map((e) => e.at)).toEqual(cancelledAt.slice(5));
      for (const e of stored!.errors) {
        expect(e).toMatchObject({ attempt: 0, kind: "dependency_failed", dependency: dependency.id });
      }
      // The dependency's own history, written by the failure that killed it each round.
      const failed = await queue.get(dependency.id);
      expect(failed!.errors.map((e) => e.attempt)).toEqual(range(6, N + 5));
      expect(failed!.errors.map((e) => e.message)).toEqual(range(6, N + 5).map((r) => `broken ${r}`));
    });
  });
}
