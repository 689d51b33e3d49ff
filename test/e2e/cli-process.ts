/**
 * The `errand` CLI as child processes, for the CLI's e2e tests: one command run to its end, one
 * long-running command (serve, worker) watched and stopped, a shell pipeline, and a temporary
 * directory per test.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { onTestFinished } from "vitest";

export const CLI = fileURLToPath(new URL("../../src/cli/index.ts", import.meta.url));

/** tsx's loader by its path, so that a child run in another directory (`cwd`) finds it. */
const TSX_URL = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** The environment of a child: this process's, with no store or server chosen for it. */
const childEnv = (env: Record<string, string>) => ({
  ...process.env,
  ...env,
  ERRAND_STORE: env.ERRAND_STORE ?? "",
  ERRAND_SERVER: env.ERRAND_SERVER ?? "",
  ERRAND_TOKEN: env.ERRAND_TOKEN ?? "",
});

/**
 * Runs `errand …` as a child process. `timeoutMs` kills a child that has not ended by then
 * (`code` null, `timedOut` true): for commands that must end by themselves.
 */
export function errand(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; timeoutMs?: number } = {},
) {
  return new Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }>(
    (resolve) => {
      execFile(
        process.execPath,
        ["--import", TSX_URL, CLI, ...args],
        {
          env: childEnv(env),
          maxBuffer: 1 << 26,
          ...(options.cwd ? { cwd: options.cwd } : {}),
          ...(options.timeoutMs ? { timeout: options.timeoutMs, killSignal: "SIGKILL" as const } : {}),
        },
        (error, stdout, stderr) => {
          const e = error as { code?: number; killed?: boolean } | null;
          resolve({
            code: e ? (e.killed ? null : (e.code ?? 1)) : 0,
            stdout,
            stderr,
            timedOut: e?.killed === true,
          });
        },
      );
    },
  );
}

/**
 * Runs `errand ARGS | head -1` in bash (`head` closes the pipe after its first line) and answers
 * errand's exit status and standard error, and the line head printed.
 */
export function errandPipedToHead(args: string[], env: Record<string, string> = {}) {
  const quoted = [process.execPath, "--import", TSX_URL, CLI, ...args].map(
    (a) => `'${a.replace(/'/g, "'\\''")}'`,
  );
  return new Promise<{ code: number; line: string; stderr: string }>((resolve) => {
    execFile(
      "bash",
      ["-c", `${quoted.join(" ")} 2>"$ERR" | head -1; echo "status=\${PIPESTATUS[0]}"; cat "$ERR"`],
      { env: { ...childEnv(env), ERR: join(tempDir(), "stderr") }, maxBuffer: 1 << 26 },
      (_error, stdout) => {
        const [line = "", status = "", ...rest] = stdout.split("\n");
        resolve({ code: Number(status.replace("status=", "")), line, stderr: rest.join("\n") });
      },
    );
  });
}

/**
 * Starts a long-running `errand …` (serve, worker) as a child process. `seen` resolves with the
 * first match of its standard output, or rejects if the child exits first; `stop` signals the
 * child by its pid and resolves with its exit code.
 */
export function startErrand(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--import", TSX_URL, CLI, ...args], {
    env: childEnv(env),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const pid = child.pid!;
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(pid, "SIGKILL");
  });
  let text = "";
  const waiters = new Set<() => void>();
  child.stdout.on("data", (c: Buffer) => {
    text += c;
    for (const check of waiters) check();
  });
  const seen = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = text.match(pattern);
        if (!m) return;
        waiters.delete(check);
        resolve(m);
      };
      waiters.add(check);
      void exited.then((code) => reject(new Error(`errand exited (${code}) before printing ${pattern}`)));
      check();
    });
  const stop = (signal: NodeJS.Signals) => {
    process.kill(pid, signal);
    return exited;
  };
  return { seen, stop };
}

/** A directory removed when the test ends. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "errand-cli-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
