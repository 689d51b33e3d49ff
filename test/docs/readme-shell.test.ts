/**
 * The README's shell examples, checked against the code so they cannot drift from it. Every line
 * of every ```sh block is one of:
 *
 * - **curl** against the server (`$S/v1/…`, `localhost:8080/v1/…`): sent as curl would send it
 *   (method, path and query, headers, `-d` body) to a fresh in-process server on a fresh SQLite
 *   store, set up with what the line names (below). The rule: every request must succeed: a 2xx
 *   whose answer says no `"ok": false`, itself or for an item of a batch's `results`.
 *   The store holds what the line needs, so a 400 is a shape the server's schemas refuse, a 404 a
 *   route (or job) that is not there, a 409 a state the line did not expect: each is drift. A
 *   curl comment `# also /retry, /reschedule {"runAt"|"delayMs"}` names sibling routes (the last
 *   path segment swapped): each must be a route of the same method, and the fields listed after
 *   one must be properties of its body schema.
 * - **errand** (or `npx tsx src/cli/index.ts`): a synopsis read against buildProgram()'s
 *   commander tree, never run (see synopsisProblems in ./readme-shell.ts): subcommands, options
 *   and their values, the number of arguments, required options; `--flags` in the line's comment
 *   must be options of the commands it names.
 * - **tools**: `npm test`/`npm run X` name a package.json script (`npm ci` is npm's own);
 *   `npx vitest run P` and `bash F` name files that exist; `python3 F --flag …` names a script
 *   that exists and declares each flag (argparse `add_argument("--flag"`).
 * - **shell variables**: `S=…; J=…` lines set what later lines expand (`$S`, `$J`).
 * Environment variables set in front of a command (`ERRAND_STORES=sqlite npm test`) must be read
 * somewhere in src/, test/, examples/ or scripts/ (their name appears there).
 *
 * A line that is none of these fails "knows every shell line" until it gets a check: no line is
 * left unchecked.
 *
 * What a curl line's server holds before the line runs:
 * - each job id the line names (in its path, except the one a PUT creates; in `dependsOn`, as a
 *   string outside a flow or as `{ "id" }`), enqueued pending;
 * - for `$ID` and `"id":"…"`: one job, leased (attempt 1), whose id stands in for them;
 * - for `POST /v1/lease`: one pending job of each type its body names, in the first queue it
 *   names, so the long poll answers at once.
 * Other placeholders are listed in PLACEHOLDERS; one not listed fails the line.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { buildProgram } from "../../src/cli/program.js";
import { openQueue, type Queue } from "../../src/queue.js";
import { routeSchemas } from "../../src/server/schemas.js";
import { serve } from "../e2e/harness.js";
import {
  assignments,
  type CurlRequest,
  flagsIn,
  parseCurl,
  type ShellLine,
  shellLines,
  shellTokens,
  splitAt,
  synopsisProblems,
  type Token,
  type Word,
} from "./readme-shell.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const README = readFileSync(path.join(ROOT, "README.md"), "utf8");

/**
 * The README's placeholders in curl lines beyond `$ID` and `"id":"…"`, and what stands in for
 * each: in a body, text replaced; in a query, a `name=value` parameter (dropped for "").
 */
const PLACEHOLDERS: ReadonlyArray<{
  where: "body" | "query";
  written: string;
  standIn: string;
  why: string;
}> = [
  {
    where: "body",
    written: '"jobs":[…]',
    standIn: `"jobs":[{"type":"readme-shell"}]`,
    why: "a bulk enqueue's jobs, elided: one job",
  },
  {
    where: "query",
    written: "cursor=…",
    standIn: "",
    why: "a cursor comes from an earlier page's nextCursor: left out, for the first page",
  },
];

/** The server the README's curl lines talk to; what follows it is the request's path. */
const SERVER_ORIGIN = /^(?:https?:\/\/)?(?:localhost|127\.0\.0\.1):8080(?=\/)/;

/** Ways the README runs errand's CLI. */
const CLI_PREFIXES: ReadonlyArray<readonly string[]> = [["errand"], ["npx", "tsx", "src/cli/index.ts"]];

/** The type of the jobs a curl line's setup enqueues. */
const SEED_TYPE = "readme-shell";
/** The type of the job leased for `$ID`, apart so that no other seeded job is leased instead. */
const LEASED_TYPE = "readme-shell-leased";

