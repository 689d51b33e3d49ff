/**
 * A deep chain (issue 14): one `enqueueFlow` of N jobs (`--jobs`, at most 10,000: a flow's bound,
 * MAX_DEPENDENCIES), each waiting for the one before. Only the enqueue is timed: its cost must
 * follow the jobs, not the depth (PostgreSQL once inserted such a flow level by level, three
 * statements per level: 7.6 s for 10,000). Run at N and at N / 10: equal ms per level at both
 * sizes is the O(depth) check. Then the store must hold the head pending and the N − 1 others
 * blocked.
 */
import { type FlowNode, MAX_DEPENDENCIES } from "../../src/index.js";
import { fmtInt, now, round } from "../common.js";
import { withQueue } from "../stores.js";
import { noop, type Scenario, type ScenarioContext } from "./scenario.js";

/** One size's figures. */
export interface ChainRun {
  /** Jobs in the chain (its depth). */
  depth: number;
  /** The one enqueueFlow of the chain. */
  enqueueMs: number;
  /** enqueueMs / depth. */
  msPerLevel: number;
  /** Right after it: the head pending, every other job blocked on one. */
  storedRight: boolean;
}

export interface DepsChainResult extends ChainRun {
  /** The same at a tenth of the depth. */
  small: ChainRun;
  /** msPerLevel at N over msPerLevel at N / 10: about 1 when the cost is linear in the depth. */
  perLevelRatio: number;
}

function chain(n: number): FlowNode[] {
  return Array.from({ length: n }, (_, i) => ({
    ref: `n${i}`,
    job: noop,
    payload: { i },
    ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}),
  }));
}

async function deepChain({ store }: ScenarioContext, n: number): Promise<ChainRun> {
  const db = store.fresh("deps-chain");
  try {
    return await withQueue(db, async (q) => {
      // A flow of one first: the store's first write (and the code's first run) is not timed.
      await q.enqueueFlow(chain(1));
      const nodes = chain(n);
      const t0 = now();
      const flow = await q.enqueueFlow(nodes);
      const enqueueMs = now() - t0;
      const { states } = await q.stats();
      const head = flow.jobs.n0;
      const tail = flow.jobs[`n${n - 1}`];
      const storedRight =
        head?.state === "pending" &&
        (n === 1 || (tail?.state === "blocked" && tail.blockedBy === 1)) &&
        states.pending === 2 &&
        states.blocked === n - 1;
      return { depth: n, enqueueMs: round(enqueueMs, 1), msPerLevel: round(enqueueMs / n, 4), storedRight };
    });
  } finally {
    await db.dispose();
  }
}

export const depsChain: Scenario<"deps-chain"> = {
  name: "deps-chain",
  measures: "one enqueueFlow of a chain --jobs (≤ 10,000) deep: its time, ms per level",
  inDefaultRun: () => true,
  async run(ctx) {
    const n = Math.min(ctx.options.jobs, MAX_DEPENDENCIES);
    const small = await deepChain(ctx, Math.max(1, Math.round(n / 10)));
    const big = await deepChain(ctx, n);
    const r = { ...big, small, perLevelRatio: round(big.msPerLevel / small.msPerLevel, 2) };
    ctx.log(
      `deps-chain: a flow ${fmtInt(n)} deep enqueued in ${r.enqueueMs} ms (${r.msPerLevel} ms/level, ×${r.perLevelRatio} of ${fmtInt(small.depth)} deep), stored right: ${r.storedRight}`,
    );
    return r;
  },
};
