import { describe, expect, it } from "vitest";
import { parseTokens, ROLE_PERMISSIONS, type Role } from "../../src/server/index.js";
import type { routeSchemas } from "../../src/server/schemas.js";
import { selectedBackends } from "../conformance/backend.js";
import { ALL_TOKENS, startServer, TOKENS } from "./harness.js";

/** What each route needs, as the server declares it: kept here on purpose, as the contract. */
const NEEDS: Record<keyof typeof routeSchemas, "enqueue" | "read" | "work" | "manage"> = {
  "POST /v1/jobs": "enqueue",
  "PUT /v1/jobs/:id": "enqueue",
  "GET /v1/jobs/:id": "read",
  "GET /v1/jobs": "read",
  "POST /v1/jobs/:id/cancel": "manage",
  "POST /v1/jobs/:id/retry": "manage",
  "POST /v1/jobs/:id/replay": "manage",
  "POST /v1/jobs/:id/reschedule": "manage",
  "POST /v1/lease": "work",
  "POST /v1/jobs/:id/complete": "work",
  "POST /v1/jobs/:id/fail": "work",
  "POST /v1/jobs/:id/heartbeat": "work",
  "POST /v1/jobs/:id/checkpoint": "work",
  "POST /v1/jobs/:id/release": "work",
  "POST /v1/report": "work",
  "PUT /v1/types/:type": "manage",
  "GET /v1/types/:type": "read",
  "DELETE /v1/types/:type": "manage",
  "GET /v1/types": "read",
  "PUT /v1/schedules/:name": "manage",
  "GET /v1/schedules/:name": "read",
  "DELETE /v1/schedules/:name": "manage",
  "GET /v1/schedules": "read",
  "GET /v1/stats": "read",
  "GET /v1/stats/history": "read",
  "GET /v1/queues": "read",
  "POST /v1/prune": "manage",
};

const EXTRA: Array<[string, "read"]> = [
  ["GET /metrics", "read"],
  ["GET /openapi.json", "read"],
];

for (const backend of selectedBackends()) {
  describe(`auth on ${backend.name}`, () => {
    it("checks every route for every role, no token and a wrong token", async () => {
      const h = await startServer(backend, {
        auth: { tokens: ALL_TOKENS, maxFailures: 1000 },
      });
      const routes = [...Object.entries(NEEDS), ...EXTRA];
      for (const [key, needs] of routes) {
        const [method, template] = key.split(" ") as [string, string];
        const path = template.replace(":id", "j1").replace(":type", "t1").replace(":name", "s1");
        // An empty JSON object: routes whose body it does not fit answer 400 after auth passes.
        const o = method === "GET" || method === "DELETE" ? {} : { body: {} };
        const none = await h.http(method, path, o);
        expect(none.status, `${key} without a token`).toBe(401);
        expect(none.body.code).toBe("UNAUTHORIZED");
        const wrong = await h.http(method, path, { ...o, token: "not-a-valid-token" });
        expect(wrong.status, `${key} with a wrong token`).toBe(401);
        for (const { role, token } of ALL_TOKENS) {
          const r = await h.http(method, path, { ...o, token });
          const allowed = ROLE_PERMISSIONS[role as Role].includes(needs);
          if (allowed) expect([401, 403], `${key} as ${role}`).not.toContain(r.status);
          else expect(r, `${key} as ${role}`).toMatchObject({ status: 403, body: { code: "FORBIDDEN" } });
        }
      }
      expect((await h.http("GET", "/healthz")).status).toBe(200);
      expect((await h.http("GET", "/readyz")).status).toBe(200);
    });

    it("does what each role may: produce, work, view", async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const made = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: TOKENS.producer });
      expect(made.status).toBe(201);
      expect((await h.http("GET", `/v1/jobs/${made.body.id}`, { token: TOKENS.viewer })).status).toBe(200);
      const leased = await h.http("POST", "/v1/lease", { body: { types: ["t"] }, token: TOKENS.worker });
      expect(leased.body.jobs).toHaveLength(1);
      const done = await h.http("POST", `/v1/jobs/${made.body.id}/complete`, {
        body: { attempt: 1 },
        token: TOKENS.worker,
      });
      expect(done.status).toBe(200);
      expect((await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: TOKENS.viewer })).status).toBe(
        403,
      );
    });

    it("rate-limits failed attempts with 429 until the window passes", async () => {
      const h = await startServer(backend, {
        auth: { tokens: ALL_TOKENS, maxFailures: 3, rateLimitWindowMs: 60_000 },
      });
      for (let i = 0; i < 3; i++) {
        expect((await h.http("GET", "/v1/stats", { token: `guess-${i}-xxxxxxxx` })).status).toBe(401);
      }
      const limited = await h.http("GET", "/v1/stats", { token: TOKENS.admin });
      expect(limited).toMatchObject({ status: 429, body: { code: "RATE_LIMITED" } });
      expect(limited.headers.get("retry-after")).toBe("60");
      await h.clock.advance(60_000);
      expect((await h.http("GET", "/v1/stats", { token: TOKENS.admin })).status).toBe(200);
    });

    it("asks a pluggable authorize hook, and still checks the role", async () => {
      const h = await startServer(backend, {
        auth: {
          authorize: (request) =>
            request.headers["x-api-key"] === "k-viewer" ? { role: "viewer", name: "hook" } : null,
        },
      });
      expect((await h.http("GET", "/v1/stats", { headers: { "x-api-key": "k-viewer" } })).status).toBe(200);
      expect((await h.http("GET", "/v1/stats")).status).toBe(401);
      const write = await h.http("POST", "/v1/jobs", {
        body: { type: "t" },
        headers: { "x-api-key": "k-viewer" },
      });
      expect(write.status).toBe(403);
    });
  });
}

describe("token configuration", () => {
  it("reads role:token lists and JSON", () => {
    expect(parseTokens("admin:abcdefgh1, worker:ijklmnop2\n# comment\nviewer:qrstuvwx3")).toMatchObject([
      { role: "admin", token: "abcdefgh1" },
      { role: "worker", token: "ijklmnop2" },
      { role: "viewer", token: "qrstuvwx3" },
    ]);
    expect(parseTokens('[{"token":"abcdefgh1","role":"producer","name":"api"}]')).toEqual([
      { token: "abcdefgh1", role: "producer", name: "api" },
    ]);
    expect(() => parseTokens("root:abcdefgh1")).toThrow(/role/);
  });
});
