/**
 * Hostile options to the HTTP client and the remote worker.
 *
 * `new ErrandClient`: refused with an ErrandError of a client code, or a client whose calls resolve
 * or reject with an ErrandError, never a TypeError from fetch or a timer. Before, it checked
 * nothing: a URL fetch cannot use, a token with a line break or a NaN timeout threw TypeErrors (or
 * a misleading UNAVAILABLE) on every request.
 *
 * `new RemoteWorker`: the property is that the constructor either refuses them
 * with an ErrandError of a client code, or makes a worker that leases, runs and completes a job
 * from a live server with no error at all. Before it held, a RemoteWorker took any `waitMs`,
 * `retryDelayMs`, `workerId` or queue name, and a lease past the server's bounds, and then failed
 * every lease request (400) for as long as it ran; and it took objects that only looked like job
 * definitions.
 */
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { ManualClock, systemClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import { MAX_LEASE_WAIT_MS, MAX_REMOTE_LEASE_MS } from "../../src/worker/runner-options.js";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "../e2e/harness.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import { assertPrototypeClean, isStorableText } from "./checks.js";
import {
  assertClientError,
  describeError,
  hostileDuration,
  hostileOptions,
  hostileString,
  hostileValue,
  outcome,
  own,
  prototypeKeys,
  wrongType,
} from "./hostile.js";

const RUNS = 40;
const silent = pino({ level: "silent" });
const def = defineJob({ type: "remote-prop", queue: "remote-prop", handler: async () => "done" });
const other = defineJob({ type: "remote-other", queue: "elsewhere", handler: async () => null });
const lookAlike = { type: "remote-prop", queue: "remote-prop", handler: async () => null };

const duration = (max: number) =>
  fc.oneof(fc.integer({ min: 0, max }), fc.constantFrom("1s", "250ms", "2m", "1h30m"));
const options = fc.oneof(
  {
    arbitrary: hostileOptions(
      {
        jobs: fc.constantFrom([def], [def, other]),
        queues: fc.constantFrom(["remote-prop"], own([["remote-prop", 2]]), ["remote-prop", "elsewhere"]),
        concurrency: fc.integer({ min: 1, max: 50 }),
        prefetch: fc.integer({ min: 0, max: 20 }),
        leaseMs: duration(MAX_REMOTE_LEASE_MS),
        heartbeatMs: duration(5_000),
        waitMs: duration(MAX_LEASE_WAIT_MS),
        retryDelayMs: duration(5_000),
        workerId: fc.constantFrom("remote-😀", "w".repeat(255), "toString"),
        clock: fc.constantFrom(systemClock, new ManualClock(0)),
        logger: fc.constant(silent),
      },
      (key) =>
        key === "jobs"
          ? fc.oneof(
              fc.constantFrom([], [lookAlike], [def, def], [def, null], [[[]]], "remote-prop"),
              hostileValue,
            )
          : key.endsWith("Ms")
            ? fc.oneof(hostileDuration, hostileValue)
            : hostileValue,
    ).map((o) => ({ jobs: [def], logger: silent, ...o })),
    weight: 8,
  },
  { arbitrary: wrongType, weight: 1 },
);

const [backend] = selectedBackends({ conformance: true }).filter((b) => b.name === "sqlite");

/** Stands for the live server's URL in generated options. */
const BASE = "<base>";
const clientOptions = fc.oneof(
  {
    arbitrary: hostileOptions(
      {
        url: fc.constantFrom(BASE, `${BASE}/`, `${BASE}//`),
        token: fc.constantFrom("worker-token-0123456789", "a b c", "~".repeat(4096)),
        timeoutMs: fc.oneof(fc.integer({ min: 1_000, max: 60_000 }), fc.constantFrom("30s", "1m")),
        fetch: fc.constant((input: string | URL | Request, init?: RequestInit) => fetch(input, init)),
      },
      (key) =>
        key === "url"
          ? fc.oneof(
              fc.constantFrom(
                "ftp://127.0.0.1/",
                "http://user:pw@127.0.0.1:1",
                "http://127.0.0.1:1/?x=1",
                "http://127.0.0.1:1/#f",
                "http:// 127.0.0.1",
                "127.0.0.1:8080",
                `http://${"h".repeat(2100)}`,
              ),
              hostileString,
              hostileValue,
            )
          : key === "timeoutMs"
            ? fc.oneof(hostileDuration, hostileValue)
            : key === "token"
              ? fc.oneof(
                  fc.constantFrom("", " lead", "trail ", "line\nbreak", "é", "x".repeat(4097)),
                  hostileString,
                )
              : hostileValue,
    ).map((o) => ({ url: BASE, ...o })),
    weight: 8,
  },
  { arbitrary: fc.oneof(wrongType, hostileString), weight: 1 },
);

/** `o` with the live server's URL in place of {@link BASE}. */
function withBase(o: unknown, base: string): unknown {
  if (typeof o === "string") return o.replace(BASE, base);
  if (typeof o !== "object" || o === null || Array.isArray(o)) return o;
  const url = (o as { url?: unknown }).url;
  return typeof url === "string" ? { ...(o as object), url: url.replace(BASE, base) } : o;
}

describe("new ErrandClient, by example", () => {
  it("refuses what every request would have failed on, naming the option", () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ url: 42 }, /url must be an http\(s\) URL/],
      ["127.0.0.1:8080", /url is not a URL/],
      ["ftp://127.0.0.1/", /url must be http: or https:/],
      ["http://user:pw@127.0.0.1:8080", /no credentials, query or fragment/],
      ["http://127.0.0.1:8080/?x=1", /no credentials, query or fragment/],
      [{ url: "http://127.0.0.1:8080", token: "a\nb" }, /token must be/],
      [{ url: "http://127.0.0.1:8080", token: "" }, /token must be/],
      [{ url: "http://127.0.0.1:8080", timeoutMs: Number.NaN }, /timeoutMs/],
      [{ url: "http://127.0.0.1:8080", timeoutMs: 0 }, /timeoutMs must be at least 1 ms/],
      [{ url: "http://127.0.0.1:8080", fetch: "fetch" }, /fetch must be a function/],
      [{ url: "http://127.0.0.1:8080", tiemoutMs: 5 }, /did you mean "timeoutMs"/],
    ];
    for (const [options, message] of cases) {
      let error: unknown;
      try {
        new ErrandClient(options as never);
      } catch (e) {
        error = e;
      }
      expect(error, String(message)).toBeInstanceOf(ErrandError);
      expect((error as ErrandError).message).toMatch(message);
    }
    // A path prefix (a server behind a proxy) and durations are taken.
    expect(new ErrandClient({ url: "https://example.com/errand/", timeoutMs: "5s" }).url).toBe(
      "https://example.com/errand",
    );
  });
});

