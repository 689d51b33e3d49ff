// The job-field markers of queries/*.sql and lua/*.lua, expanded from the job's field table
// (src/job-fields.ts) when `npm run gen` embeds the files, so that adding a field to the table
// changes the lists of the job's fields there too. A marker names what it stands for, so the
// source reads on its own:
//
// - SQLite (sqlite/queries/enqueueMany.sql):
//   - /*@insertColumns*/  the columns an insert sets, in table order (a NewJob's, the state and
//                         created_at), wrapped as the file is;
//   - /*@insertRow*/      one row of values for them: a ? each, the state 'pending';
//   - /*@insertRows N*/   N such rows, one per line;
//   - /*@insertRowsUniform N*/  N rows for jobs that share every field but the id and the
//                         payload: a ? for those two, and the same named parameter (@column) in
//                         every row for each other column, bound once per statement;
//   - /*@sharedValues column = expression; …*/  as PostgreSQL's (below). The statements bind `?`
//                         by position, so the expressions with a `?` must be named in the table's
//                         order, the order their `?`s take in the statement.
// - PostgreSQL (postgres/queries), where a NewJob's fields are the insert's parameters after the
//   fixed ones ($1 now, $2 the NOTIFY tag, $3 the batch size; see postgres/columns.ts):
//   - /*@insertValues unnest|settled|uniform|one*/  the values of an insert's columns
//                         (INSERT_FIELDS): each field from the unnest row u (settled: the state
//                         too), only the id and payload from it and the rest one parameter each,
//                         or every field a parameter;
//   - /*@unnestArrays [field …]*/, /*@unnestColumns [field …]*/  the NewJob fields' array
//                         parameters ($n::type[]) and their columns (all, or those named);
//   - /*@param field*/    a NewJob field's parameter ($n);
//   - /*@afterFields n*/  the n-th parameter after the job's fields;
//   - /*@sharedValues column = expression; …*/  a value for each column of {{sharedColumns}}: the
//                         column itself, or the expression given for it.
// - Lua (redis/lua), whole lines:
//   - --@job-defaults     the defaults a job's hash leaves out (DEFAULT_PRIORITY, DEFAULT_WEIGHT,
//                         DEFAULT_MAX_ATTEMPTS), from JOB_DEFAULTS;
//   - --@new-job-fields   JOB_FIELDS, how many ARGV entries one new job takes;
//   - --@error-history    MAX_ERROR_HISTORY, how many entries a job's error history keeps (from
//                         src/validation.ts, as the SQL stores' {{errorsWithRoom}} and
//                         {{appendedErrors}} fragments take it).
//
// An unknown marker throws, naming the file.
import {
  JOB_DEFAULTS,
  JOB_FIELDS,
  type JobField,
  NEW_JOB_FIELDS,
  SHARED_FIELDS,
  wrapList,
} from "../src/job-fields.js";
import { INSERT_FIELDS, INSERT_FIXED_PARAMS } from "../src/store/postgres/columns.js";
import { MAX_ERROR_HISTORY } from "../src/validation.js";

/** The columns an SQLite insert sets, in table order (src/store/sqlite/statements.ts INSERT_COLUMNS). */
const SQLITE_INSERT = JOB_FIELDS.filter((x) => x.newJob || x.name === "state" || x.name === "createdAt");

/** One SQLite insert row: a `?` per column, the state's initial value written out. */
const sqliteRow = (): string =>
  `(${SQLITE_INSERT.map((x) => (x.name === "state" ? `'${x.initial}'` : "?")).join(", ")})`;

/** One SQLite insert row of a uniform chunk: `?` for the id and the payload, `@column` for the rest. */
const sqliteUniformRow = (): string =>
  `(${SQLITE_INSERT.map((x) =>
    x.name === "state" ? `'${x.initial}'` : x.name === "id" || x.name === "payload" ? "?" : `@${x.column}`,
  ).join(", ")})`;

/**
 * Expands the SQL markers of one store's query file.
 * @param where the file, for errors.
 */
export function expandSqlMarkers(store: "sqlite" | "postgres", text: string, where: string): string {
  return text.replace(
    /\/\*@([A-Za-z]+)(?:\s+([^*]*?))?\s*\*\//g,
    (marker, name: string, arg = "", at: number) => {
      const fail = (why: string): never => {
        throw new Error(`${where}: ${marker}: ${why}`);
      };
      const expansion =
        store === "sqlite" ? sqlite(name, arg, text, at, fail) : postgres(name, arg, text, at, fail);
      return expansion ?? fail("unknown marker");
    },
  );
}

type Fail = (why: string) => never;

function sqlite(name: string, arg: string, text: string, at: number, fail: Fail): string | undefined {
  if (name === "insertColumns")
    return wrapAt(
      text,
      at,
      SQLITE_INSERT.map((x) => x.column),
    );
  if (name === "insertRow") return sqliteRow();
  if (name === "insertRows") {
    const n = Number(arg);
    if (!Number.isInteger(n) || n < 1) fail("needs a row count");
    return Array.from({ length: n }, sqliteRow).join(`,\n${" ".repeat(column(text, at))}`);
  }
  if (name === "insertRowsUniform") {
    const n = Number(arg);
    if (!Number.isInteger(n) || n < 1) fail("needs a row count");
    return Array.from({ length: n }, sqliteUniformRow).join(`,\n${" ".repeat(column(text, at))}`);
  }
  if (name === "sharedValues") {
    const overrides = sharedOverrides(arg, fail);
    // The list puts the values in table order; a marker naming its `?`s in another order would
    // read as binding them in that order while the statement binds them in this one.
    const named = [...overrides].filter(([, value]) => value.includes("?")).map(([col]) => col);
    const bound = SHARED_FIELDS.map((f) => f.column).filter((c) => named.includes(c));
    if (named.join() !== bound.join())
      fail(`name the values with ? in the table's order: ${bound.join(", ")}`);
    return sharedValues(text, at, overrides);
  }
  return undefined;
}

