import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * The dashboard's static files: the build's own (`dist/dashboard/`, compiled from `dashboard/`)
 * and uPlot's, taken from its package. They hold no data, so they need no token; the pages ask for
 * one when the API answers 401.
 *
 * Only names found at load time are served (an allowlist looked up by exact name), so no request
 * path ever reaches the file system.
 */

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};
const OWN_FILE = /^[a-z0-9][a-z0-9-]*\.(html|js|css)$/;
/** Served under these names from the uplot package. */
const VENDOR = {
  "uplot.min.js": "uplot/dist/uPlot.iife.min.js",
  "uplot.min.css": "uplot/dist/uPlot.min.css",
};

// The pages run no inline script and load nothing from elsewhere. uPlot sizes its elements through
// inline styles, hence 'unsafe-inline' for styles only.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Where the built dashboard is: beside this file in dist/, or in dist/ when run from src/. */
function dashboardDir(): string | null {
  for (const rel of ["../dashboard/", "../../dist/dashboard/"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, "index.html"))) return dir;
  }
  return null;
}

async function loadAssets(): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  const dir = dashboardDir();
  if (!dir) return assets;
  const asset = (name: string, body: Buffer): Asset => ({
    body,
    type: TYPES[extname(name)]!,
    etag: `"${createHash("sha1").update(body).digest("base64url")}"`,
  });
  for (const name of await readdir(dir)) {
    if (OWN_FILE.test(name)) assets.set(name, asset(name, await readFile(join(dir, name))));
  }
  const require = createRequire(import.meta.url);
  for (const [name, id] of Object.entries(VENDOR)) {
    assets.set(name, asset(name, await readFile(require.resolve(id))));
  }
  return assets;
}

/**
 * Serves the dashboard at `/dashboard/`, and redirects `/` and `/dashboard` there (relative
 * redirects, which keep a reverse proxy's path prefix). The files are read on the first
 * request and kept in memory; every response carries an ETag and `no-cache`, so browsers revalidate
 * (a 304) and never run a stale build.
 */
export function registerDashboard(app: FastifyInstance): void {
  let loading: Promise<Map<string, Asset>> | null = null;
  const assets = async () => {
    const found = await (loading ??= loadAssets());
    // Not built yet: look again next time rather than remember the absence.
    if (found.size === 0) loading = null;
    return found;
  };
  const serve = async (name: string, request: FastifyRequest, reply: FastifyReply) => {
    const found = await assets();
    const asset = found.get(name);
    if (!asset) {
      return reply.status(404).send({
        code: "NOT_FOUND",
        message:
          found.size === 0
            ? "the dashboard is not built: run `npm run build` (it compiles dashboard/ into dist/dashboard/)"
            : `no dashboard file ${JSON.stringify(name)}`,
        details: null,
      });
    }
    void reply
      .header("etag", asset.etag)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", CSP)
      .header("referrer-policy", "no-referrer");
    if (request.headers["if-none-match"] === asset.etag) return reply.status(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  const hide = { schema: { hide: true } };
  // Relative, so a reverse proxy's path prefix is kept: `/errand/` → `/errand/dashboard/`, and
  // `/errand/dashboard` → `/errand/dashboard/` (both resolve `dashboard/` against their folder).
  app.get("/", hide, async (_request, reply) => reply.redirect("dashboard/"));
  app.get("/dashboard", hide, async (_request, reply) => reply.redirect("dashboard/"));
  app.get("/dashboard/", hide, async (request, reply) => serve("index.html", request, reply));
  app.get("/dashboard/:file", hide, async (request, reply) =>
    serve((request.params as { file: string }).file, request, reply),
  );
}
