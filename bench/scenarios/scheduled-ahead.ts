/**
 * Jobs scheduled ahead do not slow the claims of ready ones: the drain beside `--backlog` jobs of
 * the drained type itself at a higher priority (1) scheduled an hour ahead, enqueued before the
 * drained jobs (priority 0), as a share of the same drain without them (beside-backlog.ts). Each
 * claim's walk of the type meets the scheduled jobs first in claim order; it must not read them
 * (a SQL store walks a type by priority band: queries/claim.sql, postgres/bands.ts; Redis keeps
 * them apart). Before the bands every claim read them all: beside 200,000, ~10 ms a claim.
 */
import { type BesideBacklogResult, backlogScenario } from "./beside-backlog.js";
import { noop, payloads } from "./scenario.js";

export type ScheduledAheadResult = BesideBacklogResult;

/** Numbered past any drain's jobs, so a worker that ran one would count it as a stray. */
const FIRST = 1_000_000_000;

export const scheduledAhead = backlogScenario({
  name: "scheduled-ahead",
  measures:
    "jobs/s of the drain with --backlog jobs of its own type at a higher priority scheduled an hour ahead, as a share of the drain without them",
  what: "scheduled jobs",
  enqueue: (q, n, from) =>
    q.enqueueMany(noop, payloads(n, FIRST + from), { priority: 1, delayMs: 3_600_000 }),
  untouched: (stats, waiting) => (stats.types[noop.type]?.pending ?? 0) === waiting,
});
