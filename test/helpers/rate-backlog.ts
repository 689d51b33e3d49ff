/**
 * The busy key of the parking tests under a rate limit (SQLite's and PostgreSQL's parked.test.ts):
 * type `tenant` limited to 2 starts a second per key, 300 jobs of key "busy" and then one of key
 * "quiet" enqueued.
 */
import { defineJob, type Job, type Queue } from "../../src/index.js";

export async function enqueueRateBacklog(queue: Queue): Promise<{ busy: Job[]; quiet: Job }> {
  const tenant = defineJob({
    type: "tenant",
    keyRateLimit: { limit: 2, periodMs: 1_000 },
    handler: async () => null,
  });
  queue.register(tenant);
  const busy = await queue.enqueueMany(
    tenant,
    Array.from({ length: 300 }, (_, i) => ({ i })),
    { key: "busy" },
  );
  const quiet = await queue.enqueue(tenant, { quiet: true }, { key: "quiet" });
  return { busy, quiet };
}
