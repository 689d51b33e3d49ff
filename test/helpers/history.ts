/** What the history-count tests of the SQL stores share. @module */
import { expect } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";

export const mail = defineJob({ type: "mail", handler: async () => null });
export const report = defineJob({ type: "report", handler: async () => null });

/**
 * Writes a history through every writer but prune (completions in a batch and one by one, a stale
 * one, failures to dead, a cancel, expiries; then a retry and a replay), checking `counted` (the
 * rows counted one by one) against stats() after each stretch.
 */
export async function writeHistory(
  queue: Queue,
  clock: ManualClock,
  counted: () => Promise<Record<string, number>> | Record<string, number>,
): Promise<void> {
  await queue.enqueueMany(
    mail,
    Array.from({ length: 30 }, (_, i) => ({ i })),
    { maxAttempts: 1 },
  );
  await queue.enqueueMany(report, [{ r: 1 }, { r: 2 }, { r: 3 }], { queue: "reports", expiresInMs: 10 });
  const leased = await queue.lease({ limit: 30, types: [mail.type] });
  // Batches (one statement for many) and lone completions (item by item), a stale one among them.
  await Promise.all(leased.slice(0, 12).map((job) => queue.complete(job, { ok: true })));
  for (const job of leased.slice(12, 20)) await queue.complete(job, null);
  await queue.complete(leased[0]!, null);
  for (const job of leased.slice(20, 25)) await queue.fail(job, new Error("no"));
  const [cancelMe] = (await queue.list({ state: "pending", type: report.type })).jobs;
  await queue.cancel(cancelMe!.id);
  await clock.advance(20);
  await queue.sweep();
  expect(await historyGroups(queue)).toEqual(await counted());
  expect(await historyGroups(queue)).toEqual({
    "completed default mail": 20,
    "dead default mail": 5,
    "cancelled reports report": 1,
    "expired reports report": 2,
  });

  const dead = (await queue.list({ state: "dead" })).jobs;
  await queue.retry(dead[0]!.id);
  await queue.replay(dead[1]!.id);
  expect(await historyGroups(queue)).toEqual(await counted());
}

/**
 * stats()'s finished groups as `"<state> <queue> <type>" -> n`, for jobs of type `report` in queue
 * `reports` and every other type in `default` (the tests' layout), to compare with a row count.
 */
export async function historyGroups(queue: Queue): Promise<Record<string, number>> {
  const stats = await queue.stats();
  const out: Record<string, number> = {};
  for (const [type, states] of Object.entries(stats.types)) {
    for (const state of ["completed", "dead", "cancelled", "expired"] as const) {
      const n = states[state] ?? 0;
      if (n > 0) out[`${state} ${type === "report" ? "reports" : "default"} ${type}`] = n;
    }
  }
  return out;
}
