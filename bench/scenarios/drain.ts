/** Drain: N waiting jobs run by one worker process at concurrency 50; its RSS and CPU per job. */
import { fmtInt, round } from "../common.js";
import { type CpuSplit, cpuSplit } from "../cpu.js";
import type { Scenario } from "./scenario.js";
import { type DrainFigures, drainFresh } from "./worker-drain.js";

export interface DrainResult extends DrainFigures {
  exactlyOnce: boolean;
  handlerCalls: number;
  completedInStore: number;
  workerRssMB: number;
  workerRssBeforeMB: number;
  workerHeapUsedMB: number;
  workerHeapTotalMB: number;
  cpu: CpuSplit;
}

export const drain: Scenario<"drain"> = {
  name: "drain",
  measures: "jobs/s of one worker process draining --jobs waiting jobs, its RSS and CPU per job",
  inDefaultRun: () => true,
  async run(ctx) {
    const { figures, exactlyOnce, ended, done } = await drainFresh(ctx, "drain", "drain");
    const r = {
      ...figures,
      exactlyOnce,
      handlerCalls: done.calls,
      completedInStore: ended,
      workerRssMB: round(done.rssBytes / 2 ** 20, 1),
      workerRssBeforeMB: round(done.rssBeforeBytes / 2 ** 20, 1),
      workerHeapUsedMB: round(done.heapUsedBytes / 2 ** 20, 1),
      workerHeapTotalMB: round(done.heapTotalBytes / 2 ** 20, 1),
      cpu: cpuSplit(figures.jobs, done.elapsedMs, done.cpuMs, done.serverCpuMs),
    };
    ctx.log(`drain: ${fmtInt(r.jobsPerSec)} jobs/s, exactly once: ${exactlyOnce}, RSS ${r.workerRssMB} MB`);
    return r;
  },
};