describe.runIf(backend)("hostile options to new ErrandClient", () => {
  it(
    "refuses them with a client code, or makes a client whose calls resolve or fail with an ErrandError",
    async () => {
      const h = await startServer(backend!);
      await fc.assert(
        fc.asyncProperty(
          clientOptions,
          catalogued("new ErrandClient", async (given: unknown) => {
            const o = withBase(given, h.base);
            const proto = prototypeKeys();
            const made = await outcome(() => new ErrandClient(o as never));
            assertPrototypeClean(proto, "new ErrandClient");
            if (!made.ok) {
              assertClientError(made.error, "new ErrandClient");
              return;
            }
            const used = await outcome(() => made.value.stats());
            if (!used.ok) {
              expect(
                used.error,
                `a client of ${describeError(o)}: ${describeError(used.error)}`,
              ).toBeInstanceOf(ErrandError);
            } else if (typeof o === "object" && o !== null && (o as { url?: unknown }).url === h.base) {
              expect(used.value.states).toBeDefined();
            }
          }),
        ),
        fcParams(RUNS),
      );
    },
    propertyTimeout(RUNS, 60_000),
  );
});

describe.runIf(backend)("hostile options to new RemoteWorker", () => {
  it(
    "refuses them with a client code, or makes a worker that leases and completes with no error",
    async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          options,
          catalogued("new RemoteWorker", async (o: unknown) => {
            // A server of its own: a lease request a worker before this one left waiting could
            // otherwise take this run's job (fetch may abort it before the server sees it go).
            const h = await startServer(backend!);
            const client = new ErrandClient({ url: h.base });
            const proto = prototypeKeys();
            const made = await outcome(() => new RemoteWorker(client, o as never));
            assertPrototypeClean(proto, "new RemoteWorker");
            if (!made.ok) {
              assertClientError(made.error, "new RemoteWorker");
              return;
            }
            const worker = made.value;
            expect(isStorableText(worker.workerId), "RemoteWorker: workerId").toBe(true);
            const errors: string[] = [];
            worker.on("error", (e) => errors.push(describeError(e)));
            const id = `job-${n++}`;
            const done = new Promise<void>((resolve) => {
              worker.on("completed", (job) => job.id === id && resolve());
              // A refused lease request is an error event: the property fails on it below.
              worker.on("error", () => resolve());
            });
            await h.queue.enqueue(def, {}, { id });
            await worker.start();
            await done;
            await worker.close({ graceMs: 0 });
            expect(errors, `RemoteWorker(${String(Object.keys(o as object))}): errors while it ran`).toEqual(
              [],
            );
            expect((await h.queue.get(id))?.state).toBe("completed");
            await h.app.close();
          }),
        ),
        fcParams(RUNS),
      );
    },
    propertyTimeout(RUNS, 60_000),
  );
});

