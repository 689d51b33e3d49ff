/**
 * What a PostgreSQL store derives from its statements' texts (their one-type and fair forms, the
 * inserts without ON CONFLICT, the claims' literal-limit forms), made once per store: keyed by the
 * store's rendered statements, which name its schema, and let go with them.
 * @module
 */
import type { StatementName } from "../generated/postgres-queries.js";

/** A store's rendered statements (sql-template.ts renderStatements). */
export type StoreStatements = Readonly<Record<StatementName, string>>;

/** `make`, run once per store's statements; later calls with them return what it made. */
export function perStore<T>(make: (sql: StoreStatements) => T): (sql: StoreStatements) => T {
  const made = new WeakMap<StoreStatements, T>();
  return (sql) => {
    let value = made.get(sql);
    if (value === undefined) {
      value = make(sql);
      made.set(sql, value);
    }
    return value;
  };
}
