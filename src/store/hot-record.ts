import type { JobRecord, JobState } from "../job.js";
import { JOB_FIELD_NAMES } from "../job-fields.js";

/**
 * A hot-table row read as an array (SQLite's `raw` mode, pg's `rowMode: "array"`) made into a
 * record. Claims read rows this way: drivers build row objects property by property, which costs
 * about as much as the rest of the read, while this makes one fixed-shape object. The columns must
 * come in the order of the record's keys (`id, type, queue, state, payload, checkpoint, result,
 * priority, …, finishedAt, owner, dependsOn, blockedBy, onDependencyFailure`, the order of JOB_FIELDS in job-fields.ts, from which the SQL
 * stores derive their column lists); this module checks that order once, when it loads.
 */
export function hotRecord(r: unknown[]): JobRecord {
  return {
    id: r[0] as string,
    type: r[1] as string,
    queue: r[2] as string,
    state: r[3] as JobState,
    payload: r[4] as string,
    checkpoint: r[5] as string | null,
    result: null,
    priority: r[7] as number,
    weight: r[8] as number,
    runAt: r[9] as number,
    expiresAt: r[10] as number | null,
    attempt: r[11] as number,
    maxAttempts: r[12] as number,
    backoff: r[13] as string,
    retryQueue: r[14] as string | null,
    delivery: r[15] as JobRecord["delivery"],
    timeoutMs: r[16] as number | null,
    uniqueKey: r[17] as string | null,
    leaseExpiresAt: r[18] as number | null,
    workerId: r[19] as string | null,
    errors: r[20] as string,
    leaseExpirations: r[21] as number,
    createdAt: r[22] as number,
    startedAt: r[23] as number | null,
    finishedAt: null,
    owner: r[25] as string | null,
    dependsOn: r[26] as string | null,
    blockedBy: r[27] as number | null,
    onDependencyFailure: r[28] as JobRecord["onDependencyFailure"],
    key: r[29] as string | null,
    debounceKey: r[30] as string | null,
    snoozes: r[31] as number,
  };
}

/** The record's keys in column order, for the stores' checks of their column lists. */
export const HOT_RECORD_KEYS: readonly string[] = Object.keys(hotRecord([]));

// hotRecord reads columns by position: fail at load, loudly, if it and the table ever disagree.
if (HOT_RECORD_KEYS.join() !== JOB_FIELD_NAMES.join()) {
  throw new Error(`hotRecord does not read JOB_FIELDS in order: ${HOT_RECORD_KEYS} vs ${JOB_FIELD_NAMES}`);
}
