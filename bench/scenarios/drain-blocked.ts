/**
 * Blocked jobs cost claims nothing (issue 14): the drain scenario's drain (`--jobs` no-op jobs,
 * concurrency 50) on a store that also holds `--backlog` blocked jobs (100,000 at most with
 * `--quick`), as a share of the same drain on a store set up the same way without them, measured
 * just before and just after it (their mean), so both went through the same setup and settling.
 * The blocked jobs all wait on one root in a queue no worker listens to, so they stay blocked.
 */
import { Presets, SingleBar } from "cli-progress";
import { fmtInt, now, round } from "../common.js";
import { type Database, withQueue } from "../stores.js";
import { noop, payloads, type Scenario } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

export interface DrainBlockedResult {
  blocked: number;
  measured: number;
  setupMs: number;
  elapsedMs: number;
  jobsPerSec: number;
  baselineJobsPerSec: number;
  ratio: number;
  /**
   * Autovacuum / autoanalyze passes over the schema's tables during each drain (PostgreSQL only):
   * [baseline before, blocked, baseline after]. A pass over a table holding a million blocked
   * jobs reads their whole primary key, so a short drain that a pass lands in measures the pass.
   */
  housekeeping?: { vacuums: number[]; analyzes: number[] };
  /** Each measured job ran once, and every blocked job is still blocked. */
  exactlyOnce: boolean;
}

/** --quick's cap on the blocked jobs. */
const QUICK_BACKLOG = 100_000;
const CHUNK = 20_000;

export const drainBlocked: Scenario<"drain-blocked"> = {
  name: "drain-blocked",
  measures:
    "jobs/s of the drain with --backlog blocked jobs in the store, as a share of the same drain without them",
  inDefaultRun: (_store, o) => !o.quick,
  async run({ store, options: o, runtime: rt, log }) {
    const blocked = o.quick ? Math.min(o.backlog, QUICK_BACKLOG) : o.backlog;
    const measured = o.jobs;
    // The same drain without blocked jobs, set up and settled the same way.
    const passes: { vacuums: number; analyzes: number }[] = [];
    // Housekeeping passes over the store's tables while `fn` ran (stores that report them).
    const counted = async <T>(db: Database, fn: () => Promise<T>): Promise<T> => {
      const at = await db.housekeeping?.();
      const out = await fn();
      const end = await db.housekeeping?.();
      if (at && end) passes.push({ vacuums: end.vacuums - at.vacuums, analyzes: end.analyzes - at.analyzes });
      return out;
    };
    const plain = async (label: string): Promise<number> => {
      const base = store.fresh(label);
      try {
        await withQueue(base, async (q) => {
          await q.enqueue(noop, { i: -1 }, { queue: "deps-root" });
          await q.enqueueMany(noop, payloads(measured));
        });
        await base.settle?.();
        const run = await counted(base, () => drainIn(store, base, measured, 50, rt, "drain", measured));
        return measured / (run.elapsedMs / 1000);
      } finally {
        await base.dispose();
      }
    };
    const before = await plain("blocked-base-a");
    const db = store.fresh("blocked");
    try {
      // Setting up a million jobs takes a while: show how far it got (on a terminal only).
      const bar = process.stderr.isTTY
        ? new SingleBar(
            { format: "[bench] drain-blocked: enqueue |{bar}| {value}/{total} blocked jobs" },
            Presets.shades_classic,
          )
        : null;
      const t0 = now();
      bar?.start(blocked, 0);
      await withQueue(db, async (q) => {
        const root = await q.enqueue(noop, { i: -1 }, { queue: "deps-root" });
        for (let from = 0; from < blocked; from += CHUNK) {
          // Indices past the measured ones: were one run, the worker would count it a stray.
          const chunk = payloads(Math.min(CHUNK, blocked - from), measured + from);
          await q.enqueueMany(noop, chunk, { dependsOn: [root.id] });
          bar?.update(Math.min(from + CHUNK, blocked));
        }
        await q.enqueueMany(noop, payloads(measured));
      }).finally(() => bar?.stop());
      const setupMs = now() - t0;
      log(`drain-blocked: ${fmtInt(blocked)} blocked jobs enqueued in ${(setupMs / 1000).toFixed(1)} s`);
      // A bulk load of a million rows sets off autovacuum (and a checkpoint) on PostgreSQL; let it
      // finish, as it would long before a million blocked jobs had piled up in production, so the
      // drain measures claims beside blocked jobs rather than vacuum beside the drain.
      await db.settle?.();
      const done = await counted(db, () => drainIn(store, db, measured, 50, rt, "drain", measured));
      const { states } = await withQueue(db, (q) => q.stats());
      const jobsPerSec = Math.round(measured / (done.elapsedMs / 1000));
      const baseline = Math.round((before + (await plain("blocked-base-b"))) / 2);
      const r = {
        blocked,
        measured,
        setupMs: Math.round(setupMs),
        elapsedMs: round(done.elapsedMs, 1),
        jobsPerSec,
        baselineJobsPerSec: baseline,
        ratio: round(jobsPerSec / baseline, 3),
        ...(passes.length === 3 && {
          housekeeping: { vacuums: passes.map((p) => p.vacuums), analyzes: passes.map((p) => p.analyzes) },
        }),
        exactlyOnce:
          done.calls === measured &&
          done.distinct === measured &&
          done.repeated === 0 &&
          states.completed === measured &&
          states.blocked === blocked,
      };
      log(`drain-blocked: ${fmtInt(jobsPerSec)} jobs/s vs ${fmtInt(baseline)} (ratio ${r.ratio})`);
      return r;
    } finally {
      await db.dispose();
    }
  },
};
