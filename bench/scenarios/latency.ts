/** Producer here, idle worker in a child: enqueue() call → handler start, across processes. */
import { Child } from "../child.js";
import { type LatencyFigures, latencyFigures, now, round, sleepUntil } from "../common.js";
import { withQueue } from "../stores.js";
import { CHILD_DEADLINE_MS, noop, type Scenario } from "./scenario.js";

export interface LatencyResult extends LatencyFigures {
  jobs: number;
  intervalMs: number;
  clockOffsetMs: number;
  clockRttMs: number;
}

export const latency: Scenario<"latency"> = {
  name: "latency",
  measures: "ms from enqueue() here to the handler's start in an idle worker process",
  inDefaultRun: () => true,
  async run({ store, options: o, runtime: rt, log }) {
    const WARMUP = 10;
    const INTERVAL_MS = 10;
    const total = WARMUP + o.latencyJobs;
    const db = store.fresh("latency");
    const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, "latency worker", rt.tsx);
    try {
      return await withQueue(db, async (q) => {
        child.send({
          type: "init",
          entry: rt.entry,
          url: db.url,
          mode: "latency",
          concurrency: 50,
          expect: total,
        });
        await child.next("ready");
        const clock = await clockOffset(child);
        const sent: number[] = new Array(total);
        for (let i = 0; i < total; i++) {
          await sleepUntil(now() + INTERVAL_MS);
          sent[i] = now();
          await q.enqueue(noop, { i });
        }
        const done = await child.next<{ type: "done"; starts: number[] }>("done");
        const lat = done.starts.slice(WARMUP).map((t, k) => t - sent[WARMUP + k]!);
        lat.sort((a, b) => a - b);
        const r = {
          jobs: o.latencyJobs,
          intervalMs: INTERVAL_MS,
          ...latencyFigures(lat),
          clockOffsetMs: round(clock.offset, 3),
          clockRttMs: round(clock.rtt, 3),
        };
        log(`latency: p50 ${r.p50} ms, p95 ${r.p95} ms, p99 ${r.p99} ms`);
        return r;
      });
    } finally {
      await child.stop();
      await db.dispose();
    }
  },
};

/**
 * How far the child's `timeOrigin + now()` is from ours (NTP-style, the sample with the least
 * round trip). Reported, not subtracted: both clocks come from the same kernel clock.
 */
async function clockOffset(child: Child): Promise<{ offset: number; rtt: number }> {
  let best = { offset: 0, rtt: Number.POSITIVE_INFINITY };
  for (let i = 0; i < 30; i++) {
    const t0 = now();
    child.send({ type: "ping" });
    const { t } = await child.next<{ type: "pong"; t: number }>("pong");
    const t1 = now();
    if (t1 - t0 < best.rtt) best = { offset: t - (t0 + t1) / 2, rtt: t1 - t0 };
  }
  return best;
}
