/**
 * Scale-out: the same N waiting jobs drained by 4 worker processes at once (concurrency 50 each),
 * timed from the first `go` to the last completion in any process, vs one process's drain rate.
 * Measured cold (fresh processes, as a deployment's first minute sees them; the ratio the target
 * is held to) and warm (the same workers first run {@link SCALE_WARMUP_JOBS} jobs per process
 * between them, and the baseline is one process warmed the same way), which is where the cores
 * set the limit.
 * Run by default where the store has a scale-out target (PostgreSQL).
 */
import { Child } from "../child.js";
import { fmtInt, round } from "../common.js";
import { type CpuSplit, cpuSplit, serverCpuSpan } from "../cpu.js";
import { withQueue } from "../stores.js";
import { CHILD_DEADLINE_MS, noop, payloads, type Scenario, type ScenarioContext } from "./scenario.js";

export interface DrainScaleResult {
  jobs: number;
  processes: number;
  concurrency: number;
  elapsedMs: number;
  jobsPerSec: number;
  /** Jobs each process ran. */
  shares: number[];
  exactlyOnce: boolean;
  baselineJobsPerSec: number;
  ratio: number;
  cpu: CpuSplit;
  /** The same with every process (and the one-process baseline) warmed up first. */
  warm: {
    warmupJobsPerProcess: number;
    oneProcessJobsPerSec: number;
    jobsPerSec: number;
    ratio: number;
    oneProcessCpu: CpuSplit;
    cpu: CpuSplit;
  };
}

/**
 * Warm-up jobs per scale-out worker process (all of them in the default queue, shared by the
 * started workers) before the warm measurement's jobs are enqueued.
 */
const SCALE_WARMUP_JOBS = 3_000;

export const drainScale: Scenario<"drain-scale"> = {
  name: "drain-scale",
  measures: "jobs/s of 4 worker processes draining --jobs jobs together, as a multiple of one's",
  needs: ["drain"],
  inDefaultRun: (store) => store.targets.scaleRatio !== undefined,
  async run(ctx) {
    const { options: o, log } = ctx;
    const baseline = ctx.results.drain!.jobsPerSec;
    const PROCESSES = 4;
    const cold = await scaleRun(ctx, PROCESSES, 0);
    const warmOne = await scaleRun(ctx, 1, SCALE_WARMUP_JOBS);
    const warm = await scaleRun(ctx, PROCESSES, SCALE_WARMUP_JOBS);
    const r = {
      jobs: o.jobs,
      processes: PROCESSES,
      concurrency: 50,
      elapsedMs: round(cold.elapsedMs, 1),
      jobsPerSec: cold.jobsPerSec,
      shares: cold.shares,
      exactlyOnce: cold.exactlyOnce && warmOne.exactlyOnce && warm.exactlyOnce,
      baselineJobsPerSec: baseline,
      ratio: round(cold.jobsPerSec / baseline, 3),
      cpu: cold.cpu,
      warm: {
        warmupJobsPerProcess: SCALE_WARMUP_JOBS,
        oneProcessJobsPerSec: warmOne.jobsPerSec,
        jobsPerSec: warm.jobsPerSec,
        ratio: round(warm.jobsPerSec / warmOne.jobsPerSec, 3),
        oneProcessCpu: warmOne.cpu,
        cpu: warm.cpu,
      },
    };
    log(
      `drain-scale: ${fmtInt(r.jobsPerSec)} jobs/s with ${PROCESSES} processes vs ${fmtInt(baseline)} (×${r.ratio}); ` +
        `warm: ${fmtInt(warm.jobsPerSec)} vs ${fmtInt(warmOne.jobsPerSec)} (×${r.warm.ratio})`,
    );
    return r;
  },
};

/** One scale-out drain: `processes` workers, each warmed with `warm` jobs first, on a fresh database. */
async function scaleRun(
  { store, options: o, runtime: rt }: ScenarioContext,
  processes: number,
  warm: number,
): Promise<{ elapsedMs: number; jobsPerSec: number; shares: number[]; exactlyOnce: boolean; cpu: CpuSplit }> {
  const db = store.fresh("scale");
  const children: Child[] = [];
  const warmJobs = warm * processes;
  try {
    if (warm === 0) await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    for (let i = 0; i < processes; i++) {
      const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, `scale worker ${i}`, rt.tsx);
      child.send({
        type: "init",
        entry: rt.entry,
        url: db.url,
        mode: "scale",
        concurrency: 50,
        expect: o.jobs,
        warm: warm > 0,
      });
      children.push(child);
    }
    await Promise.all(children.map((c) => c.next("ready")));
    let serverCpu: ReturnType<typeof serverCpuSpan>;
    if (warm === 0) {
      serverCpu = serverCpuSpan(store);
      for (const c of children) c.send({ type: "go" });
    } else {
      // Warm: the started workers share the warm-up jobs; then the measured jobs are enqueued
      // behind a pause, so none is claimed before every process has had `go`.
      await withQueue(db, async (q) => {
        await q.enqueueMany(
          noop,
          Array.from({ length: warmJobs }, () => ({ warm: true })),
        );
        while (true) {
          const { states } = await q.stats();
          if (states.pending + states.active === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await q.pauseQueue("default");
        await q.enqueueMany(noop, payloads(o.jobs));
        serverCpu = serverCpuSpan(store);
        for (const c of children) c.send({ type: "go" });
        await q.resumeQueue("default");
      });
    }
    type ScaleDone = {
      type: "done";
      t0: number;
      tLast: number;
      completed: number;
      calls: number;
      repeated: number;
      cpuMs: number;
    };
    const done = await Promise.all(children.map((c) => c.next<ScaleDone>("done")));
    const serverMs = serverCpu!();
    const elapsedMs = Math.max(...done.map((d) => d.tLast)) - Math.min(...done.map((d) => d.t0));
    const stats = await withQueue(db, (q) => q.stats());
    const calls = done.reduce((a, d) => a + d.calls, 0);
    // The warm-up jobs ran in the default queue too, before the measured ones existed.
    const exactlyOnce =
      calls === o.jobs &&
      done.every((d) => d.repeated === 0) &&
      stats.queues.default?.completed === o.jobs + warmJobs &&
      stats.states.pending + stats.states.active === 0;
    return {
      elapsedMs,
      jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
      shares: done.map((d) => d.completed),
      exactlyOnce,
      cpu: cpuSplit(
        o.jobs,
        elapsedMs,
        done.reduce((a, d) => a + d.cpuMs, 0),
        serverMs,
      ),
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await db.dispose();
  }
}
