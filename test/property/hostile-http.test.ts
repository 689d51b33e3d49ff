/**
 * Hostile HTTP requests to every route of a running server's `/openapi.json`, on every store:
 * path parameters, query strings and JSON bodies generated from each route's own schema, then
 * spoiled one thing at a time (a hostile value somewhere, an unknown field, a wrong type, a huge
 * string, nesting 10,000 deep, a malformed percent-encoding, a body that is not JSON).
 *
 * The property, for every request: the status is below 500; a status of 400 or more carries
 * errand's error body (`{ code, message, details }`, `code` a client code); a 4xx left the store
 * exactly as it was; `Object.prototype` is untouched; and every job a 2xx names is well-formed in
 * the store. Requests go out through `node:http` with the raw path, so nothing is normalised or
 * sanitised on the way; they carry `Host: 127.0.0.1:<port>` and, on mutations, a JSON content
 * type, as a well-behaved client does.
 *
 * The routes are read from a live server's `/openapi.json` when this file loads, so a new route
 * is covered without a change here. Each tag (jobs, worker, types, …) is one test per store.
 */
import { maxHeaderSize, request } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { Queue } from "../../src/queue.js";
import { createServer } from "../../src/server/index.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { JOB_ID_PATTERN, NAME_PATTERN } from "../../src/validation.js";
import { type Bundle, selectedBackends } from "../conformance/backend.js";
import { serve } from "../e2e/harness.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import { assertPrototypeClean, assertWellFormedJob, storeSnapshot } from "./checks.js";
import {
  awkwardJson,
  CLIENT_CODES,
  deepJsonText,
  EXCLUSIVE_OPTIONS,
  hostileNumber,
  hostileString,
  longString,
  PROTOTYPE_KEYS,
  prototypeKeys,
  trickyString,
} from "./hostile.js";
import { SEEDS, seedStore } from "./seed.js";

const RUNS_PER_ROUTE = 6;

/**
 * The status a refusal by the request checks (403, 415) has for this path: Node refuses a request
 * head over its header limit before the server sees a header (431, in errand's shape: see
 * clientErrorResponse), so no check can run for it. Between the two, the rest of the head decides.
 */
function checkedStatus(path: string, status: number): number | readonly number[] {
  const bytes = Buffer.byteLength(path);
  if (bytes > maxHeaderSize) return 431;
  return bytes > maxHeaderSize - 1024 ? [status, 431] : status;
}

/** Asserts `actual` is the status {@link checkedStatus} expects. */
function expectStatus(actual: number, expected: number | readonly number[], what: string): void {
  if (typeof expected === "number") expect(actual, what).toBe(expected);
  else expect(expected, what).toContain(actual);
}
const TIMEOUT = propertyTimeout(RUNS_PER_ROUTE, 60_000);
/** Long polls wait on the ManualClock; the test moves it this far at a time while one waits. */
const LEASE_POLL_MS = 60_000;

// ---- the routes, from a live server's OpenAPI document ---------------------------------------------

/** A JSON schema as the OpenAPI document gives it (loosely typed: it is data here). */
type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  additionalProperties?: boolean | Schema;
  propertyNames?: Schema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
};

interface Route {
  [fc.toStringMethod]: () => string;
  method: string;
  /** The OpenAPI path, `{name}` for each path parameter. */
  path: string;
  tag: string;
  pathParams: Array<{ name: string; schema: Schema }>;
  queryParams: Array<{ name: string; schema: Schema }>;
  body: Schema | null;
}

interface OpenApi {
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, Schema> };
}
interface OperationObject {
  tags?: string[];
  parameters?: Array<{ in: string; name: string; schema: Schema }>;
  requestBody?: { content?: Record<string, { schema: Schema }> };
}

