/**
 * Child processes for the benchmark: `process.execPath --import tsx <script>`, talking over IPC.
 * Every child has a deadline; past it, it is SIGKILLed and every wait on it rejects.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface ChildMessage {
  type: string;
  [key: string]: unknown;
}

export class Child {
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  #inbox: ChildMessage[] = [];
  #waiters: Array<{ type: string; resolve: (m: ChildMessage) => void; reject: (e: Error) => void }> = [];
  #failure: Error | null = null;
  #timer: NodeJS.Timeout;

  /** @param tsx - load tsx, so the child can import TypeScript. */
  constructor(script: string, deadlineMs: number, name = script, tsx = true) {
    this.proc = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
      execPath: process.execPath,
      execArgv: [
        ...(tsx ? ["--import", "tsx"] : []),
        ...(process.env.ERRAND_BENCH_V8 ? process.env.ERRAND_BENCH_V8.split(" ") : []),
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.proc.on("message", (m: ChildMessage) => {
      if (m.type === "error") {
        this.#fail(new Error(`${name}: ${String(m.message)}`));
        return;
      }
      const i = this.#waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.#waiters.splice(i, 1)[0]!.resolve(m);
      else this.#inbox.push(m);
    });
    this.exited = new Promise((resolve) => {
      this.proc.on("exit", (code, signal) => {
        clearTimeout(this.#timer);
        this.#fail(new Error(`${name} exited (code ${code}, signal ${signal})`));
        resolve(code);
      });
    });
    this.#timer = setTimeout(() => {
      this.#fail(new Error(`${name} overran its ${deadlineMs} ms deadline and was killed`));
      this.proc.kill("SIGKILL");
    }, deadlineMs);
    this.#timer.unref();
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const w of this.#waiters.splice(0)) w.reject(this.#failure);
  }

  send(message: ChildMessage): void {
    this.proc.send(message);
  }

  /** The next message of this type (already received or still to come). */
  next<T extends { type: string } = ChildMessage>(type: string): Promise<T> {
    const i = this.#inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.#inbox.splice(i, 1)[0] as unknown as T);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise<T>((resolve, reject) =>
      this.#waiters.push({ type, resolve: resolve as unknown as (m: ChildMessage) => void, reject }),
    );
  }

  /** Asks the child to exit; kills it if it has not within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    if (this.proc.connected) this.send({ type: "exit" });
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): Promise<number | null> {
    this.proc.kill("SIGKILL");
    return this.exited;
  }
}
