/**
 * Hostile options to `createServer`: refused with an ErrandError of a client code, or a server that
 * becomes ready, answers, enforces the auth it was given and closes with no error. Before, a null
 * `push`, a `trustProxy` Fastify could not compile, a non-array `types` or a token entry of null
 * threw TypeErrors; a string `dashboard`, a `push.fetch` that was no function and an `auth` with a
 * mistyped key (`{ token }`) were taken, the last serving with no auth at all; and a hop count
 * for `trustProxy` was taken while Fastify 5 trusts no proxy for it.
 */
import type { EventEmitter } from "node:events";
import { isIP } from "node:net";
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createServer } from "../../src/server/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import { assertPrototypeClean } from "./checks.js";
import {
  assertClientError,
  hostileDuration,
  hostileOptions,
  hostileString,
  hostileValue,
  outcome,
  prototypeKeys,
  wrongType,
} from "./hostile.js";

const RUNS = 200;
const TOKEN = "admin-token-0123456789";
/** The hook of valid options: it knows no one. */
const refuseAll = () => null;
const silent = pino({ level: "silent" });

const tokenEntry = hostileOptions(
  {
    token: fc.constantFrom(TOKEN, "v".repeat(4096), "~!#$%&'*+-.^_`|"),
    role: fc.constantFrom("admin", "viewer", "worker", "producer"),
    name: fc.constantFrom("api", "team-a"),
  },
  (key) =>
    key === "token"
      ? fc.oneof(
          fc.constantFrom("short", "with space", "tab\there", "é-not-ascii", "x".repeat(4097)),
          hostileString,
        )
      : hostileValue,
).map((o) => ({ token: TOKEN, role: "admin", ...o }));

const auth = hostileOptions(
  {
    tokens: fc.oneof(fc.array(tokenEntry, { maxLength: 3 }), fc.constant([])),
    authorize: fc.constant(refuseAll),
    maxFailures: fc.integer({ min: 1, max: 100 }),
    rateLimitWindowMs: fc.integer({ min: 1, max: 3_600_000 }),
  },
  (key) =>
    key === "tokens" ? fc.oneof(fc.array(hostileValue, { maxLength: 2 }), hostileValue) : hostileValue,
);

const push = hostileOptions(
  {
    concurrency: fc.integer({ min: 1, max: 100 }),
    pollIntervalMs: fc.integer({ min: 1, max: 60_000 }),
    leaseMs: fc.integer({ min: 1, max: 3_600_000 }),
    fetch: fc.constant(globalThis.fetch),
  },
  (key) => (key.endsWith("Ms") ? fc.oneof(hostileDuration, hostileValue) : hostileValue),
);

const trustProxy = fc.oneof(
  fc.constantFrom(
    true,
    false,
    "127.0.0.1",
    "10.0.0.0/8, loopback",
    ["::1", "fe80::/10"],
    (a: string) => a === "::1",
  ),
  fc.constantFrom(
    1,
    0,
    -1,
    "",
    "127.0.0.1,",
    "10.0.0.0/99",
    "2",
    "127.1",
    "0x7f.1",
    "not an ip",
    [1],
    [""],
    ["10.0.0.1/255.0.255.0"],
  ),
  hostileString,
  hostileValue,
);

const serverOptions = fc.oneof(
  {
    arbitrary: hostileOptions(
      {
        auth,
        push,
        trustProxy,
        dashboard: fc.boolean(),
        maintenance: fc.boolean(),
        bodyLimit: fc.integer({ min: 1, max: 10_000_000 }),
        typesRefreshMs: fc.integer({ min: 1, max: 60_000 }),
        sweepIntervalMs: fc.integer({ min: 1, max: 60_000 }),
        pruneIntervalMs: fc.integer({ min: 1, max: 60_000 }),
        leasePollMs: fc.integer({ min: 1, max: 60_000 }),
        allowedHosts: fc.constantFrom(["errand.example.com"], ["a.example:8443", "::1"]),
        types: fc.constantFrom([], [{ type: "server-prop", maxAttempts: 3 }]),
        logger: fc.constantFrom(false, silent),
      },
      (key) => (key.endsWith("Ms") ? fc.oneof(hostileDuration, hostileValue) : hostileValue),
    ),
    weight: 8,
  },
  { arbitrary: wrongType, weight: 1 },
);

