/**
 * Hostile options to `new RemoteWorker`: the property is that the constructor either refuses them
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
