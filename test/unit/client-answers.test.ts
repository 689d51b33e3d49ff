/**
 * ErrandClient against answers that are not what the protocol says: a proxy's error pages, bodies
 * that are not JSON or not the shape a call reads, redirects, throttling, answers too large or that
 * never end. Each is a typed ErrandError naming the request, never a TypeError or SyntaxError from
 * the code that read it, and never a wait past the client's timeout.
 *
 * A tiny node:http server plays the misbehaving server; nothing here sleeps (the timeouts tested
 * are the client's own, of a few tens of milliseconds).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrandClient, MAX_RESPONSE_BYTES } from "../../src/client/client.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let handler: Handler = (_req, res) => res.end();
const requests: Array<{ url?: string; authorization?: string }> = [];
const servers: http.Server[] = [];

async function listen(onRequest: Handler): Promise<string> {
  const server = http.createServer(onRequest);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let base = "";
beforeAll(async () => {
  base = await listen((req, res) => {
    requests.push({ url: req.url, authorization: req.headers.authorization });
    handler(req, res);
  });
});
afterAll(() => {
  for (const server of servers) server.closeAllConnections();
  for (const server of servers) server.close();
});

/** Answers every request with `status`, `body` and `contentType`, its length given. */
function answer(status: number, body: unknown, contentType = "application/json", headers = {}): Handler {
  return (_req, res) => {
    const text = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
    res.writeHead(status, { "content-type": contentType, "content-length": text.length, ...headers });
    res.end(text);
  };
}

const client = () => new ErrandClient({ url: base, token: "worker-token-0123456789", timeoutMs: 5000 });
const report = [{ id: "a", attempt: 1, outcome: "complete" as const }];
/** A leased job as the server answers it. */
const wireJob = (id: string, attempt: unknown = 1) => ({
  id,
  type: "t",
  queue: "default",
  attempt,
  weight: 1,
  timeoutMs: null,
  delivery: "at_least_once",
  leaseExpiresAt: "2026-01-01T00:00:30.000Z",
  payload: null,
});

/** A job as a read (get, list, cancel…) answers it. */
const readJob = (id: string) => ({
  ...wireJob(id),
  state: "pending",
  maxAttempts: 3,
  priority: 0,
  runAt: "2026-01-01T00:00:00.000Z",
  createdAt: "2026-01-01T00:00:00.000Z",
  expiresAt: null,
  leaseExpiresAt: null,
  startedAt: null,
  finishedAt: null,
});

