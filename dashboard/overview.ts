import type UPlot from "uplot";
import { api } from "./api.js";
import { duration, h, link, table } from "./dom.js";
import { type Counts, type History, JOB_STATES, type Stats, type TypeLimits } from "./types.js";
import type { View } from "./view.js";

const REFRESH_MS = 2000;
/** The longest wait between refreshes while they keep failing. */
const MAX_RETRY_MS = 30_000;
const WINDOW_SECONDS = 300;

/** The wait before the next refresh after `failures` failed in a row: 2 s, 2 s, 4 s, 8 s … 30 s. */
export function refreshDelay(failures: number): number {
  return failures === 0 ? REFRESH_MS : Math.min(MAX_RETRY_MS, REFRESH_MS * 2 ** (failures - 1));
}

/**
 * Counts per state, per queue and per type, and the throughput chart; refreshed every 2 s, also
 * after a refresh failed (the first one included): the error is shown until one succeeds. Failed
 * refreshes back off ({@link refreshDelay}), and a tab out of sight does not refresh at all
 * (each refresh counts the whole store): it refreshes again as soon as it is shown.
 */
export const overview: View = async (ctx) => {
  const cards = h("section", { class: "cards", "aria-label": "jobs by state" });
  const age = h("p", { class: "muted", "data-testid": "oldest-pending" });
  const totals = h("p", { class: "muted", "data-testid": "throughput-totals" });
  const chartBox = h("div", { class: "chart", "data-testid": "throughput-chart" });
  const queues = h("div");
  const types = h("div");
  const held = h("section", { class: "panel", "data-testid": "held-back", hidden: true });
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
    held,
  );

  let chart: UPlot | null = null;
  const resize = new ResizeObserver(() => chart?.setSize(chartSize(chartBox)));
  resize.observe(chartBox);

  /** What the queue and type tables were last drawn from: unchanged counts are not drawn again. */
  let drawn = "";
  const refresh = async () => {
    const [stats, history] = await Promise.all([
      api<Stats>("GET", "v1/stats"),
      api<History>("GET", `v1/stats/history?seconds=${WINDOW_SECONDS}`),
    ]);
    // Gone meanwhile: a chart made now would never be destroyed.
    if (stopped) return;
    cards.replaceChildren(...stateCards(stats));
    age.textContent = stats.oldestPendingAgeMs
      ? `Oldest ready job has waited ${duration(stats.oldestPendingAgeMs)}.`
      : "No job is waiting to start.";
    // Hundreds of queues and types are thousands of rows: rebuilt every 2 s while nothing changed,
    // they cost the tab its time and the reader a link under the pointer or a selection.
    const tables = JSON.stringify([stats.queues, stats.paused, stats.types, stats.limits ?? {}]);
    if (tables !== drawn) {
      drawn = tables;
      queues.replaceChildren(countsTable("queue", stats.queues, stats.paused));
      const limits = new Map(Object.entries(stats.limits ?? {}));
      types.replaceChildren(countsTable("type", stats.types, [], limits));
      held.hidden = limits.size === 0;
      held.replaceChildren(...heldPanel(limits));
    }
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

  let stopped = false;
  let timer = 0;
  /** Whether a refresh is under way: one at a time, however slow the server. */
  let busy = false;
  /** Refreshes failed in a row. */
  let failures = 0;
  /** The message of the error the last refresh failed with, shown above the view; null after a success. */
  let failing: string | null = null;
  /**
   * One refresh. A failure (the store reconnecting, the server restarting) is shown, once while it
   * says the same, and the next refresh comes all the same, later; the first that succeeds takes
   * the message away. A 401 brings the token form instead, which stops this view.
   */
  const tick = async () => {
    busy = true;
    try {
      await refresh();
      if (failing !== null && !stopped) ctx.clearNotice();
      failing = null;
      failures = 0;
    } catch (error) {
      if (stopped) return;
      failures++;
      const message = error instanceof Error ? error.message : String(error);
      if (failing !== message) ctx.fail(error);
      failing = message;
    } finally {
      busy = false;
    }
  };
  /** The next refresh, after its wait; none while the tab is hidden (`shown` starts it again). */
  const loop = () => {
    if (stopped || document.hidden || timer !== 0) return;
    timer = window.setTimeout(() => {
      timer = 0;
      void tick().then(loop);
    }, refreshDelay(failures));
  };
  /** Hidden: the waiting refresh is called off. Shown again: a refresh now, unless one is under way. */
  const shown = () => {
    if (stopped) return;
    clearTimeout(timer);
    timer = 0;
    if (!document.hidden && !busy) void tick().then(loop);
  };
  document.addEventListener("visibilitychange", shown);
  await tick();
  loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", shown);
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

/** A held-back count as shown: "12", or "1000+" when the server read only part of the backlog. */
function heldCount(n: number, t: TypeLimits): string {
  return t.heldBack.exact ? String(n) : `${n}+`;
}

/** The "held back" cell of a type with rules: the total, its breakdown in the title. */
function heldCell(t: TypeLimits | undefined): HTMLElement {
  if (!t) return h("td", { class: "num zero", "data-state": "held" }, "–");
  const { rateLimit, keyConcurrency, order } = t.heldBack;
  const total = rateLimit + keyConcurrency + order;
  return h(
    "td",
    {
      class: total ? "num" : "num zero",
      "data-state": "held",
      title: `rate limit ${heldCount(rateLimit, t)} · key cap ${heldCount(keyConcurrency, t)} · order ${heldCount(order, t)}`,
    },
    heldCount(total, t),
  );
}

/** Per type with rules: what holds its ready jobs back, and its busiest keys (each a link to its jobs). */
function heldPanel(limits: Map<string, TypeLimits>): HTMLElement[] {
  const rows = [...limits.keys()].sort().map((type) => {
    const t = limits.get(type)!;
    const keys = t.busiestKeys.map((k) =>
      h(
        "li",
        { "data-key": k.key },
        link(`#/jobs?type=${encodeURIComponent(type)}&key=${encodeURIComponent(k.key)}`, k.key),
        h("span", { class: "muted" }, ` ${k.ready} ready · ${k.active} running`),
      ),
    );
    return h(
      "tr",
      { "data-name": type },
      h("td", {}, link(`#/jobs?type=${encodeURIComponent(type)}&state=pending`, type)),
      h(
        "td",
        { class: t.heldBack.rateLimit ? "num" : "num zero", "data-held": "rateLimit" },
        heldCount(t.heldBack.rateLimit, t),
      ),
      h(
        "td",
        { class: t.heldBack.keyConcurrency ? "num" : "num zero", "data-held": "keyConcurrency" },
        heldCount(t.heldBack.keyConcurrency, t),
      ),
      h(
        "td",
        { class: t.heldBack.order ? "num" : "num zero", "data-held": "order" },
        heldCount(t.heldBack.order, t),
      ),
      h("td", {}, keys.length ? h("ol", { class: "keys", "data-testid": "busiest-keys" }, ...keys) : "–"),
    );
  });
  return [
    h("h2", {}, "Held back ", h("span", { class: "muted" }, "(ready jobs a claim now would not take)")),
    table(["type", ["rate limit", "num"], ["key cap", "num"], ["order", "num"], "busiest keys"], rows),
  ];
}

/** A table of counts by state, a row per queue or type; `paused` queues are marked (and listed even when empty). */
function countsTable(
  kind: "queue" | "type",
  byName: Record<string, Counts>,
  paused: string[] = [],
  limits?: Map<string, TypeLimits>,
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
      ...(limits ? [heldCell(limits.get(name))] : []),
    ),
  );
  return table(
    [
      kind,
      ...JOB_STATES.map((s): [string, "num"] => [s, "num"]),
      ...(limits ? [["held back", "num"] as [string, "num"]] : []),
    ],
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
    // One line a tick, the time of day alone: uPlot's default puts the date under the first tick,
    // wider than the gap to the next label, and the two overlapped. The window is always the last
    // five minutes, so the date says nothing; 60 px between ticks keeps every label clear.
    axes: [
      { space: 60, values: (_u, splits) => splits.map(clockLabel) },
      { label: "jobs / s", size: 50 },
    ],
    cursor: { drag: { x: false, y: false } },
  };
}

/** A tick's label: "13:05" on the minute, "13:05:30" between. */
function clockLabel(seconds: number): string {
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  return d.getSeconds() === 0 ? hm : `${hm}:${two(d.getSeconds())}`;
}