/** Every call of the client but `lease` (its long poll would wait out a hostile `waitMs`). */
const CLIENT_CALLS = [
  "enqueue",
  "enqueueMany",
  "enqueueManyIds",
  "enqueueBatch",
  "enqueueBatchIds",
  "enqueueFlow",
  "get",
  "list",
  "dependencies",
  "dependents",
  "cancel",
  "retry",
  "replay",
  "reschedule",
  "pauseQueue",
  "resumeQueue",
  "schedule",
  "unschedule",
  "setType",
  "getType",
  "deleteType",
  "complete",
  "fail",
  "failWithState",
  "heartbeat",
  "heartbeatMany",
  "checkpoint",
  "snooze",
  "release",
  "report",
] as const;
const clientArg = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "remote-prop",
      "job-1",
      ".",
      "..",
      "",
      "a/b",
      { id: "job-1", attempt: 1 },
      { id: "..", attempt: 1 },
      [{ id: "job-1", attempt: 1 }],
      [null],
      [],
      {},
      def,
      lookAlike,
    ),
    weight: 2,
  },
  { arbitrary: hostileString, weight: 1 },
  { arbitrary: hostileValue, weight: 2 },
);

describe.runIf(backend)("hostile arguments to ErrandClient's calls", () => {
  it(
    "resolve, or reject with an ErrandError of a client code, never a TypeError",
    async () => {
      const h = await startServer(backend!, {
        auth: { tokens: [{ token: "admin-token-0123456789", role: "admin" }] },
      });
      const client = new ErrandClient({ url: h.base, token: "admin-token-0123456789" });
      await h.queue.enqueue(def, {}, { id: "job-1" });
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...CLIENT_CALLS),
          fc.array(clientArg, { maxLength: 3 }),
          catalogued("ErrandClient calls", async (method: string, args: unknown[]) => {
            const proto = prototypeKeys();
            const call = (client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
              method
            ]!;
            const done = await outcome(() => call.apply(client, args));
            assertPrototypeClean(proto, `client.${method}`);
            // fast-check prints the arguments; String() of some (10,000 nested arrays) would overflow.
            if (!done.ok) assertClientError(done.error, `client.${method}`);
          }),
        ),
        fcParams(RUNS * 5),
      );
    },
    propertyTimeout(RUNS * 5, 60_000),
  );
});
