/**
 * Remote workers over HTTP: N waiting no-op jobs; in this process, `--http-loops` (4) loops each lease 50
 * (`POST /v1/lease`, waitMs 0) and report them all completed in one `POST /v1/report`, until a
 * lease comes back empty.
 */
import { fmtInt, now, round } from "../../common.js";
import { withQueue } from "../../stores.js";
import { noop, payloads, type Scenario } from "../scenario.js";
import { http, type WireJob, withServer } from "./server.js";

export interface HttpWorkResult {
  jobs: number;
  batch: number;
  loops: number;
  elapsedMs: number;
  jobsPerSec: number;
  requests: number;
  leased: number;
  distinct: number;
  reportedOk: number;
  completedInStore: number;
  exactlyOnce: boolean;
}

export const httpWork: Scenario<"http-work"> = {
  name: "http-work",
  measures: "jobs/s of remote workers' lease → batch report loops over HTTP",
  group: "http",
  inDefaultRun: () => false,
  async run({ store, options: o, runtime: rt, log }) {
    const BATCH = 50;
    const db = store.fresh("http-work");
    try {
      await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
      return await withServer(db, rt, "http-work", async (s) => {
        await http(s.base, "GET", "/healthz");
        const seen = new Map<string, number>();
        let requests = 0;
        let reportedOk = 0;
        const loop = async () => {
          for (;;) {
            const { jobs } = await http<{ jobs: WireJob[] }>(s.base, "POST", "/v1/lease", {
              limit: BATCH,
              leaseMs: 60_000,
              waitMs: 0,
            });
            requests++;
            if (jobs.length === 0) return;
            for (const j of jobs) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
            const { results } = await http<{ results: Array<{ ok: boolean }> }>(
              s.base,
              "POST",
              "/v1/report",
              {
                reports: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: "complete" })),
              },
            );
            requests++;
            for (const x of results) if (x.ok) reportedOk++;
          }
        };
        const t0 = now();
        await Promise.all(Array.from({ length: o.httpLoops }, loop));
        const elapsedMs = now() - t0;
        const stats = await http<{ states: Record<string, number> }>(s.base, "GET", "/v1/stats");
        let leased = 0;
        for (const n of seen.values()) leased += n;
        const completedInStore = stats.states.completed ?? 0;
        const exactlyOnce =
          leased === o.jobs &&
          seen.size === o.jobs &&
          reportedOk === o.jobs &&
          completedInStore === o.jobs &&
          (stats.states.pending ?? 0) + (stats.states.active ?? 0) === 0;
        const r = {
          jobs: o.jobs,
          batch: BATCH,
          loops: o.httpLoops,
          elapsedMs: round(elapsedMs, 1),
          jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
          requests,
          leased,
          distinct: seen.size,
          reportedOk,
          completedInStore,
          exactlyOnce,
        };
        log(`http-work: ${fmtInt(r.jobsPerSec)} jobs/s, exactly once: ${exactlyOnce}`);
        return r;
      });
    } finally {
      await db.dispose();
    }
  },
};
