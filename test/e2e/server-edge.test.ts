/**
 * The server's edge, before any route runs: which Host it answers, which changes it takes from
 * whom (Origin, Sec-Fetch-Site, content type), how long a path segment may be, and that every
 * refusal, Fastify's own included, comes in errand's `{ code, message, details }` shape.
 */
import { request as httpRequest } from "node:http";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ErrandError } from "../../src/errors.js";
import { STORE_FAILED } from "../../src/server/http-errors.js";
import { createServer } from "../../src/server/index.js";
import { READY_TIMEOUT_MS } from "../../src/server/routes/ops.js";
import { selectedBackends, someBackend } from "../conformance/backend.js";
import { ALL_TOKENS, type Harness, snapshot, startServer, TOKENS } from "./harness.js";

const backend = someBackend();

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read any JSON the server answers.
  body: any;
}

/**
 * One request over node:http, which (unlike fetch) sends the Host header it is given and the path
 * exactly as written; headers as a flat [name, value, …] list may repeat a name.
 */
function raw(
  h: Pick<Harness, "base">,
  method: string,
  path: string,
  headers: Record<string, string> | string[] = {},
  body?: string | Buffer,
): Promise<Answer> {
  const url = new URL(h.base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: Array.isArray(headers) ? headers : { ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          text += c;
        });
        res.on("end", () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {}
          resolve({ status: res.statusCode!, body: parsed });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** errand's error shape, exactly. */
function expectErrandError(r: Answer, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(Object.keys(r.body ?? {}).sort()).toEqual(["code", "details", "message"]);
  expect(r.body.code).toBe(code);
  expect(typeof r.body.message).toBe("string");
}

const JSON_TYPE = { "content-type": "application/json" };

describe("the Host check (DNS rebinding)", () => {
  it("answers only the names it is bound to, on every route but the probes", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", { secret: 1 }, { id: "j1" });
    const port = new URL(h.base).port;
    for (const path of [
      "/v1/jobs",
      "/v1/jobs/j1",
      "/v1/stats",
      "/metrics",
      "/openapi.json",
      "/dashboard/",
      "/nope",
    ]) {
      const r = await raw(h, "GET", path, { host: `evil.example:${port}` });
      expectErrandError(r, 403, "FORBIDDEN");
      expect(r.body.details).toEqual({ host: `evil.example:${port}` });
      expect(JSON.stringify(r.body)).not.toContain("secret");
    }
    expectErrandError(await raw(h, "GET", "/v1/jobs", { host: "evil.example" }), 403, "FORBIDDEN");
    // Two Host headers, the first one allowed: Node reads the first, a proxy may have read the other.
    const two = ["Host", `localhost:${port}`, "Host", "evil.example"];
    expectErrandError(await raw(h, "GET", "/v1/jobs/j1", two), 400, "INVALID_REQUEST");
    // A compressed body is not decoded, so it is refused as such rather than misread.
    const gzip = await raw(
      h,
      "POST",
      "/v1/jobs",
      { ...JSON_TYPE, "content-encoding": "gzip" },
      '{"type":"t"}',
    );
    expectErrandError(gzip, 415, "UNSUPPORTED_MEDIA_TYPE");
    expect(
      (await raw(h, "POST", "/v1/jobs", { ...JSON_TYPE, "content-encoding": "identity" }, '{"type":"t"}'))
        .status,
    ).toBe(201);
    // The probes answer whatever the host (Kubernetes sends the pod's address).
    expect((await raw(h, "GET", "/healthz", { host: "10.1.2.3:8080" })).status).toBe(200);
    expect((await raw(h, "GET", "/readyz", { host: "10.1.2.3:8080" })).status).toBe(200);
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      "LOCALHOST",
      `[::1]:${port}`,
      "localhost.",
    ]) {
      expect((await raw(h, "GET", "/v1/jobs/j1", { host })).status, host).toBe(200);
    }
    // A mutation is refused on the Host alone too, and changes nothing.
    const before = await snapshot(h);
    const r = await raw(h, "POST", "/v1/jobs/j1/cancel", { host: "evil.example", ...JSON_TYPE });
    expectErrandError(r, 403, "FORBIDDEN");
    expect(await snapshot(h)).toEqual(before);
  });

  it("answers the names in allowedHosts (any port, or the one given), and behind a proxy its X-Forwarded-Host", async () => {
    const h = await startServer(backend, {
      allowedHosts: ["errand.example.com", "Other.Example:8443", "::1"],
    });
    for (const host of ["errand.example.com", "errand.example.com:9000", "other.example:8443"]) {
      expect((await raw(h, "GET", "/v1/stats", { host })).status, host).toBe(200);
    }
    expectErrandError(await raw(h, "GET", "/v1/stats", { host: "other.example:9000" }), 403, "FORBIDDEN");
    expectErrandError(await raw(h, "GET", "/v1/stats", { host: "sub.errand.example.com" }), 403, "FORBIDDEN");
    expectErrandError(await raw(h, "GET", "/v1/stats", { host: "a@errand.example.com" }), 403, "FORBIDDEN");

    const proxied = await startServer(backend, {
      trustProxy: "127.0.0.1",
      allowedHosts: ["errand.example.com"],
    });
    const forwarded = (host: string) =>
      raw(proxied, "GET", "/v1/stats", { host: "127.0.0.1", "x-forwarded-host": host });
    expect((await forwarded("errand.example.com")).status).toBe(200);
    expectErrandError(await forwarded("evil.example"), 403, "FORBIDDEN");
  });

  it("refuses a queue that is no Queue, and a maintenance that is no boolean, before anything starts", async () => {
    const b = await backend.setup();
    for (const queue of [undefined, null, {}, "sqlite::memory:", b.store]) {
      await expect(createServer({ queue } as never), String(queue)).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining("queue must be a Queue"),
      });
    }
    // A string was truthy: "false" ran maintenance.
    await expect(createServer({ queue: b.queue, maintenance: "false" } as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("maintenance"),
    });
  });

  it("refuses every malformed option in its own words, before anything starts", async () => {
    const b = await backend.setup();
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ["push null", { push: null }, "push"],
      ["push a number", { push: 5 }, "push"],
      ["push with an unknown key", { push: { concurency: 2 } }, "concurrency"],
      ["push.fetch no function", { push: { fetch: "https://x.example" } }, "push.fetch"],
      ["dashboard a string", { dashboard: "no" }, "dashboard"],
      ["trustProxy no address", { trustProxy: "not an ip" }, "trustProxy"],
      ["trustProxy an empty entry", { trustProxy: "127.0.0.1," }, "trustProxy"],
      ["trustProxy a bad range", { trustProxy: "10.0.0.0/99" }, "trustProxy"],
      ["trustProxy an object", { trustProxy: { a: 1 } }, "trustProxy"],
      ["trustProxy numbers", { trustProxy: [1, 2] }, "trustProxy"],
      // Fastify 5 trusts no proxy for a hop count; taking it would leave X-Forwarded-* unread.
      ["trustProxy a hop count", { trustProxy: 2 }, "hop count"],
      // Text proxy-addr would read as inet_aton does: "2" is 0.0.0.2, "127.1" 127.0.0.1.
      ["trustProxy a hop count as text", { trustProxy: "2" }, "hop count"],
      ["trustProxy a shorthand address", { trustProxy: ["127.1"] }, "no IP address"],
      ["trustProxy a hex address", { trustProxy: "0x7f.1/8" }, "no IP address"],
      ["trustProxy too long", { trustProxy: Array(2000).fill("10.0.0.1") }, "trustProxy"],
      ["auth null", { auth: null }, "auth"],
      ["auth a string", { auth: "secret-token" }, "auth"],
      // A typo would have served with no auth at all.
      ["auth with an unknown key", { auth: { token: "secret-token" } }, "tokens"],
      ["auth.tokens no array", { auth: { tokens: "admin:secret-token" } }, "auth.tokens"],
      ["a token entry null", { auth: { tokens: [null] } }, "auth.tokens"],
      [
        "a token entry's unknown key",
        { auth: { tokens: [{ token: "secret-token", role: "admin", rol: "x" }] } },
        "role",
      ],
      [
        "a token no header can carry",
        { auth: { tokens: [{ token: "secret token", role: "admin" }] } },
        "auth.tokens",
      ],
      [
        "a token of 5,000 characters",
        { auth: { tokens: [{ token: "t".repeat(5000), role: "admin" }] } },
        "auth.tokens",
      ],
      [
        "one token twice",
        {
          auth: {
            tokens: [
              { token: "secret-token", role: "viewer" },
              { token: "secret-token", role: "admin" },
            ],
          },
        },
        "twice",
      ],
      ["authorize no function", { auth: { authorize: "yes" } }, "auth.authorize"],
      ["types a string", { types: "x" }, "types"],
      ["types null", { types: null }, "types"],
    ];
    for (const [what, extra, mentions] of bad) {
      const refusal = await createServer({ queue: b.queue, ...extra } as never).then(
        (app) => app.close().then(() => null),
        (error: unknown) => error,
      );
      expect(refusal, what).toBeInstanceOf(ErrandError);
      expect((refusal as ErrandError).code, what).toBe("INVALID_OPTION");
      expect((refusal as ErrandError).message, what).toContain(mentions);
    }
    // Every form Fastify reads a proxy list in is taken, and used.
    const fn = (address: string) => address === "127.0.0.1";
    for (const trustProxy of [
      true,
      false,
      "127.0.0.1",
      " 127.0.0.1 , 10.0.0.0/8",
      ["loopback", "fe80::/10"],
      fn,
    ]) {
      const h = await startServer(backend, { trustProxy: trustProxy as never });
      const answer = await raw(h, "GET", "/v1/stats", { "x-forwarded-host": "elsewhere.example" });
      const trusted = trustProxy !== false;
      // Behind a believed proxy the forwarded host is the one checked, and it is no allowed host.
      expect(answer.status, String(trustProxy)).toBe(trusted ? 403 : 200);
    }
  });

  it("refuses allowedHosts entries that are no host, and '*' without auth", async () => {
    const b = await backend.setup();
    for (const allowedHosts of [["http://x.example"], ["a b"], [""], ["x.example/path"], [42]]) {
      await expect(
        createServer({ queue: b.queue, allowedHosts: allowedHosts as string[] }),
        JSON.stringify(allowedHosts),
      ).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("allowedHosts") });
    }
    await expect(createServer({ queue: b.queue, allowedHosts: ["*"] })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    const h = await startServer(backend, { allowedHosts: ["*"], auth: { tokens: ALL_TOKENS } });
    const anyHost = await raw(h, "GET", "/v1/stats", {
      host: "anything.example",
      authorization: `Bearer ${TOKENS.viewer}`,
    });
    expect(anyHost.status).toBe(200);
  });
});