const [backend] = selectedBackends({ conformance: true }).filter((b) => b.name === "sqlite");

/** How many listeners each of the queue's events has. */
function listeners(emitter: EventEmitter): Record<string, number> {
  return Object.fromEntries(emitter.eventNames().map((name) => [String(name), emitter.listenerCount(name)]));
}

/** The auth the options ask for: any token given, or a hook; and whether the hook is a hostile one. */
function authAskedFor(o: unknown): { enabled: boolean; admin: boolean; ownHook: boolean } {
  const a = (o as { auth?: { tokens?: Array<{ token?: unknown; role?: unknown }>; authorize?: unknown } })
    .auth;
  const tokens = Array.isArray(a?.tokens) ? a.tokens : [];
  return {
    enabled: tokens.length > 0 || typeof a?.authorize === "function",
    admin: tokens.some((t) => t.token === TOKEN && t.role === "admin"),
    ownHook: typeof a?.authorize === "function" && a.authorize !== refuseAll,
  };
}

describe.runIf(backend)("hostile options to createServer", () => {
  it(
    "refuses them with a client code, or serves with the auth it was given and closes cleanly",
    async () => {
      const b = await backend!.setup();
      await fc.assert(
        fc.asyncProperty(
          serverOptions,
          catalogued("createServer", async (o: unknown) => {
            const proto = prototypeKeys();
            const listening = listeners(b.queue);
            const made = await outcome(() =>
              createServer(
                typeof o === "object" && o !== null && !Array.isArray(o)
                  ? ({ queue: b.queue, ...o } as never)
                  : (o as never),
              ),
            );
            assertPrototypeClean(proto, "createServer");
            if (!made.ok) {
              assertClientError(made.error, "createServer");
              // A refusal leaves nothing behind on the queue (a listener per refusal would leak).
              expect(listeners(b.queue), "listeners on the queue after a refusal").toEqual(listening);
              return;
            }
            const app = made.value;
            const trusted = (o as { trustProxy?: unknown }).trustProxy;
            const entries =
              typeof trusted === "string" ? trusted.split(",") : Array.isArray(trusted) ? trusted : [];
            for (const entry of entries as string[]) {
              const address = entry.split("/", 1)[0]!.trim();
              expect(
                isIP(address) !== 0 || ["loopback", "linklocal", "uniquelocal"].includes(address),
                `trustProxy took ${JSON.stringify(entry)}, no address written out`,
              ).toBe(true);
            }
            try {
              await app.ready();
              const asked = authAskedFor(o);
              const anonymous = await app.inject({ method: "GET", url: "/v1/stats" });
              if (asked.ownHook) {
                // A hook's principal that is no principal is the server's fault, 500 (auth.test).
                expect([401, 500], "no credential, a hostile authorize hook").toContain(anonymous.statusCode);
              } else {
                expect(anonymous.statusCode, "no credential").toBe(asked.enabled ? 401 : 200);
              }
              if (asked.admin) {
                const admin = await app.inject({
                  method: "GET",
                  url: "/v1/stats",
                  headers: { authorization: `Bearer ${TOKEN}` },
                });
                expect(admin.statusCode, "the admin token").toBe(200);
              }
            } finally {
              await app.close();
            }
            expect(listeners(b.queue), "listeners on the queue after close").toEqual(listening);
          }),
        ),
        fcParams(RUNS),
      );
    },
    propertyTimeout(RUNS, 60_000),
  );
});