/** One README line, taken apart into what each of its commands asks to be checked. */
interface Classified {
  line: ShellLine;
  curl: CurlRequest[];
  /** The synopsis's tokens after the program's name, when the line runs errand. */
  cli: Token[] | null;
  /** Commands of other tools: their words, the program first. */
  tools: Word[][];
  /** Environment variables the line sets in front of a command. */
  env: string[];
  /** Why a command could not be read or is of no known kind. */
  unknown: string[];
}

function classify(lines: readonly ShellLine[]): Classified[] {
  const vars = new Map<string, string>();
  return lines.map((line) => {
    const c: Classified = { line, curl: [], cli: null, tools: [], env: [], unknown: [] };
    try {
      for (const command of splitAt(shellTokens(line.code, vars), new Set([";", "&&", "||"]))) {
        const words = command.filter((t): t is Word => t.kind === "word");
        const { vars: set, rest } = assignments(words);
        if (rest.length === 0) {
          for (const [k, v] of set) vars.set(k, v);
          continue;
        }
        c.env.push(...set.map(([k]) => k));
        const prefix = CLI_PREFIXES.find((p) => p.every((w, i) => rest[i]?.text === w));
        if (prefix) {
          c.cli = command.slice(set.length + prefix.length);
          continue;
        }
        if (command.some((t) => t.kind === "op")) c.unknown.push(`a pipe: ${line.code}`);
        else if (rest[0]!.text === "curl") c.curl.push(parseCurl(rest.slice(1)));
        else if (["npm", "npx", "bash", "python3"].includes(rest[0]!.text)) c.tools.push(rest);
        else c.unknown.push(`a command this test has no check for: ${rest[0]!.text}`);
      }
    } catch (e) {
      c.unknown.push((e as Error).message);
    }
    return c;
  });
}

const classified = classify(shellLines(README));
const title = (l: ShellLine) =>
  `README.md:${l.line}: ${l.text.length > 120 ? l.text.slice(0, 117) + "…" : l.text}`;

describe("README.md's shell lines", () => {
  it("finds the README's ```sh blocks", () => {
    expect(classified.length).toBeGreaterThan(30);
    expect(classified.filter((c) => c.curl.length > 0).length).toBeGreaterThan(15);
    expect(classified.filter((c) => c.cli !== null).length).toBeGreaterThan(15);
  });

  it("knows every shell line: each is checked below", () => {
    const unknown = classified
      .filter((c) => c.unknown.length > 0)
      .map((c) => `README.md:${c.line.line}: ${c.unknown.join("; ")}\n    ${c.line.text}`);
    expect(unknown, "add a check to test/docs/readme-shell.test.ts").toEqual([]);
  });
});

describe("README.md's curl lines are requests the server takes", () => {
  for (const c of classified.filter((c) => c.curl.length > 0)) {
    it(title(c.line), async () => {
      const { queue, base } = await freshServer();
      const requests = c.curl.map((r) => asRequest(c.line, r));
      const leased = await setUp(queue, requests);
      for (const r of requests) {
        const sent = fillIn(r, leased);
        const res = await fetch(base + sent.path, {
          method: sent.method,
          headers: sent.headers,
          body: sent.body,
          signal: AbortSignal.timeout(10_000),
        });
        const answer = await res.text();
        expect(
          res.status >= 200 && res.status < 300 && !refusedItem(answer),
          `README.md:${c.line.line}: ${sent.method} ${sent.path} ${sent.body ?? ""}\n  answered ${res.status} ${answer}`,
        ).toBe(true);
      }
      expect(siblingProblems(c.line, requests), `README.md:${c.line.line}: the comment's routes`).toEqual([]);
    });
  }
});

describe("README.md's errand lines match the CLI", () => {
  const program = buildProgram({ env: {}, stdout: { write: () => true } });
  for (const c of classified.filter((c) => c.cli !== null)) {
    it(title(c.line), () => {
      const problems = synopsisProblems(program, c.cli!, flagsIn(c.line.comment));
      expect(problems, `README.md:${c.line.line}: ${c.line.text}`).toEqual([]);
    });
  }
});

