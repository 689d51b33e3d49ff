import type { Logger } from "pino";
import { ErrandError } from "./errors.js";

/**
 * What errand calls on a logger it is given: the four levels it logs at, and `child`, which
 * workers use to bind their id and each job's id. pino's loggers have them all.
 */
export const LOGGER_METHODS: readonly string[] = ["error", "warn", "info", "debug", "child"];

/**
 * Fastify calls these on a logger instance as well (its own check, `validateLogger`): a server's
 * logger needs them, so the server checks for them before Fastify would refuse it less clearly.
 */
export const SERVER_LOGGER_METHODS: readonly string[] = [...LOGGER_METHODS, "fatal", "trace"];

/**
 * Refuses a `logger` option that is not a logger, when the option is given, not later: a worker
 * logs only on faults, so a wrong object would otherwise throw from inside its `error` handler on
 * the first store error and take the process down.
 * @param field names the option in the message (`"Worker: logger"`).
 * @throws ErrandError `INVALID_OPTION` naming the field and the methods missing.
 */
export function checkLogger(
  field: string,
  value: unknown,
  methods: readonly string[] = LOGGER_METHODS,
): Logger | undefined {
  if (value === undefined) return undefined;
  const missing =
    (typeof value === "object" || typeof value === "function") && value !== null
      ? methods.filter((m) => typeof (value as Record<string, unknown>)[m] !== "function")
      : methods;
  if (missing.length > 0) {
    const got = value === null ? "null" : typeof value;
    throw new ErrandError(
      "INVALID_OPTION",
      `${field} must be a pino-compatible logger (callable ${methods.join(", ")}); ` +
        (missing.length === methods.length ? `got ${got}` : `it has no ${missing.join(", ")}`),
    );
  }
  return value as Logger;
}

/** True when `value` looks like a logger instance rather than logger options: it has any logger method. */
export function isLoggerLike(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    SERVER_LOGGER_METHODS.some((m) => typeof (value as Record<string, unknown>)[m] === "function")
  );
}
