/**
 * A type held back by its rate limit does not slow the others (issue 15): the drain scenario's
 * drain (`--jobs` no-op jobs, concurrency 50) on a store that also holds `--backlog` ready jobs of
 * a type whose rate limit is spent (`held`: 1 start per hour, that start made before the drain),
 * enqueued before the drained jobs so that they come first in claim order, as a share of the
 * same drain on a store set up the same way without them. The drain's worker runs both types,
 * so its claims carry the held type's rate limit on both sides.
 *
 * Each side keeps its store for the whole run (the backlog is loaded once): a round enqueues
 * `--jobs` no-op jobs on each, settles it (PostgreSQL: VACUUM ANALYZE, CHECKPOINT) and drains
 * it, baseline and held alternately; `ratio` compares the medians of ROUNDS rounds.
 */
import { Presets, SingleBar } from "cli-progress";
import { defineJob } from "../../src/index.js";
import { fmtInt, median, now, round } from "../common.js";
import { type Database, withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface RateHeldResult {
  /** Ready jobs of the held type waiting throughout. */
  held: number;
  measured: number;
  rounds: number;
  setupMs: number;
  /** Each round's drain beside the held jobs, and without them (jobs/s). */
  heldRuns: number[];
  baselineRuns: number[];
  jobsPerSec: number;
  baselineJobsPerSec: number;
  ratio: number;
  /**
   * The worker's CPU time per drained job (µs; SQLite's store work included, it runs in the
   * worker), medians: a steadier reading than the rates on a machine others share.
   */
  cpuUsPerJob: number;
  baselineCpuUsPerJob: number;
  /** Each measured job ran once in every round, and no held job ran but the one before the drains. */
  exactlyOnce: boolean;
}

/** --quick's cap on the held jobs. */
const QUICK_BACKLOG = 100_000;
const CHUNK = 20_000;
const ROUNDS = 3;
/** The held type: its one start per hour is made before the first drain. */
const HELD = { type: "rate-held", rateLimit: { limit: 1, periodMs: 3_600_000 } };
const held = defineJob({ ...HELD, handler: async () => {} });

export const rateHeld: Scenario<"rate-held"> = {
  name: "rate-held",
  measures:
    "jobs/s of the drain with --backlog jobs of a type held back by its rate limit waiting ahead, as a share of the drain without them",
  inDefaultRun: (_store, o) => !o.quick,
  async run({ store, options: o, runtime: rt, log }) {
    const backlog = o.quick ? Math.min(o.backlog, QUICK_BACKLOG) : o.backlog;
    const measured = o.jobs;
    const base = store.fresh("rate-held-base");
    const db = store.fresh("rate-held");
    try {
      // Both sides: one job of the held type, started, so its window is spent for the hour.
      const spend = (target: Database) =>
        withQueue(target, async (q) => {
          q.register(held);
          await q.enqueue(held, { i: -1 });
          const [started] = await q.lease({ types: [HELD.type], leaseMs: 3_600_000 });
          if (!started) throw new Error("rate-held: the held type's one start was not made");
        });
      await spend(base);
      const bar = process.stderr.isTTY
        ? new SingleBar(
            { format: "[bench] rate-held: enqueue |{bar}| {value}/{total} held jobs" },
            Presets.shades_classic,
          )
        : null;
      const t0 = now();
      bar?.start(backlog, 0);
      await withQueue(db, async (q) => {
        for (let from = 0; from < backlog; from += CHUNK) {
          await q.enqueueMany(held, payloads(Math.min(CHUNK, backlog - from), from));
          bar?.update(Math.min(from + CHUNK, backlog));
        }
      }).finally(() => bar?.stop());
      await spend(db);
      const setupMs = now() - t0;
      log(`rate-held: ${fmtInt(backlog)} held jobs enqueued in ${(setupMs / 1000).toFixed(1)} s`);

      let exactlyOnce = true;
      const cpu: [number[], number[]] = [[], []];
      const drainOn = async (target: Database, label: string): Promise<number> => {
        await withQueue(target, (q) => q.enqueueMany(noop, payloads(measured)));
        await target.settle?.();
        const done = await drainIn(
          store,
          target,
          measured,
          50,
          rt,
          "drain",
          measured,
          undefined,
          undefined,
          HELD,
        );
        if (done.calls !== measured || done.distinct !== measured || done.repeated !== 0) exactlyOnce = false;
        const rate = Math.round(measured / (done.elapsedMs / 1000));
        const us = round((done.cpuMs * 1000) / measured, 1);
        cpu[target === base ? 0 : 1].push(us);
        log(`rate-held: ${label} ${fmtInt(rate)} jobs/s, worker ${us} µs/job`);
        return rate;
      };
      const heldRuns: number[] = [];
      const baselineRuns: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // Alternated, and which goes first alternates too: the machine's load drifts.
        if (r % 2 === 0) {
          baselineRuns.push(await drainOn(base, "baseline"));
          heldRuns.push(await drainOn(db, "held"));
        } else {
          heldRuns.push(await drainOn(db, "held"));
          baselineRuns.push(await drainOn(base, "baseline"));
        }
      }
      for (const [target, waiting] of [
        [base, 0],
        [db, backlog],
      ] as const) {
        const { types } = await withQueue(target, (q) => q.stats());
        const h = types[HELD.type] ?? {};
        const n = types[noop.type] ?? {};
        if ((h.pending ?? 0) !== waiting || h.active !== 1 || n.completed !== measured * ROUNDS)
          exactlyOnce = false;
      }
      const jobsPerSec = median(heldRuns);
      const baselineJobsPerSec = median(baselineRuns);
      const r: RateHeldResult = {
        held: backlog,
        measured,
        rounds: ROUNDS,
        setupMs: Math.round(setupMs),
        heldRuns,
        baselineRuns,
        jobsPerSec,
        baselineJobsPerSec,
        ratio: round(jobsPerSec / baselineJobsPerSec, 3),
        cpuUsPerJob: median(cpu[1]),
        baselineCpuUsPerJob: median(cpu[0]),
        exactlyOnce,
      };
      log(
        `rate-held: ${fmtInt(jobsPerSec)} jobs/s vs ${fmtInt(baselineJobsPerSec)} (ratio ${r.ratio}); worker ${r.cpuUsPerJob} vs ${r.baselineCpuUsPerJob} µs/job`,
      );
      return r;
    } finally {
      await db.dispose();
      await base.dispose();
    }
  },
};
