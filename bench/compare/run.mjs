/**
 * `npm run bench:compare [-- options]`: errand and the queues it is measured against (plainjob on
 * SQLite, graphile-worker and pg-boss on PostgreSQL, BullMQ on Redis), side by side in one run on
 * one machine, through one harness: the same scenarios, timed the same way, for every queue. Each
 * other queue is configured as its own documentation advises for throughput; its adapter cites the
 * docs, and its row of the table names the settings.
 *
 *   enqueue-bulk  one bulk call of 20,000 no-op jobs (each queue's own bulk API) in a fresh worker
 *                 process on an empty store, after the queue is opened: cold, the process's first
 *                 call (as a user's first call), and warm, its second call
 *   drain         20,000 waiting no-op jobs, one worker process at concurrency 50 (--concurrency): from starting
 *                 the worker until every job has run and the store holds none still to do; each
 *                 job must run exactly once; the worker's RSS and CPU after it. With --analyze,
 *                 the PostgreSQL queues' drains start after an ANALYZE of the database, as
 *                 autovacuum would run one after a bulk enqueue: planners then see every job waiting
 *   latency       an idle worker (concurrency 50) in another process; this process enqueues 300
 *                 jobs 10 ms apart: enqueue call → handler start, p50 / p99
 *
 * Every scenario runs `--runs` times (3 by default) and the table shows the medians; the runs go
 * in rounds (every queue once, then again), so a spell of load from elsewhere on the machine falls
 * on every queue rather than on one. After the table come errand's ratios to each other queue on
 * its store, each drain against its CPU ceiling (the rate at which its CPU per job would keep every
 * core busy), and issue 16's targets as this run's medians meet them (targets.mjs).
 *
 * The other queues are installed on first use into bench/compare/node_modules (their own
 * package.json and lock, apart from errand's dependencies); errand runs compiled (tsc), as it is
 * deployed. Each queue gets a fresh file, schema or key prefix, removed afterwards.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, Option } from "commander";
import { Child } from "../child.ts";
import { compileErrand, fmtInt, median, now, pct, positiveInt, round, sleepUntil } from "../common.ts";
import { serverCpuSpan } from "../cpu.ts";
import { analyzeDatabase } from "./adapters/util.mjs";
import { ceilingLines, targetLines } from "./targets.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const log = (line) => console.error(`[compare] ${line}`);
const CHILD_DEADLINE_MS = 180_000;

/** Installs the other queues (once) and loads the adapters, which import them. */
async function loadAdapters() {
  if (!existsSync(join(here, "node_modules", "bullmq"))) {
    log("installing the queues to compare with into bench/compare/node_modules (npm ci)…");
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: here, stdio: "inherit" });
  }
  return import("./adapters/index.mjs");
}

const payloads = (n) => Array.from({ length: n }, (_, i) => ({ i }));

/** Runs `fn` on a fresh namespace of the adapter, removed afterwards. */
async function withNamespace(adapter, env, fn) {
  const ns = await adapter.create(env);
  try {
    return await fn(ns);
  } finally {
    await adapter.destroy(ns, env);
  }
}

