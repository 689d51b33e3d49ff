/**
 * A claimed job read as a few columns rather than the record's 32: what the SQL stores' claims
 * return (sqlite/pending-row.ts, postgres/claimed-row.ts).
 *
 * Both drivers build each row cell by cell: better-sqlite3 through V8's API (on Node 20 by its
 * slow path, a property lookup per cell), pg by slicing and decoding each field's text. A claimed
 * job is nearly always a new one of its type, whose fields mostly still hold what a new job starts
 * with ({@link JobField.initial}: no checkpoint, no errors, no key, …). So a claim reads as
 * columns only the fields that differ from job to job or type to type (the store's core list),
 * takes those it knows (the state, the lease it grants) from itself, and packs every other field
 * into one `rest` column: NULL while each holds its initial value, else a JSON array of them, in
 * record order, which costs a JSON parse. The lists come from {@link JOB_FIELDS}, so a new field
 * lands in `rest` by itself.
 * @module
 */
import type { JobRecord } from "../job.js";
import { JOB_FIELDS, type JobField } from "../job-fields.js";

/** What a job without a backoff policy of its own stores: the default policy's text. */
export const DEFAULT_BACKOFF_TEXT = JOB_FIELDS.find((f) => f.name === "backoff")!.initial as string;

/** A SQL literal for a field's initial value. */
export const sqlLiteral = (v: string | number | null): string =>
  v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replace(/'/g, "''")}'`;

/**
 * The hot fields a packed row leaves to `rest`: every field of the hot table but the `core` ones
 * (columns of their own) and the `known` ones (the claim supplies them). Each must have an initial
 * value to compare against.
 */
export function restFields(
  core: readonly (keyof JobRecord)[],
  known: readonly (keyof JobRecord)[],
): JobField[] {
  const rest = JOB_FIELDS.filter((f) => f.hot && !core.includes(f.name) && !known.includes(f.name));
  for (const f of rest) {
    if (f.initial === undefined || f.initial === "now") {
      throw new Error(
        `packed-row.ts: ${f.name} has no initial value to pack against; read it as a core column`,
      );
    }
  }
  return rest;
}

/**
 * The `rest` column's expression: NULL when every field of `rest` holds its initial value, else
 * `array(…)` of them (SQLite's `json_array`, PostgreSQL's `json_build_array(…)::text`).
 */
export function restColumn(
  rest: readonly JobField[],
  column: (f: JobField) => string,
  array: (items: string) => string,
): string {
  const initial = rest.map((f) =>
    f.initial === null ? `${column(f)} IS NULL` : `${column(f)} = ${sqlLiteral(f.initial!)}`,
  );
  return `CASE WHEN ${initial.join(" AND ")} THEN NULL ELSE ${array(rest.map(column).join(", "))} END`;
}

/** `rest` as the initial values, shared by every row whose `rest` is NULL. */
export function restInitials(rest: readonly JobField[]): readonly unknown[] {
  return Object.freeze(rest.map((f) => f.initial));
}

/**
 * Checks, when a store loads, a decoder written out by hand against its lists: fed a row whose
 * every core value is its field's name and whose `rest` names its fields, the record must hold
 * each field's own name, or what `known` says for the fields the claim supplies.
 */
export function checkDecoder(
  where: string,
  decode: (row: unknown[]) => JobRecord,
  core: readonly (keyof JobRecord)[],
  rest: readonly JobField[],
  known: ReadonlyMap<keyof JobRecord, unknown>,
): void {
  const probe = decode([...core, JSON.stringify(rest.map((f) => f.name))]) as unknown as Record<
    string,
    unknown
  >;
  const keys = Object.keys(probe);
  const wrong = JOB_FIELDS.filter(
    (f, i) =>
      keys[i] !== f.name ||
      (known.has(f.name) ? probe[f.name] !== known.get(f.name) : probe[f.name] !== f.name),
  );
  if (wrong.length > 0 || keys.length !== JOB_FIELDS.length) {
    throw new Error(`${where} does not read ${wrong.map((f) => f.name).join(", ")} where its lists put it`);
  }
}
