import { api } from "./api.js";
import { h, json, link, table, time } from "./dom.js";
import type { JobType, Schedule } from "./types.js";
import type { View } from "./view.js";

/** Every cron schedule, with its next tick. */
export const schedules: View = async (ctx) => {
  const { schedules } = await api<{ schedules: Schedule[] }>("GET", "v1/schedules");
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
