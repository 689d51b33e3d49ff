/**
 * The PostgreSQL store's column lists, the `{{fragment}}`s of queries/*.sql built from them, and
 * the advisory-lock key its claims pass to them.
 * @module
 */
import { JOB_FIELDS, type JobField, selectList, wrapList } from "../../job-fields.js";

/** PostgreSQL types a column a table lacks by its kind, so UNION ALL of both tables agrees. */
const nullOf = (field: JobField) =>
  field.kind === "int" || field.kind === "time" ? "NULL::bigint" : "NULL::text";
/** Unquoted identifiers fold to lower case; a camelCase record name needs quotes. */
const quote = (name: string) => `"${name}"`;

/**
 * A job record's columns, in JobRecord's key order, from each table (derived from
 * {@link JOB_FIELDS}). The hot table has no result or finished_at, the done table no lease or
 * holder; those read as NULL.
 */
const HOT_FIELDS = selectList("hot", nullOf, quote);
const DONE_FIELDS = selectList("done", nullOf, quote);
/** {@link HOT_FIELDS} with every column qualified by the alias `j` (UPDATE … FROM needs it). */
const HOT_FIELDS_J = selectList("hot", nullOf, quote, "j");

/** The columns of {@link HOT_FIELDS}; a claim's marker row carries its flags after them. */
export const HOT_FIELD_COUNT = JOB_FIELDS.length;

/**
 * Columns shared by both job tables but the state, for moving a row from the hot table to
 * history (the statements set state, result and finished_at themselves).
 */
const SHARED = wrapList(JOB_FIELDS.filter((x) => x.hot && x.done && x.name !== "state").map((x) => x.column));

/**
 * The columns an insert sets: a NewJob's (the parameters $1..$17 in table order, see insert.ts)
 * with state where the table has it, then created_at ($18). queries/enqueueMany.sql writes the
 * values in this order.
 */
const INSERT_COLUMNS = wrapList([
  ...JOB_FIELDS.filter((x) => x.newJob || x.name === "state").map((x) => x.column),
  "created_at",
]);

/**
 * First key of the two-key advisory lock that serialises claims of one capped type ("errc"); the
 * second is a hash of the schema and the type, so installations in other schemas do not contend.
 */
export const CAP_LOCK = 0x65727263;

/**
 * The `{{fragment}}`s of queries/*.sql: table names qualified by the schema (a quoted identifier),
 * the NOTIFY channel (a quoted literal), both checked by `checkSchemaName` (migrate.ts), and the
 * column lists many statements share.
 */
export function sqlFragments(schema: string, channel: string): Record<string, string> {
  return {
    errandJob: `"${schema}".errand_job`,
    errandJobDone: `"${schema}".errand_job_done`,
    errandSchedule: `"${schema}".errand_schedule`,
    errandJobType: `"${schema}".errand_job_type`,
    errandQueuePause: `"${schema}".errand_queue_pause`,
    errandDependency: `"${schema}".errand_dependency`,
    channel: `'${channel}'`,
    hotFields: HOT_FIELDS,
    hotFieldsJ: HOT_FIELDS_J,
    doneFields: DONE_FIELDS,
    sharedColumns: SHARED,
    insertJob: `INSERT INTO "${schema}".errand_job (${INSERT_COLUMNS})`,
    insertOutcome: `SELECT count(*)::integer AS n,
  CASE WHEN count(*) < $20::integer THEN array_agg(id) END AS ids,
  (SELECT count(*) FROM n) AS notified
FROM ins`,
  };
}