describe("ErrandClient given answers that are not errand's", () => {
  it("names a proxy's error page by its status, never INTERNAL with only 'HTTP 502'", async () => {
    const cases: Array<[number, string]> = [
      [502, "UNAVAILABLE"],
      [503, "UNAVAILABLE"],
      [504, "UNAVAILABLE"],
      [401, "UNAUTHORIZED"],
      [403, "FORBIDDEN"],
      [404, "NOT_FOUND"],
      [413, "PAYLOAD_TOO_LARGE"],
      [429, "RATE_LIMITED"],
      [500, "INTERNAL"],
    ];
    for (const [status, code] of cases) {
      handler = answer(status, "<html><body><h1>Bad Gateway</h1></body></html>", "text/html");
      await expect(client().lease(), String(status)).rejects.toMatchObject({
        name: "ErrandError",
        code,
        message: expect.stringMatching(
          new RegExp(`^POST ${base}/v1/lease: HTTP ${status}, not an errand answer: text/html, "<html>`),
        ),
        details: { status },
      });
    }
    // A 404 page is no stale attempt: a complete through it is an error, not `false`.
    handler = answer(404, "not found", "text/plain");
    await expect(client().complete({ id: "a", attempt: 1 })).rejects.toMatchObject({ code: "NOT_FOUND" });
    // errand's own error answer is taken as it says; a `code` that is not errand's is not.
    handler = answer(409, { code: "STALE_ATTEMPT", message: "stale" });
    await expect(client().complete({ id: "a", attempt: 1 })).resolves.toBe(false);
    handler = answer(500, { code: 42, message: { nested: true } });
    await expect(client().lease()).rejects.toMatchObject({
      code: "INTERNAL",
      message: expect.stringContaining('{\\"code\\":42'),
    });
  });

  it("reads Retry-After of a 429 or a proxy's 503 into details.retryAfterMs", async () => {
    handler = answer(429, "slow down", "text/plain", { "retry-after": "7" });
    await expect(client().report(report)).rejects.toMatchObject({
      code: "RATE_LIMITED",
      details: { status: 429, retryAfterMs: 7000 },
    });
    handler = answer(429, "slow down", "text/plain");
    await expect(client().report(report)).rejects.toMatchObject({ details: { status: 429 } });
    await expect(client().report(report)).rejects.not.toMatchObject({ details: { retryAfterMs: 0 } });
  });

  it("refuses a 2xx answer that is empty, not JSON, truncated or of the wrong shape with UNAVAILABLE", async () => {
    const c = client();
    const cases: Array<[Handler, () => Promise<unknown>, string]> = [
      [answer(200, ""), () => c.lease(), "jobs undefined, not a list"],
      [answer(200, ""), () => c.report(report), "undefined, not an object"],
      [answer(200, ""), () => c.heartbeatMany([{ id: "a", attempt: 1 }]), "undefined, not an object"],
      [answer(200, ""), () => c.list(), "undefined, not an object"],
      [answer(200, '{"jobs":[{"id":"a"'), () => c.lease(), "a body that is not JSON"],
      [answer(200, "<html>hi</html>", "text/html"), () => c.get("abc"), "a body that is not JSON (text/html"],
      [answer(200, "hello", "text/plain"), () => c.lease(), "a body that is not JSON (text/plain"],
      [answer(200, { jobs: "x" }), () => c.lease(), 'jobs "x", not a list'],
      [answer(200, { jobs: "x" }), () => c.list(), 'jobs "x", not a list'],
      [answer(200, { jobs: [{ type: "t" }] }), () => c.lease(), "jobs[0] has id undefined"],
      [answer(200, { jobs: [wireJob("a", "1")] }), () => c.lease(), 'jobs[0] has attempt "1"'],
      [
        answer(200, { jobs: [{ ...wireJob("a"), weight: null }] }),
        () => c.lease(),
        "jobs[0] has weight null",
      ],
      [
        answer(200, { jobs: [{ ...wireJob("a"), timeoutMs: undefined }] }),
        () => c.lease(),
        "jobs[0] has timeoutMs undefined",
      ],
      [answer(200, { results: [] }), () => c.report(report), "0 results for 1 items"],
      [
        answer(200, { results: [{ ok: true }, { ok: true }], pausedQueues: [] }),
        () => c.heartbeatMany([{ id: "a", attempt: 1 }]),
        "2 results for 1 items",
      ],
      [answer(200, { results: [{ ok: "yes" }] }), () => c.report(report), "results[0]"],
      [
        answer(200, { state: "gone" }),
        () => c.failWithState({ id: "a", attempt: 1 }, new Error("x")),
        "state",
      ],
      [answer(200, { ids: null }), () => c.enqueueManyIds("t", [1]), "ids null, not a list"],
      [answer(200, { id: "a" }), () => c.get("a"), "a job that has type undefined"],
      [answer(200, { ...readJob("a"), state: "gone" }), () => c.cancel("a"), 'a job that has state "gone"'],
      [answer(200, { ...readJob("a"), runAt: "soon" }), () => c.retry("a"), 'a job that has runAt "soon"'],
      [
        answer(200, { ...readJob("a"), createdAt: null }),
        () => c.replay("a"),
        "a job that has createdAt null",
      ],
      [answer(200, { ...readJob("a"), attempt: 1.5 }), () => c.get("a"), "a job that has attempt 1.5"],
      [
        answer(200, { jobs: [readJob("a"), { ...readJob("b"), id: "a b" }], nextCursor: null }),
        () => c.list(),
        'jobs[1] that has id "a b"',
      ],
      [answer(200, { jobs: [], nextCursor: 5 }), () => c.dependents("a"), "nextCursor 5"],
    ];
    for (const [h, call, what] of cases) {
      handler = h;
      await expect(call(), what).rejects.toMatchObject({
        name: "ErrandError",
        code: "UNAVAILABLE",
        message: expect.stringContaining(what),
        details: { status: 200 },
      });
    }
    // A 204 where a page was due is no page.
    handler = answer(204, "");
    await expect(c.list()).rejects.toMatchObject({ code: "UNAVAILABLE", details: { status: 204 } });
    // A job whole or as a summary is read, its dates as Dates.
    handler = answer(200, { jobs: [readJob("a")], nextCursor: "a" });
    const page = await c.list({ view: "summary" });
    expect(page.nextCursor).toBe("a");
    expect(page.jobs[0]!.runAt).toEqual(new Date("2026-01-01T00:00:00.000Z"));
    handler = answer(200, readJob("a"));
    expect((await c.get("a"))?.state).toBe("pending");
    // JSON under another content type is still read.
    handler = answer(200, { jobs: [] }, "text/plain");
    await expect(c.lease()).resolves.toEqual([]);
  });

  it("takes a job a lease answer names twice once, so one worker never runs one attempt twice", async () => {
    handler = answer(200, { jobs: [wireJob("a"), wireJob("b"), wireJob("a")] });
    const jobs = await client().lease({ limit: 2 });
    expect(jobs.map((j) => j.id)).toEqual(["a", "b"]);
  });

  it("takes no more jobs than the lease asked for, and gives the rest back", async () => {
    const released: Array<{ url?: string; body: string }> = [];
    handler = (req, res) => {
      if (req.url === "/v1/lease")
        return answer(200, { jobs: ["a", "b", "c", "d"].map((id) => wireJob(id)) })(req, res);
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        released.push({ url: req.url, body });
        answer(200, { ok: true })(req, res);
      });
    };
    const jobs = await client().lease({ limit: 2 });
    expect(jobs.map((j) => j.id)).toEqual(["a", "b"]);
    expect(released.map((r) => [r.url, JSON.parse(r.body)]).sort()).toEqual([
      ["/v1/jobs/c/release", { attempt: 1 }],
      ["/v1/jobs/d/release", { attempt: 1 }],
    ]);
    // A server that will not take them back does not fail the lease.
    handler = (req, res) =>
      req.url === "/v1/lease"
        ? answer(200, { jobs: [wireJob("a"), wireJob("b")] })(req, res)
        : answer(500, { code: "INTERNAL" })(req, res);
    expect((await client().lease()).map((j) => j.id)).toEqual(["a"]);
  });

  it("follows no redirect: a 3xx is an error naming where it points, and nothing goes there", async () => {
    const elsewhere: Array<string | undefined> = [];
    const other = await listen((req, res) => {
      elsewhere.push(req.headers.authorization);
      res.writeHead(200, { "content-type": "application/json" }).end('{"jobs":[]}');
    });
    for (const status of [301, 302, 307, 308]) {
      handler = answer(status, "", "text/plain", { location: `${other}/v1/lease` });
      await expect(client().lease(), String(status)).rejects.toMatchObject({
        code: "UNAVAILABLE",
        message: expect.stringContaining(`a redirect to ${other}/v1/lease`),
        details: { status, location: `${other}/v1/lease` },
      });
    }
    expect(elsewhere).toEqual([]);
  });
});

