/**
 * The Redis side of the tests: where Redis is (ERRAND_TEST_REDIS_URL, default the local one), a
 * fresh key prefix per test, and deleting its keys afterwards (SCAN on the prefix: fine in tests,
 * never in the store).
 */
import { Redis } from "ioredis";
import { onTestFinished } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { Queue } from "../../src/queue.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";

/** The test Redis. */
export const REDIS_URL = process.env.ERRAND_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix no other test uses. */
export function freshPrefix(prefix = "errand-t"): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

/** A store URL for `prefix` (`redis://…?prefix=…`). */
export function redisUrl(prefix: string): string {
  const url = new URL(REDIS_URL);
  url.searchParams.set("prefix", prefix);
  return url.toString();
}

/** Runs `fn` on a connection of its own, closed afterwards. */
export async function withRedis<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(REDIS_URL, { lazyConnect: true });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

/** Every key under a store prefix (`{prefix}:…`). */
export async function keysOf(client: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

/**
 * A Queue on a Redis store of a fresh prefix, with a ManualClock, for tests that look at the
 * store's keys (`client`, `prefix`): the store is closed and its keys deleted when the test ends.
 */
export async function openRedisQueue(): Promise<{
  queue: Queue;
  store: RedisStore;
  client: Redis;
  prefix: string;
  clock: ManualClock;
}> {
  const prefix = freshPrefix();
  onTestFinished(() => deleteKeys(prefix));
  const store = await RedisStore.open({ url: REDIS_URL, prefix });
  onTestFinished(() => store.close());
  const clock = new ManualClock();
  return { queue: new Queue(store, { clock }), store, client: store.client as Redis, prefix, clock };
}

/** Deletes every key under a store prefix. */
export async function deleteKeys(prefix: string): Promise<void> {
  await withRedis(async (client) => {
    const keys = await keysOf(client, prefix);
    for (let i = 0; i < keys.length; i += 500) await client.unlink(...keys.slice(i, i + 500));
  });
}

/**
 * A Redis server of the test's own (`redis-server` on a free port, nothing on disk), for tests that
 * change server-wide state (SCRIPT FLUSH, CONFIG SET, INFO commandstats) and must neither disturb
 * nor be disturbed by the tests running beside them. Stopped by `stop()`.
 */
export async function privateRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const { spawn } = await import("node:child_process");
  const { createServer } = await import("node:net");
  const port = await new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  const proc = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let log = "";
    proc.once("error", reject);
    proc.once("exit", (code) => reject(new Error(`redis-server exited (${code}): ${log}`)));
    proc.stdout!.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Ready to accept connections")) resolve();
    });
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      proc.kill("SIGKILL");
      await exited;
    },
  };
}

/** Whether this run includes the Redis store (ERRAND_STORES unset, or naming redis). */
export function redisSelected(): boolean {
  const wanted = process.env.ERRAND_STORES?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return !wanted || wanted.length === 0 || wanted.includes("redis");
}
