import { ApiError, api, withQuery } from "./api.js";
import { badge, h, link, table, time } from "./dom.js";
import { JOB_STATES, type JobSummary, type JobSummaryPage, type Stats } from "./types.js";
import { pageSize, type View } from "./view.js";

const DEFAULT_LIMIT = 25;

/**
 * Jobs newest first, filtered by state, queue, type and key, a page at a time. The filters and
 * the cursor live in the URL (`#/jobs?state=dead&cursor=…`), so the back button and links work.
 */
export const jobs: View = async (ctx) => {
  const q = ctx.query;
  const filter = {
    state: q.get("state") ?? "",
    queue: q.get("queue") ?? "",
    type: q.get("type") ?? "",
    key: q.get("key") ?? "",
  };
  const limit = pageSize(q.get("limit"), DEFAULT_LIMIT);
  const cursor = q.get("cursor");
  // The filters' queue and type names come from the stats, which count the whole store (a second
  // or more beside a large backlog): the page does not wait for them, and shows without them
  // when they fail.
  const names = api<Stats>("GET", "v1/stats");
  names.catch(() => {});
  // Summaries: the table shows no payload, result or error, which can make a page of whole jobs
  // megabytes long. A job's own page reads it whole.
  const page = await api<JobSummaryPage>(
    "GET",
    withQuery("v1/jobs", { ...filter, limit, cursor, view: "summary" }),
  );

  const go = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    const s = next.toString();
    location.hash = s ? `#/jobs?${s}` : "#/jobs";
  };
  const options = (name: "state" | "queue" | "type", names: string[]) => [
    h("option", { value: "" }, "any"),
    // A filter from a link may name something with no jobs right now; keep it selectable.
    ...[...new Set([...names, ...(filter[name] ? [filter[name]] : [])])].map((o) =>
      h("option", { value: o, selected: o === filter[name] }, o),
    ),
  ];
  const select = (name: "state" | "queue" | "type", names: string[]) =>
    h(
      "select",
      {
        name,
        "data-testid": `filter-${name}`,
        onchange: (e: Event) => go({ [name]: (e.target as HTMLSelectElement).value, cursor: null }),
      },
      ...options(name, names),
    );
  const queues = select("queue", []);
  const types = select("type", []);
  names.then(
    (stats) => {
      queues.replaceChildren(...options("queue", Object.keys(stats.queues).sort()));
      types.replaceChildren(...options("type", Object.keys(stats.types).sort()));
    },
    (error) => {
      // Not a reason to stop the page; a 401 is, and brings the token form.
      if (error instanceof ApiError && error.unauthorized) ctx.fail(error);
    },
  );

  const rows = page.jobs.map((j) => jobRow(j));
  const first = cursor ? link(`#/jobs?${withoutCursor(q)}`, "« First page") : null;
  const next = page.nextCursor
    ? h(
        "a",
        {
          href: "#",
          "data-testid": "next-page",
          onclick: (e: Event) => {
            e.preventDefault();
            go({ cursor: page.nextCursor });
          },
        },
        "Next page »",
      )
    : null;
  ctx.root.append(
    h("h1", {}, "Jobs"),
    h(
      "form",
      { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
      h("label", {}, "state ", select("state", [...JOB_STATES])),
      h("label", {}, "queue ", queues),
      h("label", {}, "type ", types),
      // Keys are many and open-ended (a tenant, an account): typed, not picked from a list.
      h(
        "label",
        {},
        "key ",
        h("input", {
          name: "key",
          type: "search",
          value: filter.key,
          placeholder: "any",
          "data-testid": "filter-key",
          onchange: (e: Event) => go({ key: (e.target as HTMLInputElement).value.trim(), cursor: null }),
        }),
      ),
      filter.state || filter.queue || filter.type || filter.key ? link("#/jobs", "clear filters") : null,
    ),
    h(
      "div",
      { class: "table-scroll", "data-testid": "jobs-table" },
      table(
        [
          "id",
          "type",
          "queue",
          "state",
          "key",
          ["attempt", "num"],
          ["priority", "num"],
          "run at",
          "created",
          "finished",
        ],
        rows,
        // A filtered page reads a bounded stretch of jobs (LIST_SCAN): none of them may match
        // while older ones do.
        page.nextCursor
          ? "None in this stretch of jobs; older ones may match: see the next page."
          : "No jobs match.",
      ),
    ),
    h("nav", { class: "pager" }, first, h("span", { class: "muted" }, `${page.jobs.length} shown`), next),
  );
  return undefined;
};

function jobRow(j: JobSummary): HTMLTableRowElement {
  return h(
    "tr",
    { "data-id": j.id },
    h("td", { class: "mono" }, link(`#/jobs/${encodeURIComponent(j.id)}`, j.id)),
    h("td", {}, j.type),
    h("td", {}, j.queue),
    h("td", {}, badge(j.state)),
    h("td", { class: "mono" }, j.key === null ? "—" : link(keyHref(j.key), j.key)),
    h("td", { class: "num" }, `${j.attempt} / ${j.maxAttempts}`),
    h("td", { class: "num" }, String(j.priority)),
    h("td", {}, time(j.runAt)),
    h("td", {}, time(j.createdAt)),
    h("td", {}, time(j.finishedAt)),
  );
}

/** The jobs list filtered by one key. */
export function keyHref(key: string): string {
  return `#/jobs?${new URLSearchParams({ key }).toString()}`;
}

function withoutCursor(q: URLSearchParams): string {
  const c = new URLSearchParams(q);
  c.delete("cursor");
  return c.toString();
}