describe("README.md's other commands name what exists", () => {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: object })
    .scripts;
  for (const c of classified.filter((c) => c.tools.length > 0 || c.env.length > 0)) {
    it(title(c.line), () => {
      const problems = [
        ...c.tools.flatMap((words) =>
          toolProblems(
            words.map((w) => w.text),
            scripts,
          ),
        ),
        ...c.env.filter((name) => !sourceMentions(name)).map((name) => `nothing reads ${name}`),
      ];
      expect(problems, `README.md:${c.line.line}: ${c.line.text}`).toEqual([]);
    });
  }
});

/** A fresh SQLite store in a temporary directory and a server on it, both gone after the test. */
async function freshServer(): Promise<{ queue: Queue; base: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), "errand-readme-shell-"));
  const queue = await openQueue(`sqlite:${path.join(dir, "errand.db")}`);
  onTestFinished(async () => {
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { base } = await serve(queue);
  return { queue, base };
}

/** A curl request as this test sends it: the path (with query) on our server instead of the README's. */
interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

function asRequest(line: ShellLine, r: CurlRequest): Request {
  const origin = SERVER_ORIGIN.exec(r.url);
  if (!origin) throw new Error(`README.md:${line.line}: a URL off the README's server: ${r.url}`);
  return {
    method: r.method,
    path: r.url.slice(origin[0].length),
    headers: Object.fromEntries(r.headers),
    body: r.data,
  };
}

/** The request with its placeholders filled in; throws on one this test does not know. */
function fillIn(r: Request, leased: string | null): Request {
  const [pathname, query] = r.path.split("?") as [string, string | undefined];
  let params = query?.split("&") ?? [];
  let body = r.body;
  for (const { where, written, standIn } of PLACEHOLDERS) {
    if (where === "query") params = params.map((q) => (q === written ? standIn : q)).filter((q) => q !== "");
    else body = body?.replaceAll(written, standIn);
  }
  let p = params.length > 0 ? `${pathname}?${params.join("&")}` : pathname;
  if (leased !== null) {
    p = p.replaceAll("$ID", encodeURIComponent(leased));
    body = body?.replaceAll('"id":"…"', `"id":${JSON.stringify(leased)}`);
  }
  const left = /…|\$\w+/.exec(`${p} ${body ?? ""}`);
  if (left)
    throw new Error(`a placeholder this test does not fill in: ${left[0]} in ${r.method} ${p} ${body}`);
  return { ...r, path: p, body };
}

/**
 * Puts into the store what the requests name (see the file's comment) and leases a job for `$ID`
 * and `"id":"…"` if they appear; answers that job's id.
 */
async function setUp(queue: Queue, requests: readonly Request[]): Promise<string | null> {
  const ids = new Set<string>();
  const leaseTypes: Array<{ type: string; queue: string }> = [];
  let needsLease = false;
  for (const r of requests) {
    if (/\$ID/.test(r.path) || r.body?.includes('"id":"…"')) needsLease = true;
    const [pathname] = r.path.split("?") as [string];
    const named = /^\/v1\/jobs\/([^/$…]+)(\/.*)?$/.exec(pathname);
    if (named && !(r.method === "PUT" && named[2] === undefined)) ids.add(decodeURIComponent(named[1]!));
    const body = parseBody(fillIn(r, "leased").body);
    if (body === undefined) continue;
    for (const id of dependencyIds(body, pathname === "/v1/flows")) ids.add(id);
    if (pathname === "/v1/lease") {
      const b = body as { types?: string[]; queues?: string[] | Record<string, number> };
      const first = Array.isArray(b.queues) ? b.queues[0] : Object.keys(b.queues ?? {})[0];
      for (const type of b.types ?? [SEED_TYPE]) leaseTypes.push({ type, queue: first ?? "default" });
    }
  }
  for (const id of ids) await queue.enqueue(SEED_TYPE, null, { id });
  for (const { type, queue: q } of leaseTypes) await queue.enqueue(type, null, { queue: q });
  if (!needsLease) return null;
  await queue.enqueue(LEASED_TYPE, null);
  const [job] = await queue.lease({ types: [LEASED_TYPE] });
  expect(job?.attempt, "the job leased for $ID").toBe(1);
  return job!.id;
}

/** Whether a 2xx answer still says no: `"ok": false`, itself or for an item of a batch's `results`. */
function refusedItem(answer: string): boolean {
  const a = parseBody(answer) as { ok?: unknown; results?: Array<{ ok?: unknown }> } | undefined;
  return a?.ok === false || (Array.isArray(a?.results) && a.results.some((r) => r?.ok === false));
}

function parseBody(body: string | undefined): unknown {
  if (body === undefined) return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The stored jobs a body's `dependsOn` lists name: `{ id }`s, and strings outside a flow (there, refs). */
function dependencyIds(value: unknown, inFlow: boolean): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => dependencyIds(v, inFlow));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    if (k !== "dependsOn" || !Array.isArray(v)) return dependencyIds(v, inFlow);
    return v.flatMap((d: unknown) => {
      if (typeof d === "string") return inFlow ? [] : [d];
      const id = (d as { id?: unknown } | null)?.id;
      return typeof id === "string" ? [id] : [];
    });
  });
}

