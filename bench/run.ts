/**
 * `npm run bench [-- options]`: throughput, latency and memory of errand on one store.
 *
 *   --store sqlite        the store to measure: sqlite, postgres or redis (the local server), or a
 *                         postgres:// or redis:// URL; each scenario on a fresh file, schema or
 *                         key prefix
 *   --scenario <name>     run one scenario: enqueue-bulk, drain, latency, drain-backlog, memory
 *                         (memory: the server's memory per waiting 100-byte job; Redis only)
 *                         drain-scale: the 20k drain by 4 worker processes at once vs one, cold
 *                         and with every process warmed up first (run by default where the store
 *                         has a scale-out target: postgres)
 *                         drain-fail: the 20k drain with every job throwing a NonRetryableError
 *                         (the failure path: each job goes to dead); only when asked for
 *   --jobs N              jobs per throughput scenario (default 20000)
 *   --backlog N           backlog size for drain-backlog (default 1000000)
 *   --latency-jobs N      jobs in the latency scenario (default 300)
 *   --scenario http       issue 5's HTTP server figures (SQLite; one server child per scenario;
 *                         not in the default run): http-enqueue, http-work, http-remote-worker,
 *                         http-wake, http-idle
 *   --http-loops N        concurrent lease → report loops in http-work (default 4)
 *   --quick               skip drain-backlog
 *   --compiled            run worker processes on a compiled build (tsc, plain node) instead of
 *                         under tsx; tsx alone adds ~30 MB to a process's RSS
 *   --json                print one JSON object to stdout instead of a table
 *
 * ERRAND_BENCH_V8="--trace-gc-nvp …" passes V8 flags to the worker and server children only (for
 * diagnosis: NODE_OPTIONS refuses most V8 flags).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, freemem, platform, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { Command, InvalidArgumentError, Option } from "commander";
import { defineJob, openQueue, type Queue } from "../src/index.js";
import { Child } from "./child.js";
import { compileErrand, fmtInt, now, pct, positiveInt, round, sleepUntil } from "./common.js";

// ---- options ----------------------------------------------------------------------------------

interface Options {
  store: string;
  scenario: string | null;
  jobs: number;
  backlog: number;
  latencyJobs: number;
  quick: boolean;
  json: boolean;
  compiled: boolean;
  /** Concurrent lease → report loops in http-work. */
  httpLoops: number;
}

const SCENARIOS = [
  "enqueue-bulk",
  "drain",
  "latency",
  "drain-backlog",
  "memory",
  "drain-scale",
  "drain-fail",
] as const;
type ScenarioName = (typeof SCENARIOS)[number];
/** Issue 5's HTTP server scenarios: only when asked for (`--scenario http` runs all four). */
const HTTP_SCENARIOS = ["http-enqueue", "http-work", "http-remote-worker", "http-wake", "http-idle"] as const;
type HttpScenarioName = (typeof HTTP_SCENARIOS)[number];

/** `--store`: a store name or URL that {@link benchStore} knows. */
function storeSpec(value: string): string {
  if (/^(sqlite|postgres|redis)$|^(postgres(ql)?|rediss?):\/\//.test(value)) return value;
  throw new InvalidArgumentError("one of sqlite, postgres, redis, or a postgres:// or redis:// URL");
}

function parseArgs(argv: string[]): Options {
  const scenarios = [...SCENARIOS, "http", ...HTTP_SCENARIOS];
  const program = new Command("npm run bench --")
    .description("throughput, latency and memory of errand on one store (see the head of bench/run.ts)")
    .option(
      "--store <store>",
      "sqlite, postgres, redis, or a postgres:// or redis:// URL",
      storeSpec,
      "sqlite",
    )
    .addOption(new Option("--scenario <name>", "run one scenario").choices(scenarios))
    .option("--jobs <n>", "jobs per throughput scenario", positiveInt, 20_000)
    .option("--backlog <n>", "backlog size for drain-backlog", positiveInt, 1_000_000)
    .option("--latency-jobs <n>", "jobs in the latency scenario", positiveInt, 300)
    .option("--http-loops <n>", "concurrent lease → report loops in http-work", positiveInt, 4)
    .option("--quick", "skip drain-backlog", false)
    .option("--compiled", "run worker processes on a tsc build instead of under tsx", false)
    .option("--json", "print one JSON object to stdout instead of a table", false)
    .showHelpAfterError("(npm run bench -- --help for the options)")
    .parse(argv, { from: "user" });
  const o = program.opts<Omit<Options, "scenario"> & { scenario?: string }>();
  return { ...o, scenario: o.scenario ?? null };
}

// ---- stores -----------------------------------------------------------------------------------

/** A fresh, empty database for one scenario, and how to throw it away. */
interface Database {
  url: string;
  dispose(): void | Promise<void>;
}

/** The figures a store is held to (its issue's targets), for the table. */
interface Targets {
  enqueuePerSec: number;
  drainPerSec: number;
  p50Ms: number;
  p99Ms: number;
  rssMB: number;
  /** Drain rate with the big backlog waiting, as a share of the rate with 20,000 waiting. */
  backlogRatio: number;
  /** Drain rate of 4 worker processes as a multiple of one process's (stores many processes share). */
  scaleRatio?: number;
  /** Store memory per waiting job (stores that can tell, see {@link BenchStore.usedMemory}). */
  bytesPerJob?: number;
}

const SQLITE_TARGETS: Targets = {
  enqueuePerSec: 200_000,
  drainPerSec: 25_000,
  p50Ms: 1,
  p99Ms: 5,
  rssMB: 80,
  backlogRatio: 0.8,
};

/** How the bench gets databases from a store. Postgres (a fresh schema) and Redis (a fresh key prefix) plug in here. */
interface BenchStore {
  name: string;
  targets: Targets;
  fresh(label: string): Database;
  /** The server's memory in use, in bytes, for the memory scenario (Redis: INFO used_memory). */
  usedMemory?(): Promise<number>;
  /** Closes what the bench opened to talk to the store itself. */
  close?(): Promise<void>;
  /**
   * The store server's process name (`/proc/<pid>/comm`) when it runs on this machine, so drains
   * can report its CPU time beside the worker's (see {@link serverCpuMs}).
   */
  serverProcess?: RegExp;
}

/** "worker 40 µs + server 62 µs; 1.3 of 2 cores busy" */
function fmtCpu(c: CpuSplit): string {
  const server = c.serverUsPerJob === null ? "" : ` + server ${c.serverUsPerJob} µs`;
  return `worker ${c.workerUsPerJob} µs${server}; ${c.busyCores} of ${cpus().length} cores busy`;
}

/** Whether a URL names this machine. */
const isLocal = (url: URL) => ["127.0.0.1", "localhost", "[::1]", ""].includes(url.hostname);

/**
 * CPU time (user + system, ms) used so far by every process named like `name`, read from /proc:
 * PostgreSQL's backends and background processes, or redis-server. Null off Linux. Processes that
 * exit between two readings take their time with them, so it is a floor.
 */
function serverCpuMs(name: RegExp | undefined): number | null {
  if (!name || platform() !== "linux") return null;
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      if (!name.test(stat.slice(stat.indexOf("(") + 1, close))) continue;
      const fields = stat.slice(close + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // gone since readdir
    }
  }
  return (ticks * 1000) / clockTicks();
}

