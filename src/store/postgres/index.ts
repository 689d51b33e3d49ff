/**
 * `errand/postgres`: the PostgreSQL store. Needs the `pg` package (an optional peer dependency).
 * @example
 * ```ts
 * import { openQueue } from "errand";
 * const queue = await openQueue("postgres://app@db:5432/app?schema=errand");
 * // or, with your own pool:
 * import { PostgresStore, migrate } from "errand/postgres";
 * await migrate({ pool, schema: "errand" });
 * const store = await PostgresStore.open({ pool, migrate: false });
 * ```
 * @packageDocumentation
 */
export { type MigrateResult, migrate } from "./migrate.js";
export { type PostgresStoreOptions, SCHEMA_PATTERN } from "./options.js";
export { PostgresStore, type PostgresStoreEvents } from "./postgres-store.js";
