/**
 * The job's fields, once: one row per {@link JobRecord} field, in the record's key order, with its
 * column, the tables that hold it, whether a {@link NewJob} carries it, and the value a new job
 * starts with. The stores' column lists, the insert parameters, the Redis codec's defaults and
 * the enqueue defaults are derived from (or checked against) this table, so adding a field is a
 * change here plus migrations; test/unit/job-fields.test.ts fails until every copy agrees.
 * @module
 */
import { DEFAULT_BACKOFF } from "./backoff.js";
import {
  type Delivery,
  type DependencyFailurePolicy,
  type Job,
  type JobRecord,
  type StoredBackoff,
  SUMMARY_LEAVES_OUT,
} from "./job.js";
import type { NewJob } from "./store/store.js";

/**
 * How a field is kept and shown: `text` and `int` as they are; `time` as epoch milliseconds in
 * stores and a `Date` (an ISO-8601 string over HTTP) on a {@link Job}; `json` as JSON text in
 * stores and parsed on a Job; `state`, `delivery`, `dependency` (a DependencyFailurePolicy), `backoff` (a {@link StoredBackoff}) and `errors`
 * (a JobErrorEntry array) as text of a fixed shape.
 */
export type JobFieldKind =
  | "text"
  | "int"
  | "time"
  | "json"
  | "state"
  | "delivery"
  | "dependency"
  | "backoff"
  | "errors";

/** One row of {@link JOB_FIELDS}. */
export interface JobField {
  readonly name: keyof JobRecord;
  /** The SQL column, snake_case. */
  readonly column: string;
  readonly kind: JobFieldKind;
  readonly nullable: boolean;
  /** The hot table (pending and active jobs) has the column; otherwise it reads as NULL there. */
  readonly hot: boolean;
  /** The done table (finished jobs) has the column; otherwise it reads as NULL there. */
  readonly done: boolean;
  /** A {@link NewJob} carries it: the enqueue sets it, resolved over its type's defaults. */
  readonly newJob: boolean;
  /** The public {@link Job} shows it (and so the HTTP API's Job schema). */
  readonly public: boolean;
  /**
   * What a job has before anyone sets it: the enqueue default of a NewJob field, else what a
   * freshly inserted job holds (in the record's form: JSON as text). `"now"`: the enqueue's time;
   * `undefined`: always given (id, type, payload).
   */
  readonly initial?: string | number | null;
}

/**
 * What a job gets when neither its enqueue nor its type says otherwise (a type unknown to this
 * process gets exactly these).
 * @since 0.1.0
 */
export const JOB_DEFAULTS: Readonly<{
  queue: string;
  priority: number;
  weight: number;
  maxAttempts: number;
  backoff: StoredBackoff;
  retryQueue: null;
  timeoutMs: null;
  delivery: Delivery;
  onDependencyFailure: DependencyFailurePolicy;
}> = Object.freeze({
  queue: "default",
  priority: 0,
  weight: 1,
  maxAttempts: 5,
  backoff: DEFAULT_BACKOFF,
  retryQueue: null,
  timeoutMs: null,
  delivery: "at_least_once",
  onDependencyFailure: "cancel",
});

const f = (
  name: keyof JobRecord,
  column: string,
  kind: JobFieldKind,
  o: { nullable?: boolean; hot?: boolean; done?: boolean; newJob?: boolean; public?: boolean },
  initial?: string | number | null,
): JobField =>
  Object.freeze({
    name,
    column,
    kind,
    nullable: o.nullable ?? false,
    hot: o.hot ?? true,
    done: o.done ?? true,
    newJob: o.newJob ?? false,
    public: o.public ?? true,
    initial,
  });

const N = { newJob: true } as const;
const NN = { newJob: true, nullable: true } as const;
const NULLABLE = { nullable: true } as const;

/**
 * Every field of a job record, in {@link JobRecord}'s key order (the order of the stores' column
 * lists and of hot-record's positional reader).
 * @internal
 */