/** Starts timing the store server's CPU; the function returned reads the ms used since (or null). */
function serverCpuSpan(store: BenchStore): () => number | null {
  const from = serverCpuMs(store.serverProcess);
  return () => {
    const to = serverCpuMs(store.serverProcess);
    return from === null || to === null ? null : to - from;
  };
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  return ticksPerSecond;
}

/** Where a drain's CPU time went: per job in the worker process(es) and in the store server. */
interface CpuSplit {
  workerUsPerJob: number;
  /** Null for SQLite (in the worker's process) or a server elsewhere. */
  serverUsPerJob: number | null;
  /** Worker + server CPU time over wall time: how many of the machine's cores the drain kept busy. */
  busyCores: number;
}

function cpuSplit(jobs: number, elapsedMs: number, workerMs: number, serverMs: number | null): CpuSplit {
  return {
    workerUsPerJob: round((workerMs * 1000) / jobs, 1),
    serverUsPerJob: serverMs === null ? null : round((serverMs * 1000) / jobs, 1),
    busyCores: round((workerMs + (serverMs ?? 0)) / elapsedMs, 2),
  };
}

function benchStore(spec: string): BenchStore {
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
    // Issue 3's targets.
    targets: {
      enqueuePerSec: 60_000,
      drainPerSec: 22_000,
      p50Ms: 2.5,
      p99Ms: 8,
      rssMB: 80,
      backlogRatio: 0.75,
      scaleRatio: 1.3,
    },
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
    // Issue 4's targets.
    targets: {
      enqueuePerSec: 40_000,
      drainPerSec: 16_000,
      p50Ms: 1.2,
      p99Ms: 4,
      rssMB: 80,
      backlogRatio: 0.75,
      bytesPerJob: 400,
    },
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

// ---- worker runtime -----------------------------------------------------------------------------

/** How worker processes load errand: its TypeScript source under tsx, or a compiled build. */
interface Runtime {
  entry: string;
  /** errand/server, from the same build. */
  serverEntry: string;
  tsx: boolean;
  name: string;
}

function runtime(o: Options, log: Log): Runtime {
  if (!o.compiled) {
    return {
      entry: new URL("../src/index.ts", import.meta.url).href,
      serverEntry: new URL("../src/server/index.ts", import.meta.url).href,
      tsx: true,
      name: "tsx (TypeScript source)",
    };
  }
  log("compiling src/ for the worker processes (tsc)…");
  return {
    ...compileErrand("errand-bench"),
    tsx: false,
    name: "node (compiled with tsc)",
  };
}

// ---- scenarios --------------------------------------------------------------------------------

const noop = defineJob({ type: "noop", handler: async () => {} });
const CHILD_DEADLINE_MS = 300_000;
const payloads = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ i: from + i }));

interface Results extends HttpResults {
  "drain-scale"?: {
    jobs: number;
    processes: number;
    concurrency: number;
    elapsedMs: number;
    jobsPerSec: number;
    /** Jobs each process ran. */
    shares: number[];
    exactlyOnce: boolean;
    baselineJobsPerSec: number;
    ratio: number;
    cpu: CpuSplit;
    /** The same with every process (and the one-process baseline) warmed up first. */
    warm: {
      warmupJobsPerProcess: number;
      oneProcessJobsPerSec: number;
      jobsPerSec: number;
      ratio: number;
      oneProcessCpu: CpuSplit;
      cpu: CpuSplit;
    };
  };
  "enqueue-bulk"?: { jobs: number; runs: number[]; jobsPerSec: number; bestJobsPerSec: number };
  "drain-fail"?: {
    jobs: number;
    concurrency: number;
    elapsedMs: number;
    jobsPerSec: number;
    /** Each handler ran once and each job is dead, none left pending or active. */
    exactlyOnce: boolean;
    deadInStore: number;
  };
  drain?: {
    jobs: number;
    concurrency: number;
    elapsedMs: number;
    jobsPerSec: number;
    exactlyOnce: boolean;
    handlerCalls: number;
    completedInStore: number;
    workerRssMB: number;
    workerRssBeforeMB: number;
    workerHeapUsedMB: number;
    workerHeapTotalMB: number;
    cpu: CpuSplit;
  };
  latency?: {
    jobs: number;
    intervalMs: number;
    p50: number;
    p95: number;
    p99: number;
    max: number;
    mean: number;
    clockOffsetMs: number;
    clockRttMs: number;
  };
  "drain-backlog"?: {
    backlog: number;
    measured: number;
    setupMs: number;
    elapsedMs: number;
    jobsPerSec: number;
    baselineJobsPerSec: number;
    ratio: number;
  };
  memory?: {
    jobs: number;
    payloadBytes: number;
    usedBeforeBytes: number;
    usedAfterBytes: number;
    bytesPerJob: number;
  };
}

