/**
 * Busy keys (session 33): `--jobs` jobs over 100 keys, enqueued key by key (so each key's backlog
 * waits in one run of the claim order, ahead of the keys after it), drained by one worker child at
 * concurrency 50 under `keyConcurrency: 1`, then under `ordered`, on a fresh database each. A
 * claim that read a busy key's waiting jobs one by one paid that at every claim (20,000 jobs took
 * minutes on PostgreSQL); parked (SQLite and Redis since session 33, PostgreSQL since 34) they are
 * read once.
 */

import { fmtInt } from "../common.js";
import { noop, payloads, type Scenario, type ScenarioContext } from "./scenario.js";
import { drainEnqueued } from "./worker-drain.js";

export interface KeysBacklogResult {
  jobs: number;
  keys: number;
  concurrency: number;
  /** The drain under `keyConcurrency: 1`. */
  keyConcurrencyJobsPerSec: number;
  /** The drain under `ordered`. */
  orderedJobsPerSec: number;
  /** Each job of both drains ran once and ended completed. */
  exactlyOnce: boolean;
}

const KEYS = 100;
const CONCURRENCY = 50;

function backlogDrain(
  ctx: ScenarioContext,
  rule: { keyConcurrency: 1 } | { ordered: true },
): Promise<{ jobsPerSec: number; exactlyOnce: boolean }> {
  const all = payloads(ctx.options.jobs);
  const perKey = Math.ceil(all.length / KEYS);
  return drainEnqueued(
    ctx,
    "keys-backlog",
    CONCURRENCY,
    async (q) => {
      for (let k = 0; k * perKey < all.length; k++) {
        await q.enqueueMany(noop, all.slice(k * perKey, (k + 1) * perKey), { key: `k${k}` });
      }
    },
    rule,
  );
}

export const keysBacklog: Scenario<"keys-backlog"> = {
  name: "keys-backlog",
  measures: "--jobs jobs over 100 keys enqueued key by key, drained under keyConcurrency 1 and under ordered",
  inDefaultRun: () => true,
  async run(ctx) {
    const kc = await backlogDrain(ctx, { keyConcurrency: 1 });
    const ordered = await backlogDrain(ctx, { ordered: true });
    const r: KeysBacklogResult = {
      jobs: ctx.options.jobs,
      keys: KEYS,
      concurrency: CONCURRENCY,
      keyConcurrencyJobsPerSec: kc.jobsPerSec,
      orderedJobsPerSec: ordered.jobsPerSec,
      exactlyOnce: kc.exactlyOnce && ordered.exactlyOnce,
    };
    ctx.log(
      `keys-backlog: ${fmtInt(r.keyConcurrencyJobsPerSec)} jobs/s under keyConcurrency 1, ${fmtInt(r.orderedJobsPerSec)} under ordered (${fmtInt(KEYS)} keys enqueued key by key)`,
    );
    return r;
  },
};
