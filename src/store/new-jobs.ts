/**
 * The two forms in which {@link Store.enqueueMany} receives its jobs: one {@link NewJob} per job,
 * or {@link SharedJobs}, the ids and payloads of jobs that share every other field beside that one
 * shared job.
 * @module
 */
import { standsAlone } from "../job-fields.js";
import type { NewJob, SharedJobs } from "./store.js";

/** Whether `jobs` is the shared form. */
export function isShared(jobs: readonly NewJob[] | SharedJobs): jobs is SharedJobs {
  return !Array.isArray(jobs);
}

/**
 * `jobs` when it is the shared form and its jobs stand alone (no unique key, dependencies or
 * debounce key: what planMany makes it for), the form each store's bulk path takes; else null.
 */
export function sharedAlone(jobs: readonly NewJob[] | SharedJobs): SharedJobs | null {
  return isShared(jobs) && standsAlone(jobs.shared) ? jobs : null;
}

/** How many jobs `jobs` holds, in either form. */
export function jobCount(jobs: readonly NewJob[] | SharedJobs): number {
  return isShared(jobs) ? jobs.ids.length : jobs.length;
}

/**
 * `jobs` as one NewJob per job, for a store's general path (a batch it cannot take in the shared
 * form: inside a caller's transaction, after a conflict, a fair type's turns).
 */
export function expandJobs(jobs: NewJob[] | SharedJobs): NewJob[] {
  if (!isShared(jobs)) return jobs;
  const { shared, ids, payloads } = jobs;
  const out: NewJob[] = new Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = withPayload(shared, ids[i]!, payloads[i]!);
  return out;
}

/**
 * A resolved job with its own id and payload; a literal, not a spread: this runs per bulk job.
 * test/unit/job-fields.test.ts checks that its keys are NEW_JOB_FIELDS (job-fields.ts).
 */
export function withPayload(base: NewJob, id: string, payload: string): NewJob {
  return {
    id,
    type: base.type,
    queue: base.queue,
    payload,
    priority: base.priority,
    weight: base.weight,
    runAt: base.runAt,
    expiresAt: base.expiresAt,
    maxAttempts: base.maxAttempts,
    backoff: base.backoff,
    retryQueue: base.retryQueue,
    delivery: base.delivery,
    timeoutMs: base.timeoutMs,
    uniqueKey: base.uniqueKey,
    owner: base.owner,
    dependsOn: base.dependsOn,
    onDependencyFailure: base.onDependencyFailure,
    key: base.key,
    debounceKey: base.debounceKey,
  };
}