/** A `@sharedValues` marker's `column = expression` pairs, in the marker's order. */
function sharedOverrides(arg: string, fail: Fail): Map<string, string> {
  const overrides = new Map<string, string>();
  for (const pair of arg.split(";").filter((p) => p.trim())) {
    const eq = pair.indexOf("=");
    const col = pair.slice(0, eq).trim();
    if (eq < 0 || !SHARED_FIELDS.some((f) => f.column === col)) fail(`${pair.trim()} names no shared column`);
    if (overrides.has(col)) fail(`${col} is given twice`);
    overrides.set(
      col,
      pair
        .slice(eq + 1)
        .replace(/\s+/g, " ")
        .trim(),
    );
  }
  return overrides;
}

/** A value for each column of `{{sharedColumns}}`: the column itself unless `overrides` gives one. */
function sharedValues(text: string, at: number, overrides: ReadonlyMap<string, string>): string {
  return wrapAt(
    text,
    at,
    SHARED_FIELDS.map((f) => overrides.get(f.column) ?? f.column),
  );
}

/** A NewJob field's insert parameter: after the fixed ones, in table order. */
function pgParam(name: string, fail: Fail): string {
  const i = NEW_JOB_FIELDS.indexOf(name as (typeof NEW_JOB_FIELDS)[number]);
  if (i < 0) fail(`${name} is not a NewJob field`);
  return `$${INSERT_FIXED_PARAMS + 1 + i}`;
}

/** PostgreSQL's type for a field's parameter. */
const pgType = (f: JobField) => (f.kind === "int" || f.kind === "time" ? "bigint" : "text");

/** The NewJob fields a marker names (all when it names none), in table order. */
function newJobFields(arg: string, fail: Fail): JobField[] {
  const names = arg.split(/\s+/).filter(Boolean);
  for (const n of names) pgParam(n, fail);
  return JOB_FIELDS.filter((f) => f.newJob && (names.length === 0 || names.includes(f.name)));
}

function postgres(name: string, arg: string, text: string, at: number, fail: Fail): string | undefined {
  if (name === "param") return pgParam(arg, fail);
  if (name === "unnestArrays") {
    return wrapAt(
      text,
      at,
      newJobFields(arg, fail).map((f) => `${pgParam(f.name, fail)}::${pgType(f)}[]`),
    );
  }
  if (name === "unnestColumns")
    return wrapAt(
      text,
      at,
      newJobFields(arg, fail).map((f) => f.column),
    );
  if (name === "afterFields") {
    // The n-th parameter after the job's fields (what a statement takes besides them).
    const n = Number(arg);
    if (!Number.isInteger(n) || n < 1) fail("needs a position from 1");
    return `$${INSERT_FIXED_PARAMS + NEW_JOB_FIELDS.length + n}`;
  }
  if (name === "insertValues") {
    // unnest: every field from the unnest row `u`; settled: the same with the state from it too;
    // uniform: the id and payload from it, the rest one parameter each; one: every field a parameter.
    if (arg !== "unnest" && arg !== "settled" && arg !== "uniform" && arg !== "one")
      fail("give unnest, settled, uniform or one");
    const perRow = (f: JobField) =>
      arg === "unnest" ||
      arg === "settled" ||
      (arg === "uniform" && (f.name === "id" || f.name === "payload"));
    const values = INSERT_FIELDS.map((f) =>
      f.name === "state"
        ? arg === "settled"
          ? "u.state"
          : `'${f.initial}'`
        : f.name === "createdAt"
          ? "$1"
          : perRow(f)
            ? `u.${f.column}`
            : `${pgParam(f.name, fail)}::${pgType(f)}`,
    );
    return wrapAt(text, at, values);
  }
  // `column = expression; …`: the expression where the job's own value is not copied.
  if (name === "sharedValues") return sharedValues(text, at, sharedOverrides(arg, fail));
  return undefined;
}

/** Expands the Lua markers (whole lines) of one script or include. */
export function expandLuaMarkers(text: string, where: string): string {
  return text.replace(/^--@(?!include\b)([a-z-]+)[ \t]*$/gm, (marker, name: string) => {
    if (name === "job-defaults") {
      return [
        `local DEFAULT_PRIORITY = "${JOB_DEFAULTS.priority}"`,
        `local DEFAULT_WEIGHT = "${JOB_DEFAULTS.weight}"`,
        `local DEFAULT_MAX_ATTEMPTS = "${JOB_DEFAULTS.maxAttempts}"`,
      ].join("\n");
    }
    if (name === "new-job-fields") {
      return `local JOB_FIELDS = ${NEW_JOB_FIELDS.length}`;
    }
    if (name === "error-history") {
      return `local MAX_ERROR_HISTORY = ${MAX_ERROR_HISTORY}`;
    }
    throw new Error(`${where}: ${marker}: unknown marker`);
  });
}

/** The column of offset `at` in its line. */
function column(text: string, at: number): number {
  return at - (text.lastIndexOf("\n", at - 1) + 1);
}

/**
 * {@link wrapList}, with its first line starting where the marker does and the others indented
 * two more than the marker's line.
 */
function wrapAt(text: string, at: number, items: readonly string[]): string {
  const lineStart = text.lastIndexOf("\n", at - 1) + 1;
  const indent = /^ */.exec(text.slice(lineStart))![0];
  return wrapList(items, at - lineStart, `${indent}  `);
}
