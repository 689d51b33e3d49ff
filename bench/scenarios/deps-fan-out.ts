/**
 * Fan-out (issue 14): N jobs (`--jobs`, at most 10,000 as in deps-fan-in) waiting on one root.
 * The root is leased from a queue of its own and completed here, in the bench process: that one
 * call is timed, and right after it the store must hold all N pending (unblocked in the
 * completion's own transaction / script), none blocked. Then a worker child drains the N. Run at N
 * and at N / 10: equal ms per edge at both sizes is the O(edges) check.
 */
import { MAX_DEPENDENCIES } from "../../src/index.js";
import { fmtInt, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario, type ScenarioContext } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

/** One size's figures. */
export interface FanOutRun {
  /** Jobs waiting on the root (its edges). */
  edges: number;
  /** The dependents' enqueue (one enqueueMany): the edges written. */
  enqueueMs: number;
  /** The root's completion: one call, which unblocks every dependent. */
  completeMs: number;
  /** completeMs / edges. */
  msPerEdge: number;
  /** Right after the completion: all N pending, none blocked. */
  unblockedInOneWrite: boolean;
  /** The worker child's drain of the N, after. */
  jobsPerSec: number;
  /** Each dependent ran once, and the store holds all N + 1 completed. */
  exactlyOnce: boolean;
}

export interface DepsFanOutResult extends FanOutRun {
  concurrency: number;
  /** The same at a tenth of the size. */
  small: FanOutRun;
  /** msPerEdge at N over msPerEdge at N / 10: about 1 (or less) when the cost is linear in the edges. */
  perEdgeRatio: number;
}

const CONCURRENCY = 50;
/** The root's queue: the drain's worker listens on "default" only, so it never claims the root. */
const ROOT_QUEUE = "deps-root";

async function fanOut({ store, runtime: rt }: ScenarioContext, n: number): Promise<FanOutRun> {
  const db = store.fresh("deps-fan-out");
  try {
    const write = await withQueue(db, async (q) => {
      const root = await q.enqueue(noop, { i: n }, { queue: ROOT_QUEUE });
      const t0 = now();
      const dependents = await q.enqueueMany(noop, payloads(n), { dependsOn: [root.id] });
      const enqueueMs = now() - t0;
      const [leased] = await q.lease({ queues: [ROOT_QUEUE], maintenance: false });
      if (leased?.id !== root.id) throw new Error("deps-fan-out: the root was not leased");
      const t1 = now();
      const ok = await q.complete(leased);
      const completeMs = now() - t1;
      const { states } = await q.stats();
      return {
        enqueueMs,
        completeMs,
        unblockedInOneWrite:
          ok &&
          dependents.every((d) => d.state === "blocked") &&
          states.blocked === 0 &&
          states.pending === n,
      };
    });
    const done = await drainIn(store, db, n, CONCURRENCY, rt, "drain", n);
    const stats = await withQueue(db, (q) => q.stats());
    const exactlyOnce =
      done.calls === n &&
      done.distinct === n &&
      done.repeated === 0 &&
      stats.states.completed === n + 1 &&
      stats.states.pending + stats.states.active === 0;
    return {
      edges: n,
      enqueueMs: round(write.enqueueMs, 1),
      completeMs: round(write.completeMs, 2),
      msPerEdge: round(write.completeMs / n, 5),
      unblockedInOneWrite: write.unblockedInOneWrite,
      jobsPerSec: Math.round(n / (done.elapsedMs / 1000)),
      exactlyOnce,
    };
  } finally {
    await db.dispose();
  }
}

export const depsFanOut: Scenario<"deps-fan-out"> = {
  name: "deps-fan-out",
  measures:
    "--jobs (≤ 10,000) jobs waiting on one: the time of the completion that unblocks them all, the drain after",
  inDefaultRun: () => true,
  async run(ctx) {
    const n = Math.min(ctx.options.jobs, MAX_DEPENDENCIES);
    const small = await fanOut(ctx, Math.max(1, Math.round(n / 10)));
    const big = await fanOut(ctx, n);
    const r = {
      ...big,
      concurrency: CONCURRENCY,
      small,
      perEdgeRatio: round(big.msPerEdge / small.msPerEdge, 2),
    };
    ctx.log(
      `deps-fan-out: the completion unblocking ${fmtInt(n)} took ${r.completeMs} ms (${r.msPerEdge} ms/edge, ×${r.perEdgeRatio} of ${fmtInt(small.edges)} edges'), all at once: ${r.unblockedInOneWrite}; drain after ${fmtInt(r.jobsPerSec)} jobs/s`,
    );
    return r;
  },
};
