/**
 * Schedule planning: a recurring job's options checked and resolved into the record a store keeps,
 * everything validated now rather than at the first tick (3 a.m.).
 * @module
 */
import { canonicalTimezone, checkTimezone, nextCronTick } from "./cron.js";
import { type AnyJobDefinition, validatePayload } from "./define-job.js";
import { jobTarget } from "./enqueue-plan.js";
import { ErrandError } from "./errors.js";
import { checkKnownKeys } from "./known-keys.js";
import type { EnqueueOptions, Schedule, ScheduleOptions } from "./queue-options.js";
import type { NewJob, ScheduleRecord } from "./store/store.js";
import { checkScheduleName, describe, toJsonText } from "./validation.js";

/** What {@link planSchedule} needs of the Queue. */
export interface ScheduleHost {
  definition(type: string): AnyJobDefinition | undefined;
  /** Resolves (and so validates) the enqueue options of the tick at `at`. */
  plan(type: string, def: AnyJobDefinition | undefined, options: EnqueueOptions, at: number): NewJob;
  existing(name: string): Promise<ScheduleRecord | null>;
  maxPayloadBytes: number;
}

/**
 * The record for a new or replaced schedule. A replace that keeps the cron and zone keeps the
 * stored next tick, so redeploying the same schedule neither skips nor repeats one.
 * @throws ErrandError `INVALID_SCHEDULE_NAME`, `INVALID_CRON`, `INVALID_TIMEZONE`, `INVALID_PAYLOAD`,
 *   `INVALID_TYPE_NAME`, `INVALID_OPTION` (also for a missing `job`)
 */
export async function planSchedule<P>(
  name: string,
  options: ScheduleOptions<P>,
  now: number,
  host: ScheduleHost,
): Promise<ScheduleRecord> {
  checkKnownKeys("schedule", options, new Set(["cron", "timezone", "job", "payload", "options"]));
  checkScheduleName(name);
  const timezone = checkTimezone(options.timezone ?? "UTC");
  const nextRunAt = nextCronTick(options.cron, timezone, now);
  const { type, def } = jobTarget("schedule", options.job, host.definition);
  const given: unknown = options.options ?? {};
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new ErrandError("INVALID_OPTION", `schedule: options must be an object, got ${describe(given)}`);
  }
  const jobOptions = { ...given } as EnqueueOptions;
  if ("id" in jobOptions || "delayMs" in jobOptions || "runAt" in jobOptions || "db" in jobOptions) {
    throw new ErrandError("INVALID_OPTION", "schedule: options may not set id, delayMs, runAt or db");
  }
  // One fixed instant for every tick: the ticks after it would make jobs expired at once.
  if ("expiresAt" in jobOptions) {
    throw new ErrandError(
      "INVALID_OPTION",
      "schedule: options may not set expiresAt (one instant for every tick); give expiresInMs",
    );
  }
  // Every tick's job would wait on the same fixed jobs, and once retention prunes them each tick
  // fails to enqueue (DEPENDENCY_NOT_FOUND) and the schedule never moves on.
  if ("dependsOn" in jobOptions) {
    throw new ErrandError(
      "INVALID_OPTION",
      "schedule: options may not set dependsOn (a recurring job cannot wait on fixed jobs)",
    );
  }
  if (typeof jobOptions.backoff === "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      "schedule: a function backoff cannot be stored; set it on the job type",
    );
  }
  const value = def ? await validatePayload(def, options.payload) : options.payload;
  const existing = await host.existing(name);
  // The stored next tick is kept for the same cron in the same zone (however spelled), unless it
  // lies past the cron's next tick from now: the clock was ahead when it was stored and has been
  // set back since, and keeping it would leave the schedule silent until the clock catches up.
  const firstRunAt =
    existing &&
    existing.cron === options.cron &&
    sameZone(existing.timezone, timezone) &&
    existing.nextRunAt <= nextRunAt
      ? existing.nextRunAt
      : nextRunAt;
  // Validates the options now, not at 3 a.m., and as of the first tick: a delay that takes the
  // tick's job past the latest date a store holds is refused here, not skipped then.
  host.plan(type, def, jobOptions, Math.max(now, firstRunAt));
  const record: ScheduleRecord = {
    name,
    cron: options.cron,
    timezone,
    type,
    payload: toJsonText("payload", value, host.maxPayloadBytes),
    options: toJsonText("options", jobOptions),
    nextRunAt: firstRunAt,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
  };
  return record;
}

/** Whether two zone names name one zone; a stored name this runtime cannot read names none. */
function sameZone(stored: string, given: string): boolean {
  if (stored === given) return true;
  try {
    return canonicalTimezone(stored) === canonicalTimezone(given);
  } catch {
    return false;
  }
}

/** A stored schedule as the API shows it. */
export function toSchedule(r: ScheduleRecord): Schedule {
  return {
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    type: r.type,
    payload: JSON.parse(r.payload),
    options: JSON.parse(r.options),
    nextRunAt: new Date(r.nextRunAt),
  };
}
