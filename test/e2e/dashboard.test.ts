/**
 * The web dashboard in a real browser: Debian's Chromium driven by playwright-core, against a real
 * server on a random port. The dashboard is built first (scripts/build-dashboard.ts), as
 * `npm run build` does. Without /usr/bin/chromium this file fails: it never skips.
 */
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { LIST_SCAN } from "../../src/store/store.js";
import { someBackend } from "../conformance/backend.js";
import { guardPrototype, storedJob } from "../conformance/names.js";
import { dashboardBrowser } from "../helpers/chromium.js";
import { ALL_TOKENS, type Harness, snapshot, startServer, TOKENS } from "./harness.js";

/** The little of the DOM the page functions below touch (this project's tsconfig has no DOM lib). */
interface Canvas {
  width: number;
  height: number;
  getContext(kind: "2d"): {
    getImageData(
      x: number,
      y: number,
      w: number,
      h: number,
    ): { data: Uint8ClampedArray; width: number; height: number };
  };
}
interface Browser {
  sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
  location: { hash: string };
}
const backend = someBackend();

const browser = dashboardBrowser([
  // A name of the attacker's that resolves to this machine, as after DNS rebinding.
  "--host-resolver-rules=MAP evil.example 127.0.0.1",
]);

/**
 * A fresh tab (its own sessionStorage) on the dashboard. Records every request the page makes and
 * every script error, and checks at the end that nothing left the server and nothing threw.
 */
