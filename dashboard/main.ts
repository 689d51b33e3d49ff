/**
 * The dashboard's router: `#/` overview, `#/jobs`, `#/jobs/{id}`, `#/flows/{id}` (the graph of a
 * job's flow), `#/schedules`, `#/types`.
 * Each navigation builds the view afresh in a new element; errors from the API end up here, where
 * a 401 turns into the token form and anything else into a message above the view.
 */
import { ApiError, BAD_TOKEN, getToken, setToken, tokenProblem } from "./api.js";
import { h } from "./dom.js";
import { flow } from "./flow.js";
import { job } from "./job.js";
import { jobs } from "./jobs.js";
import { schedules, types } from "./lists.js";
import { overview } from "./overview.js";
import type { View, ViewContext } from "./view.js";

const main = document.getElementById("main")!;
const notices = document.getElementById("notices")!;
const authBox = document.getElementById("auth")!;

let stop: (() => void) | undefined;
/** Bumped on every render, so work of an earlier view cannot reach the page. */
let generation = 0;
/** A message to show once after the next render (e.g. "Replayed as …" across a navigation). */
let pending: { text: string; kind: "info" | "error" } | null = null;

function route(): { view: View; name: string; path: string[]; query: URLSearchParams } {
  const hash = location.hash.replace(/^#\/?/, "");
  const [pathPart = "", queryPart = ""] = hash.split("?", 2);
  const query = new URLSearchParams(queryPart);
  let parts: string[];
  try {
    // Split first, then decode: an id's own `/` arrives as %2F and stays inside its part.
    parts = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    const shown = pathPart.length > 80 ? `${pathPart.slice(0, 80)}…` : pathPart;
    return {
      view: problem(
        `This link is broken: "#/${shown}" is not valid percent-encoding, so it names no page or job.`,
      ),
      name: "",
      path: [],
      query,
    };
  }
  const [name = "", ...rest] = parts;
  if (name === "jobs" && rest.length) {
    // Everything after jobs/ is the id, also when pasted with its slashes unencoded.
    const id = rest.join("/");
    if (id === "." || id === "..") {
      return {
        view: problem(
          `No job "${id}": "." and ".." are not job ids (no URL can carry them, so errand refuses them).`,
        ),
        name: "jobs",
        path: [id],
        query,
      };
    }
    return { view: job, name: "jobs", path: [id], query };
  }
  if (name === "jobs") return { view: jobs, name, path: rest, query };
  if (name === "flows" && rest.length) return { view: flow, name: "jobs", path: [rest.join("/")], query };
  if (name === "schedules") return { view: schedules, name, path: rest, query };
  if (name === "types") return { view: types, name, path: rest, query };
  return { view: overview, name: "overview", path: rest, query };
}

/** A view that is only a message: for a link that names nothing the dashboard can show. */
function problem(message: string): View {
  return async (ctx) => {
    ctx.notice(message, "error");
    ctx.root.replaceChildren(
      h(
        "p",
        { class: "muted", "data-testid": "route-problem" },
        message,
        " ",
        h("a", { href: "#/jobs" }, "All jobs"),
      ),
    );
    return undefined;
  };
}

function showNotice(text: string, kind: "info" | "error" = "info"): void {
  notices.replaceChildren(
    h(
      "div",
      {
        class: `notice ${kind}`,
        role: kind === "error" ? "alert" : "status",
        "data-testid": `notice-${kind}`,
      },
      h("span", {}, text),
      h(
        "button",
        { type: "button", class: "link", "aria-label": "dismiss", onclick: () => notices.replaceChildren() },
        "×",
      ),
    ),
  );
}

function describe(error: unknown): string {
  if (!(error instanceof ApiError))
    return `Something went wrong: ${(error as Error)?.message ?? String(error)}`;
  if (error.status === 403) {
    const d = (error.details ?? {}) as { role?: string; needs?: string };
    // Not a role's refusal (a host or origin the server does not accept): its message says why.
    if (!d.needs) return `Forbidden (403 ${error.code}): ${error.message}`;
    const who = d.role ? `Your token's role (${d.role})` : "Your token";
    return `Forbidden (403 ${error.code}): ${who} may not ${d.needs ?? "do this"}. ${error.message}`;
  }
  if (error.status === 429) return `Too many failed attempts (429 ${error.code}): ${error.message}`;
  if (error.code === "TIMEOUT") return `The server is not answering: ${error.message}`;
  if (error.status === 0) return `The server is unreachable: ${error.message}`;
  return `${error.status} ${error.code}: ${error.message}`;
}

function fail(error: unknown, gen: number): void {
  if (gen !== generation) return;
  if (error instanceof ApiError && error.unauthorized) {
    askForToken(error);
    return;
  }
  showNotice(describe(error), "error");
}

/**
 * The token form, in place of the view; the view is rendered again once a token is given. A token
 * no request can carry is refused here, before it is kept or sent ({@link tokenProblem}).
 */
function askForToken(error: ApiError): void {
  stop?.();
  stop = undefined;
  generation++;
  const had = getToken() !== null;
  const message = h("p", { "data-testid": "token-message" });
  const say = (text: string, isError: boolean) => {
    message.className = isError ? "notice error" : "";
    message.setAttribute("role", isError ? "alert" : "status");
    message.textContent = text;
  };
  if (error.code === BAD_TOKEN) say(`The token could not be sent: ${error.message}`, true);
  else if (had) say(`The server refused the token (401 ${error.code}): ${error.message}`, true);
  else
    say(
      "This server requires a token. It is kept in this tab only (sessionStorage) and sent as a bearer header.",
      false,
    );
  const input = h("input", {
    type: "password",
    name: "token",
    id: "token",
    autocomplete: "off",
    required: true,
    "data-testid": "token-input",
  });
  main.replaceChildren(
    h(
      "form",
      {
        class: "panel token-form",
        "data-testid": "token-form",
        onsubmit: (e: Event) => {
          e.preventDefault();
          const token = input.value.trim();
          const problem = tokenProblem(token);
          if (problem !== null) {
            say(`This token cannot be used: ${problem}`, true);
            input.focus();
            return;
          }
          setToken(token);
          notices.replaceChildren();
          void render();
        },
      },
      h("h1", {}, "Sign in"),
      message,
      h("label", { for: "token" }, "Bearer token"),
      input,
      h("button", { type: "submit" }, "Sign in"),
    ),
  );
  notices.replaceChildren();
  renderAuth();
  input.focus();
}

function renderAuth(): void {
  authBox.replaceChildren(
    getToken()
      ? h(
          "button",
          {
            type: "button",
            class: "link",
            "data-testid": "sign-out",
            onclick: () => {
              setToken(null);
              void render();
            },
          },
          "Forget token",
        )
      : "",
  );
}

async function render(): Promise<void> {
  stop?.();
  stop = undefined;
  const gen = ++generation;
  const r = route();
  for (const a of document.querySelectorAll<HTMLAnchorElement>("header nav a")) {
    a.classList.toggle("active", a.dataset.view === r.name);
  }
  renderAuth();
  if (pending) {
    showNotice(pending.text, pending.kind);
    pending = null;
  } else {
    notices.replaceChildren();
  }
  const root = h("div", { class: "view", "data-view": r.name });
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  const ctx: ViewContext = {
    root,
    path: r.path,
    query: r.query,
    fail: (error) => fail(error, gen),
    notice: (text, kind = "info") => {
      if (gen === generation) showNotice(text, kind);
    },
    clearNotice: () => {
      if (gen === generation) notices.replaceChildren();
    },
    navigate: (hash, notice) => {
      if (gen !== generation) return;
      pending = notice ? { text: notice, kind: "info" } : null;
      location.hash = hash;
    },
  };
  try {
    const cleanup = await r.view(ctx);
    if (gen !== generation) {
      cleanup?.();
      return;
    }
    stop = cleanup;
    main.replaceChildren(root);
  } catch (error) {
    if (gen !== generation) return;
    main.replaceChildren();
    fail(error, gen);
  }
}

window.addEventListener("hashchange", () => void render());
void render();
