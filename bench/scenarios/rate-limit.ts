/**
 * Rate-limit precision (issue 15): 4 worker processes on one store run a type limited to
 * 100 starts per second (`rateLimit: { limit: 100, periodMs: "1s" }`) for `--seconds` (60; 10
 * with --quick), with more jobs waiting than the limit lets through. From the start times the
 * workers record (each handler's start, on the machine's clock), it reports the most starts in
 * any 1-second window (the limit: ≤ 100) and the mean rate over the run (≥ 95/s: the limit is
 * used, not merely kept). The same from each job's claim time (`job.startedAt`, the `now` the
 * store counted with, as each worker saw it) is shown beside it: that is what the limit holds
 * exactly; a handler starts a claim's latency later (5–10 ms on a loaded machine), and since the
 * next claims come the instant the oldest start leaves the window, that lag's jitter lets a
 * window of handler starts take in part of the next batch.
 */
import { Child } from "../child.js";
import { fmtInt, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { CHILD_DEADLINE_MS, noop, payloads, type Scenario } from "./scenario.js";

export interface RateLimitResult {
  processes: number;
  limit: number;
  periodMs: number;
  seconds: number;
  starts: number;
  /** The most handler starts in any window of `periodMs` (a sliding window over every start). */
  maxInWindow: number;
  /** The same over the claim times (`job.startedAt`). */
  maxInWindowClaimed: number;
  /**
   * From a job's claim to its handler's start (each process's clock against the store's `now`):
   * the jitter of this lag is what lets a 1-second window of handler starts hold more than the
   * limit, since the next claims come the moment the oldest start leaves the window.
   */
  startLagMs: { p50: number; p99: number; max: number };
  /** starts / seconds (the first window's burst included: about limit × (seconds + 1) / seconds). */
  meanPerSec: number;
  /** Starts each process made. */
  shares: number[];
  /** No job ran twice, in one process or across them. */
  exactlyOnce: boolean;
}

const PROCESSES = 4;
const LIMIT = 100;
const PERIOD_MS = 1000;

/** The most of `times` in any half-open window [t, t + width). */
export function maxInWindow(times: readonly number[], width: number): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let lo = 0, hi = 0; lo < t.length; lo++) {
    while (hi < t.length && t[hi]! < t[lo]! + width) hi++;
    best = Math.max(best, hi - lo);
  }
  return best;
}

export const rateLimit: Scenario<"rate-limit"> = {
  name: "rate-limit",
  measures: "4 worker processes on a type limited to 100/s for --seconds: most starts in any 1 s, mean rate",
  inDefaultRun: () => true,
  async run({ store, options: o, runtime: rt, log }) {
    const seconds = o.seconds ?? (o.quick ? 10 : 60);
    const jobs = LIMIT * seconds + 2_000;
    const db = store.fresh("rate-limit");
    const children: Child[] = [];
    try {
      await withQueue(db, (q) => q.enqueueMany(noop, payloads(jobs)));
      for (let i = 0; i < PROCESSES; i++) {
        const child = new Child(
          "./worker-child.mjs",
          CHILD_DEADLINE_MS + seconds * 1000,
          `rate worker ${i}`,
          rt.tsx,
        );
        child.send({
          type: "init",
          entry: rt.entry,
          url: db.url,
          mode: "rate",
          concurrency: 50,
          expect: jobs,
          typeOptions: { rateLimit: { limit: LIMIT, periodMs: PERIOD_MS } },
        });
        children.push(child);
      }
      await Promise.all(children.map((c) => c.next("ready")));
      const t0 = now();
      for (const c of children) c.send({ type: "go" });
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      for (const c of children) c.send({ type: "stop" });
      type RateDone = { starts: number[]; claimedAt: number[]; ran: number[] };
      const done = await Promise.all(children.map((c) => c.next<RateDone & { type: "done" }>("done")));
      const elapsedS = (now() - t0) / 1000;
      const starts = done.flatMap((d) => d.starts);
      const lags = done.flatMap((d) => d.starts.map((t, k) => t - d.claimedAt[k]!)).sort((a, b) => a - b);
      const lag = (q: number) => round(lags[Math.floor(q * (lags.length - 1))] ?? 0, 1);
      const r: RateLimitResult = {
        processes: PROCESSES,
        limit: LIMIT,
        periodMs: PERIOD_MS,
        seconds: round(elapsedS, 2),
        starts: starts.length,
        maxInWindow: maxInWindow(starts, PERIOD_MS),
        maxInWindowClaimed: maxInWindow(
          done.flatMap((d) => d.claimedAt),
          PERIOD_MS,
        ),
        meanPerSec: round(starts.length / elapsedS, 1),
        startLagMs: { p50: lag(0.5), p99: lag(0.99), max: lag(1) },
        shares: done.map((d) => d.starts.length),
        exactlyOnce: new Set(done.flatMap((d) => d.ran)).size === starts.length,
      };
      log(
        `rate-limit: ${fmtInt(r.starts)} starts in ${r.seconds} s by ${PROCESSES} processes: at most ${r.maxInWindow} in any 1 s (${r.maxInWindowClaimed} by claim time), mean ${r.meanPerSec}/s`,
      );
      return r;
    } finally {
      await Promise.all(children.map((c) => c.stop()));
      await db.dispose();
    }
  },
};