/** The route key (`"POST /v1/jobs/:id/retry"`) whose pattern matches `method` and `pathname`. */
function routeKey(method: string, pathname: string): keyof typeof routeSchemas | undefined {
  return (Object.keys(routeSchemas) as Array<keyof typeof routeSchemas>).find((key) => {
    const [m, pattern] = key.split(" ") as [string, string];
    const re = new RegExp(`^${pattern.replace(/:\w+/g, "[^/]+")}$`);
    return m === method && re.test(pathname);
  });
}

/**
 * What is wrong with the sibling routes a curl line's comment names
 * (`# also /retry, /replay, /reschedule {"runAt"|"delayMs","priority","queue"}`).
 */
function siblingProblems(line: ShellLine, requests: readonly Request[]): string[] {
  const also = /^also\s+(.*)$/.exec(line.comment);
  const last = requests[requests.length - 1];
  if (!also || !last) return [];
  const pathname = last.path.split("?")[0]!;
  const problems: string[] = [];
  for (const m of also[1]!.matchAll(/\/([\w-]+)(?:\s*(\{[^}]*\}))?/g)) {
    const sibling = pathname.replace(/\/[^/]+$/, `/${m[1]}`);
    const key = routeKey(last.method, sibling);
    if (!key) {
      problems.push(`no route ${last.method} ${sibling}`);
      continue;
    }
    const schema = routeSchemas[key] as { body?: { properties?: Record<string, unknown> } };
    for (const field of [...(m[2] ?? "").matchAll(/"(\w+)"/g)].map((f) => f[1]!))
      if (!(field in (schema.body?.properties ?? {}))) problems.push(`${key} has no body field "${field}"`);
  }
  return problems;
}

/** What is wrong with a command of npm, npx, bash or python3 as the README gives it. */
function toolProblems(words: string[], scripts: object): string[] {
  const [tool, ...args] = words as [string, ...string[]];
  const exists = (file: string) => (existsSync(path.join(ROOT, file)) ? [] : [`no file ${file}`]);
  if (tool === "npm") {
    if (args[0] === "ci" || args[0] === "install") return [];
    const script = args[0] === "test" ? "test" : args[0] === "run" ? args[1] : undefined;
    if (script === undefined) return [`an npm command this test has no check for: ${args.join(" ")}`];
    return script in scripts ? [] : [`package.json has no script "${script}"`];
  }
  if (tool === "npx" && args[0] === "vitest" && args[1] === "run")
    return args.slice(2).flatMap((a) => (a.startsWith("-") ? [] : exists(a)));
  if (tool === "bash" && args[0]) return exists(args[0]);
  if (tool === "python3" && args[0]) {
    const missing = exists(args[0]);
    if (missing.length > 0) return missing;
    const script = readFileSync(path.join(ROOT, args[0]), "utf8");
    return flagsIn(args.slice(1).join(" "))
      .filter((flag) => !script.includes(`add_argument("${flag}"`))
      .map((flag) => `${args[0]} declares no ${flag}`);
  }
  return [`a command this test has no check for: ${words.join(" ")}`];
}

let sources: string[] | null = null;

/** Whether `name` appears in a source file of src/, test/ (this folder aside), examples/ or scripts/. */
function sourceMentions(name: string): boolean {
  sources ??= ["src", "test", "examples", "scripts"].flatMap((dir) => filesUnder(path.join(ROOT, dir)));
  return sources.some((text) => text.includes(name));
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir) || dir === path.join(ROOT, "test/docs")) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "generated" ? [] : filesUnder(p);
    return /\.(ts|js|mjs|py|sh)$/.test(e.name) ? [readFileSync(p, "utf8")] : [];
  });
}
