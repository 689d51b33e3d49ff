/**
 * `npm run bench:compare [-- options]`: errand and the queues it is measured against (plainjob on
 * SQLite, graphile-worker and pg-boss on PostgreSQL, BullMQ on Redis), side by side in one run on
 * one machine, through one harness: the same scenarios, timed the same way, for every queue.
 *
 *   enqueue-bulk  one bulk call of 20,000 no-op jobs (each queue's own bulk API), median of 3
 *                 after one warm-up call, in this process
 *   drain         20,000 waiting no-op jobs, one worker process at concurrency 50: from starting
 *                 the worker until every job has run and the store holds none still to do; each
 *                 job must run exactly once; the worker's RSS after it
 *   latency       an idle worker (concurrency 50) in another process; this process enqueues 300
 *                 jobs 10 ms apart: enqueue call → handler start, p50 / p99
 *
 * The other queues are installed on first use into bench/compare/node_modules (their own
 * package.json and lock, apart from errand's dependencies); errand runs compiled (tsc), as it is
 * deployed. Each queue gets a fresh file, schema or key prefix, removed afterwards.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, Option } from "commander";
import { Child } from "../child.ts";
import { compileErrand, fmtInt, median, now, pct, positiveInt, round, sleepUntil } from "../common.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const log = (line) => console.error(`[compare] ${line}`);
const CHILD_DEADLINE_MS = 180_000;

/** Installs the other queues (once) and loads the adapters, which import them. */
async function loadAdapters() {
  if (!existsSync(join(here, "node_modules", "bullmq"))) {
    log("installing the queues to compare with into bench/compare/node_modules (npm ci)…");
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: here, stdio: "inherit" });
  }
  return (await import("./adapters/index.mjs")).ADAPTERS;
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

async function enqueueBulk(adapter, env, o) {
  return withNamespace(adapter, env, (ns) =>
    withSession(adapter, ns, env, async (session) => {
      await session.enqueueBulk(payloads(o.jobs));
      const runs = [];
      for (let k = 0; k < 3; k++) {
        const jobs = payloads(o.jobs);
        const t0 = now();
        await session.enqueueBulk(jobs);
        runs.push(Math.round(o.jobs / ((now() - t0) / 1000)));
      }
      return { runs, jobsPerSec: median(runs) };
    }),
  );
}

