/**
 * Long-poll wake-up: a `POST /v1/lease` (waitMs 10 s) is parked in the server (it says so over
 * IPC), then this process enqueues one job with `POST /v1/jobs` on another connection; the time
 * from sending the enqueue to the lease's response. 10 warm-up samples, then 200.
 */
import { type LatencyFigures, latencyFigures, now } from "../../common.js";
import type { Scenario } from "../scenario.js";
import { http, sleep, type WireJob, withServer } from "./server.js";

export interface HttpWakeResult extends LatencyFigures {
  samples: number;
}

export const httpWake: Scenario<"http-wake"> = {
  name: "http-wake",
  measures: "ms from POST /v1/jobs to a waiting long-poll lease's response with the job",
  group: "http",
  inDefaultRun: () => false,
  async run({ store, runtime: rt, log }) {
    const WARMUP = 10;
    const SAMPLES = 200;
    const db = store.fresh("http-wake");
    try {
      return await withServer(db, rt, "http-wake", async (s) => {
        const lat: number[] = [];
        for (let k = 0; k < WARMUP + SAMPLES; k++) {
          const lease = http<{ jobs: WireJob[] }>(
            s.base,
            "POST",
            "/v1/lease",
            { limit: 1, leaseMs: 60_000, waitMs: 10_000 },
            20_000,
          );
          const deadline = now() + 5_000;
          while ((await s.mem()).waiters < 1) {
            if (now() > deadline) throw new Error("http-wake: the lease never started waiting");
            await sleep(1);
          }
          const t0 = now();
          const enqueued = http(s.base, "POST", "/v1/jobs", { type: "noop", payload: { k } });
          const { jobs } = await lease;
          const t1 = now();
          await enqueued;
          if (jobs.length !== 1) throw new Error(`http-wake: the lease returned ${jobs.length} jobs`);
          if (k >= WARMUP) lat.push(t1 - t0);
        }
        lat.sort((a, b) => a - b);
        const r = { samples: SAMPLES, ...latencyFigures(lat) };
        log(`http-wake: p50 ${r.p50} ms, p99 ${r.p99} ms`);
        return r;
      });
    } finally {
      await db.dispose();
    }
  },
};
