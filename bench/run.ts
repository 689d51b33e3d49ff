/**
 * `npm run bench [-- options]`: throughput, latency and memory of errand on one store.
 *
 *   --store sqlite        the store to measure: sqlite, postgres or redis (the local server), or a
 *                         postgres:// or redis:// URL; each scenario on a fresh file, schema or
 *                         key prefix
 *   --scenario <name>     run one scenario: enqueue-bulk, drain, latency, drain-backlog, memory
 *                         (memory: the server's memory per waiting 100-byte job; Redis only)
 *                         drain-scale: the 20k drain by 4 worker processes at once vs one, cold
 *                         and with every process warmed up first (run by default where the store
 *                         has a scale-out target: postgres)
 *                         drain-fail: the 20k drain with every job throwing a NonRetryableError
 *                         (the failure path: each job goes to dead); only when asked for
 *                         deps-fan-in: one job waiting on --jobs (at most 10,000) jobs, drained
 *                         by one worker: its start after the last dependency's end, ms per edge
 *                         (and at a tenth of the size: the O(edges) check)
 *                         deps-fan-out: --jobs (at most 10,000) jobs waiting on one: the time of
 *                         the one completion that unblocks them all, and the drain after
 *                         deps-chain: one enqueueFlow of a chain --jobs (at most 10,000) deep:
 *                         its time and ms per level (and at a tenth of the depth: the O(depth)
 *                         check)
 *                         keys-drain: the 20k drain over 1,000 keys with keyConcurrency 1 and
 *                         fair, as a share of the same drain without keys
 *                         keys-backlog: --jobs over 100 keys enqueued key by key, drained under
 *                         keyConcurrency 1 and under ordered
 *                         fair-starvation: 10,000 jobs of key A enqueued, then 10 of key B, one
 *                         claimer of concurrency 5: A's starts before B's last (fair and not)
 *                         rate-limit: 4 worker processes on a type limited to 100/s for
 *                         --seconds: the most starts in any 1 s window, the mean rate
 *                         stats-held (not in the default run): stats() with and without the
 *                         held-back counts over --jobs / 10 and --jobs ready keyed jobs
 *                         drain-blocked: the 20k drain with --backlog blocked jobs in the store
 *                         (100,000 at most with --quick), as a share of the drain's rate
 *                         rate-held: the 20k drain with --backlog jobs of a type held back by its
 *                         rate limit waiting ahead of it (100,000 at most with --quick), as a
 *                         share of the same drain without them (medians of 3 alternated rounds)
 *                         scheduled-ahead: the same with --backlog jobs of the drained type at a
 *                         higher priority scheduled an hour ahead
 *   --jobs N              jobs per throughput scenario (default 20000)
 *   --backlog N           backlog size for drain-backlog, drain-blocked, rate-held and
 *                         scheduled-ahead (default 1000000)
 *   --latency-jobs N      jobs in the latency scenario (default 300)
 *   --scenario http       issue 5's HTTP server figures (SQLite; one server child per scenario;
 *                         not in the default run): http-enqueue, http-work, http-remote-worker,
 *                         http-wake, http-idle
 *   --http-loops N        concurrent lease → report loops in http-work (default 4)
 *   --seconds N           how long rate-limit runs (default 60; 10 with --quick)
 *   --quick               skip drain-backlog, drain-blocked, rate-held and scheduled-ahead (asked
 *                         for, the last three run with a backlog of at most 100,000)
 *   --compiled            run worker processes on a compiled build (tsc, plain node) instead of
 *                         under tsx; tsx alone adds ~30 MB to a process's RSS
 *   --json                print one JSON object to stdout instead of a table
 *
 * ERRAND_BENCH_V8="--trace-gc-nvp …" passes V8 flags to the worker and server children only (for
 * diagnosis: NODE_OPTIONS refuses most V8 flags).
 *
 * This file only runs a bench: options.ts parses the options, stores.ts makes the fresh databases,
 * scenarios/ holds one file per scenario (index.ts lists them in the order a run takes them),
 * cpu.ts splits a drain's CPU time, targets.ts holds the targets, report.ts prints the JSON or
 * the table. The worker and server processes are worker-child.mjs and server-child.mjs.
 */
import { parseArgs } from "./options.js";
import { buildReport, printReport } from "./report.js";
import { runtime } from "./runtime.js";
import {
  type Log,
  type Results,
  SCENARIO_CHOICES,
  SCENARIOS,
  type Scenario,
  type ScenarioContext,
} from "./scenarios/index.js";
import { benchStore } from "./stores.js";

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2), SCENARIO_CHOICES);
  const store = benchStore(o.store);
  const log: Log = (line) => console.error(`[bench] ${line}`);
  const wanted = (s: Scenario) => {
    if (s.runsOn && !s.runsOn(store)) return false;
    if (o.scenario !== null) return o.scenario === s.name || o.scenario === s.group;
    return s.inDefaultRun(store, o);
  };
  const ctx: ScenarioContext = { store, options: o, runtime: runtime(o, log), log, results: {} };
  for (const s of SCENARIOS) if (wanted(s)) await run(s, ctx);
  await store.close?.();
  const report = buildReport(store, ctx.runtime, ctx.results);
  if (o.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else printReport(report);
}

/** Runs `s` into `ctx.results`, after what it {@link Scenario.needs} unless this run has it already. */
async function run<K extends keyof Results>(s: Scenario<K>, ctx: ScenarioContext): Promise<void> {
  for (const name of s.needs ?? []) {
    if (ctx.results[name] === undefined) await run(SCENARIOS.find((x) => x.name === name)!, ctx);
  }
  ctx.results[s.name] = await s.run(ctx);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
