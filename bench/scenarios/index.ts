/** Every scenario, in the order a run takes them (the order matters: see the notes inline). */
import { depsChain } from "./deps-chain.js";
import { depsFanIn } from "./deps-fan-in.js";
import { depsFanOut } from "./deps-fan-out.js";
import { drain } from "./drain.js";
import { drainBacklog } from "./drain-backlog.js";
import { drainBlocked } from "./drain-blocked.js";
import { drainFail } from "./drain-fail.js";
import { drainScale } from "./drain-scale.js";
import { enqueueBulk } from "./enqueue-bulk.js";
import { fairStarvation } from "./fair-starvation.js";
import { httpEnqueue } from "./http/enqueue.js";
import { httpIdle } from "./http/idle.js";
import { httpRemoteWorker } from "./http/remote-worker.js";
import { httpWake } from "./http/wake.js";
import { httpWork } from "./http/work.js";
import { keysBacklog } from "./keys-backlog.js";
import { keysDrain } from "./keys-drain.js";
import { latency } from "./latency.js";
import { memory } from "./memory.js";
import { rateHeld } from "./rate-held.js";
import { rateLimit } from "./rate-limit.js";
import type { Scenario } from "./scenario.js";
import { scheduledAhead } from "./scheduled-ahead.js";
import { statsHeld } from "./stats-held.js";

export type { Log, Results, Scenario, ScenarioContext } from "./scenario.js";

export const SCENARIOS: readonly Scenario[] = [
  // First: after the backlog scenario, the server's key table keeps its size for a while, and the
  // next keys fill it without growing it, so the reading would come out too low.
  memory,
  enqueueBulk,
  drain,
  drainFail,
  latency,
  // Issue 14's dependencies; drain-blocked, with its million jobs, goes with the backlog below.
  depsFanIn,
  depsFanOut,
  depsChain,
  // Issue 15's keys and rate limits.
  keysDrain,
  keysBacklog,
  fairStarvation,
  rateLimit,
  statsHeld,
  // Before the backlog: a million-row table just dropped keeps the server busy for a while.
  drainScale,
  drainBacklog,
  drainBlocked,
  rateHeld,
  scheduledAhead,
  // Issue 5's HTTP server figures: only when asked for (`--scenario http` runs them all).
  httpEnqueue,
  httpWork,
  httpRemoteWorker,
  httpWake,
  httpIdle,
];

/** What `--scenario` accepts: every scenario's name, and each group's just before its first member. */
export const SCENARIO_CHOICES: readonly string[] = SCENARIOS.flatMap((s, i) =>
  s.group !== undefined && SCENARIOS.findIndex((x) => x.group === s.group) === i
    ? [s.group, s.name]
    : [s.name],
);
