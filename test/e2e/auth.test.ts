import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { Authenticator, addressKey, MAX_TRACKED_ADDRESSES } from "../../src/server/auth.js";
import {
  createServer,
  type Principal,
  parseTokens,
  ROLE_PERMISSIONS,
  type Role,
} from "../../src/server/index.js";
import type { routeSchemas } from "../../src/server/schemas.js";
import { selectedBackends } from "../conformance/backend.js";
import { ALL_TOKENS, snapshot, startServer, TOKENS } from "./harness.js";

type Permission = "enqueue" | "read" | "work" | "manage";
/**
 * What each route needs, as the server declares it: kept here on purpose, as the contract. A list
 * means any one of them.
 */
const NEEDS: Record<keyof typeof routeSchemas, Permission | Permission[]> = {
  "POST /v1/jobs": "enqueue",
  "PUT /v1/jobs/:id": "enqueue",
  "POST /v1/flows": "enqueue",
  "GET /v1/jobs/:id": "read",
  "GET /v1/jobs": "read",
  "GET /v1/jobs/:id/dependencies": ["read", "work"],
  "GET /v1/jobs/:id/dependents": "read",
  "POST /v1/jobs/:id/cancel": "manage",
  "POST /v1/jobs/:id/retry": "manage",
  "POST /v1/jobs/:id/replay": "manage",
  "POST /v1/jobs/:id/reschedule": "manage",
  "POST /v1/lease": "work",
  "POST /v1/jobs/:id/complete": "work",
  "POST /v1/jobs/:id/fail": "work",
  "POST /v1/jobs/:id/heartbeat": "work",
  "POST /v1/heartbeats": "work",
  "POST /v1/jobs/:id/checkpoint": "work",
  "POST /v1/jobs/:id/release": "work",
  "POST /v1/jobs/:id/snooze": "work",
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
  "POST /v1/queues/:name/pause": "manage",
  "POST /v1/queues/:name/resume": "manage",
  "POST /v1/prune": "manage",
};