describe("ErrandClient's bounds on an answer", () => {
  it("refuses an answer past maxResponseBytes by its Content-Length or as it arrives, without reading it all", async () => {
    const c = new ErrandClient({ url: base, maxResponseBytes: 1024 });
    handler = answer(200, { jobs: [], pad: "x".repeat(2000) });
    await expect(c.lease()).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      message: expect.stringContaining("bytes by its Content-Length"),
      details: { status: 200, maxResponseBytes: 1024 },
    });
    // Chunked, with no length, and endless: cut off once past the bound.
    let written = 0;
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"jobs":[],"pad":"');
      const drip = setInterval(() => {
        written += 512;
        res.write("x".repeat(512));
      }, 1);
      res.on("close", () => clearInterval(drip));
    };
    await expect(c.lease()).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      message: expect.stringContaining("more than 1024 bytes arrived"),
    });
    expect(written).toBeLessThan(64 * 1024);
    // An error page past the bound is refused alike.
    handler = answer(502, "x".repeat(5000), "text/html");
    await expect(c.lease()).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
  });

  it("gives up on an answer that never ends, or never comes, at timeoutMs", async () => {
    const c = new ErrandClient({ url: base, timeoutMs: 50 });
    // A slow-loris drip: a byte at a time, for ever.
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"jobs":[');
      const drip = setInterval(() => res.write(" "), 5);
      res.on("close", () => clearInterval(drip));
    };
    await expect(c.report(report)).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("no answer within 50 ms (the client's timeoutMs)"),
    });
    // A `fetch` that ignores the signal, and one whose body never ends: bounded all the same.
    const never = new ErrandClient({
      url: base,
      timeoutMs: 50,
      fetch: () => new Promise<Response>(() => {}),
    });
    await expect(never.complete({ id: "a", attempt: 1 })).rejects.toMatchObject({ code: "UNAVAILABLE" });
    const endless = new ErrandClient({
      url: base,
      timeoutMs: 50,
      fetch: async () => new Response(new ReadableStream({ pull: () => new Promise(() => {}) })),
    });
    await expect(endless.complete({ id: "a", attempt: 1 })).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("no answer within 50 ms"),
    });
  });

  it("names a connection reset mid-answer as UNAVAILABLE with its system code", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"jobs":[');
      setImmediate(() => res.socket?.destroy());
    };
    await expect(client().lease()).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringMatching(/^POST .*\/v1\/lease failed: /),
    });
  });

  it("takes maxResponseBytes from 1 to MAX_RESPONSE_BYTES, refusing the rest with INVALID_OPTION", () => {
    for (const maxResponseBytes of [1, 1 << 20, MAX_RESPONSE_BYTES]) {
      expect(() => new ErrandClient({ url: base, maxResponseBytes })).not.toThrow();
    }
    for (const maxResponseBytes of [0, -1, 1.5, MAX_RESPONSE_BYTES + 1, Number.NaN, "1mb"]) {
      expect(
        () => new ErrandClient({ url: base, maxResponseBytes: maxResponseBytes as number }),
        String(maxResponseBytes),
      ).toThrow(
        expect.objectContaining({
          code: "INVALID_OPTION",
          message: expect.stringContaining("maxResponseBytes"),
        }),
      );
    }
  });
});