async function withQueue<T>(db: Database, fn: (q: Queue) => Promise<T>): Promise<T> {
  const q = await openQueue(db.url);
  try {
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** Bulk enqueue: one `enqueueMany` of N jobs; the median of 3, each on a fresh file, after one warm-up. */
async function enqueueBulk(
  store: BenchStore,
  o: Options,
  _rt: Runtime,
  log: Log,
): Promise<Results["enqueue-bulk"]> {
  const runs: number[] = [];
  for (let r = 0; r < 4; r++) {
    const db = store.fresh("enqueue");
    try {
      await withQueue(db, async (q) => {
        const items = payloads(o.jobs);
        const t0 = now();
        await q.enqueueMany(noop, items);
        const ms = now() - t0;
        if (r > 0) runs.push(o.jobs / (ms / 1000));
      });
    } finally {
      await db.dispose();
    }
  }
  log(`enqueue-bulk: ${runs.map((r) => fmtInt(r)).join(", ")} jobs/s`);
  const sorted = [...runs].sort((a, b) => a - b);
  return {
    jobs: o.jobs,
    runs: runs.map(Math.round),
    jobsPerSec: Math.round(sorted[1]!),
    bestJobsPerSec: Math.round(sorted[2]!),
  };
}

interface DrainDone {
  type: "done";
  rssBeforeBytes: number;
  elapsedMs: number;
  completed: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** The worker process's CPU time over the drain (user + system). */
  cpuMs: number;
  /** The store server's over the same span; null when it cannot be read. */
  serverCpuMs: number | null;
  calls: number;
  distinct: number;
  repeated: number;
}

/**
 * Drains `measure` jobs from a database already holding `waiting` jobs, in a worker child
 * (`drain-fail`: every job fails for good, and `measure` jobs dead end it).
 */
async function drainIn(
  store: BenchStore,
  db: Database,
  measure: number,
  concurrency: number,
  rt: Runtime,
  mode: "drain" | "drain-fail" = "drain",
  indices = measure,
): Promise<DrainDone> {
  const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, "drain worker", rt.tsx);
  try {
    child.send({ type: "init", entry: rt.entry, url: db.url, mode, concurrency, expect: measure, indices });
    const ready = await child.next<{ type: "ready"; rssBytes: number }>("ready");
    const serverCpu = serverCpuSpan(store);
    child.send({ type: "go" });
    const done = await child.next<DrainDone>("done");
    return { ...done, rssBeforeBytes: ready.rssBytes, serverCpuMs: serverCpu() };
  } finally {
    await child.stop();
  }
}

async function drain(store: BenchStore, o: Options, rt: Runtime, log: Log): Promise<Results["drain"]> {
  const db = store.fresh("drain");
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    const done = await drainIn(store, db, o.jobs, 50, rt);
    const stats = await withQueue(db, (q) => q.stats());
    const left = stats.states.pending + stats.states.active;
    const exactlyOnce =
      done.calls === o.jobs &&
      done.distinct === o.jobs &&
      done.repeated === 0 &&
      stats.states.completed === o.jobs &&
      left === 0;
    const r = {
      jobs: o.jobs,
      concurrency: 50,
      elapsedMs: round(done.elapsedMs, 1),
      jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
      exactlyOnce,
      handlerCalls: done.calls,
      completedInStore: stats.states.completed,
      workerRssMB: round(done.rssBytes / 2 ** 20, 1),
      workerRssBeforeMB: round(done.rssBeforeBytes / 2 ** 20, 1),
      workerHeapUsedMB: round(done.heapUsedBytes / 2 ** 20, 1),
      workerHeapTotalMB: round(done.heapTotalBytes / 2 ** 20, 1),
      cpu: cpuSplit(o.jobs, done.elapsedMs, done.cpuMs, done.serverCpuMs),
    };
    log(`drain: ${fmtInt(r.jobsPerSec)} jobs/s, exactly once: ${exactlyOnce}, RSS ${r.workerRssMB} MB`);
    return r;
  } finally {
    await db.dispose();
  }
}

/** The 20k drain with every job failing for good: the failure path's write (one per job to dead). */
async function drainFail(
  store: BenchStore,
  o: Options,
  rt: Runtime,
  log: Log,
): Promise<Results["drain-fail"]> {
  const db = store.fresh("drainfail");
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    const done = await drainIn(store, db, o.jobs, 50, rt, "drain-fail");
    const stats = await withQueue(db, (q) => q.stats());
    const exactlyOnce =
      done.calls === o.jobs &&
      done.distinct === o.jobs &&
      done.repeated === 0 &&
      stats.states.dead === o.jobs &&
      stats.states.pending + stats.states.active === 0;
    const r = {
      jobs: o.jobs,
      concurrency: 50,
      elapsedMs: round(done.elapsedMs, 1),
      jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
      exactlyOnce,
      deadInStore: stats.states.dead,
    };
    log(`drain-fail: ${fmtInt(r.jobsPerSec)} jobs/s, each failed exactly once: ${exactlyOnce}`);
    return r;
  } finally {
    await db.dispose();
  }
}

/** Producer here, idle worker in a child: enqueue() call → handler start, across processes. */
async function latency(store: BenchStore, o: Options, rt: Runtime, log: Log): Promise<Results["latency"]> {
  const WARMUP = 10;
  const INTERVAL_MS = 10;
  const total = WARMUP + o.latencyJobs;
  const db = store.fresh("latency");
  const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, "latency worker", rt.tsx);
  try {
    return await withQueue(db, async (q) => {
      child.send({
        type: "init",
        entry: rt.entry,
        url: db.url,
        mode: "latency",
        concurrency: 50,
        expect: total,
      });
      await child.next("ready");
      const clock = await clockOffset(child);
      const sent: number[] = new Array(total);
      for (let i = 0; i < total; i++) {
        await sleepUntil(now() + INTERVAL_MS);
        sent[i] = now();
        await q.enqueue(noop, { i });
      }
      const done = await child.next<{ type: "done"; starts: number[] }>("done");
      const lat = done.starts.slice(WARMUP).map((t, k) => t - sent[WARMUP + k]!);
      lat.sort((a, b) => a - b);
      const r = {
        jobs: o.latencyJobs,
        intervalMs: INTERVAL_MS,
        p50: round(pct(lat, 50), 2),
        p95: round(pct(lat, 95), 2),
        p99: round(pct(lat, 99), 2),
        max: round(lat[lat.length - 1]!, 2),
        mean: round(lat.reduce((a, b) => a + b, 0) / lat.length, 2),
        clockOffsetMs: round(clock.offset, 3),
        clockRttMs: round(clock.rtt, 3),
      };
      log(`latency: p50 ${r.p50} ms, p95 ${r.p95} ms, p99 ${r.p99} ms`);
      return r;
    });
  } finally {
    await child.stop();
    await db.dispose();
  }
}

/**
 * How far the child's `timeOrigin + now()` is from ours (NTP-style, the sample with the least
 * round trip). Reported, not subtracted: both clocks come from the same kernel clock.
 */