describe("the readiness probe with the store down", () => {
  it("answers everyone a bare 503 within READY_TIMEOUT_MS, and logs what the store said", async () => {
    const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
    const logger = pino({ level: "error" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const h = await startServer(backend, { logger, auth: { tokens: ALL_TOKENS } });
    const detail = "PostgreSQL operation failed: connect ECONNREFUSED 10.9.8.7:45237";
    const ping = vi.spyOn(h.queue, "ping").mockRejectedValue(new ErrandError("STORE_ERROR", detail));
    onTestFinished(() => ping.mockRestore());
    // No token, any host: a probe, or anyone who can reach the port.
    const failed = await raw(h, "GET", "/readyz", { host: "10.1.2.3:8080" });
    expectErrandError(failed, 503, "UNAVAILABLE");
    expect(JSON.stringify(failed.body)).not.toMatch(/10\.9\.8\.7|ECONNREFUSED|PostgreSQL/);
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, err: expect.objectContaining({ message: detail }) }),
    ]);

    // A store that retries its connection: the probe is answered when the bound runs out.
    lines.length = 0;
    ping.mockImplementation(() => new Promise<void>(() => {}));
    const started = performance.now();
    const late = await raw(h, "GET", "/readyz", { host: "10.1.2.3:8080" });
    const took = performance.now() - started;
    expectErrandError(late, 503, "UNAVAILABLE");
    expect(took).toBeGreaterThanOrEqual(READY_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(READY_TIMEOUT_MS + 1500);
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: expect.stringContaining(`within ${READY_TIMEOUT_MS} ms`) }),
    ]);

    ping.mockResolvedValue(undefined);
    await vi.waitFor(async () => expect((await raw(h, "GET", "/readyz")).body).toEqual({ ok: true }), {
      timeout: READY_TIMEOUT_MS * 3,
    });
  });
});