/** The OpenAPI document of a server on a throwaway in-memory store. */
async function liveOpenApi(): Promise<OpenApi> {
  const store = await SqliteStore.open({ filename: ":memory:" });
  const app = await createServer({
    queue: new Queue(store, { clock: new ManualClock() }),
    maintenance: false,
  });
  try {
    await app.listen({ port: 0 });
    const r = await raw((app.server.address() as AddressInfo).port, "GET", "/openapi.json", {});
    if (r.status !== 200) throw new Error(`/openapi.json answered ${r.status}: ${r.text.slice(0, 200)}`);
    return JSON.parse(r.text) as OpenApi;
  } finally {
    await app.close();
    await store.close();
  }
}

function routesOf(doc: OpenApi): Route[] {
  const routes: Route[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = op.parameters ?? [];
      routes.push({
        // A counterexample names its route, not the route's whole schema.
        [fc.toStringMethod]: () => `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        tag: op.tags?.[0] ?? "untagged",
        pathParams: params.filter((p) => p.in === "path"),
        queryParams: params.filter((p) => p.in === "query"),
        body: op.requestBody?.content?.["application/json"]?.schema ?? null,
      });
    }
  }
  return routes;
}

// ---- raw HTTP -------------------------------------------------------------------------------------

interface Answer {
  status: number;
  text: string;
}

/**
 * One request exactly as given: the path is sent as it is, the body as raw text with its length
 * (a well-formed HTTP message: what is hostile is its content, not its framing).
 */
function raw(
  port: number,
  method: string,
  path: string,
  o: { body?: string; headers?: Record<string, string> },
): Promise<Answer> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.body !== undefined) headers["content-length"] = String(Buffer.byteLength(o.body));
  return new Promise((resolve, reject) => {
    // setHost: node:http replaces an empty Host header with its own: a given one goes out as given.
    const setHost = !Object.keys(headers).some((k) => k.toLowerCase() === "host");
    const req = request({ host: "127.0.0.1", port, method, path, headers, setHost, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

/** A JSON number or other text to put into a body as it is (what JSON.stringify cannot write). */
class RawJson {
  constructor(readonly text: string) {}
  [fc.toStringMethod]() {
    return `raw(${this.text.length > 40 ? `${this.text.slice(0, 40)}…` : this.text})`;
  }
}

/** JSON text of `value`, with {@link RawJson} written as it is. */
function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Percent-encodes any string, lone surrogates too (as the UTF-8 bytes of the code unit). */
function percentEncode(s: string): string {
  let out = "";
  for (const ch of s) {
    try {
      out += encodeURIComponent(ch);
    } catch {
      const c = ch.charCodeAt(0);
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join("");
    }
  }
  return out;
}

// ---- values from a route's schema ---------------------------------------------------------------

const NAMES = [
  "default",
  "q1",
  "seed",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "a.b:c-d_e",
  "paused-queue",
  "existing",
  "n".repeat(128),
];
const IDS = [...Object.values(SEEDS), "no-such-job", "a/b", "toString", "i".repeat(255), "j".repeat(101)];
const CRONS = ["0 * * * *", "*/5 * * * *", "0 3 * * 1-5", "30 2 29 2 *", "59 59 23 31 12 *"];
const ZONES = ["UTC", "Europe/Berlin", "America/St_Johns", "Pacific/Kiritimati"];
const DURATIONS = ["2h", "30s", "1h30m", "250ms"];

/** Valid-looking values for a property, by its name, where its schema alone says too little. */
function hint(name: string | undefined, schema: Schema): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case "cron":
      return fc.constantFrom(...CRONS);
    case "timezone":
      return fc.constantFrom(...ZONES);
    case "attempt":
      return fc.integer({ min: 1, max: 3 });
    case "runAt":
    case "expiresAt":
      return fc.oneof(
        fc
          .date({ min: new Date(0), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
          .map((d) => d.toISOString()),
        fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }),
      );
    case "workerId":
    case "uniqueKey":
      return fc.oneof(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }),
        fc.constant("k".repeat(255)),
      );
    case "push":
      // A push target would have the server deliver jobs in the background and change the store
      // between requests; push delivery has its own tests (test/e2e/push.test.ts).
      return fc.constant(undefined);
    default:
      if (schema.anyOf?.some((s) => s.type === "string") && schema.anyOf.some((s) => s.type === "integer")) {
        // A duration: milliseconds or a readable string.
        return fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom(...DURATIONS));
      }
      return undefined;
  }
}

/** A valid body has one of each pair of options that exclude each other (a schema cannot say so). */
function coherent(o: Record<string, unknown>): Record<string, unknown> {
  for (const [a, b] of EXCLUSIVE_OPTIONS) if (a in o && b in o) delete o[b];
  return o;
}

/** Values that (mostly) satisfy `schema`. */
function fromSchema(schema: Schema, doc: OpenApi, name?: string): fc.Arbitrary<unknown> {
  if (schema.$ref) return fromSchema(doc.components.schemas[schema.$ref.split("/").at(-1)!]!, doc, name);
  const hinted = hint(name, schema);
  if (hinted) return hinted;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches) return fc.oneof(...branches.map((b) => fromSchema(b, doc, name)));
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return fc.oneof(...types.map((t) => fromSchema({ ...schema, type: t }, doc, name)));
  switch (types[0]) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer": {
      const min = Math.max(schema.minimum ?? -1e6, -1e6);
      const max = Math.min(schema.maximum ?? 1e6, 1e6);
      return fc.oneof(
        fc.integer({ min, max }),
        fc.constantFrom(schema.minimum ?? min, schema.maximum ?? max),
      );
    }
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case "string":
      if (schema.pattern === NAME_PATTERN.source) return fc.constantFrom(...NAMES);
      if (schema.pattern === JOB_ID_PATTERN.source) {
        // Seeded ids find jobs; fresh ones make new jobs (a taken id would make every enqueue a duplicate).
        return fc.oneof(fc.constantFrom(...IDS), fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/));
      }
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 20, 20) });
    case "array":
      return fc.array(fromSchema(schema.items ?? {}, doc), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)),
      });
    case "object": {
      const props = Object.entries(schema.properties ?? {});
      const required = new Set(schema.required ?? []);
      const fields = props.map(([k, s]) =>
        required.has(k) ? fromSchema(s, doc, k) : fc.option(fromSchema(s, doc, k), { nil: undefined }),
      );
      const extra =
        typeof schema.additionalProperties === "object"
          ? fc.array(fc.tuple(fc.constantFrom(...NAMES), fromSchema(schema.additionalProperties, doc)), {
              minLength: 1,
              maxLength: 2,
            })
          : fc.constant([] as Array<[string, unknown]>);
      return fc
        .tuple(fc.tuple(...fields), extra)
        .map(([values, more]) =>
          coherent(
            Object.fromEntries([
              ...props.flatMap(([k], i) => (values[i] === undefined ? [] : [[k, values[i]]])),
              ...more,
            ]),
          ),
        );
    }
    default:
      return awkwardJson;
  }
}

/** Numbers JSON can write and `JSON.stringify` cannot: past a double, past 2^53, `-0`, exponents. */
const bigNumber = fc
  .constantFrom(
    "1e400",
    "-1e400",
    "123456789012345678901234567890",
    "1.0",
    "1e2",
    "-0",
    "0.1e-400",
    "9007199254740993",
  )
  .map((t) => new RawJson(t));

/** Hostile JSON values: what a client can put in a body that the schema or the code must refuse. */
const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: hostileNumber.filter(Number.isFinite), weight: 3 },
  { arbitrary: bigNumber, weight: 1 },
  {
    arbitrary: fc
      .constantFrom(
        '"+010000-01-01T00:00:00Z"',
        '"10000-01-01T00:00:00Z"',
        '{"__proto__":{"pending":1}}',
        '{"constructor":{"prototype":{"polluted":true}}}',
        deepJsonText(100),
        deepJsonText(10_000),
      )
      .map((t) => new RawJson(t)),
    weight: 3,
  },
  { arbitrary: fc.constantFrom(null, true, false, [], {}, [1], { a: 1 }), weight: 2 },
);

/** Fields that hold any JSON the caller likes: hostile values there are data, not mistakes. */
const FREE_JSON = new Set(["payload", "result", "data"]);

type Path = Array<string | number>;

/**
 * Every path into a JSON value, the root included, in three kinds: leaves of the request's own
 * fields (the likeliest targets), leaves inside free JSON (payloads), and containers.
 */
function pathsOf(
  value: unknown,
  at: Path = [],
  out: { fields: Path[]; free: Path[]; containers: Path[] } = { fields: [], free: [], containers: [] },
) {
  const inFree = at.some((k) => typeof k === "string" && FREE_JSON.has(k));
  if (value instanceof RawJson || value === null || typeof value !== "object") {
    (inFree ? out.free : out.fields).push(at);
    return out;
  }
  out.containers.push(at);
  for (const [k, v] of Object.entries(value)) pathsOf(v, [...at, Array.isArray(value) ? Number(k) : k], out);
  return out;
}

function valueAt(value: unknown, at: Path): unknown {
  return at.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)?.[k], value);
}

/** Hostile values like `v`: hostile strings for a string, hostile numbers for a number, else any. */
function hostileLike(v: unknown): fc.Arbitrary<unknown> {
  if (typeof v === "string") return fc.oneof({ arbitrary: hostileString, weight: 3 }, hostileJson);
  if (typeof v === "number") {
    return fc.oneof(
      { arbitrary: hostileNumber.filter(Number.isFinite), weight: 2 },
      { arbitrary: bigNumber, weight: 1 },
      hostileJson,
    );
  }
  return hostileJson;
}

/** `value` with one place in it (a leaf, more often than not) replaced by a hostile value of its kind. */
function spoiled(value: unknown): fc.Arbitrary<unknown> {
  const { fields, free, containers } = pathsOf(value);
  const at = fc.oneof(
    ...[
      { paths: fields, weight: 6 },
      { paths: free, weight: 1 },
      { paths: containers, weight: 2 },
    ]
      .filter((p) => p.paths.length > 0)
      .map((p) => ({ arbitrary: fc.constantFrom(...p.paths), weight: p.weight })),
  );
  return at.chain((p) => hostileLike(valueAt(value, p)).map((h) => replaced(value, p, h)));
}

/** `value` with `at` replaced by `by` (a copy; `at` may be the root). */
function replaced(value: unknown, at: Array<string | number>, by: unknown): unknown {
  if (at.length === 0) return by;
  const [head, ...rest] = at;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaced(v, rest, by) : v));
  return Object.fromEntries(
    Object.entries(value as object).map(([k, v]) => [k, k === head ? replaced(v, rest, by) : v]),
  );
}

/** `value` with an unknown key added to the object at `at` (or at the root when that is none). */
function withUnknown(value: unknown, key: string, v: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof RawJson)
    return value;
  return Object.fromEntries([...Object.entries(value), [key, v]]);
}

/** A body for `schema`: valid, or spoiled one way. Returns the body's text (undefined: no body). */
function bodyFor(schema: Schema, doc: OpenApi): fc.Arbitrary<string | undefined> {
  const valid = fromSchema(schema, doc);
  return fc.oneof(
    { arbitrary: valid.map((v) => jsonText(v)), weight: 3 },
    { arbitrary: valid.chain(spoiled).map(jsonText), weight: 6 },
    {
      arbitrary: fc
        .tuple(
          valid,
          fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ minLength: 1, maxLength: 8 })),
          hostileJson,
        )
        .map(([v, k, h]) => jsonText(withUnknown(v, k, h))),
      weight: 2,
    },
    {
      arbitrary: fc.constantFrom(
        undefined,
        "",
        "{",
        "null",
        "[]",
        '"text"',
        "{}",
        "\u0000",
        '{"a":1}{"b":2}',
        deepJsonText(129),
        deepJsonText(10_000),
        `{"x":"${"y".repeat(1_048_577)}"}`,
      ),
      weight: 1,
    },
  );
}

/** One path parameter: a valid value of its schema's, or a hostile one, percent-encoded or raw. */
function pathParam(schema: Schema, doc: OpenApi): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: (fromSchema(schema, doc) as fc.Arbitrary<string>).map(percentEncode), weight: 4 },
    { arbitrary: fc.oneof(hostileString, longString).map(percentEncode), weight: 3 },
    {
      arbitrary: fc.constantFrom(
        "..",
        ".",
        "%",
        "%E0%A4%A",
        "%2e%2e",
        "a%2Fb",
        "%00",
        "%ZZ",
        "__proto__",
        "a?b=c",
        "x#y",
      ),
      weight: 2,
    },
  );
}

/** A query string: each parameter absent, valid or hostile, and sometimes an unknown or repeated one. */
function queryFor(params: Route["queryParams"], doc: OpenApi): fc.Arbitrary<string> {
  const one = (p: Route["queryParams"][number]) =>
    fc.option(
      fc.oneof(
        {
          arbitrary: fromSchema(p.schema, doc, p.name).map((v) => `${p.name}=${percentEncode(String(v))}`),
          weight: 3,
        },
        { arbitrary: trickyString.map((v) => `${p.name}=${percentEncode(v)}`), weight: 2 },
        {
          arbitrary: fc.constantFrom("%", "%E0%A4%A", "%ED%A0%80", "").map((v) => `${p.name}=${v}`),
          weight: 1,
        },
        { arbitrary: fc.constant(`${p.name}=a&${p.name}=b`), weight: 1 },
      ),
      { nil: undefined },
    );
  const unknown = fc.option(
    fc.constantFrom("__proto__=x", "constructor[prototype][polluted]=1", "unknown=1", "&&", "=", "a[b]=c"),
    { nil: undefined, freq: 3 },
  );
  return fc.tuple(fc.tuple(...params.map(one)), unknown).map(([parts, extra]) => {
    const all = [...parts, extra].filter((p): p is string => p !== undefined);
    return all.length ? `?${all.join("&")}` : "";
  });
}

interface HttpCase {
  path: string;
  body: string | undefined;
}

function caseFor(route: Route, doc: OpenApi): fc.Arbitrary<HttpCase> {
  const segments = fc.tuple(...route.pathParams.map((p) => pathParam(p.schema, doc)));
  return fc
    .tuple(
      segments,
      queryFor(route.queryParams, doc),
      route.body ? bodyFor(route.body, doc) : fc.constantFrom(undefined, "", "{}", '{"unknown":1}'),
    )
    .map(([values, query, body]) => {
      let path = route.path;
      route.pathParams.forEach((p, i) => {
        path = path.replace(`{${p.name}}`, values[i]!);
      });
      return { path: path + query, body };
    });
}

// ---- the checks -------------------------------------------------------------------------------------

const MUTATIONS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

interface Server extends Bundle {
  port: number;
}

async function startSeeded(backend: ReturnType<typeof selectedBackends>[number]): Promise<Server> {
  const bundle = await backend.setup();
  await seedStore(bundle);
  const { app } = await serve(bundle.queue, {
    leasePollMs: LEASE_POLL_MS,
    // No push target is ever set (see hint("push")); this fetch would show it if one were.
    push: {
      fetch: () => {
        throw new Error("push delivery started during a hostile-input test");
      },
    },
  });
  return { ...bundle, port: (app.server.address() as AddressInfo).port };
}

/** Sends a request; while a long-polling lease waits, moves the ManualClock so it ends. */
async function send(s: Server, method: string, path: string, o: Parameters<typeof raw>[3]): Promise<Answer> {
  let done = false;
  const answer = raw(s.port, method, path, o).finally(() => {
    done = true;
  });
  if (method === "POST" && path.startsWith("/v1/lease")) {
    while (!done) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!done) await s.clock.advance(LEASE_POLL_MS);
    }
  }
  return answer;
}

/** Every job a 2xx answer names, read back from the store: each must be well-formed there. */
async function assertJobsWellFormed(s: Server, body: unknown, where: string): Promise<void> {
  const jobs: Array<{ id: string }> = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v !== null && typeof v === "object") {
      const o = v as Record<string, unknown>;
      if (typeof o.id === "string" && typeof o.state === "string" && typeof o.attempt === "number")
        jobs.push(o as { id: string });
      else Object.values(o).forEach(visit);
    }
  };
  visit(body);
  for (const { id } of jobs) {
    const job = await s.queue.get(id);
    if (job) assertWellFormedJob(job, `${where}: job ${id}`);
  }
}

/** The property for one request: see the file's doc. */
async function check(
  s: Server,
  method: string,
  c: HttpCase,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const where = `${method} ${c.path.length > 120 ? `${c.path.slice(0, 120)}…` : c.path}`;
  const proto = prototypeKeys();
  const before = await storeSnapshot(s.queue);
  const h: Record<string, string> = MUTATIONS.has(method)
    ? { "content-type": "application/json", ...headers }
    : headers;
  const answer = await send(s, method, c.path, { body: c.body, headers: h });
  assertPrototypeClean(proto, where);
  expect(answer.status, `${where}: answered ${answer.status}: ${answer.text.slice(0, 300)}`).toBeLessThan(
    500,
  );
  let body: unknown;
  try {
    body = answer.text ? JSON.parse(answer.text) : undefined;
  } catch {
    body = answer.text;
  }
  if (answer.status >= 400) {
    const e = body as { code?: unknown; message?: unknown };
    expect(typeof e === "object" && e !== null, `${where}: error body ${answer.text.slice(0, 200)}`).toBe(
      true,
    );
    expect(
      typeof e.code === "string" && CLIENT_CODES.has(e.code as never),
      `${where}: code ${String(e.code)}`,
    ).toBe(true);
    expect(typeof e.message, `${where}: message`).toBe("string");
    expect(Object.hasOwn(e, "details"), `${where}: details`).toBe(true);
    expect(
      await storeSnapshot(s.queue),
      `${where}: answered ${answer.status} ${String(e.code)} but the store changed`,
    ).toEqual(before);
  } else {
    await assertJobsWellFormed(s, body, where);
    await storeSnapshot(s.queue);
  }
  assertPrototypeClean(proto, `${where}, then stats() and list()`);
  return answer;
}

// ---- the properties -----------------------------------------------------------------------------------

const doc = await liveOpenApi();
const routes = routesOf(doc);
const tags = [...new Set(routes.map((r) => r.tag))];

for (const backend of selectedBackends({ conformance: true })) {
  describe(`hostile HTTP requests on ${backend.name}`, () => {
    it("covers every route of /openapi.json", () => {
      expect(routes.length).toBeGreaterThan(20);
      for (const r of routes) expect(["GET", "POST", "PUT", "PATCH", "DELETE"]).toContain(r.method);
    });

    for (const tag of tags) {
      const mine = routes.filter((r) => r.tag === tag);
      it(
        `answers every hostile request to the ${tag} routes below 500, in errand's shape, changing nothing when refused`,
        async () => {
          const s = await startSeeded(backend);
          for (const route of mine) {
            const name = `${backend.name}: ${route.method} ${route.path}`;
            await fc.assert(
              fc.asyncProperty(
                caseFor(route, doc),
                catalogued(name, async (c: HttpCase) => {
                  await check(s, route.method, c);
                }),
              ),
              fcParams(RUNS_PER_ROUTE),
            );
          }
        },
        TIMEOUT * mine.length,
      );
    }

    it(
      "refuses a mutation without a JSON content type (415), changing nothing",
      async () => {
        const s = await startSeeded(backend);
        const mutations = routes.filter((r) => MUTATIONS.has(r.method));
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...mutations).chain((route) => fc.tuple(fc.constant(route), caseFor(route, doc))),
            fc.constantFrom(
              "text/plain",
              "application/x-www-form-urlencoded",
              "multipart/form-data; boundary=x",
              "application/jsonx",
            ),
            catalogued(
              `${backend.name}: content type`,
              async ([route, c]: [Route, HttpCase], type: string) => {
                const answer = await check(
                  s,
                  route.method,
                  { ...c, body: c.body ?? "" },
                  { "content-type": type },
                );
                expectStatus(
                  answer.status,
                  checkedStatus(c.path, 415),
                  `${route.method} ${c.path} as ${type}: ${answer.text.slice(0, 200)}`,
                );
              },
            ),
          ),
          fcParams(RUNS_PER_ROUTE * 4),
        );
      },
      TIMEOUT * 4,
    );

    it(
      "refuses a request for a host it does not serve (403), and a cross-site mutation (403), changing nothing",
      async () => {
        const s = await startSeeded(backend);
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...routes).chain((route) => fc.tuple(fc.constant(route), caseFor(route, doc))),
            fc.oneof(
              fc
                .constantFrom("evil.example", "evil.example:80", "127.0.0.1.evil.example", "")
                .map((host) => ({ host })),
              fc.constantFrom("http://evil.example", "null").map((origin) => ({ origin })),
              fc.constant({ "sec-fetch-site": "cross-site" }),
            ),
            catalogued(
              `${backend.name}: host and origin`,
              async ([route, c]: [Route, HttpCase], headers: Record<string, string>) => {
                const crossSiteOnly = !("host" in headers);
                if (crossSiteOnly && !MUTATIONS.has(route.method)) return;
                const answer = await check(s, route.method, c, headers);
                expectStatus(
                  answer.status,
                  checkedStatus(c.path, 403),
                  `${route.method} ${c.path} with ${JSON.stringify(headers)}: ${answer.text.slice(0, 200)}`,
                );
              },
            ),
          ),
          fcParams(RUNS_PER_ROUTE * 4),
        );
      },
      TIMEOUT * 4,
    );

    // The shrunk counterexamples of the properties above, as plain examples.
    it("answers a path over Node's header limit with 431 in errand's shape, changing nothing", async () => {
      const s = await startSeeded(backend);
      const path = `/v1/jobs/${"z".repeat(maxHeaderSize + 1)}`;
      for (const method of ["GET", "PUT", "DELETE"]) {
        const answer = await check(s, method, { path, body: method === "PUT" ? "{}" : undefined });
        expect(answer.status, `${method} over the header limit`).toBe(431);
        expect(JSON.parse(answer.text).code).toBe("INVALID_REQUEST");
      }
    });

    it("checks host, origin and content type before the router refuses a path", async () => {
      const s = await startSeeded(backend);
      const c = { path: "/v1/queues/%ED%A0%80/pause", body: undefined };
      expect((await check(s, "POST", c)).status, "bad percent-encoding").toBe(400);
      expect((await check(s, "POST", c, { host: "evil.example" })).status, "foreign host").toBe(403);
      expect((await check(s, "POST", c, { origin: "http://evil.example" })).status, "origin").toBe(403);
      expect((await check(s, "POST", c, { "content-type": "text/plain" })).status, "form").toBe(415);
      expect((await check(s, "GET", c, { host: "" })).status, "empty Host").toBe(403);
    });
  });
}