async function clockOffset(child: Child): Promise<{ offset: number; rtt: number }> {
  let best = { offset: 0, rtt: Number.POSITIVE_INFINITY };
  for (let i = 0; i < 30; i++) {
    const t0 = now();
    child.send({ type: "ping" });
    const { t } = await child.next<{ type: "pong"; t: number }>("pong");
    const t1 = now();
    if (t1 - t0 < best.rtt) best = { offset: t - (t0 + t1) / 2, rtt: t1 - t0 };
  }
  return best;
}

/** Drain rate with a large backlog waiting vs the 20k drain. */
async function drainBacklog(
  store: BenchStore,
  o: Options,
  rt: Runtime,
  log: Log,
  baseline: number,
): Promise<Results["drain-backlog"]> {
  const db = store.fresh("backlog");
  try {
    // Setting up a million jobs takes a while: show how far it got (on a terminal only).
    const bar = process.stderr.isTTY
      ? new SingleBar(
          { format: "[bench] drain-backlog: enqueue |{bar}| {value}/{total} jobs" },
          Presets.shades_classic,
        )
      : null;
    const t0 = now();
    bar?.start(o.backlog, 0);
    await withQueue(db, async (q) => {
      const CHUNK = 20_000;
      for (let from = 0; from < o.backlog; from += CHUNK) {
        await q.enqueueMany(noop, payloads(Math.min(CHUNK, o.backlog - from), from));
        bar?.update(Math.min(from + CHUNK, o.backlog));
      }
    }).finally(() => bar?.stop());
    const setupMs = now() - t0;
    log(`drain-backlog: ${fmtInt(o.backlog)} jobs enqueued in ${(setupMs / 1000).toFixed(1)} s`);
    const measured = Math.min(o.jobs, o.backlog);
    const done = await drainIn(store, db, measured, 50, rt, "drain", o.backlog);
    const jobsPerSec = Math.round(measured / (done.elapsedMs / 1000));
    const r = {
      backlog: o.backlog,
      measured,
      setupMs: Math.round(setupMs),
      elapsedMs: round(done.elapsedMs, 1),
      jobsPerSec,
      baselineJobsPerSec: baseline,
      ratio: round(jobsPerSec / baseline, 3),
    };
    log(`drain-backlog: ${fmtInt(jobsPerSec)} jobs/s vs ${fmtInt(baseline)} (ratio ${r.ratio})`);
    return r;
  } finally {
    await db.dispose();
  }
}

/**
 * The store server's memory per waiting job: `usedMemory()` before and after enqueueing 100,000
 * jobs with a 100-byte JSON payload, with no errand connection open at either reading (a client's
 * buffers count in Redis's used_memory).
 */
async function memory(store: BenchStore, log: Log): Promise<Results["memory"]> {
  const JOBS = 100_000;
  const CHUNK = 10_000;
  const payload = (i: number) => {
    const head = `{"i":${i},"s":"`;
    return JSON.parse(`${head}${"x".repeat(100 - head.length - 2)}"}`) as { i: number; s: string };
  };
  const db = store.fresh("memory");
  try {
    const usedBeforeBytes = await store.usedMemory!();
    await withQueue(db, async (q) => {
      for (let from = 0; from < JOBS; from += CHUNK) {
        await q.enqueueMany(
          noop,
          Array.from({ length: CHUNK }, (_, k) => payload(from + k)),
        );
      }
    });
    const usedAfterBytes = await store.usedMemory!();
    const r = {
      jobs: JOBS,
      payloadBytes: JSON.stringify(payload(0)).length,
      usedBeforeBytes,
      usedAfterBytes,
      bytesPerJob: Math.round((usedAfterBytes - usedBeforeBytes) / JOBS),
    };
    log(`memory: ${r.bytesPerJob} bytes per waiting ${r.payloadBytes}-byte job`);
    return r;
  } finally {
    await db.dispose();
  }
}

/** Jobs each scale-out worker runs, in a queue of its own, before the warm measurement starts. */
const SCALE_WARMUP_JOBS = 3_000;

/**
 * Scale-out: the same N waiting jobs drained by 4 worker processes at once (concurrency 50 each),
 * timed from the first `go` to the last completion in any process, vs one process's drain rate.
 * Measured cold (fresh processes, as a deployment's first minute sees them; the ratio the target
 * is held to) and warm (each process first runs {@link SCALE_WARMUP_JOBS} jobs of its own, and
 * the baseline is one process warmed the same way), which is where the cores set the limit.
 */
async function drainScale(
  store: BenchStore,
  o: Options,
  rt: Runtime,
  log: Log,
  baseline: number,
): Promise<Results["drain-scale"]> {
  const PROCESSES = 4;
  const cold = await scaleRun(store, o, rt, PROCESSES, 0);
  const warmOne = await scaleRun(store, o, rt, 1, SCALE_WARMUP_JOBS);
  const warm = await scaleRun(store, o, rt, PROCESSES, SCALE_WARMUP_JOBS);
  const r = {
    jobs: o.jobs,
    processes: PROCESSES,
    concurrency: 50,
    elapsedMs: round(cold.elapsedMs, 1),
    jobsPerSec: cold.jobsPerSec,
    shares: cold.shares,
    exactlyOnce: cold.exactlyOnce && warmOne.exactlyOnce && warm.exactlyOnce,
    baselineJobsPerSec: baseline,
    ratio: round(cold.jobsPerSec / baseline, 3),
    cpu: cold.cpu,
    warm: {
      warmupJobsPerProcess: SCALE_WARMUP_JOBS,
      oneProcessJobsPerSec: warmOne.jobsPerSec,
      jobsPerSec: warm.jobsPerSec,
      ratio: round(warm.jobsPerSec / warmOne.jobsPerSec, 3),
      oneProcessCpu: warmOne.cpu,
      cpu: warm.cpu,
    },
  };
  log(
    `drain-scale: ${fmtInt(r.jobsPerSec)} jobs/s with ${PROCESSES} processes vs ${fmtInt(baseline)} (×${r.ratio}); ` +
      `warm: ${fmtInt(warm.jobsPerSec)} vs ${fmtInt(warmOne.jobsPerSec)} (×${r.warm.ratio})`,
  );
  return r;
}

