/**
 * The PostgreSQL store's column lists, the `{{fragment}}`s of queries/*.sql built from them, and
 * the advisory-lock key its claims pass to them.
 * @module
 */
import {
  JOB_FIELDS,
  type JobField,
  SHARED_FIELDS,
  selectList,
  summaryPlaceholder,
  wrapList,
} from "../../job-fields.js";
import { MAX_ERROR_HISTORY } from "../../validation.js";
import { CLAIMED_COLUMNS, CLAIMED_FIELDS_SQL } from "./claimed-row.js";

/**
 * The type of each column one table has and the other lacks, for the other's NULL: the arms of a
 * UNION ALL of both tables (listAll) then agree column for column, and PostgreSQL appends them as
 * they are rather than coercing every row of one (blocked_by is an integer; it read NULL::bigint).
 * What makes a page of both tables cheap is each arm's own ORDER BY and LIMIT (queries/list.sql).
 */
const MISSING_TYPES = new Map([
  ["result", "text"],
  ["finished_at", "bigint"],
  ["lease_expires_at", "bigint"],
  ["worker_id", "text"],
  ["blocked_by", "integer"],
]);
const nullOf = (field: JobField) => {
  const type = MISSING_TYPES.get(field.column);
  if (type === undefined) throw new Error(`columns.ts: no type for ${field.column}, which a table lacks`);
  return `NULL::${type}`;
};
/** Unquoted identifiers fold to lower case; a camelCase record name needs quotes. */
const quote = (name: string) => `"${name}"`;

/**
 * A job record's columns, in JobRecord's key order, from each table (derived from
 * {@link JOB_FIELDS}). The hot table has no result or finished_at, the done table no lease or
 * holder; those read as NULL.
 */
const HOT_FIELDS = selectList("hot", nullOf, quote);
const DONE_FIELDS = selectList("done", nullOf, quote);

/**
 * The `{{hotFields}}` and `{{doneFields}}` of a summary read (ListParams.summary): the fields a
 * JobSummary leaves out as placeholders (SUMMARY_PLACEHOLDERS), so their TOASTed text is never
 * fetched. For the list statements only (postgres-store.ts renders their twins with these).
 */
const summaryOf = (f: JobField) => summaryPlaceholder(f, (t) => `'${t}'::text`, "NULL::text");
export const SUMMARY_FRAGMENTS = {
  hotFields: selectList("hot", nullOf, quote, undefined, summaryOf),
  doneFields: selectList("done", nullOf, quote, undefined, summaryOf),
} as const;
/** A NULL for each column a claim returns: its marker row, whose flags follow them. */
const CLAIMED_NULLS = wrapList(Array.from({ length: CLAIMED_COLUMNS }, () => "NULL"));

/** `{{sharedColumns}}`: the columns a move between the two tables copies ({@link SHARED_FIELDS}). */
const SHARED = wrapList(SHARED_FIELDS.map((x) => x.column));

/**
 * The insert's parameters before the job's fields: $1 now (created_at), $2 the NOTIFY tag, $3 the
 * batch size. A NewJob's fields follow in table order ($4 on, see insert.ts).
 */
export const INSERT_FIXED_PARAMS = 3;

/**
 * The fields an insert sets, in its column order: a NewJob's and the state, in table order, then
 * created_at. The `@insertValues` markers of queries/enqueueMany.sql write the values in this
 * order (scripts/job-field-markers.ts).
 */
export const INSERT_FIELDS: readonly JobField[] = [
  ...JOB_FIELDS.filter((x) => x.newJob || x.name === "state"),
  JOB_FIELDS.find((x) => x.name === "createdAt")!,
];
const INSERT_COLUMNS = wrapList(INSERT_FIELDS.map((x) => x.column));

/**
 * First key of the two-key advisory lock that serialises claims of one capped type ("errc"); the
 * second is a hash of the schema and the type, so installations in other schemas do not contend.
 */
