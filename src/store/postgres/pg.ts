/**
 * The `pg` module, as the PostgreSQL store loads it.
 *
 * pg's `lib/stream.js` asks, as it loads, whether it runs in a Cloudflare Worker: where the global
 * `navigator` has no `userAgent` it reads the global `Response` and builds one. On Node 20, which
 * has no `navigator`, that first read loads Node's whole fetch implementation (undici): ~6–9 MB of
 * RSS in every process that loads pg, for a probe whose answer on Node is always no. So while pg
 * loads, and only where there is no `navigator` of Node's own, a `navigator` saying "Node.js" is
 * defined and removed again: the load is synchronous, nothing else runs in between, and pg takes
 * its Node path as it would anyway. Node 21 and later have `navigator` and are left alone, as is a
 * process where pg is already loaded (the require returns it).
 * @module
 */
import { createRequire } from "node:module";
import type Pg from "pg";

/**
 * Loads pg through `load` (a require of "pg") without its Cloudflare probe's cost.
 * @internal
 */
export function loadPg(load: () => typeof Pg): typeof Pg {
  if ("navigator" in globalThis) return load();
  Object.defineProperty(globalThis, "navigator", {
    value: Object.freeze({ userAgent: "Node.js" }),
    configurable: true,
    enumerable: false,
    writable: false,
  });
  try {
    return load();
  } finally {
    delete (globalThis as { navigator?: unknown }).navigator;
  }
}

const require = createRequire(import.meta.url);

/** The `pg` module (its CommonJS exports, as `import pg from "pg"` gives them). */
export const pgModule: typeof Pg = loadPg(() => require("pg") as typeof Pg);
