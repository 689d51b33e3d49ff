/**
 * A job as a store takes it (a NewJob), for tests that write to a store directly. Every field a
 * test does not care about has one value here, so a new job field is added in one place.
 */
import type { NewJob, ScheduleRecord } from "../../src/store/store.js";

export function newJob(fields: Pick<NewJob, "id" | "runAt"> & Partial<NewJob>): NewJob {
  return {
    type: "t",
    queue: "default",
    payload: "{}",
    priority: 0,
    weight: 1,
    expiresAt: null,
    maxAttempts: 5,
    backoff: '{"type":"fixed","delayMs":0}',
    retryQueue: null,
    delivery: "at_least_once",
    timeoutMs: null,
    uniqueKey: null,
    owner: null,
    dependsOn: null,
    onDependencyFailure: "cancel",
    key: null,
    debounceKey: null,
    ...fields,
  };
}

/**
 * A schedule as a store keeps it, every 5 minutes from `start`, of type "report", for tests that
 * write one directly: stored options no enqueue accepts (as an older errand or a hand may leave).
 */
export function scheduleRecord(
  fields: Pick<ScheduleRecord, "name" | "options" | "createdAt"> & Partial<ScheduleRecord>,
): ScheduleRecord {
  const start = fields.createdAt;
  return {
    cron: "*/5 * * * *",
    timezone: "UTC",
    type: "report",
    payload: "{}",
    nextRunAt: start + 5 * 60_000,
    updatedAt: start,
    ...fields,
  };
}
