/**
 * The conformance suite's view of a store: how to make a fresh one per test (its own file,
 * schema or key prefix, so tests run in parallel), and what it can do. Later stores add an
 * entry to BACKENDS; the suite itself does not change.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Cluster } from "ioredis";
import pg from "pg";
import { inject, onTestFinished } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { type OpenQueueOptions, Queue } from "../../src/queue.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store, StoreCapabilities } from "../../src/store/store.js";
import { dropSchema, freshSchema, PG_URL, pgUrl, silentLogger } from "../helpers/postgres.js";
import { deleteKeys, freshPrefix, keysOf, REDIS_URL, redisUrl, withRedis } from "../helpers/redis.js";
import { clusterClient } from "../helpers/redis-cluster.js";
import { selectedStoreNames } from "../helpers/stores.js";

/** A store under test, made fresh for each test. */
export interface Backend {
  name: string;
  capabilities: StoreCapabilities;
  /** A fresh, empty store (and a second connection to it, as another process would have). */
  setup(options?: SetupOptions): Promise<Bundle>;
  /**
   * Looks inside the store, beyond the Store interface, where the store has such a thing: the
   * hot set's rows by state (the table the claim index covers), sorted by state.
   */
  inspect?: {
    hotSet(bundle: Bundle): Promise<Array<{ state: string; n: number }>>;
    /** How many (fair type, key)s the store keeps a next turn for. */
    fairKeys(bundle: Bundle): Promise<number>;
  };
  /**
   * Run by the conformance suite only: its `url` cannot be handed to a child process or a server,
   * so the process and e2e suites leave it out.
   */
  conformanceOnly?: boolean;
}

export interface SetupOptions extends Omit<OpenQueueOptions, "store" | "clock"> {
  /** Start time of the bundle's ManualClock. */
  start?: number;
}

/** What each test gets (River's testBundle). */
export interface Bundle {
  store: Store;
  clock: ManualClock;
  /** A Queue on `store` with `clock`, `random` seeded unless given. */
  queue: Queue;
  /** Another connection to the same data, sharing the clock: "a second process". */
  connect(options?: Omit<OpenQueueOptions, "store" | "clock">): Promise<Queue>;
  /** Where the data lives, for child processes (a store URL). */
  url: string;
}

const sqlite: Backend = {
  name: "sqlite",
  capabilities: SqliteStore.capabilitiesFor("errand.db"),
  async setup(options = {}) {
    const dir = mkdtempSync(join(tmpdir(), "errand-test-"));
    const filename = join(dir, "errand.db");
    const clock = new ManualClock(options.start ?? Date.UTC(2026, 0, 1));
    const { start: _start, ...queueOptions } = options;
    const stores: Store[] = [];
    // Before the first open, as the other backends do: a setup whose Queue refuses its options
    // (leases.ts) has opened the store by then, and would leave it open and the directory behind.
    onTestFinished(async () => {
      for (const s of stores) await s.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    });
    const open = async (o: Omit<OpenQueueOptions, "store" | "clock">) => {
      const store = await SqliteStore.open({ filename });
      stores.push(store);
      return new Queue(store, { random: seeded(42), ...o, clock });
    };
    const queue = await open(queueOptions);
    return { store: queue.store, clock, queue, connect: (o = {}) => open(o), url: `sqlite:${filename}` };
  },
  inspect: {
    async hotSet({ url }) {
      const db = new Database(url.replace(/^sqlite:/, ""), { readonly: true });
      try {
        return db
          .prepare("SELECT state, count(*) AS n FROM errand_job GROUP BY state ORDER BY state")
          .all() as Array<{
          state: string;
          n: number;
        }>;
      } finally {
        db.close();
      }
    },
    async fairKeys({ url }) {
      const db = new Database(url.replace(/^sqlite:/, ""), { readonly: true });
      try {
        return db.prepare("SELECT count(*) FROM errand_fair_key").pluck().get() as number;
      } finally {
        db.close();
      }
    },
  },
};

/** Each test gets its own schema in the test database (ERRAND_TEST_PG_URL), dropped afterwards. */
const postgres: Backend = {
  name: "postgres",
  capabilities: PostgresStore.capabilities,
  async setup(options = {}) {
    const schema = freshSchema();
    const clock = new ManualClock(options.start ?? Date.UTC(2026, 0, 1));
    const { start: _start, ...queueOptions } = options;
    const stores: Store[] = [];
    onTestFinished(async () => {
      for (const s of stores) await s.close().catch(() => {});
      await dropSchema(schema);
    });
    const open = async (o: Omit<OpenQueueOptions, "store" | "clock">) => {
      const store = await PostgresStore.open({
        connectionString: PG_URL,
        schema,
        poolSize: 3,
        logger: silentLogger,
      });
      stores.push(store);
      return new Queue(store, { random: seeded(42), ...o, clock });
    };
    const queue = await open(queueOptions);
    return { store: queue.store, clock, queue, connect: (o = {}) => open(o), url: pgUrl(schema) };
  },
  inspect: {
    async hotSet({ url }) {
      const schema = new URL(url).searchParams.get("schema")!;
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT state, count(*)::integer AS n FROM "${schema}".errand_job GROUP BY state ORDER BY state`,
        );
        return rows as Array<{ state: string; n: number }>;
      } finally {
        await client.end();
      }
    },
    async fairKeys({ url }) {
      const schema = new URL(url).searchParams.get("schema")!;
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT count(*)::integer AS n FROM "${schema}".errand_fair_key`);
        return rows[0].n as number;
      } finally {
        await client.end();
      }
    },
  },
};

