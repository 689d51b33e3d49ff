import { api, withQuery } from "./api.js";
import { h, JSON_CELL_SHOWN, json, link, table, zonedTime } from "./dom.js";
import type { JobType, Schedule } from "./types.js";
import { pageSize, type View, type ViewContext } from "./view.js";

/** Schedules or types a page shows unless the URL says (`#/schedules?limit=…`, 1 to 1,000). */
const PER_PAGE = 100;

/** A list page's size and cursor, as its URL gives them. */
function pageOf(ctx: ViewContext): { limit: number; cursor: string | null } {
  return {
    limit: pageSize(ctx.query.get("limit"), PER_PAGE),
    cursor: ctx.query.get("cursor"),
  };
}

/** The links between a list's pages (`#/<view>?limit=…&cursor=…`). */
function pager(
  view: string,
  { limit, cursor }: { limit: number; cursor: string | null },
  shown: number,
  nextCursor: string | null,
): HTMLElement {
  const at = (c: string | null) =>
    `#/${view}?${new URLSearchParams({ limit: String(limit), ...(c ? { cursor: c } : {}) })}`;
  return h(
    "nav",
    { class: "pager" },
    cursor ? link(at(null), "« First page") : null,
    h("span", { class: "muted" }, `${shown} shown`),
    nextCursor ? h("a", { href: at(nextCursor), "data-testid": "next-page" }, "Next page »") : null,
  );
}

/**
 * The cron schedules by name, a page at a time, with their next tick; the page's size and cursor
 * live in the URL (`#/schedules?limit=50&cursor=…`), as the jobs table's do.
 */
export const schedules: View = async (ctx) => {
  const page = pageOf(ctx);
  const { schedules, nextCursor } = await api<{ schedules: Schedule[]; nextCursor: string | null }>(
    "GET",
    withQuery("v1/schedules", page),
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
          h("td", {}, zonedTime(s.nextRunAt, s.timezone)),
          h("td", {}, json(s.payload, undefined, JSON_CELL_SHOWN)),
          h(
            "td",
            {},
            Object.keys(s.options ?? {}).length ? json(s.options, undefined, JSON_CELL_SHOWN) : "—",
          ),
        ),
      ),
      "No schedules. Create one with PUT /v1/schedules/{name} or `errand schedules set`.",
    ),
    pager("schedules", page, schedules.length, nextCursor),
  );
  return undefined;
};

/**
 * The server's job types by name, a page at a time: defaults at enqueue, cluster-wide caps, push
 * targets.
 */
export const types: View = async (ctx) => {
  const page = pageOf(ctx);
  const { types, nextCursor } = await api<{ types: JobType[]; nextCursor: string | null }>(
    "GET",
    withQuery("v1/types", page),
  );
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
    pager("types", page, types.length, nextCursor),
  );
  return undefined;
};