export const CAP_LOCK = 0x65727263;

/**
 * First key of the two-key advisory lock that serialises claims of one (type, key) of a type with
 * per-key rules ("errk"); the second is a hash of the schema, the type and the key.
 */
export const KEY_LOCK = 0x6572726b;

/**
 * The candidates `claim` and `claimCapped` (queries/claim.sql) walk alike: an unlocked peek at each
 * open type's first `$3` jobs, merged in claim order and counted per type (`share`), then a locking
 * walk of each type of as many jobs as the peek gave it (`cand`). one-type.ts reads this text to
 * make the one-type form.
 */
const walkTypes = (errandJob: string, errandQueuePause: string): string => `peek AS (
  SELECT c.type FROM unnest($8::text[]) AS t(type)
  CROSS JOIN LATERAL (
    SELECT j.type, j.fair_turn, j.id, j.priority, j.run_at FROM ${errandJob} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM ${errandQueuePause} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND j.type = t.type
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $3
  ) AS c
  ORDER BY c.priority DESC, c.run_at, c.id
  LIMIT $3
), share AS (
  SELECT type, count(*) AS n FROM peek GROUP BY type
), cand AS (
  SELECT c.* FROM share s
  CROSS JOIN LATERAL (
    SELECT j.id, j.type, j.priority, j.run_at, least(j.weight, coalesce($4::bigint, j.weight)) AS w
    FROM ${errandJob} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM ${errandQueuePause} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND j.type = s.type
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT s.n
    FOR UPDATE OF j SKIP LOCKED
  ) AS c
  LIMIT $3
)`;

/**
 * The claim's one write (`upd`): each job in `fits` that was not skipped and fits the claimer's
 * weight budget ($5) is activated, its attempt counted, leased to $6 until $7, started at $2, and
 * returned as a packed row (claimed-row.ts). Every claim statement ends in it, so what a claim writes is written
 * here once.
 */
const leaseFits = (errandJob: string): string => `upd AS (
  UPDATE ${errandJob} j
  SET state = 'active', attempt = j.attempt + 1, worker_id = $6, lease_expires_at = $7, started_at = $2
  FROM fits f
  WHERE j.id = f.id AND NOT f.skipped AND ($5::bigint IS NULL OR f.used <= $5)
  RETURNING ${CLAIMED_FIELDS_SQL}
)`;

/**
 * The `found` CTE of the leaf completions (`completeLeaves`, `completeLeavesDiscard` in
 * queries/completeMany.sql): the physical row of each `input` (id, attempt) still active in that
 * attempt and with no dependents, carrying its result when `result` is set. Materialised, so the
 * DELETE that follows deletes by row address what this one snapshot found.
 */
const leavesFound = (errandJob: string, result: boolean): string => `found AS MATERIALIZED (
  SELECT j.tid${result ? ", i.result" : ""}
  FROM input i CROSS JOIN LATERAL (
    SELECT j.ctid AS tid FROM ${errandJob} j
    WHERE j.id = i.id AND j.attempt = i.attempt AND (j.state = 'active') IS TRUE AND NOT j.has_dependents
    LIMIT 1
  ) AS j
)`;

/**
 * The end both claims with per-type or per-key room share (`claimKeyed`, `claimCapped` in
 * queries/claim.sql, after their `ranked` CTE): the rows that fit the
 * claimer's weight, activated, then one row telling whether any did not fit or was skipped.
 */
const takeRanked = (errandJob: string): string => `, fits AS (
  SELECT id, skipped, sum(CASE WHEN skipped THEN 0 ELSE w END)
    OVER (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM ranked
), ${leaseFits(errandJob)}
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped FROM upd
UNION ALL
SELECT ${CLAIMED_NULLS},
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false)
FROM fits`;