export const JOB_FIELDS: readonly JobField[] = Object.freeze([
  f("id", "id", "text", N),
  f("type", "type", "text", N),
  f("queue", "queue", "text", N, JOB_DEFAULTS.queue),
  f("state", "state", "state", {}, "pending"),
  f("payload", "payload", "json", N),
  f("checkpoint", "checkpoint", "json", NULLABLE, null),
  f("result", "result", "json", { nullable: true, hot: false }, null),
  f("priority", "priority", "int", N, JOB_DEFAULTS.priority),
  f("weight", "weight", "int", N, JOB_DEFAULTS.weight),
  f("runAt", "run_at", "time", N, "now"),
  f("expiresAt", "expires_at", "time", NN, null),
  f("attempt", "attempt", "int", {}, 0),
  f("maxAttempts", "max_attempts", "int", N, JOB_DEFAULTS.maxAttempts),
  f("backoff", "backoff", "backoff", N, JSON.stringify(JOB_DEFAULTS.backoff)),
  f("retryQueue", "retry_queue", "text", NN, JOB_DEFAULTS.retryQueue),
  f("delivery", "delivery", "delivery", N, JOB_DEFAULTS.delivery),
  f("timeoutMs", "timeout_ms", "int", NN, JOB_DEFAULTS.timeoutMs),
  f("uniqueKey", "unique_key", "text", NN, null),
  f("leaseExpiresAt", "lease_expires_at", "time", { nullable: true, done: false }, null),
  f("workerId", "worker_id", "text", { nullable: true, done: false }, null),
  f("errors", "errors", "errors", {}, "[]"),
  f("leaseExpirations", "lease_expirations", "int", { public: false }, 0),
  f("createdAt", "created_at", "time", {}, "now"),
  f("startedAt", "started_at", "time", NULLABLE, null),
  f("finishedAt", "finished_at", "time", { nullable: true, hot: false }, null),
  f("owner", "owner", "text", NN, null),
  f("dependsOn", "depends_on", "json", NN, null),
  f("blockedBy", "blocked_by", "int", { nullable: true, done: false }, 0),
  f("onDependencyFailure", "on_dependency_failure", "dependency", N, JOB_DEFAULTS.onDependencyFailure),
  f("key", "key", "text", NN, null),
  f("debounceKey", "debounce_key", "text", NN, null),
  f("snoozes", "snoozes", "int", {}, 0),
]);

/** {@link JOB_FIELDS}' names: JobRecord's keys in order. @internal */
export const JOB_FIELD_NAMES: readonly (keyof JobRecord)[] = Object.freeze(JOB_FIELDS.map((x) => x.name));

/** The fields a {@link NewJob} carries, in table order (PostgreSQL's insert parameters $1..$n). @internal */
export const NEW_JOB_FIELDS: readonly (keyof NewJob)[] = Object.freeze(
  JOB_FIELDS.filter((x) => x.newJob).map((x) => x.name as keyof NewJob),
);

/**
 * Whether `j` has every field of `first` but the id and the payload: a bulk insert binds such a
 * job's other fields once, from `first` (SQLite's enqueueChunkUniform, PostgreSQL's
 * insertUniform). Written out, as it runs per job of a bulk enqueue (a loop over
 * {@link NEW_JOB_FIELDS} reads each field by a computed key: ~18 ms per 20,000 jobs on a cold
 * process, against ~1 here); test/unit/job-fields.test.ts checks that a difference in any one
 * field fails it, so a new field cannot be left out.
 * @internal
 */
export function sameSharedFields(j: NewJob, first: NewJob): boolean {
  return (
    j.type === first.type &&
    j.queue === first.queue &&
    j.priority === first.priority &&
    j.weight === first.weight &&
    j.runAt === first.runAt &&
    j.expiresAt === first.expiresAt &&
    j.maxAttempts === first.maxAttempts &&
    j.backoff === first.backoff &&
    j.retryQueue === first.retryQueue &&
    j.delivery === first.delivery &&
    j.timeoutMs === first.timeoutMs &&
    j.uniqueKey === first.uniqueKey &&
    j.owner === first.owner &&
    j.dependsOn === first.dependsOn &&
    j.onDependencyFailure === first.onDependencyFailure &&
    j.key === first.key &&
    j.debounceKey === first.debounceKey
  );
}

/**
 * Whether nothing ties `j` to another job at insert: no unique key, no dependencies, no debounce
 * key. Only such jobs take the stores' bulk fast paths (SQLite's uniform chunks, Redis's "u"
 * layout, PostgreSQL's insert without ON CONFLICT).
 * @internal
 */
export function standsAlone(j: NewJob): boolean {
  return j.uniqueKey === null && j.dependsOn === null && j.debounceKey === null;
}

/**
 * Whether every job of `jobs` has every field of the first but the id and the payload
 * ({@link sameSharedFields}): a bulk insert then sends those two per job and the rest once, on
 * every store (PostgreSQL's insertUniform, Redis's "u" layout; SQLite checks chunk by chunk).
 * @internal
 */
