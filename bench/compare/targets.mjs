/**
 * What a `bench:compare` run says about issue 16's targets, read off its own medians: each target
 * as the ratio it asks for, met or not, so a run's verdict is printed with its table rather than
 * worked out by hand. And each drain against its CPU ceiling: the rate at which its CPU per job
 * (worker and store server) would keep every core busy, which bounds what any overlap could reach.
 * A target whose rows the run did not measure (`--lib`, `--scenario`) is left out.
 */
import { fmtInt, round } from "../common.ts";

/**
 * The errand rows that keep completed jobs (errand's default retention), by store, and the row of
 * its bulk enqueue by `enqueueManyIds`.
 */
const KEPT = {
  sqlite: { defaults: "errand-sqlite", prefetch: "errand-sqlite-prefetch", ids: "errand-sqlite-ids" },
  postgres: { defaults: "errand-postgres", prefetch: "errand-postgres-prefetch", ids: "errand-postgres-ids" },
  redis: { defaults: "errand-redis", prefetch: "errand-redis-prefetch", ids: "errand-redis-ids" },
};

/** issue 16's ratios: errand's figure over the other queue's at its best, on the same store. */
const RATIO_TARGETS = [
  { what: "PostgreSQL drain", store: "postgres", peer: "graphile-worker", figure: "drain", atLeast: 1.5 },
  {
    what: "PostgreSQL bulk enqueue",
    store: "postgres",
    peer: "graphile-worker",
    figure: "enqueue",
    atLeast: 1.5,
  },
  { what: "SQLite bulk enqueue", store: "sqlite", peer: "plainjob", figure: "enqueue", atLeast: 1.2 },
  { what: "SQLite drain", store: "sqlite", peer: "plainjob", figure: "drain", atLeast: 5 },
  { what: "Redis drain", store: "redis", peer: "bullmq", figure: "drain", atLeast: 2.5 },
  { what: "Redis bulk enqueue", store: "redis", peer: "bullmq", figure: "enqueue", atLeast: 2 },
];

/** Worker RSS after the drain, errand at its defaults, on every store (issue 16: at 50 and 300). */
const RSS_LIMIT_MB = 80;

const ratio = (a, b) => (a && b ? a / b : undefined);
const fmtRatio = (x) => `×${round(x, 2).toFixed(2)}`;
const span = (xs) => {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? fmtRatio(lo) : `${fmtRatio(lo)}–${round(hi, 2).toFixed(2)}`;
};

/**
 * One line per target the run measured. A drain target is judged per configuration (errand at its
 * defaults, and with the prefetch the README advises for throughput); a bulk-enqueue target over
 * every errand row of the store that keeps completed jobs (they run the same enqueue code, so
 * their spread is the run's noise), cold and warm, and met only if the lowest of them meets it.
 * @param {Array<{ lib: string, package: string, store: string, median: any }>} results
 * @param {{ concurrency: number }} o
 */
export function targetLines(results, o) {
  const byLib = new Map(results.map((r) => [r.lib, r.median]));
  const out = [];
  for (const t of RATIO_TARGETS) {
    const peer = byLib.get(t.peer);
    if (peer === undefined) continue;
    const rows = KEPT[t.store];
    const name = results.find((r) => r.lib === t.peer).name;
    if (t.figure === "drain") {
      const at = (lib) => ratio(byLib.get(lib)?.drain?.jobsPerSec, peer.drain?.jobsPerSec);
      const defaults = at(rows.defaults);
      const prefetch = at(rows.prefetch);
      if (defaults === undefined && prefetch === undefined) continue;
      const parts = [];
      if (defaults !== undefined) parts.push(`${fmtRatio(defaults)} at defaults`);
      if (prefetch !== undefined) parts.push(`${fmtRatio(prefetch)} with prefetch`);
      const verdict =
        defaults !== undefined && defaults >= t.atLeast
          ? "met at defaults"
          : prefetch !== undefined && prefetch >= t.atLeast
            ? "met with prefetch"
            : "not met";
      out.push(`${t.what} ≥ ×${t.atLeast} ${name}: ${parts.join(", ")}: ${verdict}`);
    } else {
      const libs = [rows.defaults, rows.prefetch].filter((lib) => byLib.get(lib)?.enqueue !== undefined);
      const against = (lib) => [
        ratio(byLib.get(lib).enqueue.coldJobsPerSec, peer.enqueue?.coldJobsPerSec),
        ratio(byLib.get(lib).enqueue.warmJobsPerSec, peer.enqueue?.warmJobsPerSec),
      ];
      const cold = libs.map((lib) => against(lib)[0]);
      const warm = libs.map((lib) => against(lib)[1]);
      if (cold.length === 0 || cold.includes(undefined) || warm.includes(undefined)) continue;
      // Judged on enqueueMany, the call the issue names; enqueueManyIds, which answers ids as
      // plainjob's addMany does, is printed beside it.
      const met = Math.min(...cold, ...warm) >= t.atLeast;
      const ids = byLib.get(rows.ids)?.enqueue !== undefined ? against(rows.ids) : undefined;
      const idsPart =
        ids === undefined || ids.includes(undefined)
          ? ""
          : ` (enqueueManyIds ${fmtRatio(ids[0])} / ${fmtRatio(ids[1])})`;
      out.push(
        `${t.what} ≥ ×${t.atLeast} ${name}, cold / warm: ${span(cold)} / ${span(warm)}${idsPart}: ${met ? "met" : "not met"}`,
      );
    }
  }
  const rss = Object.entries(KEPT)
    .map(([store, rows]) => [store, byLib.get(rows.defaults)?.drain?.workerRssMB])
    .filter(([, mb]) => mb !== undefined);
  if (rss.length > 0) {
    const met = rss.every(([, mb]) => mb <= RSS_LIMIT_MB);
    out.push(
      `worker RSS ≤ ${RSS_LIMIT_MB} MB at defaults, concurrency ${o.concurrency}: ` +
        `${rss.map(([store, mb]) => `${store} ${mb}`).join(", ")} MB: ${met ? "met" : "not met"}`,
    );
  }
  return out;
}

/**
 * Each drain with a local store server (its CPU measured) against `cpus` cores kept busy at its
 * CPU per job: `cpus × 10⁶ ÷ (worker + server µs a job)` jobs/s, and the share of it reached.
 * @param {Array<{ name: string, median: any }>} results
 * @param {number} cpus
 */
export function ceilingLines(results, cpus) {
  const out = [];
  for (const r of results) {
    const d = r.median.drain;
    if (d?.serverCpuUsPerJob === undefined || d.workerCpuUsPerJob === undefined) continue;
    const perJob = d.workerCpuUsPerJob + d.serverCpuUsPerJob;
    if (!(perJob > 0)) continue;
    const ceiling = (cpus * 1e6) / perJob;
    out.push(
      `${r.name}: ${fmtInt(d.jobsPerSec)} of ${fmtInt(Math.round(ceiling))} jobs/s ` +
        `(${Math.round((100 * d.jobsPerSec) / ceiling)}%; ${round(perJob, 1)} µs a job)`,
    );
  }
  return out;
}
