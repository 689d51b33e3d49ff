/** A drain in a worker child process (worker-child.mjs), shared by drain, drain-fail and drain-backlog. */
import { Child } from "../child.js";
import { serverCpuSpan } from "../cpu.js";
import type { Runtime } from "../runtime.js";
import type { BenchStore, Database } from "../stores.js";
import { CHILD_DEADLINE_MS } from "./scenario.js";

export interface DrainDone {
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
export async function drainIn(
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