/** One scale-out drain: `processes` workers, each warmed with `warm` jobs first, on a fresh database. */
async function scaleRun(
  store: BenchStore,
  o: Options,
  rt: Runtime,
  processes: number,
  warm: number,
): Promise<{ elapsedMs: number; jobsPerSec: number; shares: number[]; exactlyOnce: boolean; cpu: CpuSplit }> {
  const db = store.fresh("scale");
  const children: Child[] = [];
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    for (let i = 0; i < processes; i++) {
      const child = new Child("./worker-child.mjs", CHILD_DEADLINE_MS, `scale worker ${i}`, rt.tsx);
      child.send({
        type: "init",
        entry: rt.entry,
        url: db.url,
        mode: "scale",
        concurrency: 50,
        expect: o.jobs,
        warm,
      });
      children.push(child);
    }
    await Promise.all(children.map((c) => c.next("ready")));
    const serverCpu = serverCpuSpan(store);
    for (const c of children) c.send({ type: "go" });
    type ScaleDone = {
      type: "done";
      t0: number;
      tLast: number;
      completed: number;
      calls: number;
      repeated: number;
      cpuMs: number;
    };
    const done = await Promise.all(children.map((c) => c.next<ScaleDone>("done")));
    const serverMs = serverCpu();
    const elapsedMs = Math.max(...done.map((d) => d.tLast)) - Math.min(...done.map((d) => d.t0));
    const stats = await withQueue(db, (q) => q.stats());
    const calls = done.reduce((a, d) => a + d.calls, 0);
    // The warm-up jobs are in queues of their own: only the default queue's are counted.
    const exactlyOnce =
      calls === o.jobs &&
      done.every((d) => d.repeated === 0) &&
      stats.queues.default?.completed === o.jobs &&
      stats.states.pending + stats.states.active === 0;
    return {
      elapsedMs,
      jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
      shares: done.map((d) => d.completed),
      exactlyOnce,
      cpu: cpuSplit(
        o.jobs,
        elapsedMs,
        done.reduce((a, d) => a + d.cpuMs, 0),
        serverMs,
      ),
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await db.dispose();
  }
}

// ---- HTTP server (issue 5) ----------------------------------------------------------------------

/** Issue 5's targets, on SQLite through one server process. */
const HTTP_TARGETS = { enqueuePerSec: 50_000, workPerSec: 8_000, wakeP50Ms: 5, idleRssMB: 100 };
/** An HTTP scenario's server child is killed past this. */
const HTTP_DEADLINE_MS = 120_000;

interface HttpResults {
  "http-enqueue"?: {
    requests: number;
    jobsPerRequest: number;
    elapsedMs: number;
    jobsPerSec: number;
    requestMsP50: number;
    requestMsMax: number;
  };
  "http-work"?: {
    jobs: number;
    batch: number;
    loops: number;
    elapsedMs: number;
    jobsPerSec: number;
    requests: number;
    leased: number;
    distinct: number;
    reportedOk: number;
    completedInStore: number;
    exactlyOnce: boolean;
  };
  "http-remote-worker"?: {
    jobs: number;
    concurrency: number;
    elapsedMs: number;
    jobsPerSec: number;
    exactlyOnce: boolean;
  };
  "http-wake"?: { samples: number; p50: number; p95: number; p99: number; max: number; mean: number };
  "http-idle"?: {
    connections: number;
    waiters: number;
    rssBeforeMB: number;
    rssMB: number;
    heapUsedMB: number;
  };
}

interface HttpServer {
  base: string;
  /** The server's RSS right after `listen()`. */
  rssBeforeBytes: number;
  mem(): Promise<{ rssBytes: number; heapUsedBytes: number; waiters: number }>;
}

/** Runs `fn` against an errand server in a child process (loopback, random port) on `db`. */
async function withServer<T>(db: Database, rt: Runtime, label: string, fn: (s: HttpServer) => Promise<T>) {
  const child = new Child("./server-child.mjs", HTTP_DEADLINE_MS, `${label} server`, rt.tsx);
  try {
    child.send({ type: "init", entry: rt.entry, serverEntry: rt.serverEntry, url: db.url });
    const ready = await child.next<{ type: "ready"; port: number; rssBytes: number }>("ready");
    const mem = async () => {
      child.send({ type: "mem" });
      return child.next<{ type: "mem"; rssBytes: number; heapUsedBytes: number; waiters: number }>("mem");
    };
    return await fn({ base: `http://127.0.0.1:${ready.port}`, rssBeforeBytes: ready.rssBytes, mem });
  } finally {
    await child.stop();
  }
}

