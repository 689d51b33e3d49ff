/**
 * How the CLI prints: one line per result, JSON with `--json`, aligned tables and a progress bar
 * for people.
 * @module
 */
import type { Job } from "../job.js";
import type { CliContext } from "./context.js";

/** The option every command that prints a result takes. */
export interface JsonOption {
  json?: boolean;
}

/** Prints one line. */
export function out(ctx: CliContext, text: string): void {
  ctx.stdout.write(`${text}\n`);
}

/** Prints a result: `value` as one JSON line with `--json`, else `human()`. */
export function print(ctx: CliContext, o: JsonOption, value: unknown, human: () => string): void {
  out(ctx, o.json ? JSON.stringify(value) : human());
}

/** Clears a terminal before a refresh, so a watched view stays in place. */
export function clearScreen(ctx: CliContext): void {
  ctx.stdout.write("\x1b[2J\x1b[H");
}

/** A job on one line, as lists show it. */
export function jobLine(j: Job): string {
  const when =
    j.state === "pending"
      ? ` runAt=${j.runAt.toISOString()}`
      : j.state === "blocked"
        ? ` blockedBy=${j.blockedBy}/${j.dependsOn.length}`
        : "";
  const key = j.key === null ? "" : `  key=${j.key}`;
  return `${j.id}  ${j.type}  ${j.queue}  ${j.state}  attempt=${j.attempt}/${j.maxAttempts}${key}${when}`;
}

/** A job field by field, one per line. */
export function jobDetail(j: Job): string {
  return Object.entries(j)
    .map(
      ([k, v]) =>
        `${k.padEnd(15)} ${v instanceof Date ? v.toISOString() : typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}`,
    )
    .join("\n");
}

/** Rows as columns two spaces apart: the first column left-aligned, the others (numbers) right. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}

/** A count that grows as work is done. */
export interface Progress {
  update(done: number): void;
  stop(): void;
}

/**
 * A progress bar on standard error, or null where nobody would see it (not a terminal, or
 * `--json`, whose reader wants standard output alone).
 */
export async function progressBar(o: JsonOption, label: string): Promise<Progress | null> {
  if (!process.stderr.isTTY || o.json) return null;
  const { SingleBar, Presets } = await import("cli-progress");
  const bar = new SingleBar({ format: `${label} |{bar}| {value} jobs` }, Presets.shades_classic);
  bar.start(0, 0);
  return {
    update: (done) => {
      // The total is unknown until the input ends, so it follows the count.
      bar.setTotal(done);
      bar.update(done);
    },
    stop: () => bar.stop(),
  };
}
