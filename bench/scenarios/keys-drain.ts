/**
 * Per-key concurrency and fairness at scale (issue 15): `--jobs` jobs spread over `--jobs / 20`
 * keys (20,000 over 1,000 by default) drained by one worker child at concurrency 50 with
 * `keyConcurrency: 1` and `fair: true` (enqueued by a queue that knows the type is fair, so each
 * job has its turn), against the same drain of jobs without keys, on a fresh database each; the
 * issue's target is ≥ 50% of the keyless rate. Each drain runs twice, alternating, and the best of
 * each is compared.
 */

import { defineJob } from "../../src/index.js";
import { fmtInt, round } from "../common.js";
import { noop, payloads, type Scenario, type ScenarioContext } from "./scenario.js";
import { drainEnqueued } from "./worker-drain.js";

export interface KeysDrainResult {
  jobs: number;
  keys: number;
  concurrency: number;
  /** The drain with `keyConcurrency: 1` and `fair: true`. */
  jobsPerSec: number;
  /** The same jobs without keys (and no key cap). */
  baselineJobsPerSec: number;
  /** jobsPerSec / baselineJobsPerSec. */
  ratio: number;
  /** Each job of both drains ran once and ended completed. */
  exactlyOnce: boolean;
  /** The keyed drain's type was fair (round-robin across keys). */
  fair: true;
}

/** The keyed drain's type: the no-op job, with the key rules the worker child gets too. */
const KEYED_OPTIONS = { keyConcurrency: 1, fair: true } as const;
const fairNoop = defineJob({ type: noop.type, handler: noop.handler, ...KEYED_OPTIONS });

const CONCURRENCY = 50;
/** Jobs per enqueueBatch call. */
const CHUNK = 5_000;

function keyedDrain(
  ctx: ScenarioContext,
  keys: number,
): Promise<{ jobsPerSec: number; exactlyOnce: boolean }> {
  const all = payloads(ctx.options.jobs);
  return drainEnqueued(
    ctx,
    keys > 0 ? "keys-drain" : "keys-drain-none",
    CONCURRENCY,
    async (q) => {
      if (keys > 0) q.register(fairNoop);
      for (let from = 0; from < all.length; from += CHUNK) {
        await q.enqueueBatch(
          all.slice(from, from + CHUNK).map((payload) => ({
            job: keys > 0 ? fairNoop : noop,
            payload,
            ...(keys > 0 ? { options: { key: `k${payload.i % keys}` } } : {}),
          })),
        );
      }
    },
    keys > 0 ? KEYED_OPTIONS : {},
  );
}

export const keysDrain: Scenario<"keys-drain"> = {
  name: "keys-drain",
  measures:
    "--jobs jobs over --jobs/20 keys with keyConcurrency 1 and fair, drained, as a share of the keyless drain",
  inDefaultRun: () => true,
  async run(ctx) {
    const keys = Math.max(1, Math.round(ctx.options.jobs / 20));
    // Alternated, best of 2 each: the first drain of a run also warms the machine (and the other
    // helpers' load on it varies), which otherwise favours whichever goes second.
    const runs: Array<{ jobsPerSec: number; exactlyOnce: boolean }>[] = [[], []];
    for (let round = 0; round < 2; round++) {
      runs[0]!.push(await keyedDrain(ctx, 0));
      runs[1]!.push(await keyedDrain(ctx, keys));
    }
    const best = (rs: Array<{ jobsPerSec: number; exactlyOnce: boolean }>) => ({
      jobsPerSec: Math.max(...rs.map((x) => x.jobsPerSec)),
      exactlyOnce: rs.every((x) => x.exactlyOnce),
    });
    const baseline = best(runs[0]!);
    const keyed = best(runs[1]!);
    const r: KeysDrainResult = {
      jobs: ctx.options.jobs,
      keys,
      concurrency: CONCURRENCY,
      jobsPerSec: keyed.jobsPerSec,
      baselineJobsPerSec: baseline.jobsPerSec,
      ratio: round(keyed.jobsPerSec / baseline.jobsPerSec, 3),
      exactlyOnce: keyed.exactlyOnce && baseline.exactlyOnce,
      fair: true,
    };
    ctx.log(
      `keys-drain: ${fmtInt(r.jobsPerSec)} jobs/s over ${fmtInt(keys)} keys (keyConcurrency 1, fair) vs ${fmtInt(r.baselineJobsPerSec)} without keys (×${r.ratio})`,
    );
    return r;
  },
};
