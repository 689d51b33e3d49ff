/**
 * What issue 5's HTTP scenarios share: an errand server in a child process (server-child.mjs) on
 * the scenario's fresh database, and JSON requests to it from this process.
 */
import { Child } from "../../child.js";
import type { Runtime } from "../../runtime.js";
import type { Database } from "../../stores.js";

/** An HTTP scenario's server child is killed past this. */
const HTTP_DEADLINE_MS = 120_000;

export interface HttpServer {
  base: string;
  /** The server's RSS right after `listen()`. */
  rssBeforeBytes: number;
  mem(): Promise<{ rssBytes: number; heapUsedBytes: number; waiters: number }>;
}

/** A job as the lease endpoint returns it: what the bench needs of it. */
export interface WireJob {
  id: string;
  attempt: number;
}

/** Runs `fn` against an errand server in a child process (loopback, random port) on `db`. */
export async function withServer<T>(
  db: Database,
  rt: Runtime,
  label: string,
  fn: (s: HttpServer) => Promise<T>,
) {
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
export async function http<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 30_000,
) {
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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
