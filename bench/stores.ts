/**
 * How the bench gets databases from a store: every scenario runs on a fresh SQLite file,
 * PostgreSQL schema or Redis key prefix, thrown away afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openQueue, type Queue } from "../src/index.js";
import { POSTGRES_TARGETS, REDIS_TARGETS, SQLITE_TARGETS, type Targets } from "./targets.js";

/** A fresh, empty database for one scenario, and how to throw it away. */
export interface Database {
  url: string;
  dispose(): void | Promise<void>;
  /**
   * Lets the store finish the housekeeping a bulk load set off before a measurement (PostgreSQL:
   * VACUUM ANALYZE of every table of the schema and a checkpoint, which autovacuum would
   * otherwise run during the drain).
   */
  settle?(): Promise<void>;
  /**
   * How many times autovacuum / autoanalyze have processed the schema's tables so far
   * (PostgreSQL), so a scenario can say whether housekeeping ran inside a measured window.
   */
  housekeeping?(): Promise<{ vacuums: number; analyzes: number }>;
}

/** How the bench gets databases from a store. Postgres (a fresh schema) and Redis (a fresh key prefix) plug in here. */
export interface BenchStore {
  name: string;
  targets: Targets;
  fresh(label: string): Database;
  /** The server's memory in use, in bytes, for the memory scenario (Redis: INFO used_memory). */
  usedMemory?(): Promise<number>;
  /** Closes what the bench opened to talk to the store itself. */
  close?(): Promise<void>;
  /**
   * The store server's process name (`/proc/<pid>/comm`) when it runs on this machine, so drains
   * can report its CPU time beside the worker's (see `serverCpuMs` in cpu.ts).
   */
  serverProcess?: RegExp;
}

/** Opens a queue on `db` for `fn` and closes it afterwards. */
export async function withQueue<T>(db: Database, fn: (q: Queue) => Promise<T>): Promise<T> {
  const q = await openQueue(db.url);
  try {
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** Whether a URL names this machine. */
const isLocal = (url: URL) => ["127.0.0.1", "localhost", "[::1]", ""].includes(url.hostname);

/** The {@link BenchStore} for a `--store` value (already checked by options.ts). */
export function benchStore(spec: string): BenchStore {
  if (spec === "sqlite" || spec.startsWith("sqlite:")) {
    return {
      name: "sqlite",
      targets: SQLITE_TARGETS,
      fresh(label) {
        const dir = mkdtempSync(join(tmpdir(), `errand-bench-${label}-`));
        return {
          url: `sqlite:${join(dir, "bench.db")}`,
          dispose: () => rmSync(dir, { recursive: true, force: true }),
        };
      },
    };
  }
  if (spec === "postgres" || /^postgres(ql)?:\/\//.test(spec)) return postgresBench(spec);
  if (spec === "redis" || spec.startsWith("redis://") || spec.startsWith("rediss://"))
    return redisBench(spec);
  throw new Error(`unknown store ${spec}`); // storeSpec() let it through
}

/**
 * PostgreSQL: each scenario gets a fresh schema (`--store postgres` is the local test database,
 * or give a `postgres://` URL), dropped afterwards.
 */
function postgresBench(spec: string): BenchStore {
  const base = new URL(spec === "postgres" ? "postgres://postgres@127.0.0.1:5432/test" : spec);
  let admin: import("pg").Pool | undefined;
  const pool = async () => {
    if (!admin) {
      const { default: pg } = await import("pg");
      admin = new pg.Pool({ connectionString: base.toString(), max: 1 });
    }
    return admin;
  };
  return {
    name: "postgres",
    targets: POSTGRES_TARGETS,
    serverProcess: isLocal(base) ? /^postgres$/ : undefined,
    fresh(label) {
      const schema = `errand_bench_${label.replace(/[^a-z0-9_]/g, "_")}_${Math.random().toString(36).slice(2, 8)}`;
      const url = new URL(base);
      url.searchParams.set("schema", schema);
      return {
        url: url.toString(),
        async dispose() {
          await (await pool()).query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        },
        async settle() {
          const db = await pool();
          // Every table the load wrote (a million blocked jobs also make a million dependency
          // edges): autovacuum would otherwise take them on during the drain.
          const { rows } = await db.query<{ name: string }>(
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
            [schema],
          );
          for (const { name } of rows) await db.query(`VACUUM (ANALYZE) "${schema}"."${name}"`);
          await db.query("CHECKPOINT");
        },
        async housekeeping() {
          const { rows } = await (await pool()).query(
            `SELECT coalesce(sum(autovacuum_count), 0)::int AS vacuums,
               coalesce(sum(autoanalyze_count), 0)::int AS analyzes
             FROM pg_stat_user_tables WHERE schemaname = $1`,
            [schema],
          );
          return rows[0] ?? { vacuums: 0, analyzes: 0 };
        },
      };
    },
    async close() {
      await admin?.end();
    },
  };
}

/**
 * Redis: each scenario gets a fresh key prefix on the server (`--store redis` is the local one,
 * or give a `redis://` URL), deleted afterwards with SCAN (fine here, never in the store).
 */
function redisBench(spec: string): BenchStore {
  const base = new URL(spec === "redis" ? "redis://127.0.0.1:6379" : spec);
  let admin: import("ioredis").Redis | undefined;
  const client = async () => {
    if (!admin) {
      const { Redis } = await import("ioredis");
      admin = new Redis(base.toString(), { lazyConnect: true });
      await admin.connect();
    }
    return admin;
  };
  return {
    name: "redis",
    targets: REDIS_TARGETS,
    serverProcess: isLocal(base) ? /^redis-server$/ : undefined,
    fresh() {
      // As long as the default prefix ("errand"): every job's key holds it, and memory per job counts it.
      const prefix = `b${Math.random().toString(36).slice(2, 7)}`;
      const url = new URL(base);
      url.searchParams.set("prefix", prefix);
      return {
        url: url.toString(),
        async dispose() {
          const redis = await client();
          let cursor = "0";
          do {
            const [next, keys] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 5000);
            // DEL, not UNLINK: memory is freed before the next scenario, which may measure it.
            if (keys.length > 0) await redis.del(...keys);
            cursor = next;
          } while (cursor !== "0");
        },
      };
    },
    async usedMemory() {
      const redis = await client();
      for (;;) {
        const info = await redis.info("memory");
        // Objects another client UNLINKed are freed in the background; wait until they are.
        if (/^lazyfree_pending_objects:0\b/m.test(info)) return Number(/^used_memory:(\d+)/m.exec(info)![1]);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      admin?.disconnect();
    },
  };
}
