/** How the bench's worker and server processes load errand (`--compiled` or not). */
import { compileErrand } from "./common.js";
import type { Options } from "./options.js";
import type { Log } from "./scenarios/scenario.js";

/** How worker processes load errand: its TypeScript source under tsx, or a compiled build. */
export interface Runtime {
  entry: string;
  /** errand/server, from the same build. */
  serverEntry: string;
  tsx: boolean;
  name: string;
}

/** Under tsx unless `--compiled`: tsx alone adds ~30 MB to a process's RSS. */
export function runtime(o: Options, log: Log): Runtime {
  if (!o.compiled) {
    return {
      entry: new URL("../src/index.ts", import.meta.url).href,
      serverEntry: new URL("../src/server/index.ts", import.meta.url).href,
      tsx: true,
      name: "tsx (TypeScript source)",
    };
  }
  log("compiling src/ for the worker processes (tsc)…");
  return {
    ...compileErrand("errand-bench"),
    tsx: false,
    name: "node (compiled with tsc)",
  };
}
