/**
 * What the docs tests share to compile against src/: the package's entry points from
 * package.json's "exports" (mapped from dist/ back to their source) and tsconfig.json's options.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** The repository's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** One subpath of package.json's "exports": how users import it, and its source file. */
export interface EntryPoint {
  /** `errand`, `errand/sqlite`, … */
  specifier: string;
  /** The absolute path of its source in src/. */
  file: string;
}

/** Every entry point package.json's "exports" declares with types (so not `./package.json`). */
export function entryPoints(): EntryPoint[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  const entries: EntryPoint[] = [];
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === "string" ? target : target.types;
    if (!types?.endsWith(".d.ts")) continue; // ./package.json
    const file = path.join(ROOT, types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"));
    if (!existsSync(file)) throw new Error(`package.json exports "${subpath}": no source at ${file}`);
    entries.push({ specifier: pkg.name + subpath.slice(1), file });
  }
  return entries;
}

/** `errand`, `errand/sqlite`, … → their source in src/, as compiler `paths`. */
export function sourcePaths(): Record<string, string[]> {
  return Object.fromEntries(entryPoints().map((e) => [e.specifier, [e.file]]));
}

/** tsconfig.json's compiler options, as `tsc -p tsconfig.json` reads them. */
export function tsconfigOptions(): ts.CompilerOptions {
  const configFile = path.join(ROOT, "tsconfig.json");
  const { config, error } = ts.readConfigFile(configFile, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configFile);
  if (parsed.errors.length > 0) throw new Error(ts.formatDiagnostics(parsed.errors, formatHost));
  return parsed.options;
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => "\n",
};