/** One JSON request; a non-2xx status throws. */
async function http<T>(base: string, method: string, path: string, body?: unknown, timeoutMs = 30_000) {
  const res = await fetch(base + path, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { "content-type": "application/json" },
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
interface WireJob {
  id: string;
  attempt: number;
}

/** Bulk enqueue over HTTP: 20 `POST /v1/jobs` of 1,000 jobs each, one after another, after 3 warm-ups. */
async function httpEnqueue(store: BenchStore, rt: Runtime, log: Log): Promise<Results["http-enqueue"]> {
  const REQUESTS = 20;
  const WARMUP = 3;
  const PER = 1000;
  const db = store.fresh("http-enqueue");
  try {
    return await withServer(db, rt, "http-enqueue", async (s) => {
      // Bodies built beforehand: the figure is the server's, not this process's JSON.stringify.
      const bodies = Array.from({ length: WARMUP + REQUESTS }, (_, r) =>
        JSON.stringify({
          jobs: Array.from({ length: PER }, (_, i) => ({ type: "noop", payload: { i: r * PER + i } })),
        }),
      );
      for (let w = REQUESTS; w < REQUESTS + WARMUP; w++) await http(s.base, "POST", "/v1/jobs", bodies[w]);
      const ms: number[] = [];
      const t0 = now();
      for (let r = 0; r < REQUESTS; r++) {
        const t = now();
        const out = await http<{ jobs: unknown[] }>(s.base, "POST", "/v1/jobs", bodies[r]);
        if (out.jobs.length !== PER)
          throw new Error(`http-enqueue: ${out.jobs.length} jobs back, not ${PER}`);
        ms.push(now() - t);
      }
      const elapsedMs = now() - t0;
      ms.sort((a, b) => a - b);
      const r = {
        requests: REQUESTS,
        jobsPerRequest: PER,
        elapsedMs: round(elapsedMs, 1),
        jobsPerSec: Math.round((REQUESTS * PER) / (elapsedMs / 1000)),
        requestMsP50: round(pct(ms, 50), 2),
        requestMsMax: round(ms[ms.length - 1]!, 2),
      };
      log(`http-enqueue: ${fmtInt(r.jobsPerSec)} jobs/s (${r.requestMsP50} ms a request, p50)`);
      return r;
    });
  } finally {
    await db.dispose();
  }
}

/**
 * Remote workers over HTTP: N waiting no-op jobs; in this process, `--http-loops` (4) loops each lease 50
 * (`POST /v1/lease`, waitMs 0) and report them all completed in one `POST /v1/report`, until a
 * lease comes back empty.
 */
async function httpWork(store: BenchStore, o: Options, rt: Runtime, log: Log): Promise<Results["http-work"]> {
  const BATCH = 50;
  const db = store.fresh("http-work");
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    return await withServer(db, rt, "http-work", async (s) => {
      await http(s.base, "GET", "/healthz");
      const seen = new Map<string, number>();
      let requests = 0;
      let reportedOk = 0;
      const loop = async () => {
        for (;;) {
          const { jobs } = await http<{ jobs: WireJob[] }>(s.base, "POST", "/v1/lease", {
            limit: BATCH,
            leaseMs: 60_000,
            waitMs: 0,
          });
          requests++;
          if (jobs.length === 0) return;
          for (const j of jobs) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
          const { results } = await http<{ results: Array<{ ok: boolean }> }>(s.base, "POST", "/v1/report", {
            reports: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: "complete" })),
          });
          requests++;
          for (const x of results) if (x.ok) reportedOk++;
        }
      };
      const t0 = now();
      await Promise.all(Array.from({ length: o.httpLoops }, loop));
      const elapsedMs = now() - t0;
      const stats = await http<{ states: Record<string, number> }>(s.base, "GET", "/v1/stats");
      let leased = 0;
      for (const n of seen.values()) leased += n;
      const completedInStore = stats.states.completed ?? 0;
      const exactlyOnce =
        leased === o.jobs &&
        seen.size === o.jobs &&
        reportedOk === o.jobs &&
        completedInStore === o.jobs &&
        (stats.states.pending ?? 0) + (stats.states.active ?? 0) === 0;
      const r = {
        jobs: o.jobs,
        batch: BATCH,
        loops: o.httpLoops,
        elapsedMs: round(elapsedMs, 1),
        jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
        requests,
        leased,
        distinct: seen.size,
        reportedOk,
        completedInStore,
        exactlyOnce,
      };
      log(`http-work: ${fmtInt(r.jobsPerSec)} jobs/s, exactly once: ${exactlyOnce}`);
      return r;
    });
  } finally {
    await db.dispose();
  }
}

/**
 * For comparison: the same drain by errand's own `RemoteWorker` (concurrency 50) in this process.
 * It reports each outcome in its own request (`POST /v1/jobs/{id}/complete`), not in a batch.
 */
async function httpRemoteWorker(
  store: BenchStore,
  o: Options,
  rt: Runtime,
  log: Log,
): Promise<Results["http-remote-worker"]> {
  const { ErrandClient, RemoteWorker } = await import("../src/client/index.js");
  const db = store.fresh("http-rw");
  try {
    await withQueue(db, (q) => q.enqueueMany(noop, payloads(o.jobs)));
    return await withServer(db, rt, "http-remote-worker", async (s) => {
      const calls = new Map<string, number>();
      const job = defineJob({
        type: "noop",
        handler: async (_payload: unknown, ctx) => {
          calls.set(ctx.job.id, (calls.get(ctx.job.id) ?? 0) + 1);
        },
      });
      const worker = new RemoteWorker(new ErrandClient({ url: s.base }), {
        jobs: [job],
        concurrency: 50,
        waitMs: 1000,
      });
      let completed = 0;
      let failure: unknown = null;
      worker.on("error", (e) => {
        failure ??= e;
      });
      const finished = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("http-remote-worker: not done in 120 s")), 120_000);
        worker.on("completed", () => {
          if (++completed === o.jobs) {
            clearTimeout(timer);
            resolve(now());
          }
        });
      });
      const t0 = now();
      try {
        await worker.start();
        const elapsedMs = (await finished) - t0;
        if (failure) throw failure;
        let repeated = 0;
        for (const n of calls.values()) if (n > 1) repeated++;
        const r = {
          jobs: o.jobs,
          concurrency: 50,
          elapsedMs: round(elapsedMs, 1),
          jobsPerSec: Math.round(o.jobs / (elapsedMs / 1000)),
          exactlyOnce: calls.size === o.jobs && repeated === 0,
        };
        log(
          `http-remote-worker: ${fmtInt(r.jobsPerSec)} jobs/s (RemoteWorker, completions batched per turn)`,
        );
        return r;
      } finally {
        await worker.close({ graceMs: 2_000 });
      }
    });
  } finally {
    await db.dispose();
  }
}

/**
 * Long-poll wake-up: a `POST /v1/lease` (waitMs 10 s) is parked in the server (it says so over
 * IPC), then this process enqueues one job with `POST /v1/jobs` on another connection; the time
 * from sending the enqueue to the lease's response. 10 warm-up samples, then 200.
 */
async function httpWake(store: BenchStore, rt: Runtime, log: Log): Promise<Results["http-wake"]> {
  const WARMUP = 10;
  const SAMPLES = 200;
  const db = store.fresh("http-wake");
  try {
    return await withServer(db, rt, "http-wake", async (s) => {
      const lat: number[] = [];
      for (let k = 0; k < WARMUP + SAMPLES; k++) {
        const lease = http<{ jobs: WireJob[] }>(
          s.base,
          "POST",
          "/v1/lease",
          { limit: 1, leaseMs: 60_000, waitMs: 10_000 },
          20_000,
        );
        const deadline = now() + 5_000;
        while ((await s.mem()).waiters < 1) {
          if (now() > deadline) throw new Error("http-wake: the lease never started waiting");
          await sleep(1);
        }
        const t0 = now();
        const enqueued = http(s.base, "POST", "/v1/jobs", { type: "noop", payload: { k } });
        const { jobs } = await lease;
        const t1 = now();
        await enqueued;
        if (jobs.length !== 1) throw new Error(`http-wake: the lease returned ${jobs.length} jobs`);
        if (k >= WARMUP) lat.push(t1 - t0);
      }
      lat.sort((a, b) => a - b);
      const r = {
        samples: SAMPLES,
        p50: round(pct(lat, 50), 2),
        p95: round(pct(lat, 95), 2),
        p99: round(pct(lat, 99), 2),
        max: round(lat[lat.length - 1]!, 2),
        mean: round(lat.reduce((a, b) => a + b, 0) / lat.length, 2),
      };
      log(`http-wake: p50 ${r.p50} ms, p99 ${r.p99} ms`);
      return r;
    });
  } finally {
    await db.dispose();
  }
}