const EXTRA: Array<[string, Permission | Permission[]]> = [
  ["GET /metrics", "read"],
  // The contract: every role reads it, a worker's token included.
  ["GET /openapi.json", ["enqueue", "read", "work", "manage"]],
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
          const allowed = [needs].flat().some((n) => ROLE_PERMISSIONS[role as Role].includes(n));
          if (allowed) expect([401, 403], `${key} as ${role}`).not.toContain(r.status);
          else expect(r, `${key} as ${role}`).toMatchObject({ status: 403, body: { code: "FORBIDDEN" } });
        }
      }
      expect((await h.http("GET", "/healthz")).status).toBe(200);
      expect((await h.http("GET", "/readyz")).status).toBe(200);
      // The document names, per operation, the roles this table lets in.
      const doc = (await h.http("GET", "/openapi.json", { token: TOKENS.worker })).body;
      for (const [key, needs] of Object.entries(NEEDS)) {
        const [method, template] = key.split(" ") as [string, string];
        const op = doc.paths[template.replace(/:(\w+)/g, "{$1}")][method.toLowerCase()];
        const roles = ALL_TOKENS.map((t) => t.role).filter((role) =>
          [needs].flat().some((n) => ROLE_PERMISSIONS[role as Role].includes(n)),
        );
        expect([...op["x-errand-roles"]].sort(), key).toEqual(roles.sort());
      }
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

    it("shows each role the jobs it may read: a producer its own, admin and viewer all", async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const mine = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: TOKENS.producer });
      const theirs = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: TOKENS.admin });
      expect(mine.status).toBe(201);
      expect(theirs.status).toBe(201);
      // What each role gets for: its own job, another's job, the list.
      const expected: Record<Role, [number, number, string[] | number]> = {
        admin: [200, 200, [mine.body.id, theirs.body.id]],
        producer: [200, 404, [mine.body.id]],
        worker: [403, 403, 403],
        viewer: [200, 200, [mine.body.id, theirs.body.id]],
      };
      for (const { role, token } of ALL_TOKENS) {
        const [own, other, list] = expected[role];
        expect((await h.http("GET", `/v1/jobs/${mine.body.id}`, { token })).status, role).toBe(own);
        const got = await h.http("GET", `/v1/jobs/${theirs.body.id}`, { token });
        expect(got.status, role).toBe(other);
        if (other === 404) expect(got.body.code).toBe("JOB_NOT_FOUND");
        const page = await h.http("GET", "/v1/jobs", { token });
        if (typeof list === "number") expect(page.status, role).toBe(list);
        else expect(page.body.jobs.map((j: { id: string }) => j.id).sort(), role).toEqual([...list].sort());
      }
    });

    it("records the enqueuing token's name as the owner; only an admin names another", async () => {
      const tokens = [
        { token: "root-token-0123456789", role: "admin" as const, name: "root" },
        { token: "api-token-0123456789", role: "producer" as const, name: "api" },
        // Unnamed: its owner is derived from the token.
        ...parseTokens("producer:anon-token-0123456789"),
        { token: "view-token-0123456789", role: "viewer" as const },
      ];
      const [root, api, anon] = tokens.map((t) => t.token) as [string, string, string];
      const anonOwner = `token:${createHash("sha256").update(anon).digest("hex").slice(0, 16)}`;
      const h = await startServer(backend, { auth: { tokens } });

      const one = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: api });
      expect(one.body.owner).toBe("api");
      const put = await h.http("PUT", "/v1/jobs/k", { body: { type: "t", uniqueKey: "u1" }, token: api });
      expect(put).toMatchObject({ status: 201, body: { id: "k", owner: "api" } });
      const bulk = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "t" }, { type: "t", owner: "api" }] },
        token: api,
      });
      expect(bulk.body.jobs.map((j: { owner: string }) => j.owner)).toEqual(["api", "api"]);
      const anonJob = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: anon });
      expect(anonJob.body.owner).toBe(anonOwner);
      expect((await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: root })).body.owner).toBe(
        "root",
      );
      // An admin may enqueue on behalf of another owner; a producer may not.
      const onBehalf = await h.http("POST", "/v1/jobs", { body: { type: "t", owner: "api" }, token: root });
      expect(onBehalf.body.owner).toBe("api");
      const before = await snapshot(h);
      for (const request of [
        { body: { type: "t", owner: "root" } },
        { body: { jobs: [{ type: "t" }, { type: "t", owner: anonOwner }] } },
      ]) {
        const refused = await h.http("POST", "/v1/jobs", { ...request, token: api });
        expect(refused).toMatchObject({ status: 403, body: { code: "FORBIDDEN" } });
      }
      expect(await snapshot(h)).toEqual(before);

      // The producer lists its own (the admin's on its behalf too); another owner's filter is 403.
      const listed = await h.http("GET", "/v1/jobs", { token: api });
      expect(listed.body.jobs).toHaveLength(5);
      expect(listed.body.jobs.every((j: { owner: string }) => j.owner === "api")).toBe(true);
      expect((await h.http("GET", "/v1/jobs?owner=api&limit=2", { token: api })).body.jobs).toHaveLength(2);
      expect((await h.http("GET", "/v1/jobs?owner=root", { token: api })).status).toBe(403);
      expect(
        (await h.http("GET", "/v1/jobs", { token: anon })).body.jobs.map((j: { id: string }) => j.id),
      ).toEqual([anonJob.body.id]);
      // Admin and viewer filter by owner as they like.
      expect((await h.http("GET", "/v1/jobs?owner=root", { token: root })).body.jobs).toHaveLength(1);
      expect(
        (await h.http("GET", `/v1/jobs?owner=${anonOwner}`, { token: tokens[3]!.token })).body.jobs,
      ).toHaveLength(1);

      // A duplicate of a job the producer may not read tells it only that the id or key is taken.
      const same = await h.http("PUT", "/v1/jobs/k", { body: { type: "t", payload: 2 }, token: anon });
      expect(same).toMatchObject({ status: 200, body: { id: "k", duplicate: true } });
      expect(Object.keys(same.body).sort()).toEqual(["duplicate", "id"]);
      const byKey = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "t", uniqueKey: "u1" }, { type: "t" }] },
        token: anon,
      });
      expect(byKey.body.jobs[0]).toEqual({ id: "k", duplicate: true });
      expect(byKey.body.jobs[1]).toMatchObject({ owner: anonOwner, duplicate: false });
      // Its owner, and the admin, see the whole job.
      expect((await h.http("PUT", "/v1/jobs/k", { body: { type: "t" }, token: api })).body).toMatchObject({
        id: "k",
        owner: "api",
        duplicate: true,
        type: "t",
      });
      expect((await h.http("PUT", "/v1/jobs/k", { body: { type: "t" }, token: root })).body.owner).toBe(
        "api",
      );
      // Another producer's debounce key is refused, not debounced onto: its job keeps its payload.
      const debounce = { key: "reindex", delayMs: 5_000 };
      const held = await h.http("POST", "/v1/jobs", {
        body: { type: "t", payload: { secret: "api" }, debounce },
        token: api,
      });
      const other = await h.http("POST", "/v1/jobs", {
        body: { type: "t", payload: { evil: true }, debounce: { ...debounce, delayMs: 60_000 } },
        token: anon,
      });
      expect(other).toMatchObject({ status: 400, body: { code: "INVALID_KEY" } });
      expect(JSON.stringify(other.body)).not.toContain(held.body.id);
      expect(await h.queue.get(held.body.id)).toMatchObject({ payload: { secret: "api" }, owner: "api" });
      // A producer's job others of its request wait for has no uniqueKey: another owner's job may
      // hold the key ("u1" is api's), and would stand for it.
      const untouched = await snapshot(h);
      for (const [path, request, code] of [
        [
          "/v1/flows",
          {
            jobs: [
              { ref: "n", type: "t", uniqueKey: "u1" },
              { ref: "m", type: "t", dependsOn: ["n"] },
            ],
          },
          "INVALID_FLOW",
        ],
        [
          "/v1/jobs",
          {
            jobs: [
              { id: "mine-1", type: "t", uniqueKey: "u1" },
              { type: "t", dependsOn: ["mine-1"] },
            ],
          },
          "INVALID_OPTION",
        ],
      ] as const) {
        const r = await h.http("POST", path, { body: request, token: anon });
        expect(r).toMatchObject({ status: 400, body: { code } });
      }
      expect(await snapshot(h)).toEqual(untouched);
    });

    it("refuses token names that cannot be owners; a hook's principal that breaks the rules is the server's fault: 500, logged", async () => {
      const b = await backend.setup();
      await expect(
        createServer({
          queue: b.queue,
          auth: { tokens: [{ token: "abcdefgh1", role: "producer", name: "a b" }] },
        }),
      ).rejects.toMatchObject({ code: "INVALID_OPTION" });
      const lines: Array<{ level: number; err?: { message: string } }> = [];
      const logger = pino({ level: "error" }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const broken: Record<string, unknown> = {
        nameless: { role: "producer" },
        bad: { role: "producer", name: "no/slashes" },
        superuser: { role: "superuser", name: "x" },
      };
      const h = await startServer(backend, {
        logger,
        auth: {
          authorize: (request) => {
            const who = String(request.headers["x-who"]);
            if (who in broken) return broken[who] as Principal;
            return who !== "undefined" ? { role: "producer", name: who } : null;
          },
        },
      });
      const said = {
        nameless: "a producer without a name",
        bad: 'a principal name "no/slashes"',
        superuser: 'an unknown role "superuser"',
      };
      for (const [who, detail] of Object.entries(said)) {
        lines.length = 0;
        const r = await h.http("POST", "/v1/jobs", { body: { type: "t" }, headers: { "x-who": who } });
        // The client is told nothing of the hook; the operator's log says what it returned.
        expect(r, who).toMatchObject({ status: 500, body: { code: "INTERNAL", message: "internal error" } });
        expect(JSON.stringify(r.body), who).not.toContain("authorize");
        expect(lines, who).toEqual([
          expect.objectContaining({
            level: 50,
            err: expect.objectContaining({
              message: expect.stringContaining(`auth.authorize() returned ${detail}`),
            }),
          }),
        ]);
      }
      expect((await h.queue.list()).jobs).toEqual([]);
      const made = await h.http("POST", "/v1/jobs", { body: { type: "t" }, headers: { "x-who": "hooked" } });
      expect(made.body.owner).toBe("hooked");
      const other = await h.http("GET", `/v1/jobs/${made.body.id}`, { headers: { "x-who": "someone" } });
      expect(other.status).toBe(404);
    });

    it("throttles only failures: valid tokens from the same address are let in, failures past the limit get 429", async () => {
      const h = await startServer(backend, {
        auth: { tokens: ALL_TOKENS, maxFailures: 3, rateLimitWindowMs: 60_000 },
      });
      for (let i = 0; i < 3; i++) {
        expect((await h.http("GET", "/v1/stats", { token: `guess-${i}-xxxxxxxx` })).status).toBe(401);
      }
      const limited = await h.http("GET", "/v1/stats", { token: "guess-3-xxxxxxxx" });
      expect(limited).toMatchObject({ status: 429, body: { code: "RATE_LIMITED" } });
      expect(limited.headers.get("retry-after")).toBe("60");
      // The same address (a proxy, a NAT, this host) with valid tokens: judged on the token alone.
      expect((await h.http("GET", "/v1/stats", { token: TOKENS.admin })).status).toBe(200);
      const lease = await h.http("POST", "/v1/lease", { body: { limit: 1 }, token: TOKENS.worker });
      expect(lease).toMatchObject({ status: 200, body: { jobs: [] } });
      // A valid token with the wrong role is still 403, not 429.
      expect((await h.http("POST", "/v1/prune", { token: TOKENS.viewer })).status).toBe(403);
      // No credential at all is not a guess: 401, never counted nor throttled.
      expect((await h.http("GET", "/v1/stats")).status).toBe(401);
      expect((await h.http("GET", "/v1/stats", { token: "guess-4-xxxxxxxx" })).status).toBe(429);
      await h.clock.advance(60_000);
      expect((await h.http("GET", "/v1/stats", { token: "guess-5-xxxxxxxx" })).status).toBe(401);
    });

    it("counts failures per client address as trustProxy finds it (X-Forwarded-For from a trusted proxy)", async () => {
      const auth = { tokens: ALL_TOKENS, maxFailures: 2 };
      const behind = await startServer(backend, { auth, trustProxy: "127.0.0.1" });
      const from = (ip: string) => ({ token: "guess-xxxxxxxx", headers: { "x-forwarded-for": ip } });
      for (let i = 0; i < 2; i++)
        expect((await behind.http("GET", "/v1/stats", from("203.0.113.7"))).status).toBe(401);
      expect((await behind.http("GET", "/v1/stats", from("203.0.113.7"))).status).toBe(429);
      expect((await behind.http("GET", "/v1/stats", from("203.0.113.8"))).status).toBe(401);
      // IPv6: one /64 is one client.
      for (const ip of ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9"]) {
        expect((await behind.http("GET", "/v1/stats", from(ip))).status).toBe(401);
      }
      expect((await behind.http("GET", "/v1/stats", from("2001:db8:1:2::77"))).status).toBe(429);
      // Without trustProxy the header is the client's word, not believed: every guess is 127.0.0.1's.
      const direct = await startServer(backend, { auth });
      for (let i = 0; i < 2; i++)
        expect((await direct.http("GET", "/v1/stats", from(`198.51.100.${i}`))).status).toBe(401);
      expect((await direct.http("GET", "/v1/stats", from("198.51.100.9"))).status).toBe(429);
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

describe("the failed-login limiter", () => {
  const request = (ip: string, token?: string) =>
    ({ ip, headers: token ? { authorization: `Bearer ${token}` } : {} }) as unknown as FastifyRequest;

  it("keys IPv4 (also IPv4-mapped) by address and IPv6 by /64", () => {
    expect(addressKey("192.0.2.1")).toBe("192.0.2.1");
    expect(addressKey("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(addressKey("2001:db8:a:b:1:2:3:4")).toBe("2001:db8:a:b::/64");
    expect(addressKey("2001:0db8:000a:000b::9")).toBe("2001:db8:a:b::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });

  it("remembers at most MAX_TRACKED_ADDRESSES addresses, and forgets each when its window ends", async () => {
    const clock = new ManualClock(0);
    const auth = new Authenticator({ tokens: ALL_TOKENS, maxFailures: 1, rateLimitWindowMs: 1000 }, clock);
    const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const n = MAX_TRACKED_ADDRESSES + 500;
    for (let i = 0; i < n; i++) {
      await expect(auth.authenticate(request(ipOf(i), "wrong-token"))).rejects.toMatchObject({
        code: "UNAUTHORIZED",
      });
    }
    expect(auth.trackedAddresses).toBe(MAX_TRACKED_ADDRESSES);
    // The newest are remembered (their next failure is throttled); the oldest were forgotten.
    await expect(auth.authenticate(request(ipOf(n - 1), "wrong-token"))).rejects.toMatchObject({
      code: "RATE_LIMITED",
    });
    await expect(auth.authenticate(request(ipOf(0), "wrong-token"))).rejects.toMatchObject({
      code: "UNAUTHORIZED",
    });
    // A valid token from a throttled address is let in.
    await expect(auth.authenticate(request(ipOf(n - 1), TOKENS.admin))).resolves.toMatchObject({
      role: "admin",
    });
    await clock.advance(1000);
    await expect(auth.authenticate(request(ipOf(n - 1), "wrong-token"))).rejects.toMatchObject({
      code: "UNAUTHORIZED",
    });
    expect(auth.trackedAddresses).toBe(1);
  });

  it("refuses limits that are not positive integers", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => new Authenticator({ maxFailures: bad }, new ManualClock(0))).toThrow(/auth.maxFailures/);
      expect(() => new Authenticator({ rateLimitWindowMs: bad }, new ManualClock(0))).toThrow(
        /auth.rateLimitWindowMs/,
      );
    }
  });
});

describe("token configuration", () => {
  it("reads role:token lists and JSON", () => {
    // Unnamed: a name here would change with the list's order, and it names the jobs' owner.
    expect(parseTokens("admin:abcdefgh1, worker:ijklmnop2\n# comment\nviewer:qrstuvwx3")).toEqual([
      { role: "admin", token: "abcdefgh1" },
      { role: "worker", token: "ijklmnop2" },
      { role: "viewer", token: "qrstuvwx3" },
    ]);
    expect(parseTokens('[{"token":"abcdefgh1","role":"producer","name":"api"}]')).toEqual([
      { token: "abcdefgh1", role: "producer", name: "api" },
    ]);
    expect(() => parseTokens("root:abcdefgh1")).toThrow(/role/);
    // JSON that is no list of entries is refused in errand's words, not as a TypeError.
    for (const text of [
      "[null]",
      "[1]",
      '["admin:abcdefgh1"]',
      "[[]]",
      '[{"token":"abcdefgh1","role":"admin"}] x',
    ]) {
      expect(() => parseTokens(text), text).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    }
  });
});