async function open(h: Harness, hash = "#/"): Promise<Page> {
  const page = await (await browser()).newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${h.base}/dashboard/${hash}`);
  onTestFinished(async () => {
    await page.close();
    expect(requests.filter((u) => !u.startsWith(`${h.base}/`) && !u.startsWith("data:"))).toEqual([]);
    expect(errors).toEqual([]);
  });
  return page;
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();
const rowIds = (page: Page) =>
  page
    .locator("[data-testid=jobs-table] tbody tr[data-id]")
    .evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { id: string } }).dataset.id));

/** The names of a list view's rows (schedules, types), in the order shown. */
const rowNames = (page: Page) =>
  page
    .locator("tr[data-name]")
    .evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { name: string } }).dataset.name));

/** Leases a ready job of `type` from `queue` and fails it for good. */
async function killOne(h: Harness, type: string, queue = "default", message = "boom"): Promise<string> {
  const [job] = await h.queue.lease({ types: [type], queues: [queue], limit: 1 });
  await h.queue.fail(job!, new Error(message), { retryable: false });
  return job!.id;
}

describe(`dashboard on ${backend.name}`, () => {
  it("shows counts per state and per queue, and draws the throughput chart", async () => {
    const h = await startServer(backend);
    await h.queue.enqueueBatch([
      { job: "send-email", payload: { to: "a@b.c" }, options: { queue: "emails" } },
      { job: "send-email", payload: { to: "d@e.f" }, options: { queue: "emails" } },
      { job: "send-email", payload: { to: "g@h.i" }, options: { queue: "emails" } },
      { job: "resize", payload: { file: "a.png" } },
      { job: "resize", payload: { file: "b.png" } },
    ]);
    const [done] = await h.queue.lease({ types: ["resize"], limit: 1 });
    await h.queue.complete(done!, { ok: true });
    await killOne(h, "send-email", "emails");
    await h.queue.pauseQueue("emails");
    await h.queue.pauseQueue("idle");

    const page = await open(h);
    await page.locator("[data-state=pending] [data-testid=count]").waitFor();
    const counts = Object.fromEntries(
      await Promise.all(
        ["pending", "active", "completed", "dead", "cancelled", "expired"].map(async (s) => [
          s,
          await text(page, `.cards [data-state=${s}] [data-testid=count]`),
        ]),
      ),
    );
    expect(counts).toEqual({
      pending: "3",
      active: "0",
      completed: "1",
      dead: "1",
      cancelled: "0",
      expired: "0",
    });
    expect(await text(page, "tr[data-name=emails] td[data-state=pending]")).toBe("2");
    expect(await text(page, "tr[data-name=emails] td[data-state=dead]")).toBe("1");
    expect(await text(page, "tr[data-name=default] td[data-state=completed]")).toBe("1");
    // Paused queues are marked, and one with no jobs is listed all the same.
    expect(await text(page, "tr[data-name=emails] [data-testid=paused]")).toBe("paused");
    expect(await text(page, "tr[data-name=idle] [data-testid=paused]")).toBe("paused");
    expect(await page.locator("tr[data-name=default] [data-testid=paused]").count()).toBe(0);
    expect(await text(page, "[data-testid=throughput-totals]")).toContain(
      "5 enqueued · 1 completed · 1 failed attempts",
    );

    // The completed series (stroke #2f855a, drawn on top) runs along the floor, and its one
    // completion, in the last second of the window, lifts it a fifth of the way up (the y axis goes
    // to 5 for the enqueues).
    const canvas = page.locator("[data-testid=throughput-chart] canvas");
    await canvas.waitFor();
    const drawn = await vi.waitFor(async () => {
      const d = await canvas.evaluate((el) => {
        const c = el as unknown as Canvas;
        const { data, width, height } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
        const rows: number[] = [];
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const i = (y * width + x) * 4;
            const [r, g, b, a] = [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
            if (a > 200 && Math.abs(r - 47) < 12 && Math.abs(g - 133) < 12 && Math.abs(b - 90) < 12)
              rows.push(y);
          }
        }
        return { width, height, top: Math.min(...rows), bottom: Math.max(...rows), n: rows.length };
      });
      expect(d.n).toBeGreaterThan(50);
      return d;
    });
    expect(drawn.width).toBeGreaterThan(300);
    expect(drawn.n).toBeGreaterThan(50);
    expect(drawn.bottom - drawn.top).toBeGreaterThan(drawn.height / 12);
    expect(drawn.bottom - drawn.top).toBeLessThan(drawn.height / 3);
  });

  it("keeps refreshing the overview after failed polls, shows the error until one succeeds", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", 1);
    const page = await open(h);
    const pending = () => text(page, ".cards [data-state=pending] [data-testid=count]");
    await vi.waitFor(async () => expect(await pending()).toBe("1"), { timeout: 10_000 });

    // The next two polls of /v1/stats fail, as while the store reconnects; later ones get through.
    let failures = 2;
    await page.route(/\/v1\/stats$/, (route) =>
      failures-- > 0
        ? route.fulfill({
            status: 503,
            contentType: "application/json",
            body: JSON.stringify({
              code: "STORE_ERROR",
              message: "store briefly unreachable",
              details: null,
            }),
          })
        : route.fallback(),
    );
    await vi.waitFor(
      async () => expect(await text(page, "[data-testid=notice-error]")).toContain("503 STORE_ERROR"),
      { timeout: 10_000 },
    );
    await h.queue.enqueue("t", 2);
    await vi.waitFor(async () => expect(await pending()).toBe("2"), { timeout: 15_000 });
    expect(failures).toBeLessThan(0);
    expect(await page.locator("[data-testid=notice-error]").count()).toBe(0);

    // The first load failing is no different: the view comes up, says why, and fills in once it can.
    failures = 1;
    await page.reload();
    await vi.waitFor(
      async () => expect(await text(page, "[data-testid=notice-error]")).toContain("503 STORE_ERROR"),
      { timeout: 10_000 },
    );
    await vi.waitFor(async () => expect(await pending()).toBe("2"), { timeout: 15_000 });
    expect(await page.locator("[data-testid=notice-error]").count()).toBe(0);
  });

  it("shows each type's held-back ready jobs by rule and its busiest keys, linked to their jobs", async () => {
    const h = await startServer(backend);
    await h.http("PUT", "/v1/types/sync", { body: { keyConcurrency: 1 } });
    await h.http("PUT", "/v1/types/ledger", { body: { ordered: true } });
    await h.http("PUT", "/v1/types/partner", { body: { rateLimit: { limit: 1, periodMs: 60_000 } } });
    const jobs = [
      ...["a", "a", "a", "b"].map((key) => ({ type: "sync", key })),
      ...["x", "x", "x"].map((key) => ({ type: "ledger", key })),
      { type: "partner" },
      { type: "partner" },
      { type: "plain" },
    ];
    expect((await h.http("POST", "/v1/jobs", { body: { jobs } })).status).toBe(201);
    expect(await h.queue.lease({ types: ["sync"], limit: 10 })).toHaveLength(2);

    const page = await open(h);
    const panel = page.locator("[data-testid=held-back]");
    await panel.locator("tr[data-name=sync]").waitFor();
    // In the job types' table: the total held back, its breakdown in the title; none for a type without rules.
    const syncHeld = page.locator("tr[data-name=sync] td[data-state=held]").first();
    expect(await syncHeld.innerText()).toBe("2");
    expect(await syncHeld.getAttribute("title")).toBe("rate limit 0 · key cap 2 · order 0");
    expect(await text(page, "tr[data-name=ledger] td[data-state=held]")).toBe("2");
    expect(await text(page, "tr[data-name=plain] td[data-state=held]")).toBe("–");
    // The panel: one row per type with rules, by rule.
    const held = async (type: string) =>
      Promise.all(
        ["rateLimit", "keyConcurrency", "order"].map((r) =>
          text(page, `[data-testid=held-back] tr[data-name=${type}] td[data-held=${r}]`),
        ),
      );
    expect(await held("sync")).toEqual(["0", "2", "0"]);
    expect(await held("ledger")).toEqual(["0", "0", "2"]);
    expect(await held("partner")).toEqual(["1", "0", "0"]);
    const keys = panel.locator("tr[data-name=sync] [data-testid=busiest-keys] li");
    expect(await keys.allInnerTexts()).toEqual(["a 2 ready · 1 running", "b 0 ready · 1 running"]);
    expect(await text(page, "[data-testid=held-back] tr[data-name=partner] td:last-child")).toBe("–");

    // Work moves on: the next refresh shows it.
    const [running] = await h.queue.lease({ types: ["ledger"], limit: 1 });
    await h.queue.complete(running!, null);
    await vi.waitFor(async () => expect(await held("ledger")).toEqual(["0", "0", "1"]), { timeout: 10_000 });

    await keys.first().locator("a").click();
    await page.waitForURL(/#\/jobs\?type=sync&key=a$/);
    await page.locator("[data-testid=jobs-table] tbody tr[data-id]").first().waitFor();
    expect(await rowIds(page)).toHaveLength(3);
  });

  it("shows queues and types named __proto__, constructor, toString like any other, refresh after refresh", async () => {
    const h = await startServer(backend);
    const unpolluted = guardPrototype();
    const now = h.clock.now();
    // Reserved names, as an older version or a direct write to the database would have left them.
    await h.store.enqueueMany({
      jobs: [storedJob("p1", "__proto__", now), storedJob("c1", "constructor", now)],
      now,
    });
    await h.queue.enqueue("toString", 1, { queue: "toString" });
    await h.store.pauseQueue({ name: "constructor", now });
    await h.queue.pauseQueue("hasOwnProperty");

    const page = await open(h);
    const table = (title: string) =>
      page.locator("section.panel", { has: page.locator(`h2:text-is("${title}")`) });
    const cell = (name: string, state: string, title = "Queues") =>
      table(title).locator(`tr[data-name="${name}"] td[data-state=${state}]`).innerText();
    await page.locator('tr[data-name="__proto__"]').first().waitFor();
    expect(await cell("__proto__", "pending")).toBe("1");
    expect(await cell("constructor", "pending")).toBe("1");
    expect(await cell("toString", "pending")).toBe("1");
    expect(await cell("__proto__", "pending", "Job types")).toBe("1");
    expect(await cell("toString", "pending", "Job types")).toBe("1");
    // A paused queue without jobs, named like an Object.prototype method: a row of zeros.
    expect(await cell("hasOwnProperty", "pending")).toBe("0");
    expect(await text(page, 'tr[data-name="hasOwnProperty"] [data-testid=paused]')).toBe("paused");
    expect(await text(page, 'tr[data-name="constructor"] [data-testid=paused]')).toBe("paused");

    // The next refreshes read the new count; the server is still answering and unpolluted.
    await h.store.enqueueMany({ jobs: [storedJob("p2", "__proto__", now)], now });
    await vi.waitFor(async () => expect(await cell("__proto__", "pending")).toBe("2"), { timeout: 10_000 });
    expect((await h.http("GET", "/v1/stats")).status).toBe(200);
    unpolluted();
  });

  it("counts blocked jobs, lists a job's dependencies and dependents with their states, and draws its flow", async () => {
    const h = await startServer(backend);
    await h.queue.enqueueFlow([
      { ref: "a", job: "fetch", payload: { url: "a" }, options: { id: "page-a" } },
      { ref: "b", job: "fetch", payload: { url: "b" }, options: { id: "page-b" } },
      { ref: "m", job: "merge", payload: {}, dependsOn: ["a", "b"], options: { id: "merged" } },
      { ref: "r", job: "report", payload: {}, dependsOn: ["m"], options: { id: "report" } },
      { ref: "n", job: "notify", payload: {}, dependsOn: ["a"], options: { id: "notify" } },
    ]);
    await h.queue.enqueue("unrelated", {}, { id: "elsewhere" });
    const [a] = await h.queue.lease({ types: ["fetch"], limit: 1 });
    expect(a!.id).toBe("page-a");
    await h.queue.complete(a!, "A");

    const page = await open(h);
    await page.locator("[data-state=blocked] [data-testid=count]").waitFor();
    expect(await text(page, ".cards [data-state=blocked] [data-testid=count]")).toBe("2");
    expect(await text(page, "tr[data-name=default] td[data-state=blocked]")).toBe("2");

    await page.goto(`${h.base}/dashboard/#/jobs/merged`);
    const deps = page.locator("[data-testid=dependencies] tbody tr");
    await deps.first().waitFor();
    expect(await page.locator("h1 [data-testid=state]").innerText()).toBe("blocked");
    expect(await text(page, "[data-testid=dependencies] p")).toContain("waiting on 1 of 2");
    expect(
      await deps.evaluateAll((rows) =>
        rows.map((r) => (r as unknown as { innerText: string }).innerText.split("\t").map((c) => c.trim())),
      ),
    ).toEqual([
      ["page-a", "fetch", "completed"],
      ["page-b", "fetch", "pending"],
    ]);
    expect(await text(page, "[data-testid=dependents] tbody tr[data-id=report]")).toContain("blocked");
    expect(await page.locator("button[data-action=cancel]").isEnabled()).toBe(true);
    await page.locator("[data-testid=dependencies] a", { hasText: "page-a" }).click();
    await page.locator("[data-testid=dependents] tbody tr[data-id=notify]").waitFor();
    expect(await page.locator("[data-testid=dependents] tbody tr").count()).toBe(2);
    expect(await page.locator("[data-testid=dependencies]").count()).toBe(0);

    // The flow, walked from a leaf: every job of it and no other, each with its state, every edge.
    await page.goto(`${h.base}/dashboard/#/flows/report`);
    const graph = page.locator("[data-testid=flow-graph]");
    await graph.waitFor();
    const nodes = await graph.locator("a.flow-node").evaluateAll((els) =>
      Object.fromEntries(
        els.map((e) => {
          const d = (e as unknown as { dataset: { id: string; state: string } }).dataset;
          return [d.id, d.state];
        }),
      ),
    );
    expect(nodes).toEqual({
      "page-a": "completed",
      "page-b": "pending",
      merged: "blocked",
      report: "blocked",
      notify: "pending",
    });
    const edges = await graph.locator("path.flow-edge").evaluateAll((els) =>
      els
        .map((e) => {
          const d = (e as unknown as { dataset: { from: string; to: string } }).dataset;
          return `${d.from}>${d.to}`;
        })
        .sort(),
    );
    expect(edges).toEqual(["merged>report", "page-a>merged", "page-a>notify", "page-b>merged"]);
    expect(await text(page, "[data-testid=flow-summary]")).toBe("5 jobs, 4 dependencies.");
    // Every edge points right: a job is drawn right of each job it waits for.
    const x = async (id: string) => Number(await graph.locator(`a[data-id="${id}"] rect`).getAttribute("x"));
    expect(await x("page-a")).toBeLessThan(await x("merged"));
    expect(await x("merged")).toBeLessThan(await x("report"));
    await graph.locator('a[data-id="page-b"]').click();
    await page.waitForFunction(() => (globalThis as unknown as Browser).location.hash === "#/jobs/page-b");
    await page.locator("[data-testid=dependents] tbody tr[data-id=merged]").waitFor();
  });

  it("filters the jobs table by state, queue and type, and pages with the cursor", async () => {
    const h = await startServer(backend);
    const bulk = await h.queue.enqueueBatch(
      Array.from({ length: 7 }, (_, i) => ({ job: "bulk", payload: { i }, options: { queue: "batch" } })),
    );
    await h.queue.enqueueBatch([
      { job: "other", payload: 1 },
      { job: "other", payload: 2 },
    ]);
    const dead = await killOne(h, "other");

    const page = await open(h, "#/jobs?limit=5");
    // The list asks for summaries: it shows no payload, result or error.
    const lists: URLSearchParams[] = [];
    page.on("request", (r) => {
      const url = new URL(r.url());
      if (url.pathname === "/v1/jobs") lists.push(url.searchParams);
    });
    await vi.waitFor(async () => expect(await rowIds(page)).toHaveLength(5));

    await page.selectOption("[data-testid=filter-type]", "bulk");
    await vi.waitFor(async () => expect(page.url()).toContain("type=bulk"));
    const first = await vi.waitFor(async () => {
      const ids = await rowIds(page);
      expect(ids).toHaveLength(5);
      return ids;
    });
    await page.click("[data-testid=next-page]");
    const second = await vi.waitFor(async () => {
      const ids = await rowIds(page);
      expect(ids).toHaveLength(2);
      return ids;
    });
    expect([...first, ...second].sort()).toEqual(bulk.map((j) => j.id).sort());
    expect(await page.locator("[data-testid=next-page]").count()).toBe(0);

    await page.selectOption("[data-testid=filter-state]", "dead");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=jobs-table] td.empty")).toBe("No jobs match."),
    );
    await page.selectOption("[data-testid=filter-type]", "");
    await vi.waitFor(async () => expect(await rowIds(page)).toEqual([dead]));

    await page.selectOption("[data-testid=filter-state]", "");
    await page.selectOption("[data-testid=filter-queue]", "default");
    await vi.waitFor(async () =>
      expect((await rowIds(page)).sort()).toEqual((await idsOf(h, "other")).sort()),
    );
    expect(lists.length).toBeGreaterThan(4);
    for (const query of lists) expect(query.get("view"), `${query}`).toBe("summary");
  });

  it("lists schedules by name a page at a time", async () => {
    const h = await startServer(backend);
    for (const name of ["nightly", "hourly", "weekly"]) {
      await h.queue.schedule(name, { cron: "0 3 * * *", job: "report", payload: { name } });
    }
    const page = await open(h, "#/schedules?limit=2");
    await vi.waitFor(async () => expect(await rowNames(page)).toEqual(["hourly", "nightly"]));
    await page.click("[data-testid=next-page]");
    await vi.waitFor(async () => expect(await rowNames(page)).toEqual(["weekly"]));
    expect(await page.locator("[data-testid=next-page]").count()).toBe(0);
  });

  it("shows a schedule's next run on its zone's clock, with the offset", async () => {
    const h = await startServer(backend);
    await h.queue.schedule("london", {
      cron: "30 1 * * *",
      timezone: "Europe/London",
      job: "report",
      payload: {},
    });
    await h.queue.schedule("kathmandu", {
      cron: "0 9 * * *",
      timezone: "Asia/Kathmandu",
      job: "report",
      payload: {},
    });
    const page = await open(h, "#/schedules");
    await vi.waitFor(async () => expect(await rowNames(page)).toEqual(["kathmandu", "london"]));
    const nextRun = (name: string) => text(page, `tr[data-name=${name}] time`);
    // 01:30 in London whatever the browser's zone, and which 01:30 when the clocks go back.
    expect(await nextRun("london")).toMatch(/^\d{4}-\d\d-\d\d 01:30:00 GMT(\+1)?$/);
    expect(await nextRun("kathmandu")).toMatch(/^\d{4}-\d\d-\d\d 09:00:00 GMT\+5:45$/);
  });

  it("lists job types by name a page at a time", async () => {
    const h = await startServer(backend, {
      types: [{ type: "resize" }, { type: "email", priority: 5 }, { type: "webhook" }],
    });
    const page = await open(h, "#/types?limit=2");
    await vi.waitFor(async () => expect(await rowNames(page)).toEqual(["email", "resize"]));
    await page.click("[data-testid=next-page]");
    await vi.waitFor(async () => expect(await rowNames(page)).toEqual(["webhook"]));
    expect(await page.locator("[data-testid=next-page]").count()).toBe(0);
  });

  it("pages on past a stretch of jobs none of which match the filter", async () => {
    const h = await startServer(backend);
    const rare = await h.queue.enqueue("rare", {});
    await h.queue.enqueueManyIds(
      "common",
      Array.from({ length: LIST_SCAN + 10 }, (_, i) => i),
    );
    const page = await open(h, "#/jobs?type=rare");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=jobs-table] td.empty")).toBe(
        "None in this stretch of jobs; older ones may match: see the next page.",
      ),
    );
    await page.click("[data-testid=next-page]");
    await vi.waitFor(async () => expect(await rowIds(page)).toEqual([rare.id]));
    expect(await page.locator("[data-testid=next-page]").count()).toBe(0);
  });

  it("shows jobs' keys, filters the table by key, and a job's key, snoozes and debounce key", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("sync", 1, { id: "s1", key: "tenant-7" });
    await h.queue.enqueue("sync", 2, { id: "s2", key: "tenant-8" });
    await h.queue.enqueue("sync", 3, { id: "s3" });
    // A debounced job's id is the store's: the enqueue may answer with the job already waiting.
    const debounced = await h.queue.enqueue("reindex", 4, { debounce: { key: "reindex:9", delayMs: 1000 } });
    const [leased] = await h.queue.lease({ types: ["sync"], limit: 1 });
    expect(leased?.id).toBe("s1");
    expect(await h.queue.snooze(leased!, "1m")).toBe(true);

    const page = await open(h, "#/jobs");
    await vi.waitFor(async () => expect(await rowIds(page)).toHaveLength(4));
    expect(await text(page, "tr[data-id=s2] td:nth-child(5)")).toBe("tenant-8");
    expect(await text(page, "tr[data-id=s3] td:nth-child(5)")).toBe("—");
    await page.fill("[data-testid=filter-key]", "tenant-7");
    await page.press("[data-testid=filter-key]", "Enter");
    await vi.waitFor(async () => expect(await rowIds(page)).toEqual(["s1"]));
    expect(page.url()).toContain("key=tenant-7");
    await page.fill("[data-testid=filter-key]", "");
    await page.press("[data-testid=filter-key]", "Enter");
    await vi.waitFor(async () => expect(await rowIds(page)).toHaveLength(4));
    // A row's key is a link to the jobs of that key.
    await page.click("tr[data-id=s2] td:nth-child(5) a");
    await vi.waitFor(async () => expect(await rowIds(page)).toEqual(["s2"]));

    await page.goto(`${h.base}/dashboard/#/jobs/s1`);
    await page.locator("dd[data-field=key]").waitFor();
    expect(await text(page, "dd[data-field=key]")).toBe("tenant-7");
    expect(await text(page, "dd[data-field=snoozes]")).toBe("1");
    expect(await text(page, "dd[data-field=attempt]")).toBe("1 of 6");
    await page.goto(`${h.base}/dashboard/#/jobs/${debounced.id}`);
    await page.locator("dd[data-field='debounce key']").waitFor();
    expect(await text(page, "dd[data-field='debounce key']")).toBe("reindex:9");
    expect(await text(page, "dd[data-field=key]")).toBe("—");
  });

  it("opens a dead job, shows its history, and retries it; replays a completed one", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("charge", { order: 42, amount: 1999 }, { id: "order-42", maxAttempts: 1 });
    const [job] = await h.queue.lease({ types: ["charge"] });
    await h.queue.checkpoint(job!, { step: "authorised" });
    await h.queue.fail(job!, new Error("card declined"));
    expect((await h.queue.get("order-42"))!.state).toBe("dead");

    const page = await open(h, "#/jobs?state=dead");
    // The list reads summaries; the job's own page reads it whole.
    const reads: URL[] = [];
    page.on("request", (r) => reads.push(new URL(r.url())));
    await page.click("tr[data-id=order-42] a");
    await page.locator("[data-action=retry]").waitFor();
    expect(page.url()).toContain("#/jobs/order-42");
    expect(await text(page, "h1 [data-testid=state]")).toBe("dead");
    expect(JSON.parse(await text(page, "[data-testid=payload]"))).toEqual({ order: 42, amount: 1999 });
    expect(JSON.parse(await text(page, "[data-testid=checkpoint]"))).toEqual({ step: "authorised" });
    expect(await text(page, "[data-testid=errors]")).toContain("card declined");
    expect(await page.locator("[data-action=cancel]").isDisabled()).toBe(true);
    expect(reads.filter((u) => u.pathname === "/v1/jobs/order-42").map((u) => u.search)).toContain("");

    await page.click("[data-action=retry]");
    await vi.waitFor(async () => expect((await h.queue.get("order-42"))!.state).toBe("pending"));
    await vi.waitFor(async () => expect(await text(page, "h1 [data-testid=state]")).toBe("pending"));
    expect(await text(page, "[data-testid=notice-info]")).toContain("Retried");
    expect(await page.locator("[data-action=cancel]").isEnabled()).toBe(true);

    const [again] = await h.queue.lease({ types: ["charge"] });
    await h.queue.complete(again!, { charged: true });
    await page.reload();
    await vi.waitFor(async () => expect(await text(page, "h1 [data-testid=state]")).toBe("completed"));
    expect(JSON.parse(await text(page, "[data-testid=result]"))).toEqual({ charged: true });
    await page.click("[data-action=replay]");
    await vi.waitFor(async () => expect(page.url()).not.toContain("#/jobs/order-42"));
    const replayId = decodeURIComponent(page.url().split("#/jobs/")[1]!);
    expect(await h.queue.get(replayId)).toMatchObject({
      type: "charge",
      state: "pending",
      payload: { order: 42, amount: 1999 },
    });
    await vi.waitFor(async () => expect(await text(page, "[data-testid=notice-info]")).toContain(replayId));
  });

  it("asks for a token once, keeps it in sessionStorage, and shows 401 and 403 clearly", async () => {
    const h = await startServer(backend, { auth: { tokens: ALL_TOKENS, maxFailures: 100 } });
    await h.queue.enqueue("charge", { order: 7 }, { id: "order-7" });
    await killOne(h, "charge", "default", "insufficient funds");

    // The page itself loads without a token; the API does not answer without one.
    const page = await open(h);
    await page.locator("[data-testid=token-form]").waitFor();
    expect(await text(page, "[data-testid=token-message]")).toContain("requires a token");

    await page.fill("[data-testid=token-input]", "not-a-valid-token");
    await page.click("[data-testid=token-form] button[type=submit]");
    await vi.waitFor(async () => expect(await text(page, "[data-testid=token-message]")).toContain("401"));

    await page.fill("[data-testid=token-input]", TOKENS.viewer);
    await page.click("[data-testid=token-form] button[type=submit]");
    await vi.waitFor(async () =>
      expect(await text(page, ".cards [data-state=dead] [data-testid=count]")).toBe("1"),
    );
    expect(
      await page.evaluate(() => (globalThis as unknown as Browser).sessionStorage.getItem("errand.token")),
    ).toBe(TOKENS.viewer);

    // Navigating does not ask again: the token is sent as a bearer header from sessionStorage.
    await page.goto(`${h.base}/dashboard/#/jobs/order-7`);
    await page.locator("[data-action=retry]").waitFor();
    await page.click("[data-action=retry]");
    const refusal = await vi.waitFor(async () => {
      const t = await text(page, "[data-testid=notice-error]");
      expect(t).toContain("403");
      return t;
    });
    expect(refusal).toContain("viewer");
    expect(refusal).toContain("manage");
    expect(await page.locator("[data-testid=token-form]").count()).toBe(0);
    expect((await h.queue.get("order-7"))!.state).toBe("dead");

    await page.click("[data-testid=sign-out]");
    await page.locator("[data-testid=token-form]").waitFor();
    await page.fill("[data-testid=token-input]", TOKENS.admin);
    await page.click("[data-testid=token-form] button[type=submit]");
    await page.locator("[data-action=retry]").waitFor();
    await page.click("[data-action=retry]");
    await vi.waitFor(async () => expect((await h.queue.get("order-7"))!.state).toBe("pending"));
  });

  it("refuses a token no header can carry (a zero-width space pasted with it), in the form and from sessionStorage", async () => {
    const h = await startServer(backend, { auth: { tokens: ALL_TOKENS, maxFailures: 100 } });
    await h.queue.enqueue("t", 1);
    const page = await open(h);
    const sent: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/v1/")) sent.push(r.url());
    });
    const stored = () =>
      page.evaluate(() => (globalThis as unknown as Browser).sessionStorage.getItem("errand.token"));
    await page.locator("[data-testid=token-form]").waitFor();

    // Copied from a chat: the token and a zero-width space after it. Refused before it is kept or sent.
    await page.fill("[data-testid=token-input]", `${TOKENS.viewer}\u200b`);
    await page.click("[data-testid=token-form] button[type=submit]");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=token-message]")).toContain(
        `U+200B, an invisible character at position ${TOKENS.viewer.length + 1}`,
      ),
    );
    expect(await stored()).toBeNull();
    expect(sent).toEqual([]);
    expect(await page.locator("[data-testid=notice-error]").count()).toBe(0);

    // One kept in the tab before (an older dashboard took it): the form again, never "unreachable".
    await page.evaluate(
      (t) => (globalThis as unknown as Browser).sessionStorage.setItem("errand.token", t),
      `${TOKENS.viewer}\u201d`,
    );
    await page.reload();
    await page.locator("[data-testid=token-form]").waitFor();
    expect(await text(page, "[data-testid=token-message]")).toContain('"\u201d" (U+201D)');
    expect(await page.locator("[data-testid=notice-error]").count()).toBe(0);
    expect(await stored()).toBeNull();

    await page.fill("[data-testid=token-input]", TOKENS.viewer);
    await page.click("[data-testid=token-form] button[type=submit]");
    await vi.waitFor(async () =>
      expect(await text(page, ".cards [data-state=pending] [data-testid=count]")).toBe("1"),
    );
  });
});