export function shareAllButIdAndPayload(jobs: readonly NewJob[]): boolean {
  const first = jobs[0];
  if (first === undefined) return false;
  for (let i = 1; i < jobs.length; i++) if (!sameSharedFields(jobs[i]!, first)) return false;
  return true;
}

/**
 * The fields both job tables have but the state: what moving a job between them copies, in table
 * order (the statements set state, result and finished_at themselves). Each SQL store's
 * `{{sharedColumns}}` fragment lists their columns, and the `@sharedValues` markers of its
 * queries/*.sql a value for each (scripts/job-field-markers.ts).
 * @internal
 */
export const SHARED_FIELDS: readonly JobField[] = Object.freeze(
  JOB_FIELDS.filter((x) => x.hot && x.done && x.name !== "state"),
);

/**
 * The fields of the public {@link Job}, in order: what the HTTP API's Job schema lists as
 * required (with `duplicate` on enqueue replies besides).
 * @since 0.1.0
 */
export const PUBLIC_JOB_FIELDS: readonly (keyof Job)[] = Object.freeze(
  JOB_FIELDS.filter((x) => x.public).map((x) => x.name as keyof Job),
);

/**
 * What a summary read (ListParams.summary) gives for each field a JobSummary leaves out, in place
 * of reading it: its stored text as toJob reads it cheaply, or null. The Queue drops these fields.
 * @internal
 */
export const SUMMARY_PLACEHOLDERS: ReadonlyMap<string, string | null> = new Map<
  (typeof SUMMARY_LEAVES_OUT)[number],
  string | null
>([
  ["payload", "null"],
  ["checkpoint", null],
  ["result", null],
  ["errors", "[]"],
  ["dependsOn", null],
]);
if (SUMMARY_LEAVES_OUT.some((f) => !SUMMARY_PLACEHOLDERS.has(f))) {
  throw new Error("job-fields.ts: SUMMARY_PLACEHOLDERS must give every field of SUMMARY_LEAVES_OUT");
}

/**
 * A store's SQL for a summary read's placeholder of `field` (SUMMARY_PLACEHOLDERS), or undefined
 * for a field a summary keeps. `text` quotes a text, `nullText` is a NULL of text affinity.
 * @internal
 */
export function summaryPlaceholder(
  field: JobField,
  text: (t: string) => string,
  nullText: string,
): string | undefined {
  const value = SUMMARY_PLACEHOLDERS.get(field.name);
  if (value === undefined) return undefined;
  return value === null ? nullText : text(value);
}

/**
 * A SQL select list of the job's columns from one table, in record order, each read under its
 * record name; a column the table lacks reads as `nullOf(field)`.
 * @param quote - how the store writes an alias that differs from its column.
 * @internal
 */
export function selectList(
  table: "hot" | "done",
  nullOf: (field: JobField) => string,
  quote: (name: string) => string,
  alias?: string,
  /** An expression to read a field by instead of its column (a store that keeps it elsewhere). */
  expression?: (field: JobField) => string | undefined,
): string {
  return wrapList(
    JOB_FIELDS.map((x) => {
      if (!x[table]) return `${nullOf(x)} AS ${x.name === x.column ? x.name : quote(x.name)}`;
      const own = expression?.(x);
      if (own !== undefined) return `${own} AS ${quote(x.name)}`;
      const column = alias ? `${alias}.${x.column}` : x.column;
      return x.name === x.column ? column : `${column} AS ${quote(x.name)}`;
    }),
  );
}

/**
 * Comma-separated, wrapped near 100 characters with an indent of two, as the SQL files are.
 * @param start - the column the list starts at on its first line.
 * @param indent - what the lines after the first start with.
 * @internal
 */
export function wrapList(items: readonly string[], start = 0, indent = "  "): string {
  const lines: string[] = [];
  let line = "";
  for (let i = 0; i < items.length; i++) {
    const item = items[i] + (i < items.length - 1 ? "," : "");
    const width = lines.length === 0 ? start + line.length : line.length;
    if (line === "") line = lines.length === 0 ? item : `${indent}${item}`;
    else if (width + 1 + item.length <= 100) line += ` ${item}`;
    else {
      lines.push(line);
      line = `${indent}${item}`;
    }
  }
  lines.push(line);
  return lines.join("\n");
}
