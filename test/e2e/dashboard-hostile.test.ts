/**
 * The web dashboard against hostile data and a misbehaving server, in Debian's Chromium driven by
 * playwright-core: markup, bidi overrides and huge texts in what jobs carry, names and ids at
 * their longest, and polls that fail, hang, or come from a tab out of sight. Polling is driven by
 * Playwright's fake clock, never by waiting. Without /usr/bin/chromium this file fails: it never
 * skips.
 */
import type { Page } from "playwright-core";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { MAX_ERROR_TEXT_LENGTH } from "../../src/validation.js";
import { selectedBackends, someBackend } from "../conformance/backend.js";
import { dashboardBrowser } from "../helpers/chromium.js";
import { type Harness, startServer } from "./harness.js";

/** The store under test: SQLite when the run includes it, else the first one it does. */
const backend = selectedBackends().find((b) => b.name === "sqlite") ?? someBackend();

/** The little of the DOM the page functions below touch (this project's tsconfig has no DOM lib). */
interface PageGlobals {
  __xss?: unknown;
  location: { hash: string };
  document: {
    hidden: boolean;
    documentElement: { scrollWidth: number; clientWidth: number };
    querySelectorAll(selector: string): { length: number };
    querySelector(selector: string): unknown;
    dispatchEvent(event: unknown): boolean;
  };
  Event: new (type: string) => unknown;
}

const browser = dashboardBrowser();

/**
 * A fresh tab on the dashboard, its clock faked from the start when `clock` is set. Checks at the
 * end that no script threw and no script of the data's ran.
 */
