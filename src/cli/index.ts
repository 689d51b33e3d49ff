#!/usr/bin/env node
/**
 * The `errand` command line. Every command works on a store (`--store URL`, `ERRAND_STORE`,
 * default `sqlite:./errand.db`) or through a server (`--server URL --token T`, `ERRAND_SERVER`,
 * `ERRAND_TOKEN`). Human output by default, `--json` for scripts.
 *
 * Exit codes: 0 done; 1 failed; 2 bad usage or input; 3 not found; 4 conflict (wrong state,
 * stale attempt); 5 store or server unavailable; 6 not allowed (401/403/429). A standard output
 * closed by its reader (`| head -1`) ends a command quietly with 0, a worker or server after a
 * graceful stop (stop-signal.ts).
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ErrandError, type ErrandErrorCode } from "../errors.js";
import { oneLine } from "./output.js";
import { buildProgram } from "./program.js";
import { watchStdout } from "./stop-signal.js";

const EXIT: Partial<Record<ErrandErrorCode, number>> & { default: number } = {
  default: 1,
  JOB_NOT_FOUND: 3,
  NOT_FOUND: 3,
  // An input error (HTTP 400) like the INVALID_* codes: nothing was stored.
  DEPENDENCY_NOT_FOUND: 2,
  INVALID_STATE: 4,
  STALE_ATTEMPT: 4,
  LIMIT_REACHED: 4,
  STORE_ERROR: 5,
  UNAVAILABLE: 5,
  CLOSED: 5,
  UNAUTHORIZED: 6,
  FORBIDDEN: 6,
  RATE_LIMITED: 6,
};

/** Exit code for an error: input errors (every INVALID_* code) are 2. */
export function exitCode(error: unknown): number {
  if (!(error instanceof ErrandError)) return EXIT.default;
  const mapped = EXIT[error.code];
  if (mapped !== undefined) return mapped;
  if (error.code.startsWith("INVALID_") || error.code === "PAYLOAD_TOO_LARGE") return 2;
  return EXIT.default;
}

/** Runs the CLI on `argv`; sets `process.exitCode` and prints the error on standard error. */
export async function main(argv = process.argv): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    const e = error as { code?: string; exitCode?: number };
    if (typeof e.code === "string" && e.code.startsWith("commander.")) {
      // --help and --version exit 0; usage errors 2 (commander printed them).
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    const json = argv.includes("--json");
    const code = error instanceof ErrandError ? error.code : "INTERNAL";
    const message = error instanceof Error ? error.message : String(error);
    if (json) process.stderr.write(`${JSON.stringify({ code, message })}\n`);
    // A message may carry text from a server or a job: printed on one line, controls escaped.
    else process.stderr.write(`errand: ${oneLine(message)} (${code})\n`);
    process.exitCode = exitCode(error);
  }
}

const invoked = process.argv[1] ? resolve(process.argv[1]) : "";
if (invoked && (import.meta.url === pathToFileURL(invoked).href || /[\\/]errand$/.test(invoked))) {
  watchStdout(process.stdout);
  void main();
}
