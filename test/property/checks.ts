/**
 * What the hostile-input properties assert about the store: a snapshot of everything observable,
 * to show that a refused call changed nothing, and the shape every stored job must keep, to show
 * that an accepted one stored something every store can hold and give back.
 */
import { expect } from "vitest";
import { JOB_STATES, type Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import { JOB_ID_PATTERN, NAME_PATTERN } from "../../src/validation.js";
import { MAX_DATE_MS, MAX_TIMER_MS, prototypeKeys, RESERVED_NAMES } from "./hostile.js";

/**
 * Everything a caller can observe about a store, minus what moves with the clock alone
 * (`oldestPendingAgeMs`, `scheduled`): jobs, counts, paused queues, schedules and job types.
 */
export async function storeSnapshot(queue: Queue): Promise<unknown> {
  const [page, stats, schedules, jobTypes] = await Promise.all([
    queue.list({ limit: 1000 }),
    queue.stats(),
    queue.schedules(),
    queue.store.listJobTypes(),
  ]);
  return {
    jobs: page.jobs,
    more: page.nextCursor !== null,
    states: stats.states,
    retrying: stats.retrying,
    queues: stats.queues,
    types: stats.types,
    paused: stats.paused,
    schedules,
    jobTypes,
  };
}

/** True when `s` holds a lone surrogate (a half of a pair without its other half). */
export function hasLoneSurrogate(s: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

/** Text every store holds as given: no NUL, no lone surrogate. */
export function isStorableText(s: unknown): boolean {
  return typeof s === "string" && !s.includes("\u0000") && !hasLoneSurrogate(s);
}

function isName(s: unknown): boolean {
  return typeof s === "string" && NAME_PATTERN.test(s) && !(RESERVED_NAMES as readonly string[]).includes(s);
}

function checkDate(where: string, field: string, d: unknown, nullable: boolean): void {
  if (d === null && nullable) return;
  expect(d, `${where}: ${field} is not a Date`).toBeInstanceOf(Date);
  const ms = (d as Date).getTime();
  expect(Number.isFinite(ms), `${where}: ${field} is an invalid Date`).toBe(true);
  expect(ms, `${where}: ${field} is past the end of year 9999`).toBeLessThanOrEqual(MAX_DATE_MS);
}

function checkInt(
  where: string,
  field: string,
  n: unknown,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): void {
  expect(Number.isSafeInteger(n), `${where}: ${field} = ${String(n)} is not a safe integer`).toBe(true);
  expect(n as number, `${where}: ${field} below ${min}`).toBeGreaterThanOrEqual(min);
  expect(n as number, `${where}: ${field} above ${max}`).toBeLessThanOrEqual(max);
}

/**
 * The shape a stored job keeps on every store: names and ids that match their patterns (and are
 * not reserved), valid dates no later than year 9999, safe integers in range, a timeout a timer
 * can hold, and text without NUL or lone surrogates.
 */
export function assertWellFormedJob(job: Job, where: string): void {
  expect(typeof job.id === "string" && JOB_ID_PATTERN.test(job.id), `${where}: id ${job.id}`).toBe(true);
  expect(isName(job.type), `${where}: type ${JSON.stringify(job.type)}`).toBe(true);
  expect(isName(job.queue), `${where}: queue ${JSON.stringify(job.queue)}`).toBe(true);
  expect(JOB_STATES, `${where}: state`).toContain(job.state);
  checkDate(where, "runAt", job.runAt, false);
  checkDate(where, "createdAt", job.createdAt, false);
  checkDate(where, "expiresAt", job.expiresAt, true);
  checkDate(where, "leaseExpiresAt", job.leaseExpiresAt, true);
  checkDate(where, "startedAt", job.startedAt, true);
  checkDate(where, "finishedAt", job.finishedAt, true);
  checkInt(where, "priority", job.priority, Number.MIN_SAFE_INTEGER);
  checkInt(where, "weight", job.weight, 1);
  checkInt(where, "attempt", job.attempt, 0);
  checkInt(where, "maxAttempts", job.maxAttempts, 1);
  if (job.timeoutMs !== null) checkInt(where, "timeoutMs", job.timeoutMs, 0, MAX_TIMER_MS);
  for (const [field, value] of [
    ["uniqueKey", job.uniqueKey],
    ["workerId", job.workerId],
  ] as const) {
    if (value !== null)
      expect(isStorableText(value), `${where}: ${field} ${JSON.stringify(value)}`).toBe(true);
  }
  if (job.owner !== null)
    expect(isName(job.owner), `${where}: owner ${JSON.stringify(job.owner)}`).toBe(true);
  if (job.retryQueue !== null) expect(isName(job.retryQueue), `${where}: retryQueue`).toBe(true);
  expect(["at_least_once", "at_most_once"], `${where}: delivery`).toContain(job.delivery);
  expect(Array.isArray(job.errors), `${where}: errors`).toBe(true);
  for (const e of job.errors) {
    expect(typeof e.message, `${where}: error message`).toBe("string");
    checkInt(where, "error attempt", e.attempt, 0);
  }
}

/** JSON text of a value as a store gives it back (`undefined` as null, like a missing result). */
export function jsonOf(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value) ?? "null";
}

/**
 * Asserts that `stored` (read back from the store) is `given` (what the call returned): every
 * field the same, JSON fields compared as JSON text.
 */
export function assertSameJob(given: Job, stored: Job | null, where: string): void {
  expect(stored, `${where}: the job is not in the store`).not.toBeNull();
  const { duplicate: _d, ...a } = given as Job & { duplicate?: boolean };
  const b = stored!;
  for (const key of Object.keys(b) as Array<keyof Job>) {
    const x = a[key];
    const y = b[key];
    if (
      key === "payload" ||
      key === "result" ||
      key === "checkpoint" ||
      key === "errors" ||
      key === "dependsOn"
    ) {
      expect(jsonOf(y), `${where}: ${key} did not round-trip`).toBe(jsonOf(x));
    } else if (x instanceof Date || y instanceof Date) {
      expect((y as Date | null)?.getTime() ?? null, `${where}: ${key} did not round-trip`).toBe(
        (x as Date | null)?.getTime() ?? null,
      );
    } else if (key === "backoff") {
      expect(y, `${where}: backoff`).toEqual(x);
    } else {
      expect(Object.is(x, y), `${where}: ${key} was ${String(x)}, stored ${String(y)}`).toBe(true);
    }
  }
}

/** Asserts that nothing was added to `Object.prototype` since `before`. */
export function assertPrototypeClean(before: string[], where: string): void {
  expect(prototypeKeys(), `${where}: Object.prototype was polluted`).toEqual(before);
}
