/**
 * The PostgreSQL store's column lists, the `{{fragment}}`s of queries/*.sql built from them, and
 * the advisory-lock key its claims pass to them.
 * @module
 */
import { HOT_RECORD_KEYS } from "../hot-record.js";

/**
 * A job record's columns, in JobRecord's key order, from each table. The hot table has no result
 * or finished_at, the done table no lease or holder; those read as NULL.
 */
const HOT_FIELDS = `id, type, queue, state, payload, checkpoint, NULL::text AS result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  lease_expires_at AS "leaseExpiresAt", worker_id AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  NULL::bigint AS "finishedAt", owner`;

const DONE_FIELDS = `id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  NULL::bigint AS "leaseExpiresAt", NULL::text AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  finished_at AS "finishedAt", owner`;

/** {@link HOT_FIELDS} with every column qualified by a table alias (UPDATE … FROM needs it). */
function hotFields(alias: string): string {
  return HOT_FIELDS.replace(
    /(^|[\s,(])(id|type|queue|state|payload|checkpoint|priority|weight|run_at|expires_at|attempt|max_attempts|backoff|retry_queue|delivery|timeout_ms|unique_key|lease_expires_at|worker_id|errors|lease_expirations|created_at|started_at|owner)\b(?!")/g,
    `$1${alias}.$2`,
  );
}
/** The columns of {@link HOT_FIELDS}; a claim's marker row carries its flags after them. */
export const HOT_FIELD_COUNT = 26;

// hotRecord reads columns by position: fail at load, loudly, if HOT_FIELDS and it ever disagree.
{
  const names = HOT_FIELDS.split(",").map((f) => /"?(\w+)"?\s*$/.exec(f.trim())![1]);
  const keys = HOT_RECORD_KEYS;
  if (names.length !== HOT_FIELD_COUNT || names.join() !== keys.join()) {
    throw new Error(`hotRecord does not match HOT_FIELDS: ${names} vs ${keys}`);
  }
}

/** Columns shared by both job tables, for moving a row from the hot table to history. */
const SHARED = `id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors, lease_expirations,
  created_at, started_at, owner`;

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
    channel: `'${channel}'`,
    hotFields: HOT_FIELDS,
    hotFieldsJ: hotFields("j"),
    doneFields: DONE_FIELDS,
    sharedColumns: SHARED,
    insertJob: `INSERT INTO "${schema}".errand_job (id, type, queue, state, payload, priority, weight, run_at,
    expires_at, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, owner, created_at)`,
    insertOutcome: `SELECT count(*)::integer AS n,
  CASE WHEN count(*) < $18::integer THEN array_agg(id) END AS ids,
  (SELECT count(*) FROM n) AS notified
FROM ins`,
  };
}