async function open(h: Harness, hash: string, options: { clock?: boolean } = {}): Promise<Page> {
  const page = await (await browser()).newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  if (options.clock) {
    // Installed, then stopped: time moves only when the test runs it. The installed clock runs
    // until the pause, so the pause is set well ahead: one 1 ms ahead was in the past by then
    // on a loaded host ("Cannot fast-forward to the past").
    await page.clock.install({ time: Date.UTC(2026, 0, 1) });
    await page.clock.pauseAt(Date.UTC(2026, 0, 1) + 10_000);
  }
  await page.goto(`${h.base}/dashboard/${hash}`);
  onTestFinished(async () => {
    const ran = await page
      .evaluate(() => (globalThis as unknown as PageGlobals).__xss ?? null)
      .catch(() => null);
    await page.close();
    expect(errors).toEqual([]);
    expect(ran).toBeNull();
  });
  return page;
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();
/** How far the page is wider than its window (0: no sideways scrolling). */
const overflow = (page: Page) =>
  page.evaluate(() => {
    const root = (globalThis as unknown as PageGlobals).document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });

/** Markup that would run if any of it reached the page as HTML (the CSP would stop most; none must get there). */
const MARKUP = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>"'><svg onload=window.__xss=3>`;
/** A right-to-left override, zero-width characters, a BOM and lone surrogates. */
const TRICKS = "\u202Eevil\u202Dtxt.exe \u200B\u200D\uFEFF \uD800 lone \uDC00";

/** `n` levels of arrays around 1. */
function nested(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

describe(`dashboard with hostile data, on ${backend.name}`, () => {
  it("shows markup, bidi overrides and lone surrogates in a payload as text, and as JSON that reads back to it", async () => {
    const h = await startServer(backend);
    const payload = JSON.parse(
      JSON.stringify({ html: MARKUP, tricks: TRICKS, ["__proto__"]: { polluted: true }, constructor: "c" }),
    );
    await h.queue.enqueue("t", payload, { id: "hostile-1" });
    const page = await open(h, "#/jobs/hostile-1");
    await page.locator("[data-testid=payload]").waitFor();
    expect(await page.locator("main img, main script, main svg").count()).toBe(0);
    const shown = await text(page, "[data-testid=payload]");
    // The override and the invisible characters are shown escaped: they cannot reorder or hide
    // the JSON around them, and the text still reads back to the same value.
    for (const c of ["\u202E", "\u202D", "\u200B", "\u200D", "\uFEFF"]) expect(shown).not.toContain(c);
    expect(shown).toContain("\\u202eevil\\u202dtxt.exe \\u200b\\u200d\\ufeff \\ud800 lone \\udc00");
    const back = JSON.parse(shown);
    expect(back).toEqual(payload);
    expect(Object.keys(back)).toContain("__proto__");
  });

  it("cuts a huge payload, a deep one and a 65,536-character error to what a page can lay out, and shows them whole on request", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", { s: "x".repeat(900_000) }, { id: "big" });
    await h.queue.enqueue("t", nested(400), { id: "deep" });
    await h.queue.enqueue("e", 1, { id: "errs", maxAttempts: 3, backoff: { type: "fixed", delayMs: 0 } });
    const long = `${"A".repeat(MAX_ERROR_TEXT_LENGTH - 4)}tail`;
    for (const message of [long, `${MARKUP} ${TRICKS}`]) {
      const [job] = await h.queue.lease({ types: ["e"], limit: 1 });
      expect(job!.id).toBe("errs");
      const error = new Error(message);
      error.name = `${MARKUP}\u202E`;
      await h.queue.fail(job!, error);
    }

    const page = await open(h, "#/jobs/big");
    await page.locator("[data-testid=payload] [data-testid=cut]").waitFor();
    const big = await text(page, "[data-testid=payload]");
    expect(big.length).toBeLessThan(100_500);
    expect(big).toContain("only the first 100,000 characters are shown");

    await page.evaluate(() => {
      (globalThis as unknown as PageGlobals).location.hash = "#/jobs/deep";
    });
    await vi.waitFor(async () => expect(await text(page, "h1")).toContain("deep"));
    const deep = await text(page, "[data-testid=payload]");
    // Indented no further than 16 levels: fully indented it is twelve times as long.
    expect(JSON.stringify(nested(400), null, 2).length).toBeGreaterThan(320_000);
    expect(deep.length).toBeLessThan(30_000);
    expect(JSON.parse(deep)).toEqual(nested(400));

    await page.evaluate(() => {
      (globalThis as unknown as PageGlobals).location.hash = "#/jobs/errs";
    });
    await page.locator("[data-testid=errors]").waitFor();
    expect(await page.locator("main img, main script, main svg").count()).toBe(0);
    const messages = page.locator("[data-testid=errors] .error-message");
    expect(await messages.count()).toBe(2);
    const first = await messages.nth(0).innerText();
    expect(first.length).toBeLessThanOrEqual(2_001);
    expect(first).not.toContain("tail");
    expect(await messages.nth(1).innerText()).toContain(MARKUP);
    expect(await overflow(page)).toBe(0);
    await page.locator("[data-testid=show-all] summary").first().click();
    await vi.waitFor(async () =>
      expect((await messages.nth(0).innerText()).length).toBe(MAX_ERROR_TEXT_LENGTH),
    );
    expect(await messages.nth(0).innerText()).toMatch(/tail$/);
    expect(await overflow(page)).toBe(0);
  });

  it("keeps the jobs list and its filters inside the window with ids and names at their longest", async () => {
    const h = await startServer(backend);
    const name = `${"N".repeat(120)}-tail.:_`;
    await h.queue.enqueue(name, 1, { id: `${"I".repeat(250)}/tail`, queue: name, key: name });
    await h.queue.enqueue("t", 1, { id: "short" });
    const page = await open(h, `#/jobs?queue=${name}`);
    await page.locator("tr[data-id=short], tr[data-id^=III]").first().waitFor();
    await page.locator(`[data-testid=filter-type] option[value="${name}"]`).waitFor({ state: "attached" });
    expect(await overflow(page)).toBe(0);
    await page.evaluate(() => {
      (globalThis as unknown as PageGlobals).location.hash = "#/jobs";
    });
    await page.locator("tr[data-id=short]").waitFor();
    expect(await overflow(page)).toBe(0);
  });

  it("shows the jobs list when the stats for its filters fail, and reads a fractional page size", async () => {
    const h = await startServer(backend);
    await h.queue.enqueueBatch([1, 2, 3].map((i) => ({ job: "t", payload: i, options: { id: `j${i}` } })));
    const page = await (await browser()).newPage();
    onTestFinished(() => page.close());
    await page.route(/\/v1\/stats$/, (route) =>
      route.fulfill({
        status: 503,
        contentType: "application/json",
        body: JSON.stringify({ code: "STORE_ERROR", message: "store briefly unreachable", details: null }),
      }),
    );
    await page.goto(`${h.base}/dashboard/#/jobs?limit=2.5&queue=default`);
    // Was a 400 (the API takes whole numbers only) and an empty page.
    await page.locator("[data-testid=jobs-table] tr[data-id]").first().waitFor();
    expect(await page.locator("[data-testid=jobs-table] tr[data-id]").count()).toBe(2);
    expect(await page.locator("[data-testid=notice-error]").count()).toBe(0);
    expect(await page.locator("[data-testid=filter-queue] option").evaluateAll((o) => o.length)).toBe(2);
  });

  it("says what happened when a job changed before its button was pressed", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", 1, { id: "gone-dead", maxAttempts: 1 });
    const [job] = await h.queue.lease({ types: ["t"] });
    await h.queue.fail(job!, new Error("boom"));
    const page = await open(h, "#/jobs/gone-dead");
    await page.locator("[data-action=retry]:not([disabled])").waitFor();
    await h.queue.retry("gone-dead");
    await page.click("[data-action=retry]");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=notice-error]")).toContain("409 INVALID_STATE"),
    );
    await vi.waitFor(async () => expect(await text(page, "h1 [data-testid=state]")).toBe("pending"));
    expect(await page.locator("[data-action=retry]").isDisabled()).toBe(true);
  });
});

