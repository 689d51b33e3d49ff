import type UPlot from "uplot";
import { api } from "./api.js";
import { duration, h, link, table } from "./dom.js";
import { type Counts, type History, JOB_STATES, type Stats } from "./types.js";
import type { View } from "./view.js";

const REFRESH_MS = 2000;
const WINDOW_SECONDS = 300;

/** Counts per state, per queue and per type, and the throughput chart; refreshed every 2 s. */
export const overview: View = async (ctx) => {
  const cards = h("section", { class: "cards", "aria-label": "jobs by state" });
  const age = h("p", { class: "muted", "data-testid": "oldest-pending" });
  const totals = h("p", { class: "muted", "data-testid": "throughput-totals" });
  const chartBox = h("div", { class: "chart", "data-testid": "throughput-chart" });
  const queues = h("div");
  const types = h("div");
  ctx.root.append(
    h("h1", {}, "Overview"),
    cards,
    age,
    h(
      "section",
      { class: "panel" },
      h("h2", {}, "Throughput ", h("span", { class: "muted" }, "(per second, last 5 minutes)")),
      chartBox,
      totals,
    ),
    h("section", { class: "panel" }, h("h2", {}, "Queues"), queues),
    h("section", { class: "panel" }, h("h2", {}, "Job types"), types),
  );

  let chart: UPlot | null = null;
  const resize = new ResizeObserver(() => chart?.setSize(chartSize(chartBox)));
  resize.observe(chartBox);

  const refresh = async () => {
    const [stats, history] = await Promise.all([
      api<Stats>("GET", "v1/stats"),
      api<History>("GET", `v1/stats/history?seconds=${WINDOW_SECONDS}`),
    ]);
    cards.replaceChildren(...stateCards(stats));
    age.textContent = stats.oldestPendingAgeMs
      ? `Oldest ready job has waited ${duration(stats.oldestPendingAgeMs)}.`
      : "No job is waiting to start.";
    queues.replaceChildren(countsTable("queue", stats.queues, stats.paused));
    types.replaceChildren(countsTable("type", stats.types));
    const data: UPlot.AlignedData = [
      history.times.map((t) => t / 1000),
      history.enqueued,
      history.failed,
      history.completed,
    ];
    if (chart) chart.setData(data);
    else chart = new uPlot(chartOptions(chartSize(chartBox)), data, chartBox);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    totals.textContent = `Last 5 minutes: ${sum(history.enqueued)} enqueued · ${sum(history.completed)} completed · ${sum(history.failed)} failed attempts (as this server saw them).`;
  };

  try {
    await refresh();
  } catch (error) {
    resize.disconnect();
    throw error;
  }
  let stopped = false;
  let timer = 0;
  const loop = () => {
    timer = window.setTimeout(() => {
      refresh().then(
        () => !stopped && loop(),
        (error) => !stopped && ctx.fail(error),
      );
    }, REFRESH_MS);
  };
  loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
    resize.disconnect();
    chart?.destroy();
  };
};

function stateCards(stats: Stats): HTMLElement[] {
  return JOB_STATES.map((state) => {
    const extra =
      state === "pending" && (stats.scheduled || stats.retrying)
        ? h("span", { class: "card-extra" }, `${stats.scheduled} scheduled · ${stats.retrying} retrying`)
        : null;
    return h(
      "a",
      { class: `card state-${state}`, href: `#/jobs?state=${state}`, "data-state": state },
      h("span", { class: "card-label" }, state),
      h("span", { class: "card-count", "data-testid": "count" }, String(stats.states[state] ?? 0)),
      extra,
    );
  });
}

/** A table of counts by state, a row per queue or type; `paused` queues are marked (and listed even when empty). */
function countsTable(
  kind: "queue" | "type",
  byName: Record<string, Counts>,
  paused: string[] = [],
): HTMLElement {
  // A Map of the own keys: a paused queue named "toString" with no jobs must not read
  // Object.prototype.toString's properties as its counts.
  const counts = new Map(Object.entries(byName));
  const rows = [...new Set([...counts.keys(), ...paused])].sort().map((name) =>
    h(
      "tr",
      { "data-name": name },
      h(
        "td",
        {},
        link(`#/jobs?${kind}=${encodeURIComponent(name)}`, name),
        ...(paused.includes(name)
          ? [
              " ",
              h(
                "span",
                {
                  class: "badge paused",
                  "data-testid": "paused",
                  title: "no worker takes its jobs until it is resumed",
                },
                "paused",
              ),
            ]
          : []),
      ),
      ...JOB_STATES.map((s) => {
        const n = counts.get(name)?.[s] ?? 0;
        return h(
          "td",
          { class: n ? "num" : "num zero", "data-state": s },
          n ? link(`#/jobs?${kind}=${encodeURIComponent(name)}&state=${s}`, String(n)) : "0",
        );
      }),
    ),
  );
  return table(
    [kind, ...JOB_STATES.map((s): [string, "num"] => [s, "num"])],
    rows,
    `No ${kind === "queue" ? "queues" : "job types"} with jobs yet.`,
  );
}

function chartSize(box: HTMLElement): { width: number; height: number } {
  return { width: Math.max(300, box.clientWidth), height: 220 };
}

function chartOptions(size: { width: number; height: number }): UPlot.Options {
  return {
    ...size,
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    // Drawn in this order, so completions (the line people look for) lie on top.
    series: [
      {},
      { label: "enqueued", stroke: "#2b6cb0", width: 1, dash: [4, 4] },
      { label: "failed", stroke: "#c53030", fill: "rgba(197, 48, 48, 0.10)", width: 1.5 },
      { label: "completed", stroke: "#2f855a", fill: "rgba(47, 133, 90, 0.12)", width: 1.5 },
    ],
    axes: [{}, { label: "jobs / s", size: 50 }],
    cursor: { drag: { x: false, y: false } },
  };
}
