import { api, withQuery } from "./api.js";
import { h, json, link, table, time } from "./dom.js";
import type { JobType, Schedule } from "./types.js";
import type { View } from "./view.js";

/** Schedules a page shows unless the URL says (`#/schedules?limit=…`, 1 to 1,000). */
const SCHEDULES_PER_PAGE = 100;

/**
 * The cron schedules by name, a page at a time, with their next tick; the page's size and cursor
 * live in the URL (`#/schedules?limit=50&cursor=…`), as the jobs table's do.
 */
export const schedules: View = async (ctx) => {
  const limit = Math.min(1000, Math.max(1, Number(ctx.query.get("limit")) || SCHEDULES_PER_PAGE));
  const cursor = ctx.query.get("cursor");
  const { schedules, nextCursor } = await api<{ schedules: Schedule[]; nextCursor: string | null }>(
    "GET",
    withQuery("v1/schedules", { limit, cursor }),
  );
  const at = (c: string | null) =>
    `#/schedules?${new URLSearchParams({ limit: String(limit), ...(c ? { cursor: c } : {}) })}`;
  const pager = h(
    "nav",
    { class: "pager" },
    cursor ? link(at(null), "« First page") : null,
    h("span", { class: "muted" }, `${schedules.length} shown`),
    nextCursor ? h("a", { href: at(nextCursor), "data-testid": "next-page" }, "Next page »") : null,
  );
  ctx.root.append(
    h("h1", {}, "Schedules"),
    table(
      ["name", "cron", "timezone", "type", "next run", "payload", "options"],
      schedules.map((s) =>
        h(
          "tr",
          { "data-name": s.name },
          h("td", {}, s.name),
          h("td", { class: "mono" }, s.cron),
          h("td", {}, s.timezone),
          h("td", {}, link(`#/jobs?type=${encodeURIComponent(s.type)}`, s.type)),
          h("td", {}, time(s.nextRunAt)),
          h("td", {}, json(s.payload)),
          h("td", {}, Object.keys(s.options ?? {}).length ? json(s.options) : "—"),
        ),
      ),
      "No schedules. Create one with PUT /v1/schedules/{name} or `errand schedules set`.",
    ),
    pager,
  );
  return undefined;
};

/** The server's job types: defaults at enqueue, cluster-wide caps, push targets. */
export const types: View = async (ctx) => {
  const { types } = await api<{ types: JobType[] }>("GET", "v1/types");
  const cell = (v: unknown) => h("td", {}, v === undefined || v === null ? "—" : String(v));
  ctx.root.append(
    h("h1", {}, "Job types"),
    table(
      [
        "type",
        "queue",
        "priority",
        "weight",
        "max attempts",
        "backoff",
        "timeout",
        "delivery",
        "concurrency",
        "push",
      ],
      types.map((t) =>
        h(
          "tr",
          { "data-name": t.type },
          h("td", {}, link(`#/jobs?type=${encodeURIComponent(t.type)}`, t.type)),
          cell(t.queue),
          cell(t.priority),
          cell(t.weight),
          cell(t.maxAttempts),
          h("td", { class: "mono" }, t.backoff ? JSON.stringify(t.backoff) : "—"),
          cell(t.timeoutMs),
          cell(t.delivery),
          cell(t.concurrency),
          cell(t.push?.url),
        ),
      ),
      "No job types registered on this server (errand serve --types, or PUT /v1/types/{type}).",
    ),
  );
  return undefined;
};