/** What {@link watchPolls} keeps in the page. */
interface Polls {
  __polls: number[];
  __open: number;
  fetch(input: unknown, init?: unknown): Promise<unknown>;
}

/**
 * Records, in the page, the (fake) time of each fetch of /v1/stats as the dashboard makes it, and
 * how many fetches have not settled yet. `step` runs the fake clock a second at a time, each
 * second's fetches settled before the next.
 */
async function watchPolls(page: Page) {
  await page.evaluate(() => {
    const w = globalThis as unknown as Polls;
    const real = w.fetch.bind(w);
    w.__polls = [];
    w.__open = 0;
    w.fetch = (input, init) => {
      if (/\/v1\/stats$/.test(String(input))) w.__polls.push(Date.now());
      w.__open++;
      // The body read here, so that once __open is 0 all that is left of the poll is microtasks,
      // which run before the test's next call into the page.
      return real(input, init)
        .then(async (r) => {
          const response = r as {
            text(): Promise<string>;
            status: number;
            statusText: string;
            headers: unknown;
          };
          const body = await response.text();
          const { Response } = globalThis as unknown as {
            Response: new (body: string, init: unknown) => unknown;
          };
          return new Response(body, response);
        })
        .finally(() => w.__open--);
    };
  });
  const open = () => page.evaluate(() => (globalThis as unknown as Polls).__open);
  return {
    times: () => page.evaluate(() => [...(globalThis as unknown as Polls).__polls]),
    step: async (ms: number) => {
      for (let t = 0; t < ms; t += 1000) {
        await page.clock.runFor(1000);
        await vi.waitFor(async () => expect(await open()).toBe(0));
      }
    },
  };
}

/** Answers the page's /v1/stats with a 503 while `down()` says so. */
async function failStats(page: Page, down: () => boolean): Promise<void> {
  await page.route(/\/v1\/stats$/, (route) =>
    down()
      ? route.fulfill({
          status: 503,
          contentType: "application/json",
          body: JSON.stringify({ code: "STORE_ERROR", message: "store down", details: null }),
        })
      : route.fallback(),
  );
}

