/**
 * `errand/sqlite`: the embedded SQLite store.
 * @packageDocumentation
 */
export { SqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
