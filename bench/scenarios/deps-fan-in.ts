/**
 * Fan-in (issue 14): one job waiting on N others (`--jobs`, at most MAX_DEPENDENCIES: 10,000 by
 * default). The N are enqueued, then the join with `dependsOn` all N; one worker child drains
 * the N + 1 at concurrency 50. The join must start right after the last dependency's completion
 * is written (that write unblocks it, and the worker claims again after every outcome), not a
 * poll (1 s) later. Run at N and at N / 10: equal ms per edge at both sizes is the O(edges) check.
 */
import { MAX_DEPENDENCIES } from "../../src/index.js";
import { fmtInt, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, payloads, type Scenario, type ScenarioContext } from "./scenario.js";
import { drainIn } from "./worker-drain.js";

/** One size's figures. */
export interface FanInRun {
  /** Dependencies of the join (its edges). */
  edges: number;
  /** The join's enqueue: one write of all its edges. */
  joinEnqueueMs: number;
  /** The drain of the N + 1 jobs, from the worker's start to the join's completion. */
  drainMs: number;
  jobsPerSec: number;
  /**
   * From the last dependency's handler returning to the join's starting: that completion's write
   * (which unblocks the join), then one claim. A poll would add up to 1 s.
   */
  joinStartAfterMs: number;
  /** (join enqueue + drain) / edges. */
  msPerEdge: number;
  /** Each job ran once, the join last, and the store holds all N + 1 completed, none blocked. */
  exactlyOnce: boolean;
}

export interface DepsFanInResult extends FanInRun {
  concurrency: number;
  /** The same at a tenth of the size. */
  small: FanInRun;
  /** msPerEdge at N over msPerEdge at N / 10: about 1 when the cost is linear in the edges. */
  perEdgeRatio: number;
}

const CONCURRENCY = 50;

async function fanIn({ store, runtime: rt }: ScenarioContext, n: number): Promise<FanInRun> {
  const db = store.fresh("deps-fan-in");
  try {
    const { joinEnqueueMs, blocked } = await withQueue(db, async (q) => {
      const deps = await q.enqueueMany(noop, payloads(n));
      const t0 = now();
      const join = await q.enqueue(noop, { i: n }, { dependsOn: deps.map((d) => d.id) });
      return { joinEnqueueMs: now() - t0, blocked: join.state === "blocked" };
    });
    const done = await drainIn(store, db, n + 1, CONCURRENCY, rt, "drain", n + 1, n);
    const stats = await withQueue(db, (q) => q.stats());
    const joinStartAfterMs = done.joinStart! - done.lastDepDone!;
    const exactlyOnce =
      blocked &&
      done.calls === n + 1 &&
      done.distinct === n + 1 &&
      done.repeated === 0 &&
      joinStartAfterMs >= 0 &&
      stats.states.completed === n + 1 &&
      stats.states.blocked + stats.states.pending + stats.states.active === 0;
    return {
      edges: n,
      joinEnqueueMs: round(joinEnqueueMs, 1),
      drainMs: round(done.elapsedMs, 1),
      jobsPerSec: Math.round((n + 1) / (done.elapsedMs / 1000)),
      joinStartAfterMs: round(joinStartAfterMs, 2),
      msPerEdge: round((joinEnqueueMs + done.elapsedMs) / n, 4),
      exactlyOnce,
    };
  } finally {
    await db.dispose();
  }
}

export const depsFanIn: Scenario<"deps-fan-in"> = {
  name: "deps-fan-in",
  measures:
    "one job waiting on --jobs (≤ 10,000) jobs: drain rate, the join's start after the last completion, ms per edge",
  inDefaultRun: () => true,
  async run(ctx) {
    const n = Math.min(ctx.options.jobs, MAX_DEPENDENCIES);
    // The small one first: it also warms the bench process's own code.
    const small = await fanIn(ctx, Math.max(1, Math.round(n / 10)));
    const big = await fanIn(ctx, n);
    const r = {
      ...big,
      concurrency: CONCURRENCY,
      small,
      perEdgeRatio: round(big.msPerEdge / small.msPerEdge, 2),
    };
    ctx.log(
      `deps-fan-in: ${fmtInt(n)} edges, ${fmtInt(r.jobsPerSec)} jobs/s, join started ${r.joinStartAfterMs} ms after the last completion, ${r.msPerEdge} ms/edge (×${r.perEdgeRatio} of ${fmtInt(small.edges)} edges')`,
    );
    return r;
  },
};
