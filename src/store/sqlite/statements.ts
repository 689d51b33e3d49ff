/**
 * The SQLite store's statements: queries/*.sql with their column lists filled in, prepared once
 * per connection and checked against JobRecord's keys.
 * @module
 */
import type Database from "better-sqlite3";
import { type StatementName, statements } from "../generated/sqlite-queries.js";
import { HOT_RECORD_KEYS } from "../hot-record.js";
import { renderStatements } from "../sql-template.js";

export type Stmt = Database.Statement;
export type Statements = Record<StatementName, Stmt>;

/**
 * A job record's columns, in JobRecord's key order, from each table: the `{{hotFields}}` and
 * `{{doneFields}}` of queries/*.sql. The hot table has no result or finished_at, the done table
 * no lease or holder; those read as NULL.
 */
const HOT_FIELDS = `id, type, queue, state, payload, checkpoint, NULL AS result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  lease_expires_at AS leaseExpiresAt, worker_id AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  NULL AS finishedAt, owner`;
const DONE_FIELDS = `id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  NULL AS leaseExpiresAt, NULL AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  finished_at AS finishedAt, owner`;
const SQL = renderStatements(statements, { hotFields: HOT_FIELDS, doneFields: DONE_FIELDS });

/** Statements that read job records: their columns must be JobRecord's keys, in order. */
const RECORD_STATEMENTS: readonly StatementName[] = [
  "claimCandidates",
  "getHot",
  "getDone",
  "enqueueByUniqueKey",
  "expiredLeases",
  "listAll",
  "listAllByOwner",
  "listHot",
  "listHotByOwner",
  "listDone",
  "listDoneByOwner",
];

/** Parameters per job row of enqueueOne, in the order `insertJobs` (insert.ts) binds them. */
export const ROW_PARAMS = 16;
/** Rows per enqueueChunk statement (queries/enqueueMany.sql writes them out). */
export const INSERT_CHUNK = countParams(SQL.enqueueChunk) / ROW_PARAMS;
if (countParams(SQL.enqueueOne) !== ROW_PARAMS || !Number.isInteger(INSERT_CHUNK)) {
  throw new Error("enqueueOne and enqueueChunk in queries/enqueueMany.sql do not bind 16 parameters per row");
}

/**
 * Prepares every statement of queries/*.sql once, checks that those reading job records yield
 * JobRecord's keys in order, and sets the modes the store reads them in.
 */
export function prepareStatements(db: Database.Database): Statements {
  const q = {} as Statements;
  for (const name of Object.keys(SQL) as StatementName[]) q[name] = db.prepare(SQL[name]);
  for (const name of RECORD_STATEMENTS) {
    const columns = q[name].columns().map((c) => c.name);
    if (columns.join() !== HOT_RECORD_KEYS.join()) {
      throw new Error(
        `${name} in src/store/sqlite/queries does not yield JobRecord's keys in order: ${columns}`,
      );
    }
  }
  // Claims read rows as arrays for hotRecord(), which costs less than row objects.
  q.claimCandidates.raw(true);
  q.enqueueFinishedId.pluck();
  q.pausedQueues.pluck();
  return q;
}

/** The `?` parameters of an enqueue statement (they have no `?` in comments or string literals). */
function countParams(sql: string): number {
  return sql.split("?").length - 1;
}
