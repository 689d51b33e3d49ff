import { nextCronTick } from "../cron.js";
import { ErrandError } from "../errors.js";
import type { StoreDoor } from "../store/instrument.js";
import type { NewJob, ScheduleRecord } from "../store/store.js";
import { inChunks } from "./chunks.js";

/**
 * Cron firing: each schedule whose tick came due enqueues that tick's job (id
 * `schedule:<name>:<tick ms>`) and moves to its next future tick, in one compare-and-set, so a
 * tick fires exactly once however many processes fire schedules. Missed ticks are not caught up.
 * A tick whose job is not stored (its id or unique key taken, its debounce key held: a schedule
 * with `options.uniqueKey` so skips a tick while the last one's job still waits or runs) moves
 * the schedule on all the same. A tick whose stored options make no job now (an expiry or
 * debounce delay past the latest date a store holds, options an older errand wrote) is reported
 * to `onError` and skipped: the schedule moves on without a job, rather than stay due and fail at
 * every sweep. A schedule that cannot fire at all (no next tick; the store failed) is reported and
 * the others fire. `limit` due schedules at a time, until a chunk comes back short, as the other
 * units of a sweep; a chunk in which some schedule could not fire ends the pass (that schedule
 * stays due and would come back at the head of every chunk).
 * Returns how many ticks enqueued a job.
 * @param plan - the job a schedule's stored type and options resolve to now.
 */
export async function fireDueSchedules(
  door: StoreDoor,
  plan: (schedule: ScheduleRecord, now: number) => NewJob,
  now: number,
  limit: number,
  onError: (error: unknown) => void,
): Promise<number> {
  return inChunks(async () => {
    const due = await door.dueSchedules({ now, limit });
    let fired = 0;
    let failed = false;
    for (const s of due) {
      try {
        const nextRunAt = nextCronTick(s.cron, s.timezone, Math.max(now, s.nextRunAt));
        let job: NewJob | null = null;
        try {
          job = { ...plan(s, now), id: `schedule:${s.name}:${s.nextRunAt}`, payload: s.payload };
        } catch (error) {
          if (!(error instanceof ErrandError)) throw error;
          onError(skipped(s, error));
        }
        const params = { name: s.name, now, expectedRunAt: s.nextRunAt, nextRunAt, job };
        try {
          if (await door.fireSchedule(params, JSON.parse(s.payload))) fired++;
        } catch (error) {
          // The store refused the tick's job (its debounce key held by another type's or owner's job), not
          // failed: nothing was written, and the schedule moves on without it.
          if (job === null || !refusesJob(error)) throw error;
          onError(skipped(s, error));
          await door.fireSchedule({ ...params, job: null }, null);
        }
      } catch (error) {
        failed = true;
        onError(error);
      }
    }
    return { done: fired, more: due.length === limit && !failed };
  });
}

/** Whether a store's error refuses the job it was given, rather than tells of a fault. */
function refusesJob(error: unknown): error is ErrandError {
  return error instanceof ErrandError && !STORE_FAULTS.has(error.code);
}

const STORE_FAULTS: ReadonlySet<string> = new Set(["STORE_ERROR", "CLOSED", "UNAVAILABLE", "INTERNAL"]);

/** Why a schedule's tick stored no job: the refusal of its job, the schedule and tick named. */
function skipped(s: ScheduleRecord, error: ErrandError): ErrandError {
  return new ErrandError(
    error.code,
    `schedule ${JSON.stringify(s.name)}: its tick at ${new Date(s.nextRunAt).toISOString()} was skipped, as its options make no job it may store: ${error.message}`,
    { cause: error, details: { schedule: s.name, tick: s.nextRunAt } },
  );
}