describe("a store's failure over HTTP", () => {
  it("is 503 STORE_ERROR with a bare message to any token, the store's own words logged", async () => {
    const lines: Array<{ level: number; err?: { message: string } }> = [];
    const logger = pino({ level: "error" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const h = await startServer(backend, { logger, auth: { tokens: ALL_TOKENS } });
    const detail =
      'PostgreSQL operation failed: password authentication failed for user "errand_app" at 10.9.8.7';
    const stats = vi.spyOn(h.queue, "stats").mockRejectedValue(new ErrandError("STORE_ERROR", detail));
    onTestFinished(() => stats.mockRestore());
    const failed = await raw(h, "GET", "/v1/stats", { authorization: `Bearer ${TOKENS.viewer}` });
    expectErrandError(failed, 503, "STORE_ERROR");
    expect(failed.body.message).toBe(STORE_FAILED);
    expect(JSON.stringify(failed.body)).not.toMatch(/10\.9\.8\.7|errand_app|PostgreSQL/);
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, err: expect.objectContaining({ message: detail }) }),
    ]);
  });
});

describe("changes from other sites (CSRF)", () => {
  it("refuses a change that is not application/json, with a body or without, and changes nothing", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", null, { id: "j1" });
    const before = await snapshot(h);
    const cases: Array<[string, string, Record<string, string>, string | undefined]> = [
      ["POST", "/v1/jobs/j1/cancel", {}, undefined],
      ["POST", "/v1/jobs/j1/cancel", { "content-type": "text/plain" }, ""],
      ["POST", "/v1/jobs/j1/cancel", { "content-type": "text/plain" }, "{}"],
      ["POST", "/v1/queues/default/pause", { "content-type": "application/x-www-form-urlencoded" }, "a=1"],
      ["POST", "/v1/prune", { "content-type": "multipart/form-data; boundary=x" }, "--x--"],
      ["POST", "/v1/jobs", { "content-type": "text/plain" }, '{"type":"t"}'],
      ["PUT", "/v1/jobs/j2", { "content-type": "application/xml" }, "<job/>"],
      ["DELETE", "/v1/schedules/nightly", {}, undefined],
    ];
    for (const [method, path, headers, body] of cases) {
      const r = await raw(h, method, path, headers, body);
      expectErrandError(r, 415, "UNSUPPORTED_MEDIA_TYPE");
      expect(r.body.message).toContain("application/json");
    }
    expect(await snapshot(h)).toEqual(before);
    expect((await h.queue.stats()).paused).toEqual([]);
    // With the JSON type, a body-less change goes through (as errand's client sends it).
    const ok = await raw(h, "POST", "/v1/jobs/j1/cancel", {
      "content-type": "application/json; charset=utf-8",
    });
    expect(ok).toMatchObject({ status: 200, body: { state: "cancelled" } });
  });

  it("refuses a change another site or origin asks for, with or without auth; reads stay open", async () => {
    for (const auth of [undefined, { tokens: ALL_TOKENS }]) {
      const h = await startServer(backend, auth ? { auth } : {});
      await h.queue.enqueue("t", null, { id: "j1" });
      const before = await snapshot(h);
      const token: Record<string, string> = auth ? { authorization: `Bearer ${TOKENS.admin}` } : {};
      const port = new URL(h.base).port;
      const refused: Array<Record<string, string>> = [
        { "sec-fetch-site": "cross-site" },
        // Another port of the same host is same-site: a local dev server must not change jobs either.
        { "sec-fetch-site": "same-site" },
        { origin: `http://127.0.0.1:${Number(port) + 1}` },
        { origin: "http://evil.example" },
        { origin: `https://127.0.0.1:${port}.evil.example` },
        { origin: "null" },
      ];
      for (const headers of refused) {
        const r = await raw(h, "POST", "/v1/jobs/j1/cancel", { ...JSON_TYPE, ...token, ...headers });
        expectErrandError(r, 403, "FORBIDDEN");
      }
      expect(await snapshot(h)).toEqual(before);
      // The server's own pages: same origin.
      const own = await raw(h, "POST", "/v1/jobs/j1/cancel", {
        ...JSON_TYPE,
        ...token,
        origin: `http://127.0.0.1:${port}`,
        "sec-fetch-site": "same-origin",
      });
      expect(own.status).toBe(200);
      // A read from another site is answered (the browser keeps the answer from the page).
      const read = await raw(h, "GET", "/v1/jobs/j1", { ...token, "sec-fetch-site": "cross-site" });
      expect(read.status).toBe(200);
    }
  });
});

