/**
 * A small element builder, so views never assemble HTML from strings: every text the API returns
 * goes in as a text node.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Child | Child[]>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Array<Child | Child[]>): void {
  for (const c of children) {
    if (Array.isArray(c)) append(el, c);
    else if (c === null || c === undefined || c === false) continue;
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** A local date-time like 2026-01-01 12:00:05, with the ISO instant as its title. */
export function time(value: string | number | null | undefined): HTMLElement | string {
  if (value === null || value === undefined) return "—";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, text);
}

/**
 * A date-time as the wall clock of `timeZone` reads it, with that zone's offset, like
 * 2026-10-25 01:30:00 GMT+1: a schedule's tick as its cron means it, and unambiguous in an hour the
 * clocks turn back (01:30 happens twice). The ISO instant is its title. A zone this browser cannot
 * read gives {@link time}'s local form.
 */
export function zonedTime(value: string | number | null | undefined, timeZone: string): HTMLElement | string {
  if (value === null || value === undefined) return "—";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat("en-US", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "shortOffset",
    }).formatToParts(d);
  } catch {
    return time(value);
  }
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
  // Chromium names a zero offset "GMT+0", V8 in Node "GMT": one spelling.
  const offset = part("timeZoneName").replace(/^GMT\+0$/, "GMT");
  const text = `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}:${part("second")} ${offset}`;
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, text);
}

/** 1500 → "1.5 s", 90_000 → "1 m 30 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${s % 60} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} m`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** Pretty JSON in a <pre>, or a dash for null. */
export function json(value: unknown, testid?: string): HTMLElement {
  return h(
    "pre",
    { class: "json", "data-testid": testid },
    value === null || value === undefined ? "null" : JSON.stringify(value, null, 2),
  );
}

export function badge(state: string): HTMLElement {
  return h("span", { class: `badge state-${state}`, "data-testid": "state" }, state);
}

/** `#/jobs?state=dead` style links. */
export function link(hash: string, ...children: Child[]): HTMLAnchorElement {
  return h("a", { href: hash }, ...children);
}

/** A table; a heading given as `[text, "num"]` is right-aligned over a column of numbers. */
export function table(
  head: Array<string | [string, "num"]>,
  rows: HTMLTableRowElement[],
  empty = "Nothing here.",
): HTMLElement {
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...head.map((t) => (typeof t === "string" ? h("th", {}, t) : h("th", { class: t[1] }, t[0]))),
      ),
    ),
    h(
      "tbody",
      {},
      rows.length ? rows : h("tr", {}, h("td", { colspan: head.length, class: "empty" }, empty)),
    ),
  );
}