/**
 * Idle long-polls: 300 concurrent `POST /v1/lease` (waitMs 60 s, each on its own connection) on an
 * empty queue; the server's RSS once all 300 wait (the highest of 5 readings over 2 s).
 */
async function httpIdle(store: BenchStore, rt: Runtime, log: Log): Promise<Results["http-idle"]> {
  const CONNECTIONS = 300;
  const db = store.fresh("http-idle");
  try {
    return await withServer(db, rt, "http-idle", async (s) => {
      await http(s.base, "POST", "/v1/lease", { limit: 1, waitMs: 0 });
      const ac = new AbortController();
      const polls = Array.from({ length: CONNECTIONS }, () =>
        fetch(`${s.base}/v1/lease`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ limit: 50, leaseMs: 30_000, waitMs: 60_000 }),
          signal: ac.signal,
        }).then(
          (res) => res.text(),
          () => null,
        ),
      );
      try {
        const deadline = now() + 20_000;
        let m = await s.mem();
        while (m.waiters < CONNECTIONS) {
          if (now() > deadline)
            throw new Error(`http-idle: only ${m.waiters} of ${CONNECTIONS} long-polls waiting`);
          await sleep(50);
          m = await s.mem();
        }
        let peak = m;
        for (let i = 0; i < 5; i++) {
          await sleep(400);
          const x = await s.mem();
          if (x.rssBytes > peak.rssBytes) peak = x;
        }
        const r = {
          connections: CONNECTIONS,
          waiters: peak.waiters,
          rssBeforeMB: round(s.rssBeforeBytes / 2 ** 20, 1),
          rssMB: round(peak.rssBytes / 2 ** 20, 1),
          heapUsedMB: round(peak.heapUsedBytes / 2 ** 20, 1),
        };
        log(
          `http-idle: server RSS ${r.rssMB} MB with ${r.waiters} long-polls waiting (${r.rssBeforeMB} MB idle)`,
        );
        return r;
      } finally {
        ac.abort();
        await Promise.all(polls);
      }
    });
  } finally {
    await db.dispose();
  }
}

// ---- output -----------------------------------------------------------------------------------

type Log = (line: string) => void;

interface Row {
  metric: string;
  value: string;
  target: string;
  ok: boolean | null;
}

