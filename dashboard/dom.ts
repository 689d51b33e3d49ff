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

/** Most characters a JSON block on a job's page shows; a longer value is cut, and says so. */
export const JSON_SHOWN = 100_000;
/** Most characters a JSON cell of a list (a schedule's payload) shows. */
export const JSON_CELL_SHOWN = 2_000;
/**
 * Nesting past which JSON is indented no further: a value nested 1,000 deep (which a producer in
 * code may store) pretty-printed with full indentation is a million characters of spaces.
 */
const JSON_INDENT_MAX = 16;

/**
 * Characters shown escaped (`\u202e`) in JSON, as JSON.stringify escapes a lone surrogate: format
 * characters (bidi overrides and isolates, zero-width spaces and joiners, the BOM) and the line and
 * paragraph separators. Left raw, a right-to-left override in a string reverses what follows it
 * on the line, the string's closing quote and the next key included, so the JSON shown would
 * misstate the value; escaped, the text is still valid JSON for the same value.
 */
const INVISIBLE = /[\p{Cf}\u2028\u2029]/gu;

function jsonString(s: string): string {
  return JSON.stringify(s).replace(
    INVISIBLE,
    // A format character past U+FFFF (a tag character) is two UTF-16 units: each escaped.
    (c) =>
      c
        .split("")
        .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)
        .join(""),
  );
}

/** `text` cut to at most `max` UTF-16 units, never between the two halves of a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const high = text.charCodeAt(max - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}

/**
 * `value` as JSON.stringify(value, null, 2) writes it (for values nested at most 16 deep and
 * without {@link INVISIBLE} characters), cut at `max` characters: written piece by piece and
 * stopped there, so a 1 MB payload or a huge array costs no more than what is shown.
 */
export function jsonText(value: unknown, max: number): { text: string; cut: boolean } {
  const parts: string[] = [];
  let size = 0;
  let cut = false;
  const put = (s: string) => {
    if (size + s.length > max) {
      parts.push(cutText(s, max - size));
      size = max;
      cut = true;
      return;
    }
    parts.push(s);
    size += s.length;
  };
  const indent = (depth: number) => `\n${"  ".repeat(Math.min(depth, JSON_INDENT_MAX))}`;
  const write = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== "object") {
      put(typeof v === "string" ? jsonString(v) : v === undefined ? "null" : JSON.stringify(v));
      return;
    }
    const entries: Array<[string | null, unknown]> = Array.isArray(v)
      ? v.map((item) => [null, item])
      : Object.keys(v).map((k) => [k, (v as Record<string, unknown>)[k]]);
    const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
    if (entries.length === 0) {
      put(`${open}${close}`);
      return;
    }
    put(open);
    for (const [i, [key, item]] of entries.entries()) {
      if (cut) return;
      put(`${i ? "," : ""}${indent(depth + 1)}${key === null ? "" : `${jsonString(key)}: `}`);
      write(item, depth + 1);
    }
    put(`${indent(depth)}${close}`);
  };
  try {
    write(value, 0);
  } catch {
    // Nested past the browser's stack (only a store written to directly could hold such a value).
    return { text: "(nested too deeply to show)", cut: true };
  }
  return { text: parts.join(""), cut };
}

/**
 * Pretty JSON in a <pre> ("null" for null), at most `max` characters of it: a longer value ends
 * in a line saying it was cut.
 */
export function json(value: unknown, testid?: string, max = JSON_SHOWN): HTMLElement {
  const { text, cut } = jsonText(value ?? null, max);
  return h(
    "pre",
    { class: "json", "data-testid": testid },
    text,
    cut
      ? h(
          "span",
          { class: "cut", "data-testid": "cut" },
          `\n… cut here: only the first ${max.toLocaleString("en")} characters are shown (the API returns the whole value).`,
        )
      : null,
  );
}

/**
 * A long text (an error message) shown cut at `max` characters, with a toggle that shows it whole:
 * the whole text is laid out only while the toggle is open, so a page of 100 errors of 65,536
 * characters each opens at once.
 */
export function longText(text: string, max: number, attrs: Attrs = {}): HTMLElement {
  if (text.length <= max) return h("div", attrs, text);
  const short = `${cutText(text, max)}…`;
  const body = h("div", attrs, short);
  const more = h(
    "details",
    { class: "more", "data-testid": "show-all" },
    h("summary", {}, `show all ${text.length.toLocaleString("en")} characters`),
  );
  more.addEventListener("toggle", () => {
    body.textContent = more.open ? text : short;
  });
  return h("div", {}, body, more);
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
