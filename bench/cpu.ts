/**
 * Where a drain's CPU time goes: the worker processes report their own (`process.cpuUsage()`),
 * and a store server on this machine (PostgreSQL, redis-server) is read from /proc around the
 * drain. SQLite runs inside the worker, so its time is the worker's.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { cpus, platform } from "node:os";
import { round } from "./common.js";
import type { BenchStore } from "./stores.js";

/** Where a drain's CPU time went: per job in the worker process(es) and in the store server. */
export interface CpuSplit {
  workerUsPerJob: number;
  /** Null for SQLite (in the worker's process) or a server elsewhere. */
  serverUsPerJob: number | null;
  /** Worker + server CPU time over wall time: how many of the machine's cores the drain kept busy. */
  busyCores: number;
}

export function cpuSplit(
  jobs: number,
  elapsedMs: number,
  workerMs: number,
  serverMs: number | null,
): CpuSplit {
  return {
    workerUsPerJob: round((workerMs * 1000) / jobs, 1),
    serverUsPerJob: serverMs === null ? null : round((serverMs * 1000) / jobs, 1),
    busyCores: round((workerMs + (serverMs ?? 0)) / elapsedMs, 2),
  };
}

/** A drain's whole CPU per job: its worker processes' and its store server's. */
export const cpuPerJob = (c: CpuSplit): number => c.workerUsPerJob + (c.serverUsPerJob ?? 0);

/** "worker 40 µs + server 62 µs; 1.3 of 2 cores busy" */
export function fmtCpu(c: CpuSplit): string {
  const server = c.serverUsPerJob === null ? "" : ` + server ${c.serverUsPerJob} µs`;
  return `worker ${c.workerUsPerJob} µs${server}; ${c.busyCores} of ${cpus().length} cores busy`;
}

/** Starts timing the store server's CPU; the function returned reads the ms used since (or null). */
export function serverCpuSpan(store: BenchStore): () => number | null {
  const from = serverCpuMs(store.serverProcess);
  return () => {
    const to = serverCpuMs(store.serverProcess);
    return from === null || to === null ? null : to - from;
  };
}

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

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  return ticksPerSecond;
}
