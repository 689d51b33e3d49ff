/**
 * What a run prints: one JSON object (`--json`), or a table of each figure beside its target.
 */
import { cpus, freemem, platform, release, totalmem } from "node:os";
import { fmtInt, round } from "./common.js";
import { cpuPerJob, fmtCpu } from "./cpu.js";
import type { Runtime } from "./runtime.js";
import type { BesideBacklogResult } from "./scenarios/beside-backlog.js";
import type { Results } from "./scenarios/index.js";
import type { BenchStore } from "./stores.js";
import { HTTP_TARGETS, type Targets } from "./targets.js";

/** The JSON of `--json`: the run, the machine, each scenario's result and the table's rows. */
export interface Report {
  store: string;
  workerRuntime: string;
  date: string;
  command: string;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGB: number;
    freeMemoryGB: number;
    os: string;
    node: string;
  };
  results: Results;
  targets: Row[];
}

export function buildReport(store: BenchStore, rt: Runtime, results: Results): Report {
  const cpu = cpus();
  return {
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
}

/** The report for a human, on stdout: a heading, the table, and the latency figures it leaves out. */
export function printReport(report: Report): void {
  console.log(
    `errand bench: ${report.store}, workers on ${report.workerRuntime}, ${report.machine.cpus} × ${report.machine.cpuModel}, node ${report.machine.node}\n`,
  );
  console.log(table(report.targets));
  const l = report.results.latency;
  if (l)
    console.log(
      `\nlatency max ${l.max} ms, mean ${l.mean} ms; clock offset between processes ${l.clockOffsetMs} ms`,
    );
  console.log("");
}

/** One line of the table: a figure and the target it is held to (`ok` null: no target). */
export interface Row {
  metric: string;
  value: string;
  target: string;
  ok: boolean | null;
}

/** The table's rows, in the order a reader takes them (not the order of the run). */
export function rows(r: Results, t: Targets): Row[] {
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
  const bl = r["drain-blocked"];
  if (bl) {
    add(`drain with ${fmtInt(bl.blocked)} blocked in the store`, `${fmtInt(bl.jobsPerSec)} jobs/s`, "", null);
    add(
      "  vs drain with none blocked",
      `${(bl.ratio * 100).toFixed(0)} %`,
      `≥ ${(t.blockedRatio * 100).toFixed(0)} %`,
      bl.ratio >= t.blockedRatio,
    );
    add("  each ran exactly once, the blocked still blocked", String(bl.exactlyOnce), "true", bl.exactlyOnce);
    if (bl.housekeeping) {
      // A pass landing in one drain and not the others moves its ratio: say when that happened.
      add(
        "  autovacuum passes over its tables during the drains (before, blocked, after)",
        bl.housekeeping.vacuums.join(", "),
        "",
        null,
      );
    }
  }
  const fi = r["deps-fan-in"];
  if (fi) {
    add(
      `fan-in: one job waiting on ${fmtInt(fi.edges)} (drain of all, concurrency ${fi.concurrency})`,
      `${fmtInt(fi.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add(
      "  the join's start after its last dependency's end",
      `${fi.joinStartAfterMs} ms`,
      `≤ ${t.joinStartMs} ms`,
      fi.joinStartAfterMs <= t.joinStartMs,
    );
    add(
      `  per edge (join enqueue + drain), vs at ${fmtInt(fi.small.edges)}`,
      `${fi.msPerEdge} ms, ×${fi.perEdgeRatio}`,
      "",
      null,
    );
    add("  each ran exactly once, the join last", String(fi.exactlyOnce), "true", fi.exactlyOnce);
  }
  const fo = r["deps-fan-out"];
  if (fo) {
    add(
      `fan-out: the completion unblocking ${fmtInt(fo.edges)} waiting on it`,
      `${fo.completeMs} ms`,
      "",
      null,
    );
    add(
      "  all pending right after that one write",
      String(fo.unblockedInOneWrite),
      "true",
      fo.unblockedInOneWrite,
    );
    add(`  per edge, vs at ${fmtInt(fo.small.edges)}`, `${fo.msPerEdge} ms, ×${fo.perEdgeRatio}`, "", null);
    add(`  drain of the ${fmtInt(fo.edges)} after`, `${fmtInt(fo.jobsPerSec)} jobs/s`, "", null);
    add("  each ran exactly once", String(fo.exactlyOnce), "true", fo.exactlyOnce);
  }
  const dc = r["deps-chain"];
  if (dc) {
    add(`chain: one flow ${fmtInt(dc.depth)} deep, enqueued`, `${dc.enqueueMs} ms`, "", null);
    add(
      `  per level, vs at ${fmtInt(dc.small.depth)} deep`,
      `${dc.msPerLevel} ms, ×${dc.perLevelRatio}`,
      "",
      null,
    );
    add("  the head pending, the rest blocked", String(dc.storedRight), "true", dc.storedRight);
  }
  const kd = r["keys-drain"];
  if (kd) {
    add(
      `drain over ${fmtInt(kd.keys)} keys, keyConcurrency 1, fair (${fmtInt(kd.jobs)}, concurrency ${kd.concurrency})`,
      `${fmtInt(kd.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add(
      "  vs the same drain without keys",
      `${(kd.ratio * 100).toFixed(0)} %`,
      `≥ ${(t.keysRatio * 100).toFixed(0)} %`,
      kd.ratio >= t.keysRatio,
    );
    add("  each ran exactly once", String(kd.exactlyOnce), "true", kd.exactlyOnce);
  }
  const kb = r["keys-backlog"];
  if (kb) {
    add(
      `drain of ${fmtInt(kb.keys)} keys' backlogs, enqueued key by key (${fmtInt(kb.jobs)}, concurrency ${kb.concurrency})`,
      "",
      "",
      null,
    );
    add("  under keyConcurrency 1", `${fmtInt(kb.keyConcurrencyJobsPerSec)} jobs/s`, "", null);
    add("  under ordered", `${fmtInt(kb.orderedJobsPerSec)} jobs/s`, "", null);
    add("  each ran exactly once", String(kb.exactlyOnce), "true", kb.exactlyOnce);
  }
  const fs = r["fair-starvation"];
  if (fs) {
    add(
      `fair: ${fmtInt(fs.late)} of key B after ${fmtInt(fs.backlog)} of key A, concurrency ${fs.concurrency}: A's starts before B's last`,
      `${fmtInt(fs.fairABeforeLastB)} (${fmtInt(fs.fairMs)} ms)`,
      "< 50",
      fs.fairABeforeLastB < 50,
    );
    add("  the same without fair", fmtInt(fs.plainABeforeLastB), "", null);
  }
  const rl = r["rate-limit"];
  if (rl) {
    add(
      `rate limit ${rl.limit}/s, ${rl.processes} processes, ${rl.seconds} s: most claims (job.startedAt) in any 1 s`,
      String(rl.maxInWindowClaimed),
      `≤ ${t.rateMaxInWindow}`,
      rl.maxInWindowClaimed <= t.rateMaxInWindow,
    );
    add(
      `  most handler starts in any 1 s (claim → start lag p50 ${rl.startLagMs.p50} ms, max ${rl.startLagMs.max} ms)`,
      String(rl.maxInWindow),
      `≤ ${t.rateMaxInWindow}`,
      rl.maxInWindow <= t.rateMaxInWindow,
    );
    add("  mean rate", `${rl.meanPerSec}/s`, `≥ ${t.rateMeanPerSec}/s`, rl.meanPerSec >= t.rateMeanPerSec);
    add("  no job ran twice", String(rl.exactlyOnce), "true", rl.exactlyOnce);
  }
  const sh = r["stats-held"];
  if (sh) {
    for (const z of sh.sizes) {
      add(
        `stats() over ${fmtInt(z.jobs)} ready keyed jobs (${fmtInt(sh.keys)} keys): with held-back counts / without`,
        `${z.withLimitsMs} / ${z.withoutMs} ms${z.exact ? "" : " (sampled)"}`,
        "",
        null,
      );
    }
  }
  const beside = (b: BesideBacklogResult | undefined, what: string) => {
    if (!b) return;
    add(
      `drain with ${fmtInt(b.held)} ${what} (median of ${b.rounds})`,
      `${fmtInt(b.jobsPerSec)} jobs/s`,
      "",
      null,
    );
    add(
      "  vs drain without them",
      `${(b.ratio * 100).toFixed(0)} %`,
      `≥ ${(t.heldRatio * 100).toFixed(0)} %`,
      b.ratio >= t.heldRatio,
    );
    add(
      "  worker CPU per job, beside them vs without",
      `${b.cpuUsPerJob} vs ${b.baselineCpuUsPerJob} µs`,
      "",
      null,
    );
    add("  each ran exactly once, none of them ran", String(b.exactlyOnce), "true", b.exactlyOnce);
  };
  beside(r["rate-held"], "of a type held back by its rate limit ahead");
  beside(r["scheduled-ahead"], "of its type at a higher priority scheduled an hour ahead");
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
    const one = r.drain?.cpu;
    if (one) {
      const ratio = round(cpuPerJob(sc.cpu) / cpuPerJob(one), 2);
      add(
        "  CPU per job vs one process (workers + server)",
        `×${ratio}`,
        t.scaleCpuRatio === undefined ? "" : `≤ ×${t.scaleCpuRatio}`,
        t.scaleCpuRatio === undefined ? null : ratio <= t.scaleCpuRatio,
      );
    }
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
