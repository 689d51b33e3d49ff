/**
 * A busy key under a rate limit (the busy-keys conformance test, SQLite's and PostgreSQL's
 * parked.test.ts): type `tenant` limited to {@link RATE} per key, `n` jobs of key "busy" and then
 * one of key "quiet" enqueued.
 */
import { defineJob, type Job, type Queue } from "../../src/index.js";

/** The rate limit of the busy key's type. */
export const RATE = { limit: 2, periodMs: 1_000 };

export async function enqueueRateBacklog(queue: Queue, n = 300): Promise<{ busy: Job[]; quiet: Job }> {
  const tenant = defineJob({ type: "tenant", keyRateLimit: RATE, handler: async () => null });
  queue.register(tenant);
  const busy = await queue.enqueueMany(
    tenant,
    Array.from({ length: n }, (_, i) => ({ i })),
    { key: "busy" },
  );
  const quiet = await queue.enqueue(tenant, { quiet: true }, { key: "quiet" });
  return { busy, quiet };
}

/**
 * A claim of `tenant` straight from the store with `held`, as a worker makes it: what it took, and
 * when it says the held-back jobs can start (ClaimParams.held).
 */
export async function claimHeld(queue: Queue, now: number): Promise<{ ids: string[]; until: number | null }> {
  const held = { until: null as number | null };
  const jobs = await queue.store.claim({
    now,
    workerId: "held-probe",
    queues: [{ name: "default", weight: 1 }],
    types: ["tenant"],
    limit: 10,
    leaseMs: 30_000,
    keyRules: Object.assign(Object.create(null), { tenant: { keyRateLimit: RATE } }),
    held,
  });
  return { ids: jobs.map((j) => j.id), until: held.until };
}