/**
 * The attacker: a page on another origin (another port of this host, or evil.example) that tries
 * what a browser lets any page do to a server it can reach: a form POST, no-cors fetches with the
 * body types a form may send, a read, and a JSON POST (which needs a CORS preflight). It records
 * what it could see in `window.done`.
 */
async function attackerSite(victim: string): Promise<number> {
  const page = `<!doctype html><meta charset="utf-8"><title>totally harmless</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="${victim}/v1/jobs/victim/cancel" enctype="text/plain" target="sink">
<input name='{"a":"' value='"}'></form>
<script>
(async () => {
  const seen = {};
  document.getElementById("f").submit();
  const tries = [
    ["/v1/queues/default/pause", undefined],
    ["/v1/queues/default/pause", ""],
    ["/v1/jobs/victim/cancel", "{}"],
    ["/v1/prune", "{}"],
  ];
  for (const [path, body] of tries) {
    try {
      await fetch("${victim}" + path, { method: "POST", mode: "no-cors", body, headers: { "content-type": "text/plain" } });
      seen[path] = "sent";
    } catch (e) { seen[path] = "blocked: " + e; }
  }
  try { seen.read = await (await fetch("${victim}/v1/jobs")).text(); } catch (e) { seen.read = "blocked: " + e; }
  try {
    const r = await fetch("${victim}/v1/jobs/victim/cancel", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    seen.json = "answered " + r.status;
  } catch (e) { seen.json = "blocked: " + e; }
  window.done = seen;
})();
</script>`;
  const server = createHttpServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end(page),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => {
    // Chromium keeps its connections open; end them, or close() waits for them.
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

describe(`the dashboard's server against other sites, on ${backend.name}`, () => {
  it("lets a page on another origin neither change nor read anything", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("charge", { order: 1 }, { id: "victim" });
    const before = await snapshot(h);
    const port = await attackerSite(h.base);
    for (const origin of [`http://127.0.0.1:${port}`, `http://evil.example:${port}`]) {
      const page = await (await browser()).newPage();
      onTestFinished(() => page.close());
      const answers: string[] = [];
      page.on("response", (r) => {
        if (r.url().startsWith(h.base))
          answers.push(`${r.request().method()} ${r.url().slice(h.base.length)} ${r.status()}`);
      });
      const form = page.waitForResponse(
        (r) => r.url() === `${h.base}/v1/jobs/victim/cancel` && r.request().resourceType() === "document",
      );
      await page.goto(`${origin}/`);
      const seen = (await (
        await page.waitForFunction(() => (globalThis as unknown as { done?: object }).done)
      ).jsonValue()) as Record<string, string>;
      expect((await form).status(), origin).toBe(403);
      // What the page could learn: nothing; the requests it could send: each refused.
      expect(seen.read, origin).toMatch(/^blocked/);
      expect(seen.json, origin).toMatch(/^blocked/);
      const posts = answers.filter((a) => a.startsWith("POST "));
      expect(posts.length, origin).toBeGreaterThanOrEqual(5);
      for (const a of posts) expect(a, origin).toMatch(/ 403$/);
      // The JSON POST never got past its preflight (which Chromium does not report as a response).
      expect(
        answers.filter((a) => a.includes(" 2")),
        origin,
      ).toEqual([]);
    }
    expect(await snapshot(h)).toEqual(before);
    expect((await h.queue.get("victim"))!.state).toBe("pending");
    expect((await h.queue.stats()).paused).toEqual([]);
  });

  it("shows a rebound name (evil.example → 127.0.0.1) nothing: neither the API nor the dashboard", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("charge", { secret: "s3cr3t" }, { id: "victim" });
    const page = await (await browser()).newPage();
    onTestFinished(() => page.close());
    const rebound = h.base.replace("127.0.0.1", "evil.example");
    for (const path of ["/v1/jobs", "/v1/jobs/victim", "/dashboard/"]) {
      const r = await page.goto(`${rebound}${path}`);
      expect(r!.status(), path).toBe(403);
      const body = await r!.text();
      expect(JSON.parse(body).code, path).toBe("FORBIDDEN");
      expect(body).not.toContain("s3cr3t");
    }
  });

  it("shows a clear message for a malformed job link, and takes '..' and unencoded slashes as ids", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("charge", { order: 1 }, { id: "order-1" });
    await h.queue.enqueue("charge", { order: 2 }, { id: "team/a/order-2" });
    const page = await open(h, "#/jobs/order-1");
    await page.locator("[data-action=cancel]").waitFor();
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url().slice(h.base.length)));
    const go = (hash: string) =>
      page.evaluate((to) => {
        (globalThis as unknown as Browser).location.hash = to;
      }, hash);

    await go("#/jobs/%E0%A4%A");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=notice-error]")).toContain("not valid percent-encoding"),
    );
    // The previous job's view is gone, not left standing under the new address.
    expect(await page.locator("[data-action=cancel]").count()).toBe(0);
    expect(await text(page, "[data-testid=route-problem]")).toContain("This link is broken");

    await go("#/jobs/..");
    await vi.waitFor(async () =>
      expect(await text(page, "[data-testid=notice-error]")).toContain('No job ".."'),
    );
    expect(await text(page, "[data-testid=notice-error]")).not.toContain("no route");
    expect(requests.filter((u) => !u.startsWith("/v1/jobs/"))).toEqual([]);

    await go("#/jobs/team/a/order-2");
    await vi.waitFor(async () => expect(await text(page, "h1")).toContain("team/a/order-2"));
    expect(requests).toContain("/v1/jobs/team%2Fa%2Forder-2");
    await page.click("[data-action=cancel]");
    await vi.waitFor(async () => expect((await h.queue.get("team/a/order-2"))!.state).toBe("cancelled"));
  });
});

