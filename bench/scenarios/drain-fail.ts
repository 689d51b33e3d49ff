/** The drain with every job failing for good: the failure path's write (one per job to dead). Only when asked for. */
import { fmtInt } from "../common.js";
import type { Scenario } from "./scenario.js";
import { type DrainFigures, drainFresh } from "./worker-drain.js";

export interface DrainFailResult extends DrainFigures {
  /** Each handler ran once and each job is dead, none left pending or active. */
  exactlyOnce: boolean;
  deadInStore: number;
}

export const drainFail: Scenario<"drain-fail"> = {
  name: "drain-fail",
  measures: "jobs/s of the drain when every job throws a NonRetryableError and goes to dead",
  inDefaultRun: () => false,
  async run(ctx) {
    const { figures, exactlyOnce, ended } = await drainFresh(ctx, "drainfail", "drain-fail");
    const r = { ...figures, exactlyOnce, deadInStore: ended };
    ctx.log(`drain-fail: ${fmtInt(r.jobsPerSec)} jobs/s, each failed exactly once: ${exactlyOnce}`);
    return r;
  },
};
