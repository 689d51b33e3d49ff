import { ErrandError } from "./errors.js";
import type { Store } from "./store/store.js";

/**
 * Opens a store from its URL.
 * - `sqlite:./path.db`, `sqlite:/abs/path.db`, `sqlite:///abs/path.db`, `sqlite::memory:`;
 *   `?synchronous=full` for power-loss durability.
 * - `redis://[[user]:password@]host[:port][/db]`, `rediss://…` (TLS); `?prefix=name` for the key
 *   prefix (default `errand`). Needs `ioredis`; options beyond the URL: `RedisStore` in `errand/redis`.
 * - `postgres://user:password@host:5432/db`, `postgresql://…`; `?schema=name` for the schema
 *   errand's tables live in (default `errand`), migrated on open; any other parameter goes to
 *   `pg` (`sslmode`, `application_name`, …). Needs `pg`; options beyond the URL: `PostgresStore`
 *   in `errand/postgres`.
 * @throws ErrandError `INVALID_STORE_URL`
 * @since 0.1.0
 */
export async function openStore(url: string): Promise<Store> {
  const match = /^([a-z]+):(.*)$/i.exec(url);
  const scheme = match?.[1]?.toLowerCase();
  if (scheme === "sqlite" || scheme === "file") {
    const [pathPart, query = ""] = match![2]!.split("?", 2) as [string, string?];
    const filename = pathPart.startsWith("//") ? pathPart.slice(2) : pathPart;
    if (!filename)
      throw new ErrandError("INVALID_STORE_URL", `store URL ${JSON.stringify(url)} names no file`);
    const params = new URLSearchParams(query);
    const synchronous = params.get("synchronous") ?? "normal";
    if (synchronous !== "normal" && synchronous !== "full") {
      throw new ErrandError(
        "INVALID_STORE_URL",
        `synchronous must be "normal" or "full", got ${JSON.stringify(synchronous)}`,
      );
    }
    const { SqliteStore } = await import("./store/sqlite/sqlite-store.js");
    return SqliteStore.open({ filename, synchronous });
  }
  if (scheme === "redis" || scheme === "rediss") {
    // Loaded on demand: `import "errand"` stays free of ioredis.
    const { RedisStore } = await import("./store/redis/redis-store.js");
    return RedisStore.open({ url });
  }
  if (scheme === "postgres" || scheme === "postgresql") {
    return openPostgres(url);
  }
  throw new ErrandError(
    "INVALID_STORE_URL",
    `unknown store URL ${JSON.stringify(url)}; expected sqlite:./file.db (or sqlite::memory:), postgres://user:password@host:5432/db (or postgresql://), or redis://host:6379 (or rediss://)`,
  );
}

async function openPostgres(url: string): Promise<Store> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new ErrandError("INVALID_STORE_URL", `store URL ${JSON.stringify(url)} is not a valid URL`, {
      cause,
    });
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  parsed.searchParams.delete("schema");
  // Loaded on demand: `import "errand"` stays free of pg.
  let module: typeof import("./store/postgres/postgres-store.js");
  try {
    module = await import("./store/postgres/postgres-store.js");
  } catch (cause) {
    throw new ErrandError("INVALID_STORE_URL", "the PostgreSQL store needs the pg package: npm install pg", {
      cause,
    });
  }
  try {
    return await module.PostgresStore.open({ connectionString: parsed.toString(), schema });
  } catch (error) {
    if (error instanceof ErrandError && error.code === "INVALID_OPTION") {
      throw new ErrandError("INVALID_STORE_URL", `store URL: ${error.message}`, { cause: error });
    }
    throw error;
  }
}