function rows(r: Results, t: Targets): Row[] {
  const out: Row[] = [];
  const add = (metric: string, value: string, target: string, ok: boolean | null) =>
    out.push({ metric, value, target, ok });
  const e = r["enqueue-bulk"];
  if (e)
    add(
      `bulk enqueue (${fmtInt(e.jobs)}, one call, median of 3)`,
      `${fmtInt(e.jobsPerSec)} jobs/s`,
      `≥ ${fmtInt(t.enqueuePerSec)}`,
      e.jobsPerSec >= t.enqueuePerSec,
    );
  const d = r.drain;
  if (d) {
    add(
      `drain (${fmtInt(d.jobs)}, concurrency ${d.concurrency})`,
      `${fmtInt(d.jobsPerSec)} jobs/s`,
      `≥ ${fmtInt(t.drainPerSec)}`,
      d.jobsPerSec >= t.drainPerSec,
    );
    add("  each ran exactly once", String(d.exactlyOnce), "true", d.exactlyOnce);
    add("worker RSS after drain", `${d.workerRssMB} MB`, `≤ ${t.rssMB} MB`, d.workerRssMB <= t.rssMB);
    add("  (before the drain)", `${d.workerRssBeforeMB} MB`, "", null);
    add("  CPU per job", fmtCpu(d.cpu), "", null);
  }
  const df = r["drain-fail"];
  if (df) {
    add(
      `drain, every job failing (${fmtInt(df.jobs)}, concurrency ${df.concurrency})`,
      `${fmtInt(df.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add("  each ran once and is dead", String(df.exactlyOnce), "true", df.exactlyOnce);
  }
  const l = r.latency;
  if (l) {
    add(
      `latency p50 (${l.jobs} jobs, ${l.intervalMs} ms apart)`,
      `${l.p50} ms`,
      `≤ ${t.p50Ms} ms`,
      l.p50 <= t.p50Ms,
    );
    add("latency p95", `${l.p95} ms`, "", null);
    add("latency p99", `${l.p99} ms`, `≤ ${t.p99Ms} ms`, l.p99 <= t.p99Ms);
  }
  const b = r["drain-backlog"];
  if (b) {
    add(`drain with ${fmtInt(b.backlog)} waiting`, `${fmtInt(b.jobsPerSec)} jobs/s`, "", null);
    add(
      "  vs drain with 20,000 waiting",
      `${(b.ratio * 100).toFixed(0)} %`,
      `≥ ${(t.backlogRatio * 100).toFixed(0)} %`,
      b.ratio >= t.backlogRatio,
    );
  }
  const sc = r["drain-scale"];
  if (sc) {
    add(
      `drain by ${sc.processes} processes (${fmtInt(sc.jobs)}, concurrency ${sc.concurrency} each)`,
      `${fmtInt(sc.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add(
      "  vs one process",
      `×${sc.ratio}`,
      t.scaleRatio === undefined ? "" : `≥ ×${t.scaleRatio}`,
      t.scaleRatio === undefined ? null : sc.ratio >= t.scaleRatio,
    );
    add("  each ran exactly once", String(sc.exactlyOnce), "true", sc.exactlyOnce);
    add("  CPU per job", fmtCpu(sc.cpu), "", null);
    add(
      `  warmed first (${fmtInt(sc.warm.warmupJobsPerProcess)} jobs each): 4 vs 1 process`,
      `${fmtInt(sc.warm.jobsPerSec)} vs ${fmtInt(sc.warm.oneProcessJobsPerSec)} jobs/s, ×${sc.warm.ratio}`,
      "",
      null,
    );
    add("  CPU per job, warm, 1 process", fmtCpu(sc.warm.oneProcessCpu), "", null);
    add("  CPU per job, warm, 4 processes", fmtCpu(sc.warm.cpu), "", null);
  }
  const he = r["http-enqueue"];
  if (he)
    add(
      `HTTP bulk enqueue (${he.requests} × ${fmtInt(he.jobsPerRequest)} jobs, one by one)`,
      `${fmtInt(he.jobsPerSec)} jobs/s`,
      `≥ ${fmtInt(HTTP_TARGETS.enqueuePerSec)}`,
      he.jobsPerSec >= HTTP_TARGETS.enqueuePerSec,
    );
  const hw = r["http-work"];
  if (hw) {
    add(
      `HTTP remote workers (${fmtInt(hw.jobs)}, ${hw.loops} loops, lease ${hw.batch} + batch report)`,
      `${fmtInt(hw.jobsPerSec)} jobs/s`,
      `≥ ${fmtInt(HTTP_TARGETS.workPerSec)}`,
      hw.jobsPerSec >= HTTP_TARGETS.workPerSec,
    );
    add("  each leased and completed exactly once", String(hw.exactlyOnce), "true", hw.exactlyOnce);
  }
  const hr = r["http-remote-worker"];
  if (hr) {
    add(
      `  RemoteWorker, concurrency ${hr.concurrency} (batched reports)`,
      `${fmtInt(hr.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add("  each ran exactly once", String(hr.exactlyOnce), "true", hr.exactlyOnce);
  }
  const hk = r["http-wake"];
  if (hk) {
    add(
      `HTTP long-poll wake on enqueue p50 (${hk.samples} samples)`,
      `${hk.p50} ms`,
      `≤ ${HTTP_TARGETS.wakeP50Ms} ms`,
      hk.p50 <= HTTP_TARGETS.wakeP50Ms,
    );
    add("HTTP long-poll wake p99", `${hk.p99} ms`, "", null);
  }
  const hi = r["http-idle"];
  if (hi)
    add(
      `server RSS, ${hi.waiters} idle long-polls (${hi.rssBeforeMB} MB before)`,
      `${hi.rssMB} MB`,
      `≤ ${HTTP_TARGETS.idleRssMB} MB`,
      hi.rssMB <= HTTP_TARGETS.idleRssMB,
    );
  const m = r.memory;
  if (m) {
    const bound = t.bytesPerJob;
    add(
      `store memory per waiting ${m.payloadBytes}-byte job (${fmtInt(m.jobs)})`,
      `${fmtInt(m.bytesPerJob)} B`,
      bound === undefined ? "" : `≤ ${fmtInt(bound)} B`,
      bound === undefined ? null : m.bytesPerJob <= bound,
    );
  }
  return out;
}

function table(rs: Row[]): string {
  const head = { metric: "metric", value: "value", target: "target", ok: "" };
  const w = [
    Math.max(head.metric.length, ...rs.map((r) => r.metric.length)),
    Math.max(head.value.length, ...rs.map((r) => r.value.length)),
    Math.max(head.target.length, ...rs.map((r) => r.target.length)),
  ];
  const line = (a: string, b: string, c: string, d: string) =>
    `${a.padEnd(w[0]!)}  ${b.padStart(w[1]!)}  ${c.padEnd(w[2]!)}  ${d}`;
  return [
    line(head.metric, head.value, head.target, ""),
    line("-".repeat(w[0]!), "-".repeat(w[1]!), "-".repeat(w[2]!), "----"),
    ...rs.map((r) => line(r.metric, r.value, r.target, r.ok === null ? "" : r.ok ? "ok" : "MISS")),
  ].join("\n");
}

// ---- main -------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const store = benchStore(o.store);
  const log: Log = (line) => console.error(`[bench] ${line}`);
  const wanted = (s: ScenarioName) => {
    if (s === "memory" && !store.usedMemory) return false;
    if (o.scenario !== null) return o.scenario === s;
    if (s === "drain-scale") return store.targets.scaleRatio !== undefined;
    return s !== "drain-fail" && !(s === "drain-backlog" && o.quick);
  };
  const results: Results = {};
  const rt = runtime(o, log);
  // First: after the backlog scenario, the server's key table keeps its size for a while, and the
  // next keys fill it without growing it, so the reading would come out too low.
  if (wanted("memory")) results.memory = await memory(store, log);
  if (wanted("enqueue-bulk")) results["enqueue-bulk"] = await enqueueBulk(store, o, rt, log);
  if (wanted("drain")) results.drain = await drain(store, o, rt, log);
  if (wanted("drain-fail")) results["drain-fail"] = await drainFail(store, o, rt, log);
  if (wanted("latency")) results.latency = await latency(store, o, rt, log);
  // Before the backlog: a million-row table just dropped keeps the server busy for a while.
  if (wanted("drain-scale")) {
    // The one-process drain it is compared with, measured in this run.
    results.drain ??= await drain(store, o, rt, log);
    results["drain-scale"] = await drainScale(store, o, rt, log, results.drain!.jobsPerSec);
  }
  if (wanted("drain-backlog")) {
    // The 20k drain it is compared with, measured in this run.
    results.drain ??= await drain(store, o, rt, log);
    results["drain-backlog"] = await drainBacklog(store, o, rt, log, results.drain!.jobsPerSec);
  }
  const wantedHttp = (s: HttpScenarioName) => o.scenario === "http" || o.scenario === s;
  if (wantedHttp("http-enqueue")) results["http-enqueue"] = await httpEnqueue(store, rt, log);
  if (wantedHttp("http-work")) results["http-work"] = await httpWork(store, o, rt, log);
  if (wantedHttp("http-remote-worker"))
    results["http-remote-worker"] = await httpRemoteWorker(store, o, rt, log);
  if (wantedHttp("http-wake")) results["http-wake"] = await httpWake(store, rt, log);
  if (wantedHttp("http-idle")) results["http-idle"] = await httpIdle(store, rt, log);
  await store.close?.();
  const cpu = cpus();
  const report = {
    store: store.name,
    workerRuntime: rt.name,
    date: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    machine: {
      cpus: cpu.length,
      cpuModel: cpu[0]?.model ?? "unknown",
      memoryGB: round(totalmem() / 2 ** 30, 1),
      freeMemoryGB: round(freemem() / 2 ** 30, 1),
      os: `${platform()} ${release()}`,
      node: process.version,
    },
    results,
    targets: rows(results, store.targets).map((r) => ({ ...r })),
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    console.log(
      `errand bench: ${store.name}, workers on ${rt.name}, ${report.machine.cpus} × ${report.machine.cpuModel}, node ${report.machine.node}\n`,
    );
    console.log(table(rows(results, store.targets)));
    const l = results.latency;
    if (l)
      console.log(
        `\nlatency max ${l.max} ms, mean ${l.mean} ms; clock offset between processes ${l.clockOffsetMs} ms`,
      );
    console.log("");
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