describe("request bodies that are not UTF-8 text", () => {
  /** A body of text parts (sent as UTF-8) and raw bytes between them: `bytes('"caf', [0xe9], '"')`. */
  const bytes = (...parts: Array<string | number[]>) =>
    Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p))));

  it("refuses a body whose bytes are not UTF-8 (400), storing nothing: no U+FFFD, no colliding keys", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", null, { id: "j1" });
    const before = await snapshot(h);
    const invalid: Array<[string, number[]]> = [
      ["latin-1 é", [0xe9]],
      ["0xff", [0xff]],
      ["0xfe", [0xfe]],
      ["an overlong '/'", [0xc0, 0xaf]],
      ["an encoded surrogate", [0xed, 0xa0, 0x80]],
      ["a sequence cut short", [0xe2, 0x82]],
      ["a lone continuation byte", [0x80]],
      ["past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
    ];
    for (const [what, bad] of invalid) {
      for (const type of ["application/json", "application/json; charset=utf-8"]) {
        for (const [method, path, body] of [
          ["POST", "/v1/jobs", bytes('{"type":"t","payload":"caf', bad, '"}')],
          ["POST", "/v1/jobs", bytes('{"type":"t","uniqueKey":"k-', bad, '"}')],
          ["PUT", "/v1/jobs/j2", bytes('{"type":"t","payload":{"k', bad, '":1}}')],
          ["POST", "/v1/jobs/j1/reschedule", bytes('{"priority":1', bad, "}")],
        ] as const) {
          const r = await raw(h, method, path, { "content-type": type }, body);
          expectErrandError(r, 400, "INVALID_REQUEST");
          expect(r.body.message, `${what} in ${method} ${path}`).toMatch(/UTF-8/);
        }
      }
    }
    expect(await snapshot(h)).toEqual(before);
    // The same text as UTF-8 is taken as it is.
    const ok = await raw(
      h,
      "POST",
      "/v1/jobs",
      JSON_TYPE,
      bytes('{"type":"t","payload":"caf', [0xc3, 0xa9], '"}'),
    );
    expect(ok).toMatchObject({ status: 201, body: { payload: "café" } });
  });

  it("refuses a charset other than UTF-8 (415), with a body or without; takes utf-8 (or utf8) in any case, quoted or not", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", null, { id: "j1" });
    const before = await snapshot(h);
    for (const type of [
      "application/json; charset=latin1",
      "application/json; charset=ISO-8859-1",
      'application/json; charset="iso-8859-1"',
      "application/json;charset=utf-16",
      "application/json; charset=us-ascii",
      "application/json; charset=utf-16le",
      "application/json; foo=bar; Charset=windows-1252",
    ]) {
      for (const body of [
        Buffer.from([...Buffer.from('{"type":"t","payload":"caf'), 0xe9, 0x22, 0x7d]),
        '{"type":"t"}',
        undefined,
      ]) {
        const path = body === undefined ? "/v1/jobs/j1/cancel" : "/v1/jobs";
        const r = await raw(h, "POST", path, { "content-type": type }, body);
        expectErrandError(r, 415, "UNSUPPORTED_MEDIA_TYPE");
        expect(r.body.message, type).toMatch(/charset/);
      }
    }
    expect(await snapshot(h)).toEqual(before);
    for (const type of [
      "application/json; charset=utf-8",
      "application/json; charset=UTF-8",
      // The Encoding Standard's other label for UTF-8.
      "application/json; charset=utf8",
      'application/json; charset="utf-8"',
      'application/json;CHARSET="Utf-8"',
      'application/json; foo="a;charset=latin1"; charset=utf-8',
    ]) {
      const r = await raw(h, "POST", "/v1/jobs", { "content-type": type }, '{"type":"t","payload":"é"}');
      expect(r, type).toMatchObject({ status: 201, body: { payload: "é" } });
    }
  });

  it("keeps its answer to a UTF-8 byte order mark: before JSON it is not JSON (400), alone it is no body", async () => {
    const h = await startServer(backend);
    await h.queue.enqueue("t", null, { id: "j1" });
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const withJson = await raw(
      h,
      "POST",
      "/v1/jobs",
      JSON_TYPE,
      Buffer.concat([bom, Buffer.from('{"type":"t"}')]),
    );
    expectErrandError(withJson, 400, "INVALID_REQUEST");
    expect(withJson.body.message).toMatch(/not valid JSON/);
    expect(await raw(h, "POST", "/v1/jobs/j1/cancel", JSON_TYPE, bom)).toMatchObject({
      status: 200,
      body: { state: "cancelled" },
    });
  });
});

