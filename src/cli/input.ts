/**
 * What the CLI reads from its user: option values, JSON payloads and modules of job definitions.
 * Each refuses bad input with an `INVALID_*` error (exit 2) before anything is opened.
 * @module
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type AnyJobDefinition, isJobDefinition } from "../define-job.js";
import { toTimerMs } from "../duration.js";
import { ErrandError, type ErrandErrorCode } from "../errors.js";

/**
 * An integer as a person types one: an optional sign and decimal digits, nothing else. `Number()`
 * alone would read "" and spaces as 0, "0x10" as 16, "0b11" as 3 and " 1e3 " as 1000.
 */
const DECIMAL_INTEGER = /^[+-]?[0-9]+$/;

/**
 * `text` as an integer, or NaN when it is not an optionally signed run of decimal digits (for
 * the caller to refuse, naming what was typed).
 */
export function decimalInteger(text: string): number {
  return DECIMAL_INTEGER.test(text) ? Number(text) : Number.NaN;
}

/** A commander parser for an integer option, optionally with bounds. */
export function int(
  name: string,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): (v: string) => number {
  return (v: string) => {
    const n = decimalInteger(v);
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      const bound =
        max !== Number.MAX_SAFE_INTEGER
          ? ` from ${min} to ${max}`
          : min === Number.MIN_SAFE_INTEGER
            ? ""
            : ` ≥ ${min}`;
      throw new ErrandError("INVALID_OPTION", `${name} must be an integer${bound}, got ${JSON.stringify(v)}`);
    }
    return n;
  };
}

/**
 * A commander parser for a duration that becomes a timer (`--grace`, `--interval`): decimal digits
 * alone are milliseconds, anything else a duration like "500ms", "30s" or "1h30m". Held to
 * `MAX_TIMER_MS`, as Node fires a longer timer after 1 ms.
 * @throws ErrandError `INVALID_DURATION` naming the flag: negative, unreadable or too long.
 */
export function timerDuration(name: string): (v: string) => number {
  return (v: string) => toTimerMs(name, /^[0-9]+$/.test(v) ? Number(v) : v);
}

/** The highest TCP port. */
const MAX_PORT = 65_535;

/** A commander parser for a port (`--port`), and the one `PORT` is read with. */
export const port = (name: string): ((v: string) => number) => int(name, 0, MAX_PORT);

/**
 * The text of a file the user named (`0`: standard input). A path that cannot be read (missing, a
 * directory, no permission) is the user's input error, named by its flag, not an internal one.
 * @throws ErrandError `INVALID_OPTION`
 */
export function readUserFile(flag: string, file: string | 0): string {
  try {
    return readFileSync(file, "utf8");
  } catch (cause) {
    throw unreadable(flag, file, cause);
  }
}

/** The error for a file the user named that could not be opened or read (`why`: Node's error, or words). */
export function unreadable(flag: string, file: string | 0, why: unknown): ErrandError {
  const options = why instanceof Error ? { cause: why } : undefined;
  return new ErrandError(
    "INVALID_OPTION",
    `${flag}: cannot read ${fileName(file)}: ${messageOf(why)}`,
    options,
  );
}

/**
 * `text` without a leading UTF-8 byte order mark, which some editors and shells (Notepad,
 * PowerShell 5's Out-File) write at the start of a file and JSON.parse refuses.
 */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** JSON text from a file the user named (a leading BOM dropped), parsed; `code` for text that is not JSON. */
export function parseUserJson(flag: string, file: string | 0, text: string, code: ErrandErrorCode): unknown {
  try {
    return JSON.parse(withoutBom(text));
  } catch (cause) {
    throw new ErrandError(code, `${flag}: ${fileName(file)} is not valid JSON: ${messageOf(cause)}`, {
      cause,
    });
  }
}

/** Whether `error` is Node's from a system call (a path that cannot be read, an address in use). */
export function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).syscall === "string";
}

const fileName = (file: string | 0): string => (file === 0 ? "standard input" : JSON.stringify(file));
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** `--payload` (or `--config`) as JSON text, `@file`, or `-` for standard input; absent is null. */
export function readPayload(arg: string | undefined, flag = "--payload"): unknown {
  if (arg === undefined) return null;
  const file = arg === "-" ? 0 : arg.startsWith("@") ? arg.slice(1) : null;
  if (file === null) {
    try {
      return JSON.parse(arg);
    } catch (cause) {
      throw new ErrandError("INVALID_PAYLOAD", `${flag} is not valid JSON: ${messageOf(cause)}`, { cause });
    }
  }
  return parseUserJson(flag, file, readUserFile(flag, file), "INVALID_PAYLOAD");
}

/** Job definitions a module exports: a default array, or every export that is a definition. */
export async function loadJobs(file: string): Promise<AnyJobDefinition[]> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  } catch (cause) {
    // Missing, not a module, or it threw while loading: the module the user named, not errand.
    throw new ErrandError(
      "INVALID_OPTION",
      `--jobs: cannot import ${JSON.stringify(file)}: ${messageOf(cause)}`,
      {
        cause,
      },
    );
  }
  const isDef = (v: unknown): v is AnyJobDefinition =>
    typeof v === "object" &&
    v !== null &&
    typeof (v as AnyJobDefinition).type === "string" &&
    typeof (v as AnyJobDefinition).handler === "function";
  const found = Array.isArray(mod.default) ? mod.default.filter(isDef) : Object.values(mod).filter(isDef);
  if (found.length === 0)
    throw new ErrandError("INVALID_OPTION", `${file} exports no job definitions (defineJob)`);
  // A definition another copy of errand made passes the look above but not the worker's check,
  // which would name only its position.
  const foreign = found.find((def): boolean => !isJobDefinition(def));
  if (foreign) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${file}: the definition of ${JSON.stringify(foreign.type.slice(0, 100))} was not made by this errand's defineJob: the module must import errand from the installation this CLI runs`,
    );
  }
  return found;
}
