import { createRequire } from "node:module";
import type { Logger } from "pino";

const requireCjs = createRequire(import.meta.url);
let fallback: Logger | undefined;

/**
 * pino at level "warn", loaded on first use. Most processes never log (only faults are logged),
 * and loading pino costs ~9 MB of RSS, so nothing imports it eagerly.
 */
export function defaultLogger(): Logger {
  fallback ??= (requireCjs("pino") as (options: object) => Logger)({ level: "warn" });
  return fallback;
}
