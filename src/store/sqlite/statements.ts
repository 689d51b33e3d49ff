/**
 * The SQLite store's statements: queries/*.sql with their column lists filled in, prepared on first
 * use per connection and checked against JobRecord's keys.
 * @module
 */
import type Database from "better-sqlite3";
import {
  JOB_FIELDS,
  type JobField,
  SHARED_FIELDS,
  selectList,
  summaryPlaceholder,
  wrapList,
} from "../../job-fields.js";
import { MAX_ERROR_HISTORY } from "../../validation.js";
import { type StatementName, statements } from "../generated/sqlite-queries.js";
import { HOT_RECORD_KEYS } from "../hot-record.js";
import { DEFAULT_BACKOFF_TEXT, sqlLiteral } from "../packed-row.js";
import { pickStatements, renderStatements } from "../sql-template.js";
import type { NewJob } from "../store.js";
import { PENDING_FIELDS_SQL } from "./pending-row.js";

export type Stmt = Database.Statement;

/** The list statements (queries/list.sql), each with a twin that reads summaries. */
const LIST_STATEMENTS = [
  "listAll",
  "listAllByOwner",
  "listHot",
  "listHotByOwner",
  "listDone",
  "listDoneByOwner",
] as const satisfies readonly StatementName[];
type ListStatement = (typeof LIST_STATEMENTS)[number];
/** A list statement's twin for ListParams.summary: the same rows, the five fields left unread. */
export type SummaryStatementName = `${ListStatement}Summary`;
export type Statements = Record<StatementName | SummaryStatementName, Stmt>;

/**
 * A job's backoff policy as the store writes it: '' for the standard policy (DEFAULT_BACKOFF_TEXT),
 * as the Redis store does, else its JSON text. The standard policy's text is 78 bytes, more than a
 * third of a new job's row: writing '' makes a bulk enqueue write ~25% fewer pages (the table and
 * its indexes), and every move into history copies ~80 bytes fewer. Rows written before hold the
 * full text, which reads the same. The column is NOT NULL, so '' (never a policy's JSON) rather
 * than NULL: no table rebuild on upgrade.
 */
export const storedBackoff = (text: string): string => (text === DEFAULT_BACKOFF_TEXT ? "" : text);

/** Reads the backoff column back as the policy's JSON text (the inverse of storedBackoff). */
const BACKOFF_READ = `CASE backoff WHEN '' THEN ${sqlLiteral(DEFAULT_BACKOFF_TEXT)} ELSE backoff END`;

/**
 * A NULL for a column the table lacks, with the affinity the other table's column has. SQLite
 * flattens a UNION ALL of both tables (and reads each primary key newest first for a list) only
 * when every column's affinity agrees between the arms; with a bare NULL it sorted every row of
 * both tables for each page (a list without a state filter beside 1,000,000 finished jobs: 450 ms
 * of the event loop).
 */
const nullOf = (field: JobField): string =>
  `CAST(NULL AS ${field.kind === "int" || field.kind === "time" ? "INTEGER" : "TEXT"})`;

/**
 * A job record's columns, in JobRecord's key order, from each table (derived from
 * {@link JOB_FIELDS}): the `{{hotFields}}` and `{{doneFields}}` of queries/*.sql. The hot table
 * has no result or finished_at, the done table no lease or holder; those read as NULL. SQLite
 * keeps an alias's case, so none is quoted.
 */
const hotExpression = (f: JobField): string | undefined =>
  // A blocked job's count lives in errand_blocked (migrations/0004 says why); the CASE reads it
  // for blocked rows only, so a claim (pending rows) never probes that table.
  f.name === "blockedBy"
    ? "CAST(CASE WHEN state = 'blocked' THEN (SELECT b.blocked_by FROM errand_blocked AS b WHERE b.job_id = errand_job.id) ELSE 0 END AS INTEGER)"
    : f.name === "backoff"
      ? BACKOFF_READ
      : undefined;
const doneExpression = (f: JobField): string | undefined => (f.name === "backoff" ? BACKOFF_READ : undefined);
const HOT_FIELDS = selectList("hot", nullOf, (name) => name, undefined, hotExpression);
const DONE_FIELDS = selectList("done", nullOf, (name) => name, undefined, doneExpression);

/**
 * A summary's placeholder for a field it leaves out (SUMMARY_PLACEHOLDERS), the same in both
 * tables, so listAll's arms still agree in affinity. Not reading the column is the point: a row's
 * payload may be a megabyte of overflow pages, which SQLite then only walks past.
 */
const summaryOf = (f: JobField): string | undefined =>
  summaryPlaceholder(f, sqlLiteral, "CAST(NULL AS TEXT)");
