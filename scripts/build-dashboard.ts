/**
 * Builds the web dashboard: compiles dashboard/*.ts with its own tsconfig (DOM, plain ES modules,
 * no bundler) into dist/dashboard/, and copies its HTML and CSS beside them. The server serves that
 * folder at /dashboard/ (uPlot comes from its package at request time, not from here).
 * Run by `npm run build` and `npm run serve`; the dashboard e2e test calls {@link buildDashboard}.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Compiles and copies the dashboard into dist/dashboard/, replacing what was there. */
export function buildDashboard(): string {
  const source = join(root, "dashboard");
  const out = join(root, "dist", "dashboard");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(source, "tsconfig.json")], { stdio: "inherit" });
  for (const file of readdirSync(source)) {
    if (/\.(html|css)$/.test(file)) copyFileSync(join(source, file), join(out, file));
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) buildDashboard();
