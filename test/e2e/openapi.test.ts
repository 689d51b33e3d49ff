import { describe, expect, it } from "vitest";
import { ROLE_PERMISSIONS, ROLES } from "../../src/server/auth.js";
import { HTTP_STATUS } from "../../src/server/http-errors.js";
import { upToPattern } from "../../src/server/schemas/fields.js";
import { routeSchemas } from "../../src/server/schemas.js";
import { someBackend } from "../conformance/backend.js";
import { ALL_TOKENS, startServer, TOKENS } from "./harness.js";

/** Every operation of the document, with its method and path. */
// biome-ignore lint/suspicious/noExplicitAny: the document is read as JSON.
const operations = (doc: any): Array<{ method: string; path: string; op: any }> =>
  Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, op })),
  );

const toOpenApiPath = (url: string) => url.replace(/:(\w+)/g, "{$1}");

describe("the OpenAPI document", () => {
  it("describes exactly the routes the server validates, with the same schemas", async () => {
    const h = await startServer(someBackend());
    const { status, body: doc } = await h.http("GET", "/openapi.json");
    expect(status).toBe(200);
    expect(doc.openapi).toBe("3.1.0");

    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const declared = new Set(
      Object.keys(routeSchemas).map((k) => {
        const [m, u] = k.split(" ") as [string, string];
        return `${m} ${toOpenApiPath(u)}`;
      }),
    );
    expect([...documented].sort()).toEqual([...declared].sort());

    for (const [key, schema] of Object.entries(routeSchemas)) {
      const [method, url] = key.split(" ") as [string, string];
      const op = doc.paths[toOpenApiPath(url)][method.toLowerCase()];
      expect(op.summary, key).toBe(schema.summary);
      const body = "body" in schema ? (schema.body as { properties?: object; oneOf?: unknown[] }) : undefined;
      const docBody = op.requestBody?.content?.["application/json"]?.schema;
      const changes = ["POST", "PUT", "PATCH", "DELETE"].includes(method);
      for (const status of ["414", "429", "431", "503", ...(changes ? ["413", "415"] : [])]) {
        expect(op.responses[status]?.content["application/json"].schema, `${key} ${status}`).toEqual({
          $ref: "#/components/schemas/Error",
        });
      }
      if (!body) {
        // A change without a body of its own still says JSON (the server refuses it otherwise).
        if (changes) expect(docBody, key).toEqual({ type: "object", additionalProperties: false });
        else expect(docBody, key).toBeUndefined();
        continue;
      }
      if (body.properties)
        expect(Object.keys(docBody.properties).sort(), key).toEqual(Object.keys(body.properties).sort());
      if (body.oneOf) expect(docBody.oneOf, key).toHaveLength(body.oneOf.length);
      const params =
        "params" in schema ? Object.keys((schema.params as { properties: object }).properties) : [];
      expect(
        (op.parameters ?? [])
          .filter((p: { in: string }) => p.in === "path")
          .map((p: { name: string }) => p.name),
        key,
      ).toEqual(params);
      for (const status of Object.keys(schema.response))
        expect(op.responses[status], `${key} ${status}`).toBeDefined();
    }
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(["Job", "Error", "JobType", "Schedule"]),
    );
  });

  it("takes a change with no body of its own as the document says: {} as JSON", async () => {
    const h = await startServer(someBackend());
    await h.queue.enqueue("t", {}, { id: "j1" });
    const doc = (await h.http("GET", "/openapi.json")).body;
    expect(doc.paths["/v1/prune"].post.requestBody.content).toHaveProperty(["application/json"]);
    expect((await h.http("POST", "/v1/prune", { body: {} })).status).toBe(200);
    expect((await h.http("POST", "/v1/jobs/j1/cancel", { body: {} })).status).toBe(200);
    expect((await h.http("POST", "/v1/queues/default/pause", { body: {} })).status).toBe(200);
    // Without the content type, as a client that sends no body might: 415, as documented.
    const bare = await h.http("POST", "/v1/queues/default/resume", { headers: { "content-type": "" } });
    expect(bare.status).toBe(415);
  });

  it("validates requests with the documented schema: a field the document lacks is refused", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const enqueue = doc.paths["/v1/jobs/{id}"].put.requestBody.content["application/json"].schema;
    const accepted = Object.fromEntries(
      Object.keys(enqueue.properties)
        .filter((k) => ["type", "payload", "priority"].includes(k))
        .map((k) => [k, k === "type" ? "t" : k === "priority" ? 1 : null]),
    );
    expect((await h.http("PUT", "/v1/jobs/k1", { body: accepted })).status).toBe(201);
    expect(enqueue.properties).not.toHaveProperty("color");
    expect((await h.http("PUT", "/v1/jobs/k2", { body: { ...accepted, color: "red" } })).status).toBe(400);
  });
});