/** Each test gets its own key prefix in the test Redis (ERRAND_TEST_REDIS_URL); its keys are deleted afterwards. */
const redis: Backend = {
  name: "redis",
  capabilities: RedisStore.capabilities,
  async setup(options = {}) {
    const prefix = freshPrefix();
    const clock = new ManualClock(options.start ?? Date.UTC(2026, 0, 1));
    const { start: _start, ...queueOptions } = options;
    const stores: Store[] = [];
    onTestFinished(async () => {
      for (const s of stores) await s.close().catch(() => {});
      await deleteKeys(prefix);
    });
    const open = async (o: Omit<OpenQueueOptions, "store" | "clock">) => {
      const store = await RedisStore.open({ url: REDIS_URL, prefix });
      stores.push(store);
      return new Queue(store, { random: seeded(42), ...o, clock });
    };
    const queue = await open(queueOptions);
    return { store: queue.store, clock, queue, connect: (o = {}) => open(o), url: redisUrl(prefix) };
  },
  inspect: {
    // The hot set is what the claim and lease indexes hold: ready lanes and {p}:sched (pending),
    // {p}:lease (active: its finite scores; its sentinel, at +inf, is no job).
    async hotSet({ url }) {
      const prefix = new URL(url).searchParams.get("prefix")!;
      return withRedis(async (client) => {
        let pending = await client.zcard(`{${prefix}}:sched`);
        for (const key of await keysOf(client, prefix)) {
          if (key.startsWith(`{${prefix}}:r|`)) pending += await client.zcard(key);
        }
        const active = await client.zcount(`{${prefix}}:lease`, "-inf", "(+inf");
        return [
          { state: "active", n: active },
          { state: "pending", n: pending },
        ].filter((r) => r.n > 0);
      });
    },
    async fairKeys({ url }) {
      const prefix = new URL(url).searchParams.get("prefix")!;
      return withRedis(async (client) => {
        let n = 0;
        for (const key of await keysOf(client, prefix)) {
          if (key.startsWith(`{${prefix}}:fk|`)) n += await client.hlen(key);
        }
        return n;
      });
    },
  },
};

/**
 * The Redis store on a real three-master Redis Cluster (started once per run by
 * test/setup/global.ts): every key of a store shares its `{prefix}` hash tag, so each script runs
 * on the one node that owns the slot, and wake-ups cross the cluster's pub/sub bus.
 */
const redisCluster: Backend = {
  name: "redis-cluster",
  conformanceOnly: true,
  capabilities: RedisStore.capabilities,
  async setup(options = {}) {
    const nodes = inject("redisClusterNodes");
    if (!nodes)
      throw new Error("the redis-cluster store is selected but test/setup/global.ts started no cluster");
    const prefix = freshPrefix();
    const clock = new ManualClock(options.start ?? Date.UTC(2026, 0, 1));
    const { start: _start, ...queueOptions } = options;
    const stores: Store[] = [];
    const clients: Cluster[] = [];
    onTestFinished(async () => {
      for (const s of stores) await s.close().catch(() => {});
      // Every key of the prefix lives on the master that owns its hash tag's slot.
      for (const node of clients[0]!.nodes("master")) {
        const keys = await keysOf(node, prefix);
        for (const key of keys) await node.unlink(key);
      }
      for (const c of clients) c.disconnect();
    });
    const open = async (o: Omit<OpenQueueOptions, "store" | "clock">) => {
      const client = clusterClient(nodes);
      clients.push(client);
      const store = await RedisStore.open({ client, prefix });
      stores.push(store);
      return new Queue(store, { random: seeded(42), ...o, clock });
    };
    const queue = await open(queueOptions);
    // Child processes cannot be handed a cluster by URL; the process suites use `redis`.
    return { store: queue.store, clock, queue, connect: (o = {}) => open(o), url: "redis-cluster:" };
  },
};

const BACKENDS: Record<string, Backend> = { sqlite, postgres, redis, "redis-cluster": redisCluster };

/**
 * The backends named by ERRAND_STORES (comma-separated), or every one that exists. Backends marked
 * `conformanceOnly` are left out unless `conformance` is set (the conformance suite sets it).
 */
export function selectedBackends(options: { conformance?: boolean } = {}): Backend[] {
  const wanted = selectedStoreNames();
  const all =
    wanted === null ? Object.values(BACKENDS) : wanted.filter((n) => n in BACKENDS).map((n) => BACKENDS[n]!);
  return all.filter((b) => options.conformance || !b.conformanceOnly);
}

/**
 * One store for a test of what sits above the store (the server, the CLI, the dashboard): the
 * first selected, or SQLite (embedded, nothing to start) when the run selects only stores the
 * conformance suite alone runs on, so such a test runs whatever ERRAND_STORES names.
 */
export function someBackend(): Backend {
  return selectedBackends()[0] ?? sqlite;
}

/** A small deterministic PRNG (mulberry32), so weighted choices and jitter repeat run to run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