describe("dashboard files and history over HTTP", () => {
  it("serves the built files with their types and cache headers, without a token, and nothing else", async () => {
    const h = await startServer(backend, { auth: { tokens: ALL_TOKENS, maxFailures: 100 } });
    const root = await fetch(`${h.base}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("dashboard/");

    const index = await h.http("GET", "/dashboard/");
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(index.body).toContain('<script type="module" src="main.js">');
    for (const [file, type] of [
      ["main.js", "text/javascript; charset=utf-8"],
      ["style.css", "text/css; charset=utf-8"],
      ["uplot.min.js", "text/javascript; charset=utf-8"],
      ["uplot.min.css", "text/css; charset=utf-8"],
    ]) {
      const r = await h.http("GET", `/dashboard/${file}`);
      expect(r.status, file).toBe(200);
      expect(r.headers.get("content-type"), file).toBe(type);
      const again = await h.http("GET", `/dashboard/${file}`, {
        headers: { "if-none-match": r.headers.get("etag")! },
      });
      expect(again.status, file).toBe(304);
    }
    for (const path of [
      "/dashboard/..%2F..%2Fpackage.json",
      "/dashboard/%2e%2e%2fserver%2fserver.js",
      "/dashboard/globals.d.ts",
      "/dashboard/tsconfig.json",
    ]) {
      expect((await h.http("GET", path)).status, path).toBe(404);
    }
    expect((await h.http("GET", "/v1/stats")).status).toBe(401);
  });

  it("keeps a reverse proxy's path prefix through its redirects to the dashboard", async () => {
    const h = await startServer(backend);
    const base = await prefixProxy(h.base, "/errand");
    for (const path of ["/", "/dashboard"]) {
      const r = await fetch(`${base}${path}`, { redirect: "manual" });
      expect(r.status, path).toBe(302);
      expect(r.headers.get("location"), path).toBe("dashboard/");
      const followed = await fetch(`${base}${path}`);
      expect(followed.url, path).toBe(`${base}/dashboard/`);
      expect(followed.status, path).toBe(200);
      expect(await followed.text(), path).toContain('<script type="module" src="main.js">');
    }
  });

  it("turns off with dashboard: false", async () => {
    const h = await startServer(backend, { dashboard: false });
    expect((await h.http("GET", "/dashboard/")).status).toBe(404);
    expect((await h.http("GET", "/")).status).toBe(404);
  });

  it("GET /v1/stats/history counts enqueues, completions and failures the server saw, per second", async () => {
    const h = await startServer(backend);
    await h.http("POST", "/v1/jobs", { body: { jobs: [{ type: "t" }, { type: "t" }, { type: "t" }] } });
    const { body: leased } = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2 } });
    const [a, b] = leased.jobs;
    await h.http("POST", "/v1/report", {
      body: {
        reports: [
          { id: a.id, attempt: 1, outcome: "complete", result: 1 },
          { id: b.id, attempt: 1, outcome: "fail", error: "boom" },
        ],
      },
    });
    await h.clock.advance(1000);
    const r = await h.http("GET", "/v1/stats/history?seconds=2");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      intervalMs: 1000,
      times: [h.clock.now() - 1000, h.clock.now()],
      enqueued: [3, 0],
      completed: [1, 0],
      failed: [1, 0],
    });
    expect((await h.http("GET", "/v1/stats/history?seconds=0")).status).toBe(400);
    expect((await h.http("GET", "/v1/stats/history?seconds=3601")).status).toBe(400);
    expect((await h.http("GET", "/v1/stats/history")).body.times).toHaveLength(300);
  });
});

async function idsOf(h: Harness, type: string): Promise<string[]> {
  return (await h.queue.list({ type, limit: 100 })).jobs.map((j) => j.id);
}

/**
 * A reverse proxy serving `target` under `prefix` (stripped before passing on, Host kept), as nginx's
 * `location /errand/ { proxy_pass http://errand/; }`; anything else is its own 404. Answers its base URL.
 */
async function prefixProxy(target: string, prefix: string): Promise<string> {
  const upstream = new URL(target);
  const server = createHttpServer((req, res) => {
    if (!req.url!.startsWith(`${prefix}/`)) {
      res.writeHead(404, { "content-type": "text/plain" }).end(`not under ${prefix}/`);
      return;
    }
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url!.slice(prefix.length),
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`;
}
