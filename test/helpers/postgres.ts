/**
 * The PostgreSQL side of the tests: where the database is (ERRAND_TEST_PG_URL, default the local
 * one), a fresh schema per test, and dropping it afterwards.
 */
import pg from "pg";
import pino from "pino";
import { onTestFinished } from "vitest";
import { migrations } from "../../src/store/generated/postgres-migrations.js";

/** The test database. */
export const PG_URL = process.env.ERRAND_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A logger that says nothing: tests provoke connection faults on purpose. */
export const silentLogger = pino({ level: "silent" });

/** A schema name no other test uses: `<prefix>_<random>`. */
export function freshSchema(prefix = "errand_t"): string {
  return `${prefix}_${Math.random().toString(36).slice(2, 10)}`;
}

/** A store URL for `schema` (`postgres://…?schema=…`), with extra query parameters. */
export function pgUrl(schema: string, params: Record<string, string> = {}): string {
  const url = new URL(PG_URL);
  url.searchParams.set("schema", schema);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`'s plan, as the plan tests read it. */
export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** Runs `fn` on a connection of its own, closed afterwards. */
export async function withPg<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops a test schema and everything in it. */
/** Resolves once some statement on `schema` waits for a lock (polling pg_stat_activity). */
export async function someoneWaits(schema: string): Promise<void> {
  await withPg(async (c) => {
    for (;;) {
      const { rows } = await c.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0",
        [schema],
      );
      if (rows[0].n > 0) return;
    }
  });
}

export async function dropSchema(schema: string): Promise<void> {
  await withPg((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/**
 * Terminates every backend whose application_name is `name` (how a test pulls the rug from under
 * one store without touching the others running in parallel). Returns how many it hit.
 */
export async function terminateBackends(name: string): Promise<number> {
  return withPg(async (c) => {
    const { rows } = await c.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
      [name],
    );
    return rows.filter((r) => r.ok).length;
  });
}

/**
 * `n` PostgreSQL stores on one fresh schema, as `n` processes would have (small pools, no
 * connection retries), closed and the schema dropped after the test.
 */
export async function openStores(
  n: number,
  prefix: string,
): Promise<{ schema: string; all: import("../../src/store/postgres/postgres-store.js").PostgresStore[] }> {
  const { PostgresStore } = await import("../../src/store/postgres/postgres-store.js");
  const schema = freshSchema(prefix);
  const all: Awaited<ReturnType<typeof PostgresStore.open>>[] = [];
  onTestFinished(async () => {
    for (const s of all) await s.close();
    await dropSchema(schema);
  });
  for (let i = 0; i < n; i++) {
    all.push(
      await PostgresStore.open({
        connectionString: PG_URL,
        schema,
        poolSize: 2,
        retryMs: 0,
        logger: silentLogger,
      }),
    );
  }
  return { schema, all };
}

/** A schema made by the migrations up to `version`, as an older errand left it. */
export async function schemaAt(schema: string, version: number): Promise<void> {
  await withPg(async (c) => {
    await c.query(`CREATE SCHEMA "${schema}"`);
    await c.query(`SET search_path TO "${schema}"`);
    await c.query(
      "CREATE TABLE errand_migration (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)",
    );
    for (const m of migrations.filter((x) => x.version <= version)) {
      await c.query(m.sql);
      await c.query("INSERT INTO errand_migration VALUES ($1, $2, 0)", [m.version, m.name]);
    }
  });
}