// ---- long ids and names ----------------------------------------------------------------------

/** The longest valid id, made of every character an id may hold. */
const LONG_ID = `a${":@+=/._-".repeat(40)}`.slice(0, 255);
/** The longest valid id that percent-encodes longest: `/` is %2F. */
const SLASH_ID = `a${"/".repeat(254)}`;
/** The longest valid name. */
const LONG_NAME = `n${"a.b:c-d_".repeat(20)}`.slice(0, 128);
const enc = encodeURIComponent;

/** Expected answers for a job id nobody has used, route by route. */
const ON_MISSING_JOB: Record<string, [unknown, number, string]> = {
  "GET /v1/jobs/{id}": [undefined, 404, "JOB_NOT_FOUND"],
  "GET /v1/jobs/{id}/dependencies": [undefined, 404, "JOB_NOT_FOUND"],
  "GET /v1/jobs/{id}/dependents": [undefined, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/cancel": [{}, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/retry": [{}, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/replay": [{}, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/reschedule": [{ priority: 1 }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/complete": [{ attempt: 1 }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/fail": [{ attempt: 1, error: "boom" }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/heartbeat": [{ attempt: 1 }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/checkpoint": [{ attempt: 1, data: null }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/release": [{ attempt: 1 }, 404, "JOB_NOT_FOUND"],
  "POST /v1/jobs/{id}/snooze": [{ attempt: 1, delayMs: 0 }, 404, "JOB_NOT_FOUND"],
};

for (const b of selectedBackends()) {
  describe(`long ids and names on ${b.name}`, () => {
    it("every route with a path parameter takes the longest id and name errand accepts", async () => {
      const h = await startServer(b);
      const doc = (await h.http("GET", "/openapi.json")).body;
      const withParams = Object.entries(doc.paths as Record<string, object>)
        .filter(([path]) => path.includes("{"))
        .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
      const covered = new Set<string>();
      const call = async (route: string, values: Record<string, string>, body?: unknown) => {
        covered.add(route);
        const [method, template] = route.split(" ") as [string, string];
        const path = template.replace(/\{(\w+)\}/g, (_, k: string) => enc(values[k]!));
        const r = await h.http(method, path, body === undefined ? {} : { body });
        expect(r.status, `${route} ${r.status} ${JSON.stringify(r.body)}`).not.toBe(414);
        if (r.status >= 400)
          expect(Object.keys(r.body).sort(), route).toEqual(["code", "details", "message"]);
        return r;
      };

      for (const id of [LONG_ID, SLASH_ID]) {
        for (const [route, [body, status, code]] of Object.entries(ON_MISSING_JOB)) {
          const r = await call(route, { id }, body);
          expect({ status: r.status, code: r.body.code }, route).toEqual({ status, code });
        }
        const put = await call("PUT /v1/jobs/{id}", { id }, { type: LONG_NAME, queue: LONG_NAME });
        expect(put).toMatchObject({ status: 201, body: { id } });
        expect((await call("GET /v1/jobs/{id}", { id })).body).toMatchObject({ id, type: LONG_NAME });
        const waiting = await h.http("POST", "/v1/jobs", { body: { type: "after", dependsOn: [id] } });
        expect(waiting.body).toMatchObject({ state: "blocked", dependsOn: [id] });
        expect((await call("GET /v1/jobs/{id}/dependents", { id })).body.jobs).toMatchObject([
          { id: waiting.body.id },
        ]);
        const deps = await call("GET /v1/jobs/{id}/dependencies", { id: waiting.body.id });
        expect(deps.body.dependencies).toMatchObject([{ id, type: LONG_NAME }]);
        expect((await call("POST /v1/jobs/{id}/reschedule", { id }, { priority: 2 })).body.priority).toBe(2);
        const lease = async () => {
          const r = await h.http("POST", "/v1/lease", { body: { types: [LONG_NAME], queues: [LONG_NAME] } });
          expect(r.body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
          return r.body.jobs[0].attempt as number;
        };
        let attempt = await lease();
        for (const [route, body] of [
          ["POST /v1/jobs/{id}/heartbeat", { attempt }],
          ["POST /v1/jobs/{id}/checkpoint", { attempt, data: { page: 3 } }],
          ["POST /v1/jobs/{id}/release", { attempt }],
        ] as const) {
          expect((await call(route, { id }, body)).status, route).toBe(200);
        }
        attempt = await lease();
        const snoozed = await call("POST /v1/jobs/{id}/snooze", { id }, { attempt, delayMs: 0 });
        expect(snoozed.status).toBe(200);
        attempt = await lease();
        const failed = await call(
          "POST /v1/jobs/{id}/fail",
          { id },
          { attempt, error: "x", retryable: false },
        );
        expect(failed.body.state).toBe("dead");
        expect((await call("POST /v1/jobs/{id}/retry", { id }, {})).body.state).toBe("pending");
        attempt = await lease();
        expect((await call("POST /v1/jobs/{id}/complete", { id }, { attempt, result: 1 })).status).toBe(200);
        const again = await call("POST /v1/jobs/{id}/cancel", { id }, {});
        expect({ status: again.status, code: again.body.code }).toEqual({
          status: 409,
          code: "INVALID_STATE",
        });
        const replay = await call("POST /v1/jobs/{id}/replay", { id }, {});
        expect(replay).toMatchObject({ status: 201, body: { type: LONG_NAME } });
        expect(await h.queue.get(id)).toMatchObject({ state: "completed", result: 1 });
        const cancelled = await h.http("POST", `/v1/jobs/${enc(replay.body.id)}/cancel`);
        expect(cancelled.body.state).toBe("cancelled");
      }

      const type = { type: LONG_NAME };
      expect((await call("PUT /v1/types/{type}", type, {})).status).toBe(201);
      expect((await call("GET /v1/types/{type}", type)).body.type).toBe(LONG_NAME);
      expect((await call("DELETE /v1/types/{type}", type, {})).status).toBe(204);
      expect((await call("DELETE /v1/types/{type}", type, {})).body.code).toBe("NOT_FOUND");
      const name = { name: LONG_NAME };
      const schedule = { cron: "0 3 * * *", type: LONG_NAME };
      expect((await call("PUT /v1/schedules/{name}", name, schedule)).body.name).toBe(LONG_NAME);
      expect((await call("GET /v1/schedules/{name}", name)).body.name).toBe(LONG_NAME);
      expect((await call("DELETE /v1/schedules/{name}", name, {})).status).toBe(204);
      expect((await call("GET /v1/schedules/{name}", name)).body.code).toBe("NOT_FOUND");
      expect((await call("POST /v1/queues/{name}/pause", name, {})).body).toEqual({
        ...name,
        paused: true,
        changed: true,
      });
      expect((await call("POST /v1/queues/{name}/resume", name, {})).body.changed).toBe(true);

      expect([...covered].sort()).toEqual(withParams.sort());
    });

    it("a schedule with a long name makes jobs whose ids work in every job route", async () => {
      const h = await startServer(b);
      for (const length of [90, 128]) {
        const name = `s${"x".repeat(length - 1)}`;
        expect(
          (await h.http("PUT", `/v1/schedules/${name}`, { body: { cron: "* * * * *", type: "tick" } }))
            .status,
        ).toBe(200);
      }
      await h.clock.advance(60_000);
      await h.queue.sweep();
      await h.clock.advance(60_000);
      await h.queue.sweep();
      const { jobs } = await h.queue.list({ limit: 10 });
      expect(jobs).toHaveLength(4);
      expect(Math.min(...jobs.map((j) => j.id.length))).toBeGreaterThan(100);
      const leased = (await h.http("POST", "/v1/lease", { body: { types: ["tick"], limit: 2 } })).body.jobs;
      expect(leased).toHaveLength(2);
      for (const j of leased) {
        const path = `/v1/jobs/${enc(j.id)}`;
        expect((await h.http("GET", path)).body.id).toBe(j.id);
        expect((await h.http("POST", `${path}/heartbeat`, { body: { attempt: j.attempt } })).status).toBe(
          200,
        );
        expect(
          (await h.http("POST", `${path}/checkpoint`, { body: { attempt: j.attempt, data: 1 } })).status,
        ).toBe(200);
        expect((await h.http("POST", `${path}/complete`, { body: { attempt: j.attempt } })).status).toBe(200);
      }
      for (const j of jobs.filter((x) => !leased.some((l: { id: string }) => l.id === x.id))) {
        expect((await h.http("POST", `/v1/jobs/${enc(j.id)}/cancel`)).body.state).toBe("cancelled");
      }
      expect((await h.queue.stats()).states).toMatchObject({ completed: 2, cancelled: 2 });
    });
  });
}

describe("every refusal in errand's shape", () => {
  it("maps Fastify's own errors: over-long segment, bad encoding, no route, too large, bad JSON", async () => {
    const h = await startServer(backend, { bodyLimit: 1024 });
    expectErrandError(await raw(h, "GET", `/v1/jobs/${"a".repeat(766)}`), 414, "INVALID_REQUEST");
    // One character more than an id may have, whatever its encoding: the schema's answer.
    expectErrandError(await raw(h, "GET", `/v1/jobs/a${"%2F".repeat(255)}`), 400, "INVALID_REQUEST");
    expectErrandError(await raw(h, "GET", `/v1/types/${"a".repeat(129)}`), 400, "INVALID_REQUEST");
    expectErrandError(await raw(h, "GET", "/v1/jobs/%E0%A4%A"), 400, "INVALID_REQUEST");
    expectErrandError(await raw(h, "POST", "/v1/jobs/%E0%A4%A/cancel", JSON_TYPE), 400, "INVALID_REQUEST");
    expectErrandError(await raw(h, "GET", "/v1/nothing"), 404, "NOT_FOUND");
    expectErrandError(await raw(h, "OPTIONS", "/v1/jobs/x/cancel"), 404, "NOT_FOUND");
    const big = JSON.stringify({ type: "t", payload: "x".repeat(2000) });
    expectErrandError(await raw(h, "POST", "/v1/jobs", JSON_TYPE, big), 413, "PAYLOAD_TOO_LARGE");
    expectErrandError(await raw(h, "POST", "/v1/jobs", JSON_TYPE, "{nope"), 400, "INVALID_REQUEST");
    // "." and ".." are not ids: no URL could reach such a job.
    for (const id of [".", ".."]) {
      await expect(h.queue.enqueue("t", null, { id })).rejects.toMatchObject({ code: "INVALID_JOB_ID" });
      expectErrandError(
        await raw(h, "PUT", `/v1/jobs/${id === "." ? "%2E" : "%2E%2E"}`, JSON_TYPE, '{"type":"t"}'),
        400,
        "INVALID_REQUEST",
      );
    }
    expect((await h.queue.list()).jobs).toEqual([]);
  });
});
