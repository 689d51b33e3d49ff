/**
 * How the CLI prints: one line per result, JSON with `--json`, aligned tables and a progress bar
 * for people.
 * @module
 */
import { createRequire } from "node:module";
import type { Logger } from "pino";
import type { Job, JobSummary } from "../job.js";
import type { CliContext } from "./context.js";

/** The option every command that prints a result takes. */
export interface JsonOption {
  json?: boolean;
}

/**
 * C0 controls (ESC, CR, BEL, …), DEL and C1 controls (CSI U+009B among them): what a terminal
 * acts on rather than shows. Text from jobs (payloads, results, error messages) is anyone's, so
 * none of it reaches the terminal raw.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as CONTROLS, line feeds aside.
const CONTROLS_BUT_LF = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

// biome-ignore lint/suspicious/noControlCharactersInRegex: as CONTROLS, for a test (no lastIndex).
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const escapeControl = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * `text` with every control character written as a JSON escape (`\u001b`), line feeds included:
 * one line, safe to print. A JSON line stays the same JSON.
 */
export function oneLine(text: string): string {
  return text.replace(CONTROLS, escapeControl);
}

/** A value as a human line shows it: a string with control characters JSON-encoded, quotes and all. */
export function shown(value: string): string {
  return HAS_CONTROL.test(value) ? oneLine(JSON.stringify(value)) : value;
}

/**
 * Prints one line (or lines: a result of several). Control characters other than line feeds are
 * escaped as JSON escapes (`\u001b`), so nothing printed can move the cursor, retitle or recolour
 * the terminal; in a JSON line that is the same JSON.
 */
export function out(ctx: CliContext, text: string): void {
  ctx.stdout.write(`${text.replace(CONTROLS_BUT_LF, escapeControl)}\n`);
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
export function jobLine(j: Job | JobSummary): string {
  const when =
    j.state === "pending"
      ? ` runAt=${j.runAt.toISOString()}`
      : j.state === "blocked"
        ? // A summary has no dependsOn: the count of those still unfinished alone.
          ` blockedBy=${j.blockedBy}${"dependsOn" in j ? `/${j.dependsOn.length}` : ""}`
        : "";
  const key = j.key === null ? "" : `  key=${j.key}`;
  return `${j.id}  ${j.type}  ${j.queue}  ${j.state}  attempt=${j.attempt}/${j.maxAttempts}${key}${when}`;
}

/** A job field by field, one per line. */
export function jobDetail(j: Job): string {
  return Object.entries(j)
    .map(
      ([k, v]) =>
        `${k.padEnd(15)} ${v instanceof Date ? v.toISOString() : typeof v === "object" && v !== null ? oneLine(JSON.stringify(v)) : typeof v === "string" ? shown(v) : String(v)}`,
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

/**
 * pino at level "warn" on standard error, for the workers the CLI runs: standard output carries
 * their event lines (JSON with `--json`), which log records must not mix into.
 */
export function stderrLogger(): Logger {
  const pino = createRequire(import.meta.url)("pino") as {
    (options: object, destination: unknown): Logger;
    destination(fd: number): unknown;
  };
  return pino({ level: "warn" }, pino.destination(2));
}
