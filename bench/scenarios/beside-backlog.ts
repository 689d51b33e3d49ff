/**
 * A drain beside a backlog the claims must pass over, as a share of the same drain without it:
 * the drain scenario's drain (`--jobs` no-op jobs, concurrency 50) on a store that also holds
 * `--backlog` jobs that may not start (held back by a rate limit, or not due yet), enqueued before
 * the drained jobs, against a store set up the same way without them. rate-held.ts and
 * scheduled-ahead.ts are its two cases.
 *
 * Each side keeps its store for the whole run (the backlog is loaded once): a round enqueues
 * `--jobs` no-op jobs on each, settles it (PostgreSQL: VACUUM ANALYZE, CHECKPOINT) and drains
 * it, baseline and beside the backlog alternately; `ratio` compares the medians of ROUNDS rounds.
 */
import { Presets, SingleBar } from "cli-progress";
import type { Queue } from "../../src/index.js";
import { fmtInt, median, now, round } from "../common.js";
import { type Database, withQueue } from "../stores.js";
import type { Results, Scenario, ScenarioContext } from "./scenario.js";
import { noop, payloads } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface BesideBacklogResult {
  /** Jobs of the backlog, waiting throughout and never started. */
  held: number;
  measured: number;
  rounds: number;
  setupMs: number;
  /** Each round's drain beside the backlog, and without it (jobs/s). */
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
  /** Each measured job ran once in every round, and no job of the backlog ran. */
  exactlyOnce: boolean;
}

/** One case: its backlog and what both sides need before the drains. */
export interface BacklogCase {
  name: "rate-held" | "scheduled-ahead";
  measures: string;
  /** What the backlog is, for the progress bar. */
  what: string;
  /** A type the drain's worker also runs (its claims then carry the type's rules on both sides). */
  heldType?: { type: string } & Record<string, unknown>;
  /** Run on both sides before the backlog is loaded (rate-held: the held type's one start). */
  prepare?(q: Queue): Promise<void>;
  /** Enqueues `n` jobs of the backlog, numbered from `from`. */
  enqueue(q: Queue, n: number, from: number): Promise<unknown>;
  /** Whether the stats of a side holding `waiting` jobs of the backlog say none of them ran. */
  untouched(stats: Awaited<ReturnType<Queue["stats"]>>, waiting: number): boolean;
}

/** --quick's cap on the backlog. */
const QUICK_BACKLOG = 100_000;
const CHUNK = 20_000;
const ROUNDS = 3;

/** The drain beside `c`'s backlog, and without it. */
export async function besideBacklog(
  { store, options: o, runtime: rt, log }: ScenarioContext,
  c: BacklogCase,
): Promise<BesideBacklogResult> {
  const backlog = o.quick ? Math.min(o.backlog, QUICK_BACKLOG) : o.backlog;
  const measured = o.jobs;
  const base = store.fresh(`${c.name}-base`);
  const db = store.fresh(c.name);
  try {
    if (c.prepare) await withQueue(base, c.prepare);
    const bar = process.stderr.isTTY
      ? new SingleBar(
          { format: `[bench] ${c.name}: enqueue |{bar}| {value}/{total} ${c.what}` },
          Presets.shades_classic,
        )
      : null;
    const t0 = now();
    bar?.start(backlog, 0);
    await withQueue(db, async (q) => {
      for (let from = 0; from < backlog; from += CHUNK) {
        await c.enqueue(q, Math.min(CHUNK, backlog - from), from);
        bar?.update(Math.min(from + CHUNK, backlog));
      }
    }).finally(() => bar?.stop());
    if (c.prepare) await withQueue(db, c.prepare);
    const setupMs = now() - t0;
    log(`${c.name}: ${fmtInt(backlog)} ${c.what} enqueued in ${(setupMs / 1000).toFixed(1)} s`);

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
        c.heldType,
      );
      if (done.calls !== measured || done.distinct !== measured || done.repeated !== 0) exactlyOnce = false;
      const rate = Math.round(measured / (done.elapsedMs / 1000));
      const us = round((done.cpuMs * 1000) / measured, 1);
      cpu[target === base ? 0 : 1].push(us);
      log(`${c.name}: ${label} ${fmtInt(rate)} jobs/s, worker ${us} µs/job`);
      return rate;
    };
    const heldRuns: number[] = [];
    const baselineRuns: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternated, and which goes first alternates too: the machine's load drifts.
      if (r % 2 === 0) {
        baselineRuns.push(await drainOn(base, "baseline"));
        heldRuns.push(await drainOn(db, "beside the backlog"));
      } else {
        heldRuns.push(await drainOn(db, "beside the backlog"));
        baselineRuns.push(await drainOn(base, "baseline"));
      }
    }
    for (const [target, waiting] of [
      [base, 0],
      [db, backlog],
    ] as const) {
      const stats = await withQueue(target, (q) => q.stats());
      if (!c.untouched(stats, waiting)) exactlyOnce = false;
      if ((stats.types[noop.type]?.completed ?? 0) !== measured * ROUNDS) exactlyOnce = false;
    }
    const jobsPerSec = median(heldRuns);
    const baselineJobsPerSec = median(baselineRuns);
    const r: BesideBacklogResult = {
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
      `${c.name}: ${fmtInt(jobsPerSec)} jobs/s vs ${fmtInt(baselineJobsPerSec)} (ratio ${r.ratio}); worker ${r.cpuUsPerJob} vs ${r.baselineCpuUsPerJob} µs/job`,
    );
    return r;
  } finally {
    await db.dispose();
    await base.dispose();
  }
}

/** A scenario of `c`, in a run without `--scenario` unless `--quick`. */
export function backlogScenario<K extends BacklogCase["name"]>(c: BacklogCase & { name: K }): Scenario<K> {
  return {
    name: c.name,
    measures: c.measures,
    inDefaultRun: (_store, o) => !o.quick,
    run: (ctx) => besideBacklog(ctx, c) as Promise<NonNullable<Results[K]>>,
  };
}
