/**
 * The store every hostile-input property starts from: a job in each state, a schedule, a paused
 * queue and a job type, so that "the store is unchanged" is never trivially "the store is empty",
 * and so that by-id operations meet every state.
 */
import { expect } from "vitest";
import type { Bundle } from "../conformance/backend.js";

/** The seeded jobs' ids, by the state each is in after {@link seedStore}. */
export const SEEDS = {
  pending: "seed-pending",
  active: "seed-active",
  completed: "seed-done",
  dead: "seed-dead",
  scheduled: "seed-later",
  cancelled: "seed-cancelled",
  expired: "seed-expired",
} as const;

/** The active seed's unique key, held while it runs. */
export const SEED_UNIQUE_KEY = "seed-key";

/** Fills a fresh store: seven jobs (one per state, and a scheduled one), a schedule, a paused queue, a job type. */
export async function seedStore({ queue, clock }: Bundle): Promise<void> {
  const add = (id: string, options: object = {}) => queue.enqueue("seed", { id }, { id, ...options });
  await add(SEEDS.pending, { priority: 1 });
  await add(SEEDS.active, { uniqueKey: SEED_UNIQUE_KEY, priority: 5 });
  await add(SEEDS.completed, { priority: 4 });
  await add(SEEDS.dead, { priority: 3, maxAttempts: 1 });
  await add(SEEDS.scheduled, { delayMs: "2h", expiresInMs: "3h" });
  await add(SEEDS.cancelled, { delayMs: "1d" });
  await add(SEEDS.expired, { delayMs: "1d", expiresInMs: "1h" });
  const leased = await queue.lease({ types: ["seed"], limit: 3, workerId: "seeder" });
  expect(leased.map((j) => j.id)).toEqual([SEEDS.active, SEEDS.completed, SEEDS.dead]);
  await queue.release(leased[0]!);
  await queue.complete(leased[1]!, { done: true });
  await queue.fail(leased[2]!, new Error("seeded failure"));
  const [again] = await queue.lease({ types: ["seed"], limit: 1, leaseMs: "2h", workerId: "seeder" });
  expect(again?.id).toBe(SEEDS.active);
  await queue.cancel(SEEDS.cancelled);
  await clock.advance(3_600_000);
  await queue.sweep();
  await queue.schedule("existing", { cron: "0 * * * *", job: "seed", payload: { n: 1 } });
  await queue.pauseQueue("paused-queue");
  const now = clock.now();
  await queue.store.putJobType({
    name: "seed",
    config: JSON.stringify({ type: "seed", maxAttempts: 3 }),
    createdAt: now,
    updatedAt: now,
  });
  for (const [state, id] of Object.entries(SEEDS)) {
    expect((await queue.get(id))?.state, id).toBe(state === "scheduled" ? "pending" : state);
  }
}