async function drain(lib, adapter, env, o) {
  return withNamespace(adapter, env, async (ns) => {
    await withSession(adapter, ns, env, (session) => session.enqueueBulk(payloads(o.jobs)));
    const child = new Child("./compare/child.mjs", CHILD_DEADLINE_MS, `${lib} drain worker`, false);
    try {
      child.send({ type: "init", lib, ns, env, mode: "drain", expect: o.jobs, concurrency: 50 });
      const ready = await child.next("ready");
      child.send({ type: "go" });
      const done = await child.next("done");
      return {
        jobsPerSec: Math.round(o.jobs / (done.elapsedMs / 1000)),
        exactlyOnce: done.calls === o.jobs && done.distinct === o.jobs && done.repeated === 0,
        workerRssMB: round(done.rssBytes / 2 ** 20, 1),
        workerRssBeforeMB: round(ready.rssBytes / 2 ** 20, 1),
        workerCpuUsPerJob: round((done.cpuMs * 1000) / o.jobs, 1),
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

const fmtCell = (n) => (n === undefined ? "—" : fmtInt(n));

/** The side-by-side table: one row per queue, errand first within each store. */
function table(results) {
  const head = ["queue", "store", "bulk enqueue/s", "drain/s", "once", "RSS MB", "p50 ms", "p99 ms"];
  const rows = results.map((r) => [
    r.name,
    r.store,
    fmtCell(r.enqueue?.jobsPerSec),
    fmtCell(r.drain?.jobsPerSec),
    r.drain ? (r.drain.exactlyOnce ? "yes" : "NO") : "—",
    r.drain ? String(r.drain.workerRssMB) : "—",
    r.latency ? String(r.latency.p50) : "—",
    r.latency ? String(r.latency.p99) : "—",
  ]);
  const w = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells) => cells.map((x, c) => (c < 2 ? x.padEnd(w[c]) : x.padStart(w[c]))).join("  ");
  return [line(head), line(w.map((n) => "-".repeat(n))), ...rows.map(line)].join("\n");
}

/** errand's figures as multiples of each other queue's on the same store. */
function ratios(results) {
  const out = [];
  for (const r of results) {
    if (r.package === "errand") continue;
    const e = results.find((x) => x.package === "errand" && x.store === r.store);
    if (!e) continue;
    const x = (a, b) => (a && b ? `×${round(a / b, 2)}` : "—");
    out.push(
      `errand (${r.store}) vs ${r.name}: enqueue ${x(e.enqueue?.jobsPerSec, r.enqueue?.jobsPerSec)}, ` +
        `drain ${x(e.drain?.jobsPerSec, r.drain?.jobsPerSec)}, ` +
        `p50 latency ${x(r.latency?.p50, e.latency?.p50)} lower`,
    );
  }
  return out.join("\n");
}

async function main() {
  const program = new Command("npm run bench:compare --")
    .description("errand side by side with the queues it is measured against (see bench/compare/run.mjs)")
    .option("--lib <names>", "comma-separated queues to run (default: all; see bench/compare/adapters)")
    .addOption(
      new Option("--scenario <name>", "run one scenario").choices(["enqueue-bulk", "drain", "latency"]),
    )
    .option("--jobs <n>", "jobs in the enqueue and drain scenarios", positiveInt, 20_000)
    .option("--latency-jobs <n>", "jobs in the latency scenario", positiveInt, 300)
    .option("--pg <url>", "PostgreSQL for the PostgreSQL queues", "postgres://postgres@127.0.0.1:5432/test")
    .option("--redis <url>", "Redis for the Redis queues", "redis://127.0.0.1:6379")
    .option("--json", "print one JSON object to stdout instead of a table", false)
    .showHelpAfterError("(npm run bench:compare -- --help for the options)")
    .parse(process.argv.slice(2), { from: "user" });
  const o = program.opts();
  const adapters = await loadAdapters();
  const libs = o.lib ? o.lib.split(",").map((s) => s.trim()) : Object.keys(adapters);
  for (const lib of libs) {
    if (!adapters[lib]) program.error(`unknown queue "${lib}"; one of ${Object.keys(adapters).join(", ")}`);
  }
  log("compiling errand (tsc)…");
  const env = { pgUrl: o.pg, redisUrl: o.redis, errand: compileErrand("errand-compare").entry };
  const wanted = (s) => !o.scenario || o.scenario === s;
  const results = [];
  for (const lib of libs) {
    const a = await adapters[lib]();
    const r = { lib, name: a.name, store: a.store, package: a.package, settings: a.settings };
    if (wanted("enqueue-bulk")) {
      r.enqueue = await enqueueBulk(a, env, o);
      log(`${a.name}: bulk enqueue ${r.enqueue.runs.map(fmtInt).join(", ")} jobs/s`);
    }
    if (wanted("drain")) {
      r.drain = await drain(lib, a, env, o);
      log(
        `${a.name}: drain ${fmtInt(r.drain.jobsPerSec)} jobs/s, exactly once: ${r.drain.exactlyOnce}, RSS ${r.drain.workerRssMB} MB`,
      );
    }
    if (wanted("latency")) {
      r.latency = await latency(lib, a, env, o);
      log(`${a.name}: latency p50 ${r.latency.p50} ms, p95 ${r.latency.p95} ms, p99 ${r.latency.p99} ms`);
    }
    results.push(r);
  }
  const lock = JSON.parse(readFileSync(join(here, "package-lock.json"), "utf8"));
  const versions = Object.fromEntries(
    ["bullmq", "graphile-worker", "pg-boss", "plainjob", "pg", "ioredis"].map((p) => [
      p,
      lock.packages[`node_modules/${p}`]?.version,
    ]),
  );
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    versions,
    jobs: o.jobs,
    latencyJobs: o.latencyJobs,
    results,
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  console.log(`\n${report.machine.cpus} × ${report.machine.cpuModel}, node ${report.machine.node}`);
  console.log(
    `${Object.entries(versions)
      .map(([p, v]) => `${p} ${v}`)
      .join(", ")}\n`,
  );
  console.log(table(results));
  const rs = ratios(results);
  if (rs) console.log(`\n${rs}`);
  console.log(`\nsettings:\n${results.map((r) => `  ${r.name}: ${r.settings}`).join("\n")}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
