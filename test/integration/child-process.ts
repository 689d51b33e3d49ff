/**
 * Worker processes for the integration tests: `process.execPath --import tsx worker-process.ts`,
 * driven over IPC. Tests wait on the messages children send, never on sleeps.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { JobState, Queue } from "../../src/index.js";

export interface Message {
  type: string;
  [key: string]: unknown;
}

/** What a worker process is told to do (see worker-process.ts). */
export interface WorkerInit {
  url: string;
  concurrency: number;
  leaseMs?: number;
  sweepIntervalMs?: number;
  pollIntervalMs?: number;
  /** Append `<id> <attempt>\n` here (appendFileSync) when a handler starts, before any work. */
  startLog?: string;
  /** Each handler works for a random time in this range (ms), checking nothing. */
  workMs?: [number, number];
  /** Send a `started` message as each handler starts. */
  reportStarts?: boolean;
  /** Append `<id> <start ms> <end ms>\n` here when a handler ends (wall clock). */
  spanLog?: string;
  /** Run only these job types (default: every type the child knows). */
  only?: string[];
  /** The Worker's `prefetch` (default 0). */
  prefetch?: number;
}

const SCRIPT = fileURLToPath(new URL("./worker-process.ts", import.meta.url));

export class WorkerProcess {
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  #handlers = new Map<string, Array<(m: Message) => void>>();
  #dead = false;

  /** @param script - another child script speaking the same protocol (default worker-process.ts). */
  constructor(init: WorkerInit | Record<string, unknown>, script: string = SCRIPT) {
    this.proc = fork(script, [], {
      execPath: process.execPath,
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.proc.on("message", (m: Message) => {
      for (const fn of this.#handlers.get(m.type) ?? []) fn(m);
    });
    this.exited = new Promise((resolve) =>
      this.proc.on("exit", () => {
        this.#dead = true;
        for (const fn of this.#handlers.get("exit") ?? []) fn({ type: "exit" });
        resolve();
      }),
    );
    this.proc.send({ type: "init", ...init });
  }

  get alive(): boolean {
    return !this.#dead;
  }

  on(type: string, fn: (m: Message) => void): () => void {
    const list = this.#handlers.get(type) ?? [];
    list.push(fn);
    this.#handlers.set(type, list);
    return () => list.splice(list.indexOf(fn) >>> 0, 1);
  }

  /** The next message of this type; rejects if the process exits first. */
  next<T extends Message = Message>(type: string): Promise<T> {
    if (this.#dead) return Promise.reject(new Error(`worker ${this.proc.pid} has exited`));
    return new Promise<T>((resolve, reject) => {
      const offs = [
        this.on(type, (m) => {
          for (const off of offs) off();
          resolve(m as T);
        }),
        this.on("exit", () => {
          for (const off of offs) off();
          reject(new Error(`worker ${this.proc.pid} exited before sending "${type}"`));
        }),
        this.on("error", (m) => {
          for (const off of offs) off();
          reject(new Error(`worker ${this.proc.pid}: ${String(m.message)}`));
        }),
      ];
    });
  }

  /** SIGKILL: no cleanup, no last words. */
  kill(): Promise<void> {
    this.proc.kill("SIGKILL");
    return this.exited;
  }

  /** Graceful: the child closes its worker and queue, reports `closed` with what it saw, exits. */
  async close<T extends Message = Message>(): Promise<T> {
    const closed = this.next<T>("closed");
    this.proc.send({ type: "close" });
    const m = await closed;
    await this.exited;
    return m;
  }
}

/**
 * Resolves once the store holds no job in any of `states` (by default nothing left to run), asked
 * whenever one of `children` reports progress or goes idle: a job completed by a process that was
 * killed before it could say so is reported by no one, so the store is asked, not the messages
 * counted.
 */
export function untilNone(
  queue: Queue,
  children: readonly WorkerProcess[],
  states: readonly JobState[] = ["pending", "active"],
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = async () => {
      const counts = (await queue.stats()).states;
      if (states.every((s) => counts[s] === 0)) resolve();
    };
    for (const c of children) {
      c.on("completed", () => void check().catch(reject));
      c.on("idle", () => void check().catch(reject));
    }
    void check().catch(reject);
  });
}

/** Ends every child still alive and empties `children` (each test file's afterEach). */
export async function killAll(children: WorkerProcess[]): Promise<void> {
  await Promise.all(children.splice(0).map((c) => (c.alive ? c.kill() : undefined)));
}