const HOT_SUMMARY_FIELDS = selectList(
  "hot",
  nullOf,
  (name) => name,
  undefined,
  (f) => summaryOf(f) ?? hotExpression(f),
);
const DONE_SUMMARY_FIELDS = selectList(
  "done",
  nullOf,
  (name) => name,
  undefined,
  (f) => summaryOf(f) ?? doneExpression(f),
);
/** The column lists above, for test/unit/job-fields.test.ts. @internal */
export const JOB_COLUMNS = { hot: HOT_FIELDS, done: DONE_FIELDS } as const;
/**
 * `{{errorsWithRoom}}`: the row's error history with room for one more entry, for the statements
 * that append one (`json_insert(…, '$[#]', …)`): the oldest dropped once it holds
 * MAX_ERROR_HISTORY. A full history (the steady state of a job failing on and on) loses its first
 * entry (json_remove); one longer, stored before the bound, is cut to the newest N − 1 in the same
 * write (an aggregate's ORDER BY: SQLite 3.44, older than the one better-sqlite3 12 bundles).
 * Either way the array is read in SQL, never into JS.
 */
const ERRORS_WITH_ROOM = `CASE WHEN json_array_length(errors) < ${MAX_ERROR_HISTORY} THEN errors
    WHEN json_array_length(errors) = ${MAX_ERROR_HISTORY} THEN json_remove(errors, '$[0]')
    ELSE (SELECT json_group_array(json(value) ORDER BY key) FROM json_each(errors)
      WHERE key > json_array_length(errors) - ${MAX_ERROR_HISTORY}) END`;

/**
 * The statements with their `{{fragment}}`s filled in; `{{sharedColumns}}` lists the columns a
 * move between the two tables copies ({@link SHARED_FIELDS}), whose values the statements'
 * `@sharedValues` markers give. Exported for test/unit/job-fields.test.ts.
 * @internal
 */
const FRAGMENTS = {
  hotFields: HOT_FIELDS,
  pendingFields: PENDING_FIELDS_SQL,
  doneFields: DONE_FIELDS,
  sharedColumns: wrapList(SHARED_FIELDS.map((x) => x.column)),
  errorsWithRoom: ERRORS_WITH_ROOM,
};
const SUMMARY_SQL = renderStatements(pickStatements(statements, LIST_STATEMENTS), {
  ...FRAGMENTS,
  hotFields: HOT_SUMMARY_FIELDS,
  doneFields: DONE_SUMMARY_FIELDS,
});
export const SQL: Readonly<Record<StatementName | SummaryStatementName, string>> = {
  ...renderStatements(statements, FRAGMENTS),
  ...(Object.fromEntries(LIST_STATEMENTS.map((name) => [`${name}Summary`, SUMMARY_SQL[name]])) as Record<
    SummaryStatementName,
    string
  >),
};

/** Statements that read job records: their columns must be JobRecord's keys, in order. */
const RECORD_STATEMENTS: readonly (StatementName | SummaryStatementName)[] = [
  "getHot",
  "getDone",
  "enqueueByUniqueKey",
  "expiredLeases",
  ...LIST_STATEMENTS,
  ...LIST_STATEMENTS.map((name) => `${name}Summary` as const),
];

/**
 * The columns an insert sets, in table order: a NewJob's, the state (written as 'pending') and
 * created_at (the enqueue's `now`). `npm run gen` writes them into queries/enqueueMany.sql (its
 * job-field markers, scripts/job-field-markers.ts) and `insertJobs` (insert.ts) binds them so;
 * test/unit/job-fields.test.ts checks the binding.
 */
export const INSERT_COLUMNS: readonly string[] = JOB_FIELDS.filter(
  (x) => x.newJob || x.name === "state" || x.name === "createdAt",
).map((x) => x.column);
/** Parameters per job row of enqueueOne: every insert column but the state. */
export const ROW_PARAMS = INSERT_COLUMNS.length - 1;
/** Rows per enqueueChunk statement (queries/enqueueMany.sql writes them out). */
export const INSERT_CHUNK = countParams(SQL.enqueueChunk) / ROW_PARAMS;
/**
 * The named parameters of enqueueChunkUniform, one per insert column but the id, the payload and
 * the state, by column, with the NewJob field each takes (created_at: the enqueue's `now`).
 */
export const UNIFORM_PARAMS: ReadonlyArray<{ column: string; field: keyof NewJob | null }> =
  JOB_FIELDS.filter(
    (x) => INSERT_COLUMNS.includes(x.column) && x.name !== "id" && x.name !== "payload" && x.name !== "state",
  ).map((x) => ({ column: x.column, field: x.name === "createdAt" ? null : (x.name as keyof NewJob) }));
