/**
 * How a PostgreSQL claim returns the jobs it leased: the packed row of store/packed-row.ts.
 * pg decodes every field of every row (a slice of the message and its text decoded, then parsed),
 * so a claim's 32 columns per job were ~20% of a draining worker's CPU. The {@link CLAIMED_CORE}
 * columns and `rest` are a third of them, and the server writes fewer values out. The claim
 * knows the rest of the record: the row it just leased is active, leased by the claimer until the
 * lease it granted, started now.
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

/** The fields a leased job's row returns as columns of their own, in this order. */
export const CLAIMED_CORE: readonly (keyof JobRecord)[] = Object.freeze([
  "id",
  "type",
  "queue",
  "payload",
  "priority",
  "weight",
  "runAt",
  "attempt",
  "maxAttempts",
  "backoff",
  "createdAt",
  // Usually NULL, which pg reads without decoding anything; the keyed fair claim counts its
  // jobs by key from the UPDATE's returned rows (fair.sql), so it is a column of its own.
  "key",
]);

/** The fields the claim itself knows (with the values the load-time check feeds the decoder). */
const CLAIMED_KNOWN: ReadonlyMap<keyof JobRecord, unknown> = new Map<keyof JobRecord, unknown>([
  ["state", "active"],
  ["result", null],
  ["leaseExpiresAt", 7],
  ["workerId", "the-worker"],
  ["startedAt", 2],
  ["finishedAt", null],
]);

/** The fields packed into `rest`, in record order. */
export const CLAIMED_REST = restFields(CLAIMED_CORE, [...CLAIMED_KNOWN.keys()]);

/**
 * What the claim's UPDATE returns (`RETURNING`, its rows qualified by the alias `j`): the core
 * columns, the default backoff policy as NULL, then `rest`.
 */
export const CLAIMED_FIELDS_SQL: string = wrapList([
  ...CLAIMED_CORE.map((name) => {
    if (name === "backoff") return `nullif(j.backoff, ${sqlLiteral(DEFAULT_BACKOFF_TEXT)}) AS backoff`;
    return `j.${JOB_FIELDS.find((f) => f.name === name)!.column}`;
  }),
  `${restColumn(
    CLAIMED_REST,
    (f) => `j.${f.column}`,
    (items) => `json_build_array(${items})::text`,
  )} AS rest`,
]);

/** Columns in {@link CLAIMED_FIELDS_SQL}: a claim's marker row carries its flags after as many. */
export const CLAIMED_COLUMNS = CLAIMED_CORE.length + 1;

const INITIAL_REST = restInitials(CLAIMED_REST);

/**
 * A leased row made into the job's record, with the lease the claim granted. Written out, so every
 * record has one shape; the check below fails at load if it and the lists above disagree.
 */
export function claimedRecord(
  r: readonly unknown[],
  workerId: string,
  leaseExpiresAt: number,
  startedAt: number,
): JobRecord {
  const rest = r[12] === null ? INITIAL_REST : (JSON.parse(r[12] as string) as unknown[]);
  return {
    id: r[0] as string,
    type: r[1] as string,
    queue: r[2] as string,
    state: "active",
    payload: r[3] as string,
    checkpoint: rest[0] as string | null,
    result: null,
    priority: r[4] as number,
    weight: r[5] as number,
    runAt: r[6] as number,
    expiresAt: rest[1] as number | null,
    attempt: r[7] as number,
    maxAttempts: r[8] as number,
    backoff: (r[9] as string | null) ?? DEFAULT_BACKOFF_TEXT,
    retryQueue: rest[2] as string | null,
    delivery: rest[3] as JobRecord["delivery"],
    timeoutMs: rest[4] as number | null,
    uniqueKey: rest[5] as string | null,
    leaseExpiresAt,
    workerId,
    errors: rest[6] as string,
    leaseExpirations: rest[7] as number,
    createdAt: r[10] as number,
    startedAt,
    finishedAt: null,
    owner: rest[8] as string | null,
    dependsOn: rest[9] as string | null,
    blockedBy: rest[10] as number,
    onDependencyFailure: rest[11] as JobRecord["onDependencyFailure"],
    key: r[11] as string | null,
    debounceKey: rest[12] as string | null,
    snoozes: rest[13] as number,
  };
}

checkDecoder(
  "postgres/claimed-row.ts claimedRecord",
  (r) => claimedRecord(r, "the-worker", 7, 2),
  CLAIMED_CORE,
  CLAIMED_REST,
  CLAIMED_KNOWN,
);