describe("the OpenAPI document for clients and generators", () => {
  it("is readable by every role, and by no one without a token", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    for (const { role, token } of ALL_TOKENS) {
      const r = await h.http("GET", "/openapi.json", { token });
      expect(r.status, role).toBe(200);
      expect(r.body.openapi, role).toBe("3.1.0");
    }
    expect((await h.http("GET", "/openapi.json")).status).toBe(401);
  });

  it("gives every operation a unique operationId, a declared tag, roles and described answers", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const declared = new Set((doc.tags as Array<{ name: string }>).map((t) => t.name));
    const ids = new Set<string>();
    for (const { method, path, op } of operations(doc)) {
      const at = `${method} ${path}`;
      expect(op.operationId, at).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(op.operationId), `${at}: ${op.operationId} twice`).toBe(false);
      ids.add(op.operationId);
      expect(op.tags?.length, at).toBeGreaterThan(0);
      for (const tag of op.tags) expect(declared, `${at}: tag ${tag}`).toContain(tag);
      for (const [status, response] of Object.entries(
        op.responses as Record<string, { description: string }>,
      )) {
        expect(response.description, `${at} ${status}`).toBeTruthy();
        expect(response.description, `${at} ${status}`).not.toBe("Default Response");
      }
      expect(op["x-errand-roles"], at).toContain("admin");
      for (const role of op["x-errand-roles"]) expect(op.description, at).toContain(`\`${role}\``);
    }
  });

  it("names the roles each operation lets in, as the server enforces them", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const doc = (await h.http("GET", "/openapi.json", { token: TOKENS.admin })).body;
    expect(ROLES.filter((r) => ROLE_PERMISSIONS[r].includes("work"))).toEqual(
      doc.paths["/v1/lease"].post["x-errand-roles"],
    );
    // Each role against a read, an enqueue, a worker's route and an admin's: 403 exactly when
    // the document leaves it out.
    const probes: Array<[string, string, string, unknown]> = [
      ["get", "/v1/stats", "/v1/stats", undefined],
      ["post", "/v1/jobs", "/v1/jobs", { type: "t" }],
      ["get", "/v1/jobs/{id}/dependencies", "/v1/jobs/none/dependencies", undefined],
      ["post", "/v1/jobs/{id}/heartbeat", "/v1/jobs/none/heartbeat", { attempt: 1 }],
      ["post", "/v1/prune", "/v1/prune", {}],
    ];
    for (const [method, docPath, path, body] of probes) {
      const roles: string[] = doc.paths[docPath][method]["x-errand-roles"];
      for (const { role, token } of ALL_TOKENS) {
        const r = await h.http(method.toUpperCase(), path, { token, ...(body ? { body } : {}) });
        expect(r.status === 403, `${role} ${method} ${path}: ${r.status}`).toBe(!roles.includes(role));
      }
    }
  });

  it("lists errand's codes in the error schema, and under each status the codes it carries", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    expect(doc.components.schemas.Error.properties.code.enum.sort()).toEqual(Object.keys(HTTP_STATUS).sort());
    for (const { method, path, op } of operations(doc)) {
      for (const [status, response] of Object.entries(
        op.responses as Record<string, { description: string; content?: object }>,
      )) {
        if (Number(status) < 400) continue;
        const codes = Object.entries(HTTP_STATUS).filter(([, s]) => String(s) === status);
        for (const [code] of codes)
          expect(response.description, `${method} ${path} ${status}`).toContain(code);
      }
      expect(op.responses["429"].headers["Retry-After"], `${method} ${path}`).toBeDefined();
      expect(op.responses["500"], `${method} ${path}`).toBeDefined();
    }
    expect(doc.paths["/v1/jobs/{id}/complete"].post.responses["409"].description).toMatch(
      /STALE_ATTEMPT.*\{ state, attempt \}/,
    );
    // What it says of a stale attempt is what one gets.
    await h.queue.enqueue("t", {}, { id: "s1" });
    const stale = await h.http("POST", "/v1/jobs/s1/complete", { body: { attempt: 1 } });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe("STALE_ATTEMPT");
    expect(Object.keys(stale.body.details).sort()).toEqual(["attempt", "state"]);
    // And a 429 carries Retry-After, as documented.
    const throttled = await startServer(someBackend(), {
      auth: { tokens: ALL_TOKENS, maxFailures: 1 },
    });
    let r = await throttled.http("GET", "/v1/stats", { token: "wrong-token-0123456789" });
    for (let i = 0; i < 3 && r.status !== 429; i++)
      r = await throttled.http("GET", "/v1/stats", { token: "wrong-token-0123456789" });
    expect(r.status).toBe(429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("holds to the lease defaults it documents when a field is left out", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const lease = doc.paths["/v1/lease"].post.requestBody.content["application/json"].schema.properties;
    expect(lease.waitMs.default).toBe(0);
    for (let i = 0; i < 3; i++) await h.queue.enqueue("t", {}, { id: `d${i}` });
    const before = h.queue.clock.now();
    const r = await h.http("POST", "/v1/lease", { body: {} });
    expect(r.status).toBe(200);
    // limit: one job; leaseMs: held that long from now; workerId: remote:<address>.
    expect(r.body.jobs).toHaveLength(lease.limit.default);
    const [job] = r.body.jobs;
    const held = Date.parse(job.leaseExpiresAt) - before;
    expect(held).toBe(lease.leaseMs.default);
    expect(job.workerId).toMatch(/^remote:/);
    // A heartbeat without leaseMs holds it for the default from now.
    const hb = doc.paths["/v1/jobs/{id}/heartbeat"].post.requestBody.content["application/json"].schema;
    await h.clock.advance(10_000);
    const t0 = h.queue.clock.now();
    expect((await h.http("POST", `/v1/jobs/${job.id}/heartbeat`, { body: { attempt: 1 } })).status).toBe(200);
    const after = (await h.queue.get(job.id))!.leaseExpiresAt!.getTime() - t0;
    expect(after).toBe(hb.properties.leaseMs.default);
    // fail without retryable: retried (the documented default is true).
    const fail = doc.paths["/v1/jobs/{id}/fail"].post.requestBody.content["application/json"].schema;
    expect(fail.properties.retryable.default).toBe(true);
    const failed = await h.http("POST", `/v1/jobs/${job.id}/fail`, { body: { attempt: 1, error: "x" } });
    expect(failed.body.state).toBe("pending");
    // A report's fail may leave out its error.
    const [next] = (await h.http("POST", "/v1/lease", { body: {} })).body.jobs;
    const report = await h.http("POST", "/v1/report", {
      body: { reports: [{ id: next.id, attempt: next.attempt, outcome: "fail" }] },
    });
    expect(report.body.results[0]).toMatchObject({ ok: true, state: "pending" });
    expect((await h.queue.get(next.id))!.errors.at(-1)!.message).toBe("failed");
  });

  it("bounds query counts in the schema: the document's range and default are the server's", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const param = (path: string, name: string) =>
      doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name).schema;
    for (let n = -1; n <= 4000; n++) {
      expect(new RegExp(upToPattern(1000)).test(String(n)), String(n)).toBe(n >= 1 && n <= 1000);
      expect(new RegExp(upToPattern(3600)).test(String(n)), String(n)).toBe(n >= 1 && n <= 3600);
    }
    for (const [path, name, max] of [
      ["/v1/jobs", "limit", 1000],
      ["/v1/jobs/{id}/dependents", "limit", 1000],
      ["/v1/types", "limit", 1000],
      ["/v1/schedules", "limit", 1000],
      ["/v1/stats/history", "seconds", 3600],
    ] as const) {
      const schema = param(path, name);
      const url = path.replace("{id}", "j0");
      for (const bad of ["0", String(max + 1), "01", "-1", "1.5"]) {
        const r = await h.http("GET", `${url}?${name}=${bad}`);
        expect(new RegExp(schema.pattern).test(bad), `${path} ${bad}`).toBe(false);
        expect([r.status, r.body.code], `${path} ${name}=${bad}`).toEqual([400, "INVALID_REQUEST"]);
      }
      expect(new RegExp(schema.pattern).test(String(max))).toBe(true);
    }
    // The defaults: 50 jobs in a page, 300 seconds of history.
    await h.queue.enqueue("t", {}, { id: "j0" });
    await h.queue.enqueueMany(
      "t",
      Array.from({ length: 60 }, () => ({})),
    );
    expect(param("/v1/jobs", "limit").default).toBe("50");
    expect((await h.http("GET", "/v1/jobs")).body.jobs).toHaveLength(50);
    expect(param("/v1/stats/history", "seconds").default).toBe("300");
    expect((await h.http("GET", "/v1/stats/history")).body.times).toHaveLength(300);
  });

  it("refuses fields on a change that takes none, as the document says", async () => {
    const h = await startServer(someBackend());
    await h.queue.enqueue("t", {}, { id: "c1" });
    const doc = (await h.http("GET", "/openapi.json")).body;
    for (const [path, url] of [
      ["/v1/jobs/{id}/cancel", "/v1/jobs/c1/cancel"],
      ["/v1/prune", "/v1/prune"],
      ["/v1/queues/{name}/pause", "/v1/queues/default/pause"],
    ] as const) {
      expect(doc.paths[path].post.requestBody.content["application/json"].schema).toEqual({
        type: "object",
        additionalProperties: false,
      });
      for (const body of [{ force: true }, [], "x", null]) {
        const r = await h.http("POST", url, { raw: JSON.stringify(body) });
        expect([r.status, r.body.code], `${url} ${JSON.stringify(body)}`).toEqual([400, "INVALID_REQUEST"]);
        expect(r.body.details[0].keyword).toBeDefined();
      }
    }
    const del = await h.http("DELETE", "/v1/schedules/none", { body: { x: 1 } });
    expect([del.status, del.body.code]).toEqual([400, "INVALID_REQUEST"]);
    expect((await h.http("POST", "/v1/jobs/c1/cancel", { body: {} })).status).toBe(200);
    expect((await h.http("POST", "/v1/prune")).status).toBe(200);
  });

  it("shows named examples on every request body, and the server takes each one", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    let n = 0;
    /** A job of its own type, leased (attempt 1) for the worker routes, else pending. */
    const jobFor = async (leased: boolean): Promise<string> => {
      const type = `example-${n++}`;
      const enqueued = await h.http("POST", "/v1/jobs", {
        body: { type, payload: null, ...(leased ? {} : { delayMs: "1h" }) },
      });
      if (!leased) return enqueued.body.id;
      const lease = await h.http("POST", "/v1/lease", { body: { types: [type] } });
      expect(lease.body.jobs.map((j: { attempt: number }) => j.attempt)).toEqual([1]);
      return lease.body.jobs[0].id;
    };
    let sent = 0;
    for (const [key, schema] of Object.entries(routeSchemas)) {
      if (!("body" in schema)) continue;
      const [method, url] = key.split(" ") as [string, string];
      const media =
        doc.paths[toOpenApiPath(url)][method.toLowerCase()].requestBody.content["application/json"];
      const examples = Object.entries(
        (media.examples ?? {}) as Record<string, { summary: string; value: unknown }>,
      );
      expect(examples.length, `${key}: no examples`).toBeGreaterThan(0);
      expect(media.schema["x-examples"], key).toBeUndefined();
      for (const [name, example] of examples) {
        expect(example.summary, `${key} ${name}`).toBeTruthy();
        let path = url.replace(":name", "nightly").replace(":type", "example-type");
        if (url.includes(":id")) {
          const fresh = method === "PUT" ? `ex-${n++}` : await jobFor(!url.endsWith("/reschedule"));
          path = path.replace(":id", fresh);
        }
        const r = await h.http(method, path, { body: example.value });
        expect([r.status, `${key} ${name}`, r.body]).toEqual([
          expect.toSatisfy((s: number) => s === 200 || s === 201),
          `${key} ${name}`,
          expect.anything(),
        ]);
        sent++;
      }
    }
    expect(sent).toBeGreaterThanOrEqual(20);
  });

  it("refuses a job type whose body names another type than its path", async () => {
    const h = await startServer(someBackend());
    const r = await h.http("PUT", "/v1/types/a", { body: { type: "b", priority: 1 } });
    expect([r.status, r.body.code]).toEqual([400, "INVALID_REQUEST"]);
    expect((await h.http("GET", "/v1/types/b")).status).toBe(404);
    expect((await h.http("GET", "/v1/types/a")).status).toBe(404);
    expect((await h.http("PUT", "/v1/types/a", { body: { type: "a", priority: 1 } })).status).toBe(201);
    expect((await h.http("PUT", "/v1/types/a", { body: { priority: 2 } })).body.priority).toBe(2);
  });

  it("documents push delivery as a webhook with the body and headers push sends", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const hook = doc.webhooks.pushDelivery.post;
    const documented = Object.keys(hook.requestBody.content["application/json"].schema.properties).sort();
    const headers = hook.parameters.map((p: { name: string }) => p.name).sort();
    let seen: { body: Record<string, unknown>; headers: Headers } | undefined;
    const { createServer: createReceiver } = await import("node:http");
    const receiver = createReceiver((req, res) => {
      let text = "";
      req.on("data", (c) => (text += c));
      req.on("end", () => {
        seen = { body: JSON.parse(text), headers: new Headers(req.headers as Record<string, string>) };
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const port = (receiver.address() as { port: number }).port;
      const pushed = await startServer(someBackend(), { maintenance: true });
      await pushed.http("PUT", "/v1/types/hook", {
        body: { push: { url: `http://127.0.0.1:${port}/`, secret: "s".repeat(32) } },
      });
      await pushed.http("POST", "/v1/jobs", { body: { type: "hook", payload: { a: 1 } } });
      for (let i = 0; i < 100 && !seen; i++) await new Promise((r) => setTimeout(r, 50));
      expect(Object.keys(seen!.body).sort()).toEqual(documented);
      for (const name of headers) expect(seen!.headers.has(name), name).toBe(true);
    } finally {
      receiver.close();
    }
  });
});
