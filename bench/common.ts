/**
 * What `npm run bench` (bench/run.ts and its scenarios) and `npm run bench:compare` (bench/compare/run.mjs) share:
 * errand compiled for their worker processes, option parsing, and the arithmetic of the reports.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { InvalidArgumentError } from "commander";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Compiles src/ with tsc into node_modules/.cache/<name> (inside node_modules, so the build
 * resolves errand's dependencies as dist/ would) and returns the URLs of its entry points.
 */
export function compileErrand(name: string): { entry: string; serverEntry: string } {
  const out = join(root, "node_modules", ".cache", name);
  rmSync(out, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [
      join(root, "node_modules", "typescript", "bin", "tsc"),
      ...["-p", join(root, "tsconfig.build.json"), "--outDir", out],
      ...["--declaration", "false", "--sourceMap", "false"],
    ],
    { stdio: "inherit" },
  );
  return {
    entry: pathToFileURL(join(out, "index.js")).href,
    serverEntry: pathToFileURL(join(out, "server", "index.js")).href,
  };
}

/** A positive integer option value; commander reports the error and exits on anything else. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("needs a positive integer");
  return n;
}

export const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
export const fmtInt = (n: number) => Math.round(n).toLocaleString("en-US");
/** The p-th percentile of an ascending array. */
export const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
/** p50, p95, p99, max and mean of ascending latencies (ms), to 2 decimals. */
export interface LatencyFigures {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}
export const latencyFigures = (sorted: number[]): LatencyFigures => ({
  p50: round(pct(sorted, 50), 2),
  p95: round(pct(sorted, 95), 2),
  p99: round(pct(sorted, 99), 2),
  max: round(sorted[sorted.length - 1]!, 2),
  mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length, 2),
});
/** The lower median. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export const now = () => performance.timeOrigin + performance.now();

/** Waits until `t` (a {@link now} reading): setTimeout for the bulk, then spins the last ms so jobs go out on time. */
export async function sleepUntil(t: number): Promise<void> {
  const ms = t - now() - 1;
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  while (now() < t) {}
}
