/** Bulk enqueue over HTTP: 20 `POST /v1/jobs` of 1,000 jobs each, one after another, after 3 warm-ups. */
import { fmtInt, now, pct, round } from "../../common.js";
import type { Scenario } from "../scenario.js";
import { http, withServer } from "./server.js";

export interface HttpEnqueueResult {
  requests: number;
  jobsPerRequest: number;
  elapsedMs: number;
  jobsPerSec: number;
  requestMsP50: number;
  requestMsMax: number;
}

export const httpEnqueue: Scenario<"http-enqueue"> = {
  name: "http-enqueue",
  measures: "jobs/s through POST /v1/jobs, 1,000 jobs a request",
  group: "http",
  inDefaultRun: () => false,
  async run({ store, runtime: rt, log }) {
    const REQUESTS = 20;
    const WARMUP = 3;
    const PER = 1000;
    const db = store.fresh("http-enqueue");
    try {
      return await withServer(db, rt, "http-enqueue", async (s) => {
        // Bodies built beforehand: the figure is the server's, not this process's JSON.stringify.
        const bodies = Array.from({ length: WARMUP + REQUESTS }, (_, r) =>
          JSON.stringify({
            jobs: Array.from({ length: PER }, (_, i) => ({ type: "noop", payload: { i: r * PER + i } })),
          }),
        );
        for (let w = REQUESTS; w < REQUESTS + WARMUP; w++) await http(s.base, "POST", "/v1/jobs", bodies[w]);
        const ms: number[] = [];
        const t0 = now();
        for (let r = 0; r < REQUESTS; r++) {
          const t = now();
          const out = await http<{ jobs: unknown[] }>(s.base, "POST", "/v1/jobs", bodies[r]);
          if (out.jobs.length !== PER)
            throw new Error(`http-enqueue: ${out.jobs.length} jobs back, not ${PER}`);
          ms.push(now() - t);
        }
        const elapsedMs = now() - t0;
        ms.sort((a, b) => a - b);
        const r = {
          requests: REQUESTS,
          jobsPerRequest: PER,
          elapsedMs: round(elapsedMs, 1),
          jobsPerSec: Math.round((REQUESTS * PER) / (elapsedMs / 1000)),
          requestMsP50: round(pct(ms, 50), 2),
          requestMsMax: round(ms[ms.length - 1]!, 2),
        };
        log(`http-enqueue: ${fmtInt(r.jobsPerSec)} jobs/s (${r.requestMsP50} ms a request, p50)`);
        return r;
      });
    } finally {
      await db.dispose();
    }
  },
};
