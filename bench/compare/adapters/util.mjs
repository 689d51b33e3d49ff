/**
 * Clean-up shared by the adapters (each run's schema or key prefix is removed afterwards), and
 * run.mjs's ANALYZE. The drivers are imported only here, when called (by run.mjs), so a worker
 * process that measures one queue's memory does not hold the other store's driver.
 */

/** Runs one statement on a connection of its own. */
async function pgRun(pgUrl, sql) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Drops a PostgreSQL schema and everything in it. */
export const dropSchema = (pgUrl, schema) => pgRun(pgUrl, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);

/**
 * The whole database's statistics, taken now (every schema: each queue's own is in it), as
 * autovacuum would take them after a bulk enqueue (run.mjs's --analyze).
 */
export const analyzeDatabase = (pgUrl) => pgRun(pgUrl, "ANALYZE");

/** Deletes every Redis key that starts with `prefix` (SCAN, never KEYS: the server may be shared). */
export async function flushPrefix(redisUrl, prefix) {
  const { Redis } = await import("ioredis");
  const redis = new Redis(redisUrl, { lazyConnect: true });
  await redis.connect();
  try {
    const glob = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`;
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", glob, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/** A namespace (schema, key prefix) that no other run uses: lower case, digits and `_`. */
export const freshName = (tag) => `${tag}_${Math.random().toString(36).slice(2, 10)}`;
