/**
 * Debian's Chromium for the dashboard's browser tests, driven by playwright-core. Without
 * /usr/bin/chromium each browser test fails naming it: it never skips.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { buildDashboard } from "../../scripts/build-dashboard.js";

const CHROMIUM = "/usr/bin/chromium";

/**
 * Builds the dashboard before the file's tests (as `npm run build` does) and closes the browser
 * after them; answers a function that gives Chromium, started with a fresh profile by the first
 * test that asks. A missing Chromium fails each test that asks (a hook's failure would only mark
 * them skipped).
 */
export function dashboardBrowser(extraArgs: readonly string[] = []): () => Promise<BrowserContext> {
  let launched: Promise<BrowserContext> | undefined;
  let profile: string | undefined;
  beforeAll(() => {
    buildDashboard();
  }, 120_000);
  afterAll(async () => {
    await (await launched?.catch(() => undefined))?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });
  return () => {
    launched ??= (async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y --no-install-recommends chromium), as .ci/run does`,
        );
      }
      profile = mkdtempSync(join(tmpdir(), "errand-chromium-"));
      return chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          ...extraArgs,
        ],
        viewport: { width: 1280, height: 900 },
      });
    })();
    return launched;
  };
}