describe(`the overview's polling, on ${backend.name}`, () => {
  it("does not redraw the queue and type tables while their counts stand still", async () => {
    const h = await startServer(backend);
    await h.queue.enqueueBatch(
      Array.from({ length: 40 }, (_, i) => ({ job: `type-${i}`, payload: i, options: { queue: `q-${i}` } })),
    );
    const page = await open(h, "#/", { clock: true });
    const row = await page.waitForSelector("tr[data-name=q-7]");
    for (let i = 0; i < 3; i++) {
      const polled = page.waitForResponse(/\/v1\/stats$/);
      await page.clock.runFor(2_000);
      await polled;
    }
    expect(await row.evaluate((r) => (r as unknown as { isConnected: boolean }).isConnected)).toBe(true);
    await h.queue.enqueue("t", 1, { queue: "q-new" });
    await page.clock.runFor(2_000);
    await page.waitForSelector("tr[data-name=q-new]");
    expect(await row.evaluate((r) => (r as unknown as { isConnected: boolean }).isConnected)).toBe(false);
  });

  it("backs off while polls fail, up to 30 s apart, and polls every 2 s again once one succeeds", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", 1);
    const page = await open(h, "#/", { clock: true });
    await page.locator(".cards [data-state=pending]").waitFor();
    let down = true;
    const polls = await watchPolls(page);
    await failStats(page, () => down);
    await polls.step(90_000);
    await vi.waitFor(async () => expect(await text(page, "[data-testid=notice-error]")).toContain("503"));
    const times = await polls.times();
    // 2, 2, 4, 8, 16, 30 s apart: 6 polls in the 90 s, not 45.
    expect(times.map((t) => (t - times[0]!) / 1000)).toEqual([0, 2, 6, 14, 30, 60]);

    down = false;
    await polls.step(20_000);
    await vi.waitFor(async () => expect(await page.locator("[data-testid=notice-error]").count()).toBe(0));
    const after = (await polls.times()).map((t) => (t - times[0]!) / 1000).slice(times.length);
    // The next poll came 30 s after the last failed one, got through, and those after it came
    // every 2 s again (give or take the second the fake clock steps by).
    expect(after[0]).toBe(90);
    expect(after.length).toBeGreaterThanOrEqual(5);
    for (const [i, t] of after.slice(1).entries()) expect(t - after[i]!).toBeLessThanOrEqual(3);
  });

  it("gives up on a poll the server never answers, says so, and polls again", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", 1);
    const page = await open(h, "#/", { clock: true });
    await page.locator(".cards [data-state=pending]").waitFor();
    const polls = await watchPolls(page);
    let hang = 1;
    await page.route(/\/v1\/stats$/, (route) => (hang-- > 0 ? undefined : route.fallback()));
    await page.clock.runFor(2_000);
    await vi.waitFor(async () => expect(await polls.times()).toHaveLength(1));
    await page.clock.runFor(30_000);
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=notice-error]")).toContain("did not answer within 30 s"),
    );
    const answered = page.waitForResponse((r) => /\/v1\/stats$/.test(r.url()) && r.status() === 200);
    await page.clock.runFor(2_000);
    await answered;
    await vi.waitFor(async () => expect(await page.locator("[data-testid=notice-error]").count()).toBe(0));
    expect(await polls.times()).toHaveLength(2);
  });

  it("does not poll from a tab out of sight, and refreshes as soon as it is shown", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", 1);
    const page = await open(h, "#/", { clock: true });
    await page.locator(".cards [data-state=pending]").waitFor();
    const polls = await watchPolls(page);
    const setHidden = (hidden: boolean) =>
      page.evaluate((value) => {
        const doc = (globalThis as unknown as PageGlobals).document;
        Object.defineProperty(doc, "hidden", { configurable: true, get: () => value });
        doc.dispatchEvent(new (globalThis as unknown as PageGlobals).Event("visibilitychange"));
      }, hidden);
    await setHidden(true);
    await page.clock.runFor(60_000);
    await h.queue.enqueue("t", 2);
    const shown = page.waitForResponse(/\/v1\/stats$/);
    await setHidden(false);
    await shown;
    await vi.waitFor(async () =>
      expect(await text(page, ".cards [data-state=pending] [data-testid=count]")).toBe("2"),
    );
    // The one poll came when the tab was shown: none in the minute it was hidden.
    const times = await polls.times();
    expect(times).toHaveLength(1);
    expect(times[0]).toBeGreaterThanOrEqual(Date.UTC(2026, 0, 1) + 60_000);
  });
});
