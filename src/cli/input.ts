/**
 * What the CLI reads from its user: option values, JSON payloads and modules of job definitions.
 * Each refuses bad input with an `INVALID_*` error (exit 2) before anything is opened.
 * @module
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type AnyJobDefinition, isJobDefinition } from "../define-job.js";
import { ErrandError } from "../errors.js";

/** A commander parser for an integer option, optionally with a lower bound. */
export function int(name: string, min = Number.MIN_SAFE_INTEGER): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) {
      const bound = min === Number.MIN_SAFE_INTEGER ? "" : ` ≥ ${min}`;
      throw new ErrandError("INVALID_OPTION", `${name} must be an integer${bound}, got ${v}`);
    }
    return n;
  };
}

/** `--payload` (or `--config`) as JSON text, `@file`, or `-` for standard input; absent is null. */
export function readPayload(arg: string | undefined): unknown {
  if (arg === undefined) return null;
  const text =
    arg === "-" ? readFileSync(0, "utf8") : arg.startsWith("@") ? readFileSync(arg.slice(1), "utf8") : arg;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ErrandError("INVALID_PAYLOAD", `--payload is not valid JSON: ${(cause as Error).message}`, {
      cause,
    });
  }
}

/** Job definitions a module exports: a default array, or every export that is a definition. */
export async function loadJobs(file: string): Promise<AnyJobDefinition[]> {
  const mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
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
