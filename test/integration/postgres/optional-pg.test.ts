/**
 * `pg` is an optional peer dependency: `import "errand"` must not load it; only opening a
 * postgres:// store (or importing "errand/postgres") does.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Imports `entry` in a fresh node process and says whether any module of pg got loaded. */
function loadsPg(entry: string): boolean {
  const script = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(entry)});
    const cache = createRequire(import.meta.url).cache;
    console.log(Object.keys(cache).some((k) => /[\\\\/]node_modules[\\\\/]pg[\\\\/]/.test(k)));`;
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return out.trim() === "true";
}

test("import errand loads no pg; errand/postgres does", () => {
  expect(loadsPg("./src/index.ts")).toBe(false);
  expect(loadsPg("./src/store/postgres/index.ts")).toBe(true);
});