async function withSession(adapter, ns, env, fn) {
  const session = await adapter.open(ns, env);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** One fresh process's first (cold) and second (warm) bulk call, on an empty namespace. */
async function enqueueBulk(lib, adapter, env, o) {
  return withNamespace(adapter, env, async (ns) => {
    const child = new Child("./compare/child.mjs", CHILD_DEADLINE_MS, `${lib} enqueue process`, false);
    try {
      child.send({ type: "init", lib, ns, env, mode: "enqueue", expect: o.jobs, concurrency: 0 });
      const { coldMs, warmMs } = await child.next("done");
      return {
        coldJobsPerSec: Math.round(o.jobs / (coldMs / 1000)),
        warmJobsPerSec: Math.round(o.jobs / (warmMs / 1000)),
      };
    } finally {
      await child.stop();
    }
  });
}

async function drain(lib, adapter, env, o) {
  return withNamespace(adapter, env, async (ns) => {
    await withSession(adapter, ns, env, (session) => session.enqueueBulk(payloads(o.jobs)));
    if (o.analyze && adapter.store === "postgres") await analyzeDatabase(env.pgUrl);
    const child = new Child("./compare/child.mjs", CHILD_DEADLINE_MS, `${lib} drain worker`, false);
    try {
      child.send({ type: "init", lib, ns, env, mode: "drain", expect: o.jobs, concurrency: o.concurrency });
      const ready = await child.next("ready");
      // The database server's CPU over the drain (PostgreSQL's backends, redis-server; SQLite runs
      // in the worker, so its time is the worker's): a queue can be cheap in its worker by making
      // its server work, so both are reported.
      const serverCpu = serverCpuSpan({ serverProcess: SERVER_PROCESS[adapter.store] });
      child.send({ type: "go" });
      const done = await child.next("done");
      const serverMs = serverCpu();
      return {
        jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
        exactlyOnce: done.calls === o.jobs && done.distinct === o.jobs && done.repeated === 0,
        workerRssMB: round(done.rssBytes / 2 ** 20, 1),
        workerRssBeforeMB: round(ready.rssBytes / 2 ** 20, 1),
        workerCpuUsPerJob: round((done.cpuMs * 1000) / o.jobs, 1),
        serverCpuUsPerJob: serverMs === null ? undefined : round((serverMs * 1000) / o.jobs, 1),
      };
    } finally {
      await child.stop();
    }
  });
}

async function latency(lib, adapter, env, o) {
  const WARMUP = 10;
  const INTERVAL_MS = 10;
  const total = WARMUP + o.latencyJobs;
  return withNamespace(adapter, env, (ns) =>
    withSession(adapter, ns, env, async (session) => {
      const child = new Child("./compare/child.mjs", CHILD_DEADLINE_MS, `${lib} latency worker`, false);
      try {
        child.send({ type: "init", lib, ns, env, mode: "latency", expect: total, concurrency: 50 });
        await child.next("ready");
        const sent = new Array(total);
        for (let i = 0; i < total; i++) {
          // The scenario's pacing: one job every 10 ms, so each finds the worker idle.
          await sleepUntil(now() + INTERVAL_MS);
          sent[i] = now();
          await session.enqueue({ i });
        }
        const { starts } = await child.next("done");
        const lat = starts.slice(WARMUP).map((t, k) => t - sent[WARMUP + k]);
        lat.sort((a, b) => a - b);
        return { p50: round(pct(lat, 50), 2), p95: round(pct(lat, 95), 2), p99: round(pct(lat, 99), 2) };
      } finally {
        await child.stop();
      }
    }),
  );
}

/** The local server processes whose CPU a drain on each store also costs (none for SQLite). */
const SERVER_PROCESS = { sqlite: undefined, postgres: /^postgres$/, redis: /^redis-server$/ };

const fmtCell = (n) => (n === undefined ? "—" : fmtInt(n));
const medianOf = (runs, pick) => {
  const xs = runs.map(pick).filter((x) => x !== undefined);
  return xs.length === 0 ? undefined : median(xs);
};

/** Medians over a queue's runs of each figure; exactly once only if it held in every run. */
function summarize(runs) {
  const enq = runs.map((r) => r.enqueue).filter(Boolean);
  const dr = runs.map((r) => r.drain).filter(Boolean);
  const lat = runs.map((r) => r.latency).filter(Boolean);
  return {
    enqueue: enq.length
      ? {
          coldJobsPerSec: medianOf(enq, (x) => x.coldJobsPerSec),
          warmJobsPerSec: medianOf(enq, (x) => x.warmJobsPerSec),
        }
      : undefined,
    drain: dr.length
      ? {
          jobsPerSec: medianOf(dr, (x) => x.jobsPerSec),
          exactlyOnce: dr.every((x) => x.exactlyOnce),
          workerRssMB: medianOf(dr, (x) => x.workerRssMB),
          workerCpuUsPerJob: medianOf(dr, (x) => x.workerCpuUsPerJob),
          serverCpuUsPerJob: medianOf(dr, (x) => x.serverCpuUsPerJob),
        }
      : undefined,
    latency: lat.length
      ? {
          p50: medianOf(lat, (x) => x.p50),
          p95: medianOf(lat, (x) => x.p95),
          p99: medianOf(lat, (x) => x.p99),
        }
      : undefined,
  };
}

/** The side-by-side table: one row per queue, errand first within each store, its settings last. */
function table(results) {
  const head = [
    "queue",
    "store",
    "enqueue cold/s",
    "enqueue warm/s",
    "drain/s",
    "once",
    "RSS MB",
    "worker µs/job",
    "server µs/job",
    "p50 ms",
    "p99 ms",
    "settings",
  ];
  const rows = results.map(({ name, store, settings, median: m }) => [
    name,
    store,
    fmtCell(m.enqueue?.coldJobsPerSec),
    fmtCell(m.enqueue?.warmJobsPerSec),
    fmtCell(m.drain?.jobsPerSec),
    m.drain ? (m.drain.exactlyOnce ? "yes" : "NO") : "—",
    m.drain ? String(m.drain.workerRssMB) : "—",
    m.drain ? String(m.drain.workerCpuUsPerJob) : "—",
    m.drain?.serverCpuUsPerJob !== undefined ? String(m.drain.serverCpuUsPerJob) : "—",
    m.latency ? String(m.latency.p50) : "—",
    m.latency ? String(m.latency.p99) : "—",
    settings,
  ]);
  const last = head.length - 1;
  const w = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const left = (c) => c < 2 || c === last;
  const line = (cells) =>
    cells
      .map((x, c) => (c === last ? x : left(c) ? x.padEnd(w[c]) : x.padStart(w[c])))
      .join("  ")
      .trimEnd();
  return [line(head), line(w.map((n) => "-".repeat(n))), ...rows.map(line)].join("\n");
}

/** errand's figures as multiples of each other queue's on the same store. */
function ratios(results) {
  const out = [];
  for (const r of results) {
    if (r.package === "errand") continue;
    // Every errand row of the store (its defaults, and any variant such as completed not kept).
    for (const er of results.filter((x) => x.package === "errand" && x.store === r.store)) {
      const e = er.median;
      const p = r.median;
      const x = (a, b) => (a && b ? `×${round(a / b, 2)}` : "—");
      out.push(
        `${er.name} vs ${r.name}: enqueue cold ${x(e.enqueue?.coldJobsPerSec, p.enqueue?.coldJobsPerSec)}, ` +
          `warm ${x(e.enqueue?.warmJobsPerSec, p.enqueue?.warmJobsPerSec)}, ` +
          `drain ${x(e.drain?.jobsPerSec, p.drain?.jobsPerSec)}, ` +
          `p50 latency ${x(p.latency?.p50, e.latency?.p50)} lower`,
      );
    }
  }
  return out.join("\n");
}

/**
 * Compiles src/ for this run alone: node_modules may be shared by several checkouts, so the build's
 * folder is named by this process and removed when it exits.
 */
function buildErrand() {
  log("compiling errand (tsc)…");
  const { entry } = compileErrand(`errand-compare-${process.pid}`);
  process.on("exit", () => rmSync(dirname(fileURLToPath(entry)), { recursive: true, force: true }));
  return entry;
}

async function main() {
  const program = new Command("npm run bench:compare --")
    .description("errand side by side with the queues it is measured against (see bench/compare/run.mjs)")
    .option("--lib <names>", "comma-separated queues to run (default: all but graphile-worker-defaults)")
    .addOption(
      new Option("--scenario <name>", "run one scenario").choices(["enqueue-bulk", "drain", "latency"]),
    )
    .option("--jobs <n>", "jobs in the enqueue and drain scenarios", positiveInt, 20_000)
    .option(
      "--concurrency <n>",
      "the drain worker's concurrency (issue 16 asks RSS at 50 and 300)",
      positiveInt,
      50,
    )
    .option("--latency-jobs <n>", "jobs in the latency scenario", positiveInt, 300)
    .option("--runs <n>", "runs of each scenario for each queue; the table shows medians", positiveInt, 3)
    .option(
      "--errand-entry <url>",
      "a compiled errand's index.js (file: URL) to measure instead of compiling src/, e.g. a build of another commit",
    )
    .option("--pg <url>", "PostgreSQL for the PostgreSQL queues", "postgres://postgres@127.0.0.1:5432/test")
    .option("--redis <url>", "Redis for the Redis queues", "redis://127.0.0.1:6379")
    .option(
      "--analyze",
      "ANALYZE the database between the PostgreSQL queues' bulk enqueue and their drain (statistics that see every job waiting, as autovacuum leaves them)",
      false,
    )
    .option("--json", "print one JSON object to stdout instead of a table", false)
    .showHelpAfterError("(npm run bench:compare -- --help for the options)")
    .parse(process.argv.slice(2), { from: "user" });
  const o = program.opts();
  const { ADAPTERS: adapters, DEFAULT_LIBS } = await loadAdapters();
  const libs = o.lib ? o.lib.split(",").map((s) => s.trim()) : DEFAULT_LIBS;
  for (const lib of libs) {
    if (!adapters[lib]) program.error(`unknown queue "${lib}"; one of ${Object.keys(adapters).join(", ")}`);
  }
  const loadBefore = loadavg().map((x) => round(x, 2));
  log(`load average ${loadBefore.join(" ")}`);
  const env = { pgUrl: o.pg, redisUrl: o.redis, errand: o.errandEntry ?? buildErrand() };
  const scenarioWanted = (s) => !o.scenario || o.scenario === s;
  const results = [];
  for (const lib of libs) {
    const a = await adapters[lib]();
    results.push({
      lib,
      name: a.name,
      store: a.store,
      package: a.package,
      settings: a.settings(o.concurrency),
      runs: [],
    });
  }
  for (let round_ = 1; round_ <= o.runs; round_++) {
    for (const r of results) {
      const a = await adapters[r.lib]();
      const run = {};
      const tag = `${r.name} [${round_}/${o.runs}]`;
      const wanted = (s) => scenarioWanted(s) && (a.scenarios === undefined || a.scenarios.includes(s));
      if (wanted("enqueue-bulk")) {
        run.enqueue = await enqueueBulk(r.lib, a, env, o);
        log(
          `${tag}: bulk enqueue cold ${fmtInt(run.enqueue.coldJobsPerSec)}, warm ${fmtInt(run.enqueue.warmJobsPerSec)} jobs/s`,
        );
      }
      if (wanted("drain")) {
        run.drain = await drain(r.lib, a, env, o);
        log(
          `${tag}: drain ${fmtInt(run.drain.jobsPerSec)} jobs/s, exactly once: ${run.drain.exactlyOnce}, ` +
            `RSS ${run.drain.workerRssMB} MB, ${run.drain.workerCpuUsPerJob} µs CPU/job`,
        );
      }
      if (wanted("latency")) {
        run.latency = await latency(r.lib, a, env, o);
        log(
          `${tag}: latency p50 ${run.latency.p50} ms, p95 ${run.latency.p95} ms, p99 ${run.latency.p99} ms`,
        );
      }
      r.runs.push(run);
    }
  }
  for (const r of results) r.median = summarize(r.runs);
  const loadAfter = loadavg().map((x) => round(x, 2));
  const lock = JSON.parse(readFileSync(join(here, "package-lock.json"), "utf8"));
  const versions = Object.fromEntries(
    ["bullmq", "graphile-worker", "pg-boss", "plainjob", "pg", "ioredis"].map((p) => [
      p,
      lock.packages[`node_modules/${p}`]?.version,
    ]),
  );
  const report = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      node: process.version,
      loadavg: { before: loadBefore, after: loadAfter },
    },
    versions,
    jobs: o.jobs,
    concurrency: o.concurrency,
    analyze: o.analyze,
    latencyJobs: o.latencyJobs,
    runs: o.runs,
    results,
    targets: targetLines(results, o),
    ceilings: ceilingLines(results, cpus().length),
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  console.log(`\n${report.machine.cpus} × ${report.machine.cpuModel}, node ${report.machine.node}`);
  console.log(
    `load average (1, 5, 15 min) before ${loadBefore.join(" ")}, after ${loadAfter.join(" ")}; ` +
      `${o.jobs} jobs, drain at concurrency ${o.concurrency}${o.analyze ? " (PostgreSQL: after an ANALYZE)" : ""}, ` +
      `medians of ${o.runs} run${o.runs === 1 ? "" : "s"}`,
  );
  console.log(
    `${Object.entries(versions)
      .map(([p, v]) => `${p} ${v}`)
      .join(", ")}\n`,
  );
  console.log(table(results));
  const rs = ratios(results);
  if (rs) console.log(`\n${rs}`);
  if (report.ceilings.length > 0) {
    console.log(
      `\nEach drain against its CPU ceiling (the rate at which its worker and server CPU per job would keep all ${report.machine.cpus} cores busy):`,
    );
    for (const line of report.ceilings) console.log(`  ${line}`);
  }
  if (report.targets.length > 0) {
    console.log("\nissue 16's targets in this run (errand's medians over the other queue's):");
    for (const line of report.targets) console.log(`  ${line}`);
  }
  console.log("");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