// The statements are generated to match; a stale generated file would leave a field out silently.
for (const name of ["enqueueOne", "enqueueChunk", "enqueueChunkUniform"] as const) {
  const columns = /INSERT INTO errand_job \(([^)]*)\)/
    .exec(SQL[name])?.[1]
    ?.split(",")
    .map((c) => c.trim());
  if (columns?.join() !== INSERT_COLUMNS.join()) {
    throw new Error(`${name} in queries/enqueueMany.sql does not insert ${INSERT_COLUMNS.join(", ")}`);
  }
}
if (countParams(SQL.enqueueOne) !== ROW_PARAMS || !Number.isInteger(INSERT_CHUNK)) {
  throw new Error(
    `enqueueOne and enqueueChunk in queries/enqueueMany.sql do not bind ${ROW_PARAMS} parameters per row`,
  );
}
if (
  countParams(SQL.enqueueChunkUniform) !== 2 * INSERT_CHUNK ||
  UNIFORM_PARAMS.some(
    (p) =>
      !SQL.enqueueChunkUniform.includes(`@${p.column},`) &&
      !SQL.enqueueChunkUniform.includes(`@${p.column})`),
  )
) {
  throw new Error(
    `enqueueChunkUniform in queries/enqueueMany.sql does not bind an id and a payload per row for ${INSERT_CHUNK} rows and @${UNIFORM_PARAMS.map((p) => p.column).join(", @")}`,
  );
}

/** How the store reads a statement's rows, where not as objects: set as it is prepared. */
const MODES: ReadonlyMap<StatementName | SummaryStatementName, "pluck" | "raw"> = new Map<
  StatementName | SummaryStatementName,
  "pluck" | "raw"
>([
  // Claims read rows as arrays for hotRecord(), which costs less than row objects.
  ["claimQueueTypes", "pluck"],
  ["claimFair", "raw"],
  ["fairTypeTurn", "pluck"],
  ["fairKeyNext", "pluck"],
  ["enqueueFinishedId", "pluck"],
  ["moveDelete", "pluck"],
  ["completeMovedHere", "pluck"],
  ["dependencyUnfinished", "pluck"],
  ["dependentsPage", "pluck"],
  ["claimKeyActive", "raw"],
  ["rateCount", "pluck"],
  ["rateLeaving", "pluck"],
  ["claimParkedByRate", "pluck"],
  ["claimWakeNext", "pluck"],
  ["pausedQueues", "pluck"],
  ["listFloorHot", "pluck"],
  ["listFloorHotByOwner", "pluck"],
  ["listFloorDone", "pluck"],
  ["listFloorDoneByOwner", "pluck"],
]);
const NAMES = Object.keys(SQL) as (StatementName | SummaryStatementName)[];

/** Prepares one statement in the mode the store reads it, checking a record statement's columns. */
function prepare(db: Database.Database, name: StatementName | SummaryStatementName): Stmt {
  const stmt = db.prepare(SQL[name]);
  if (RECORD_STATEMENTS.includes(name)) {
    const columns = stmt.columns().map((c) => c.name);
    if (columns.join() !== HOT_RECORD_KEYS.join()) {
      throw new Error(
        `${name} in src/store/sqlite/queries does not yield JobRecord's keys in order: ${columns}`,
      );
    }
  }
  const mode = MODES.get(name);
  if (mode === "pluck") stmt.pluck();
  else if (mode === "raw") stmt.raw(true);
  return stmt;
}

/**
 * One connection's statements, each prepared on first use and kept. Lazily because a connection
 * uses a few of them (a worker's drain, six of ~90), and each prepared statement holds its
 * compiled program in SQLite's memory: preparing them all at open cost ~1 MB per connection.
 * A getter on the prototype per statement keeps `q.name` what it was to the callers (and to V8's
 * inline caches: one shape, no property added after construction).
 */
class LazyStatements {
  readonly #db: Database.Database;
  readonly #prepared: (Stmt | undefined)[] = new Array(NAMES.length).fill(undefined);

  constructor(db: Database.Database) {
    this.#db = db;
  }

  static {
    NAMES.forEach((name, i) => {
      Object.defineProperty(LazyStatements.prototype, name, {
        get(this: LazyStatements): Stmt {
          this.#prepared[i] ??= prepare(this.#db, name);
          return this.#prepared[i];
        },
      });
    });
  }
}

/** The statements of queries/*.sql for one connection, each prepared on first use. */
export function prepareStatements(db: Database.Database): Statements {
  return new LazyStatements(db) as unknown as Statements;
}

/**
 * Prepares every statement at once, as a first use would: a statement the schema cannot compile,
 * or a record statement whose columns are not JobRecord's keys, throws here rather than on the
 * path that first needs it. For test/integration/sqlite's check of the migrated schema.
 * @internal
 */
export function prepareEvery(db: Database.Database): void {
  const q = prepareStatements(db);
  for (const name of NAMES) void q[name];
}

/** The `?` parameters of an enqueue statement (they have no `?` in comments or string literals). */
function countParams(sql: string): number {
  return sql.split("?").length - 1;
}
