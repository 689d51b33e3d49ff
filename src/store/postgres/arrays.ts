/**
 * Array parameters as PostgreSQL array literals made in one native call. pg turns a JS array into
 * a literal element by element (its prepareValue: a quoted, escaped string per element, then the
 * joins), which took 15–35 ms for a bulk enqueue's 20,000 ids and payloads against 1.5–10 for
 * JSON.stringify, and ~650 bytes of garbage a job for a completion batch's three arrays.
 * @module
 */

/**
 * `values` as a PostgreSQL text[] literal, made by JSON.stringify: its escapes of `"` and `\` are
 * the array literal's, and an unquoted `null` is the literal's NULL. Any other escape in the JSON
 * (a control character, a lone surrogate: never in errand's ids, payload or result JSON, which
 * hold them escaped) means something else in a literal, so such values are left to pg as they are.
 * @internal
 */
export function textArray(values: ReadonlyArray<string | null>): string | ReadonlyArray<string | null> {
  const json = JSON.stringify(values);
  // Most arrays (ids, attempts' results) hold no backslash at all: no need to run the pattern.
  return json.includes("\\") && OTHER_ESCAPE.test(json) ? values : `{${json.slice(1, -1)}}`;
}

/**
 * `values` (safe integers) as a PostgreSQL integer[] or bigint[] literal.
 * @internal
 */
export function integerArray(values: readonly number[]): string {
  return `{${values.join(",")}}`;
}

/**
 * An escape in JSON text other than `\"` or `\\`: a backslash that starts an escape (after an even
 * run of backslashes) followed by anything else.
 */
const OTHER_ESCAPE = /(?<!\\)(?:\\\\)*\\[^"\\]/;
