/**
 * The conformance suite's view of a store: how to make a fresh one per test (its own file,
 * schema or key prefix, so tests run in parallel), and what it can do. Later stores add an
 * entry to BACKENDS; the suite itself does not change.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { type OpenQueueOptions, Queue } from "../../src/queue.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store, StoreCapabilities } from "../../src/store/store.js";

/** A store under test, made fresh for each test. */
export interface Backend {
  name: string;
  capabilities: StoreCapabilities;
  /** A fresh, empty store (and a second connection to it, as another process would have). */
  setup(options?: SetupOptions): Promise<Bundle>;
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
  capabilities: { listen: true, multiProcess: true },
  async setup(options = {}) {
    const dir = mkdtempSync(join(tmpdir(), "errand-test-"));
    const filename = join(dir, "errand.db");
    const clock = new ManualClock(options.start ?? Date.UTC(2026, 0, 1));
    const { start: _start, ...queueOptions } = options;
    const stores: Store[] = [];
    const open = async (o: Omit<OpenQueueOptions, "store" | "clock">) => {
      const store = await SqliteStore.open({ filename });
      stores.push(store);
      return new Queue(store, { random: seeded(42), ...o, clock });
    };
    const queue = await open(queueOptions);
    onTestFinished(async () => {
      for (const s of stores) await s.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    });
    return { store: queue.store, clock, queue, connect: (o = {}) => open(o), url: `sqlite:${filename}` };
  },
};

const BACKENDS: Record<string, Backend> = { sqlite };

/** The backends named by ERRAND_STORES (comma-separated), or every one that exists. */
export function selectedBackends(): Backend[] {
  const wanted = process.env.ERRAND_STORES?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!wanted || wanted.length === 0) return Object.values(BACKENDS);
  return wanted.filter((name) => name in BACKENDS).map((name) => BACKENDS[name]!);
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
