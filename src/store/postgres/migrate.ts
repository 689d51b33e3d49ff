/**
 * Migrations of the PostgreSQL store: the ledger, the advisory lock, and `migrate()` for deploy steps.
 * @module
 */
import type pg from "pg";
import { ErrandError } from "../../errors.js";
import { migrations } from "../generated/postgres-migrations.js";
import { type Queryable, storeError, withClient } from "./connection.js";
import { checkOptions, checkSchemaName, type PostgresStoreOptions } from "./options.js";
import { pgModule } from "./pg.js";

/** The newest migration this errand knows. */
export const LATEST_VERSION = migrations[migrations.length - 1]?.version ?? 0;

/** First key of the two-key advisory locks errand takes for migrations ("errm"). */
const MIGRATE_LOCK = 0x6572726d;

/** What {@link migrateSchema} did. */
export interface MigrateResult {
  /** The schema's version before. */
  from: number;
  /** Its version now ({@link LATEST_VERSION}). */
  to: number;
  /** File names of the migrations applied, in order. */
  applied: string[];
}

/**
 * The version recorded in the schema's `errand_migration` ledger; 0 when errand was never
 * installed there.
 */
export async function schemaVersion(db: Queryable, schema: string): Promise<number> {
  const { rows } = await db.query({
    text: "SELECT to_regclass($1) IS NOT NULL AS present",
    values: [`"${schema}".errand_migration`],
  });
  if (!rows[0]?.present) return 0;
  const v = await db.query(
    `SELECT coalesce(max(version), 0)::integer AS v FROM "${schema}".errand_migration`,
  );
  return v.rows[0].v as number;
}

/**
 * Brings a schema up to {@link LATEST_VERSION}: creates it if needed and applies, in order and in
 * one transaction, the numbered migrations its ledger does not list. A transaction-scoped
 * advisory lock, keyed by the schema name, makes concurrent starts safe: the second waits, then
 * finds nothing left to do. Forward only: a schema newer than this errand is refused.
 * @param client - a dedicated connection (not a pool: the lock and the transaction need one session).
 * @throws ErrandError `STORE_ERROR` when the schema is newer than this errand.
 */
export async function migrateSchema(client: pg.ClientBase, schema: string): Promise<MigrateResult> {
  checkSchemaName(schema);
  const before = await schemaVersion(client, schema);
  if (before === LATEST_VERSION) return { from: before, to: before, applied: [] };
  if (before > LATEST_VERSION) throw tooNew(schema, before);
  await client.query("BEGIN");
  try {
    await client.query({
      text: "SELECT pg_advisory_xact_lock($1, hashtext($2))",
      values: [MIGRATE_LOCK, schema],
    });
    // Only when missing: CREATE SCHEMA needs CREATE on the database even if the schema exists, and
    // a role that owns its schema need not have it.
    const { rows } = await client.query({
      text: "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS present",
      values: [schema],
    });
    if (!rows[0]?.present) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    // Migrations name their objects without a schema; they land in this one.
    await client.query(`SET LOCAL search_path TO "${schema}"`);
    await client.query(`CREATE TABLE IF NOT EXISTS errand_migration (
      version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
    const current = await schemaVersion(client, schema);
    if (current > LATEST_VERSION) throw tooNew(schema, current);
    const applied: string[] = [];
    for (const m of migrations) {
      if (m.version <= current) continue;
      await client.query(m.sql);
      await client.query({
        text: "INSERT INTO errand_migration (version, name, applied_at) VALUES ($1, $2, $3)",
        values: [m.version, m.name, Date.now()],
      });
      applied.push(m.name);
    }
    await client.query("COMMIT");
    return { from: current, to: LATEST_VERSION, applied };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

function tooNew(schema: string, version: number): ErrandError {
  return new ErrandError(
    "STORE_ERROR",
    `schema "${schema}" is at version ${version}, newer than this errand (${LATEST_VERSION}); upgrade errand`,
  );
}

/**
 * Brings errand's schema in a PostgreSQL database up to this errand's version, without opening a
 * store: for a deploy step, before workers start with `migrate: false`.
 * @example `await migrate({ connectionString: process.env.DATABASE_URL, schema: "errand" })`
 * @since 0.1.0
 */
export async function migrate(
  options: Pick<PostgresStoreOptions, "connectionString" | "pool" | "schema">,
): Promise<MigrateResult> {
  const o = checkOptions(options);
  const pool = o.pool ?? new pgModule.Pool({ connectionString: o.connectionString, max: 1 });
  try {
    return await migratePool(pool, o.schema);
  } catch (error) {
    throw storeError(error, `cannot migrate schema "${o.schema}"`);
  } finally {
    if (!o.pool) await pool.end();
  }
}

/** {@link migrateSchema} on a connection of `pool`, taken for the purpose and given back. */
export function migratePool(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  return withClient(pool, (c) => migrateSchema(c, schema));
}

/**
 * What opening a store does about its schema: migrate it, or (`migrate: false`) refuse to open
 * unless it is at this errand's version already.
 * @throws ErrandError `STORE_ERROR` when the schema is newer than this errand (upgrade errand), or
 *   (`migrate: false`) older than it (run migrate()).
 */
export async function openSchema(pool: pg.Pool, schema: string, migrate: boolean): Promise<void> {
  if (migrate) await migratePool(pool, schema);
  else {
    const version = await schemaVersion(pool, schema);
    if (version > LATEST_VERSION) throw tooNew(schema, version);
    if (version !== LATEST_VERSION) {
      throw new ErrandError(
        "STORE_ERROR",
        `schema "${schema}" is at version ${version}, this errand needs ${LATEST_VERSION}: run migrate() or open with migrate: true`,
      );
    }
  }
}
