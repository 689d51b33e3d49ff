/**
 * How a SQLite claim reads a pending job: the packed row of store/packed-row.ts. Reading a pending
 * job as its record's 32 columns cost ~41,000 instructions a row in better-sqlite3 (a property
 * store through V8's API per cell), most of a claim; the {@link PENDING_CORE} columns and `rest`
 * cost a third of that. The claim knows the rest: the queue is the one it walks, and a pending job
 * has no result, no finish and no unfinished dependencies.
 * @module
 */
import type { JobRecord } from "../../job.js";
import { JOB_FIELDS, wrapList } from "../../job-fields.js";
import {
  checkDecoder,
  DEFAULT_BACKOFF_TEXT,
  restColumn,
  restFields,
  restInitials,
  sqlLiteral,
} from "../packed-row.js";

/** The fields a pending job's row reads as columns of their own, in this order. */
export const PENDING_CORE: readonly (keyof JobRecord)[] = Object.freeze([
  "id",
  "type",
  "payload",
  "priority",
  "weight",
  "runAt",
  "attempt",
  "maxAttempts",
  "backoff",
  "createdAt",
  // A column of its own, not in `rest`: a keyed job (keyConcurrency, ordered, fair) would
  // otherwise make every row of its claims a JSON array for SQLite to build and the claim to parse.
  "key",
]);

/** What every pending job's record holds, besides its queue (the claim's). */
const PENDING_KNOWN: ReadonlyMap<keyof JobRecord, unknown> = new Map<keyof JobRecord, unknown>([
  ["queue", "the-queue"],
  ["state", "pending"],
  ["result", null],
  ["finishedAt", null],
  ["blockedBy", 0],
]);

/** The fields packed into `rest`, in record order. */
export const PENDING_REST = restFields(PENDING_CORE, [...PENDING_KNOWN.keys()]);

/**
 * The claim's select list (the `{{pendingFields}}` of claimArm and claimFair): the core columns,
 * `run_at` as `runAt` for the merged walk's ORDER BY, the default backoff policy as NULL (~80
 * bytes a row the decoder need not make into a string), then `rest`.
 */
export const PENDING_FIELDS_SQL: string = wrapList([
  ...PENDING_CORE.map((name) => {
    const f = JOB_FIELDS.find((x) => x.name === name)!;
    // '' is how the store writes the standard policy (storedBackoff); rows from before hold its text.
    if (name === "backoff")
      return `CASE backoff WHEN '' THEN NULL WHEN ${sqlLiteral(DEFAULT_BACKOFF_TEXT)} THEN NULL ELSE backoff END AS backoff`;
    return f.column === name ? name : `${f.column} AS ${name}`;
  }),
  `${restColumn(
    PENDING_REST,
    (f) => f.column,
    (items) => `json_array(${items})`,
  )} AS rest`,
]);

/** Columns in {@link PENDING_FIELDS_SQL}: a statement's own columns come after them. */
export const PENDING_COLUMNS = PENDING_CORE.length + 1;

const INITIAL_REST = restInitials(PENDING_REST);

/**
 * A claim's row made into the job's record. Written out, as hot-record.ts is, so every record has
 * one shape; the check below fails at load if it and the lists above disagree.
 */
export function pendingRecord(r: readonly unknown[], queue: string): JobRecord {
  const rest = r[11] === null ? INITIAL_REST : (JSON.parse(r[11] as string) as unknown[]);
  return {
    id: r[0] as string,
    type: r[1] as string,
    queue,
    state: "pending",
    payload: r[2] as string,
    checkpoint: rest[0] as string | null,
    result: null,
    priority: r[3] as number,
    weight: r[4] as number,
    runAt: r[5] as number,
    expiresAt: rest[1] as number | null,
    attempt: r[6] as number,
    maxAttempts: r[7] as number,
    backoff: (r[8] as string | null) ?? DEFAULT_BACKOFF_TEXT,
    retryQueue: rest[2] as string | null,
    delivery: rest[3] as JobRecord["delivery"],
    timeoutMs: rest[4] as number | null,
    uniqueKey: rest[5] as string | null,
    leaseExpiresAt: rest[6] as number | null,
    workerId: rest[7] as string | null,
    errors: rest[8] as string,
    leaseExpirations: rest[9] as number,
    createdAt: r[9] as number,
    startedAt: rest[10] as number | null,
    finishedAt: null,
    owner: rest[11] as string | null,
    dependsOn: rest[12] as string | null,
    blockedBy: 0,
    onDependencyFailure: rest[13] as JobRecord["onDependencyFailure"],
    key: r[10] as string | null,
    debounceKey: rest[14] as string | null,
    snoozes: rest[15] as number,
  };
}

checkDecoder(
  "sqlite/pending-row.ts pendingRecord",
  (r) => pendingRecord(r, "the-queue"),
  PENDING_CORE,
  PENDING_REST,
  PENDING_KNOWN,
);