/**
 * `{{appendedErrors}}`: a row's error history (`errors`, a JSON array kept as text) with the entry
 * `new_error` (JSON text) appended, the oldest dropped past MAX_ERROR_HISTORY (a history stored
 * longer before the bound is cut to it in the same write). The kept entries keep their exact
 * text: `json` (not jsonb) hands back each element as it was written, so the array is trimmed in
 * SQL and never read into JS. Below the bound the entry is spliced in as text, after one parse to
 * count the entries; an empty history is not parsed at all.
 */
const APPENDED_ERRORS = `CASE WHEN errors = '[]' THEN '[' || new_error || ']'
    WHEN json_array_length(errors::json) < ${MAX_ERROR_HISTORY} THEN left(errors, -1) || ',' || new_error || ']'
    ELSE (SELECT '[' || coalesce(string_agg(x.entry::text, ',' ORDER BY x.pos) || ',', '') || new_error || ']'
      FROM (SELECT entry, pos, count(*) OVER () AS total
        FROM json_array_elements(errors::json) WITH ORDINALITY AS e(entry, pos)) AS x
      WHERE x.pos > x.total - ${MAX_ERROR_HISTORY} + 1) END`;

/**
 * The `{{fragment}}`s of queries/*.sql: table names qualified by the schema (a quoted identifier),
 * the NOTIFY channel (a quoted literal), both checked by `checkSchemaName` (migrate.ts), and the
 * column lists many statements share.
 */
export function sqlFragments(schema: string, channel: string): Record<string, string> {
  return {
    errandJob: `"${schema}".errand_job`,
    errandJobDone: `"${schema}".errand_job_done`,
    errandDoneCount: `"${schema}".errand_done_count`,
    errandDoneDelta: `"${schema}".errand_done_delta`,
    errandSchedule: `"${schema}".errand_schedule`,
    errandJobType: `"${schema}".errand_job_type`,
    errandQueuePause: `"${schema}".errand_queue_pause`,
    errandDependency: `"${schema}".errand_dependency`,
    errandRateStart: `"${schema}".errand_rate_start`,
    errandFairType: `"${schema}".errand_fair_type`,
    errandFairKey: `"${schema}".errand_fair_key`,
    errandKeyRoom: `"${schema}".errand_key_room`,
    errandCapRoom: `"${schema}".errand_cap_room`,
    errandKeyPark: `"${schema}".errand_key_park`,
    errandParkWake: `"${schema}".errand_park_wake`,
    channel: `'${channel}'`,
    hotFields: HOT_FIELDS,
    claimedNulls: CLAIMED_NULLS,
    leaseFits: leaseFits(`"${schema}".errand_job`),
    takeRanked: takeRanked(`"${schema}".errand_job`),
    leavesFound: leavesFound(`"${schema}".errand_job`, true),
    leavesFoundDiscard: leavesFound(`"${schema}".errand_job`, false),
    walkTypes: walkTypes(`"${schema}".errand_job`, `"${schema}".errand_queue_pause`),
    doneFields: DONE_FIELDS,
    sharedColumns: SHARED,
    appendedErrors: APPENDED_ERRORS,
    insertJob: `INSERT INTO "${schema}".errand_job (${INSERT_COLUMNS})`,
    // The rest of a statement whose CTE `moved` deleted jobs to expire ($1 now): into history as
    // expired, returned as JobRecords with "hasDependents" (expirePending, expireKeyHolders).
    expireMoved: `ins AS (
  INSERT INTO "${schema}".errand_job_done (${SHARED}, state, result, finished_at)
  SELECT ${SHARED}, 'expired', NULL, $1 FROM moved
  RETURNING ${DONE_FIELDS}
)
SELECT ins.*, m.has_dependents AS "hasDependents" FROM ins JOIN moved m ON m.id = ins.id`,
    insertColumns: INSERT_COLUMNS,
    insertOutcome: `SELECT count(*)::integer AS n,
  CASE WHEN count(*) < $3::integer THEN array_agg(id) END AS ids,
  (SELECT count(*) FROM n) AS notified
FROM ins`,
  };
}
