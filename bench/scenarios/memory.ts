/**
 * The store server's memory per waiting job: `usedMemory()` before and after enqueueing 100,000
 * jobs with a 100-byte JSON payload, with no errand connection open at either reading (a client's
 * buffers count in Redis's used_memory). Only on stores that can tell (Redis).
 */
import { withQueue } from "../stores.js";
import { noop, type Scenario } from "./scenario.js";

export interface MemoryResult {
  jobs: number;
  payloadBytes: number;
  usedBeforeBytes: number;
  usedAfterBytes: number;
  bytesPerJob: number;
}

export const memory: Scenario<"memory"> = {
  name: "memory",
  measures: "the store server's bytes per waiting job with a 100-byte payload",
  runsOn: (store) => store.usedMemory !== undefined,
  inDefaultRun: () => true,
  async run({ store, log }) {
    const JOBS = 100_000;
    const CHUNK = 10_000;
    const payload = (i: number) => {
      const head = `{"i":${i},"s":"`;
      return JSON.parse(`${head}${"x".repeat(100 - head.length - 2)}"}`) as { i: number; s: string };
    };
    const db = store.fresh("memory");
    try {
      const usedBeforeBytes = await store.usedMemory!();
      await withQueue(db, async (q) => {
        for (let from = 0; from < JOBS; from += CHUNK) {
          await q.enqueueMany(
            noop,
            Array.from({ length: CHUNK }, (_, k) => payload(from + k)),
          );
        }
      });
      const usedAfterBytes = await store.usedMemory!();
      const r = {
        jobs: JOBS,
        payloadBytes: JSON.stringify(payload(0)).length,
        usedBeforeBytes,
        usedAfterBytes,
        bytesPerJob: Math.round((usedAfterBytes - usedBeforeBytes) / JOBS),
      };
      log(`memory: ${r.bytesPerJob} bytes per waiting ${r.payloadBytes}-byte job`);
      return r;
    } finally {
      await db.dispose();
    }
  },
};
