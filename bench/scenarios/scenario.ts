/**
 * What every scenario is: a name, what it measures, and `run(ctx)` → its result, which goes into
 * the report under the scenario's name. index.ts lists them in the order a run takes them.
 */
import { defineJob } from "../../src/index.js";
import type { Options } from "../options.js";
import type { Runtime } from "../runtime.js";
import type { BenchStore } from "../stores.js";
import type { DepsChainResult } from "./deps-chain.js";
import type { DepsFanInResult } from "./deps-fan-in.js";
import type { DepsFanOutResult } from "./deps-fan-out.js";
import type { DrainResult } from "./drain.js";
import type { DrainBacklogResult } from "./drain-backlog.js";
import type { DrainBlockedResult } from "./drain-blocked.js";
import type { DrainFailResult } from "./drain-fail.js";
import type { DrainScaleResult } from "./drain-scale.js";
import type { EnqueueBulkResult } from "./enqueue-bulk.js";
import type { FairStarvationResult } from "./fair-starvation.js";
import type { HttpEnqueueResult } from "./http/enqueue.js";
import type { HttpIdleResult } from "./http/idle.js";
import type { HttpRemoteWorkerResult } from "./http/remote-worker.js";
import type { HttpWakeResult } from "./http/wake.js";
import type { HttpWorkResult } from "./http/work.js";
import type { KeysBacklogResult } from "./keys-backlog.js";
import type { KeysDrainResult } from "./keys-drain.js";
import type { LatencyResult } from "./latency.js";
import type { MemoryResult } from "./memory.js";
import type { RateHeldResult } from "./rate-held.js";
import type { RateLimitResult } from "./rate-limit.js";
import type { ScheduledAheadResult } from "./scheduled-ahead.js";
import type { StatsHeldResult } from "./stats-held.js";

/** Progress for a human, on stderr (stdout is the report's). */
export type Log = (line: string) => void;

/** The `results` of the JSON report: each scenario's result under its name, for those that ran. */
export interface Results {
  "enqueue-bulk"?: EnqueueBulkResult;
  drain?: DrainResult;
  "drain-fail"?: DrainFailResult;
  latency?: LatencyResult;
  "drain-backlog"?: DrainBacklogResult;
  "drain-scale"?: DrainScaleResult;
  "deps-fan-in"?: DepsFanInResult;
  "deps-fan-out"?: DepsFanOutResult;
  "deps-chain"?: DepsChainResult;
  "drain-blocked"?: DrainBlockedResult;
  "keys-drain"?: KeysDrainResult;
  "keys-backlog"?: KeysBacklogResult;
  "fair-starvation"?: FairStarvationResult;
  "rate-limit"?: RateLimitResult;
  "stats-held"?: StatsHeldResult;
  "rate-held"?: RateHeldResult;
  "scheduled-ahead"?: ScheduledAheadResult;
  memory?: MemoryResult;
  "http-enqueue"?: HttpEnqueueResult;
  "http-work"?: HttpWorkResult;
  "http-remote-worker"?: HttpRemoteWorkerResult;
  "http-wake"?: HttpWakeResult;
  "http-idle"?: HttpIdleResult;
}

/** What a scenario runs with. */
export interface ScenarioContext {
  store: BenchStore;
  options: Options;
  runtime: Runtime;
  log: Log;
  /** What this run has measured so far (the baselines in {@link Scenario.needs} among it). */
  results: Results;
}

/** One measurement: `npm run bench -- --scenario <name>` runs it alone. */
export interface Scenario<K extends keyof Results = keyof Results> {
  readonly name: K;
  /** What it measures, in a line; the file's doc says how. */
  readonly measures: string;
  /** `--scenario <group>` runs every scenario of the group (`http`). */
  readonly group?: string;
  /** Scenarios it is compared with: each runs first, in this run, unless it already has. */
  readonly needs?: readonly (keyof Results)[];
  /** Whether it can run on this store at all, even when asked for; by default it can. */
  runsOn?(store: BenchStore): boolean;
  /** Whether a run without `--scenario` includes it. */
  inDefaultRun(store: BenchStore, o: Options): boolean;
  run(ctx: ScenarioContext): Promise<NonNullable<Results[K]>>;
}

/** The job every scenario runs: it does nothing, so the figures are errand's and the store's. */
export const noop = defineJob({ type: "noop", handler: async () => {} });
/** A worker child is killed past this. */
export const CHILD_DEADLINE_MS = 300_000;
/** `n` payloads `{ i }` from `from` on: the worker children count deliveries by `i`. */
export const payloads = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ i: from + i }));
