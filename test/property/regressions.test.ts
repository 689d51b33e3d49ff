/**
 * The shrunk counterexamples of the property tests that showed bugs outside issue 12's list, each
 * as a plain example on every store. Each test names the property that found it. Every call here
 * is a caller's mistake, so the rule is the one of the properties: a typed ErrandError with a
 * client code, and the store exactly as it was (or, for the replay, the semantics the model holds).
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { openQueue, type Queue } from "../../src/queue.js";
import { createServer } from "../../src/server/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { assertPrototypeClean, storeSnapshot } from "./checks.js";
import { assertClientError, deepObject, outcome, prototypeKeys } from "./hostile.js";
import { SEEDS, seedStore } from "./seed.js";

/** Asserts that `call` is refused with a client code and leaves the store as it was. */
async function refused(queue: Queue, what: string, call: () => unknown): Promise<void> {
  const proto = prototypeKeys();
  const before = await storeSnapshot(queue);
  const result = await outcome(call);
  expect(result.ok, `${what} was accepted`).toBe(false);
  if (!result.ok) assertClientError(result.error, what);
  expect(await storeSnapshot(queue), `${what} changed the store`).toEqual(before);
  assertPrototypeClean(proto, what);
}

for (const backend of selectedBackends({ conformance: true })) {
  describe(`regressions found by the property tests on ${backend.name}`, () => {
    // hostile-library: "enqueue stores a well-formed job …", shrunk to enqueue(Symbol("s"), …): SQLite threw
    // a raw SqliteError (NOT NULL on errand_job.type), PostgreSQL STORE_ERROR, Redis stored a job without
    // a type; enqueue(null, …) and enqueueBatch([""]) threw TypeErrors. A "definition" defineJob never
    // made passes its type unchecked.
    it("refuses a job that is neither a type name nor a definition, storing nothing", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue } = bundle;
      for (const job of [
        Symbol("s"),
        null,
        undefined,
        0,
        {},
        { type: 42 },
        { type: "__proto__" },
        { type: "a\u0000" },
      ]) {
        const what = `enqueue(${String(typeof job === "symbol" ? "Symbol" : JSON.stringify(job))})`;
        await refused(queue, what, () => queue.enqueue(job as never, {}));
        await refused(queue, `enqueueMany: ${what}`, () => queue.enqueueMany(job as never, [{}]));
        await refused(queue, `enqueueBatch: ${what}`, () =>
          queue.enqueueBatch([{ job: job as never, payload: {} }]),
        );
      }
      for (const item of ["", null, 1, []]) {
        await refused(queue, `enqueueBatch([${JSON.stringify(item)}])`, () =>
          queue.enqueueBatch([item as never]),
        );
      }
    });

    // hostile-library: "lease refuses hostile …", shrunk to lease({ workerId: -1.5 }) (stored as the text
    // "-1.5"), lease({ workerId: { __proto__: … } }) (SQLite: RangeError "Too few parameter values"; Redis:
    // stored "[object Object]"), lease({ types: "t" }) (TypeError: options.types?.map is not a function)
    // and lease({ maxWeight: -1e308 }) (unchecked: PostgreSQL STORE_ERROR "invalid input syntax for
    // type bigint", the other stores lease nothing).
    it("refuses a lease whose workerId is not text or whose types are not a list, leasing nothing", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue } = bundle;
      for (const options of [
        { workerId: -1.5 },
        { workerId: JSON.parse('{"__proto__":{"pending":1}}') },
        { workerId: ["w"] },
        { types: "seed" },
        { types: [1] },
        { queues: "default" },
        { maxWeight: -1e308 },
        { weightCap: "1" },
      ]) {
        await refused(queue, `lease(${JSON.stringify(options)})`, () => queue.lease(options as never));
      }
    });

    // hostile-library: "schedule refuses hostile …", shrunk to schedule("valueOf", { cron: "30 2 29 2 *" }):
    // TypeError "Cannot read properties of undefined (reading 'type')".
    it("refuses a schedule without a job, storing nothing", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue } = bundle;
      await refused(queue, "schedule without job", () =>
        queue.schedule("no-job", { cron: "0 * * * *", payload: null } as never),
      );
      await refused(queue, "schedule with job null", () =>
        queue.schedule("no-job", { cron: "0 * * * *", job: null, payload: null } as never),
      );
    });

    // hostile-library, several properties: the message of a refusal is built with JSON.stringify or
    // String() of the refused value, which throws for a BigInt (TypeError), a cycle (TypeError),
    // 10,000 levels of nesting (RangeError) and a null-prototype object (TypeError "Cannot convert
    // object to primitive value"), so the caller gets that crash instead of the refusal.
    it("refuses values whose description would throw (BigInt, deep nesting, null prototype) with a typed error", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue } = bundle;
      const bare = Object.create(null) as object;
      const deep = deepObject(10_000);
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      for (const [what, call] of [
        ["enqueue delayMs 10n", () => queue.enqueue("t", {}, { delayMs: 10n as never })],
        ["enqueue delayMs deep", () => queue.enqueue("t", {}, { delayMs: deep as never })],
        ["enqueue delayMs cyclic", () => queue.enqueue("t", {}, { delayMs: cyclic as never })],
        ["enqueue weight null-prototype", () => queue.enqueue("t", {}, { weight: bare as never })],
        ["enqueue delivery null-prototype", () => queue.enqueue("t", {}, { delivery: bare as never })],
        ["reschedule delayMs deep", () => queue.reschedule(SEEDS.scheduled, { delayMs: deep as never })],
        [
          "heartbeat leaseMs 10n",
          () => queue.heartbeat({ id: SEEDS.active, attempt: 2 }, { leaseMs: 10n as never }),
        ],
        ["schedule cron 10n", () => queue.schedule("s", { cron: 10n as never, job: "t", payload: null })],
        ["schedule cron deep", () => queue.schedule("s", { cron: deep as never, job: "t", payload: null })],
        [
          "complete attempt null-prototype",
          () => queue.complete({ id: SEEDS.active, attempt: bare as never }),
        ],
      ] as const) {
        await refused(queue, what, call);
      }
      for (const [what, options] of [
        ["defineJob concurrency null-prototype", { concurrency: bare }],
        ["defineJob timeoutMs 10n", { timeoutMs: 10n }],
        ["defineJob timeoutMs deep", { timeoutMs: deep }],
      ] as const) {
        await refused(queue, what, () => defineJob({ type: "t", handler: () => null, ...options } as never));
      }
    });

    // The same for a server's options: allowedHosts: [10n] threw JSON.stringify's TypeError.
    it("createServer refuses allowedHosts it cannot describe with a typed error", async () => {
      const { queue } = await backend.setup();
      for (const entry of [10n, Object.create(null)]) {
        const result = await outcome(() => createServer({ queue, allowedHosts: [entry] as never }));
        expect(result.ok, "createServer with a hostile allowedHosts entry").toBe(false);
        if (!result.ok) assertClientError(result.error, "createServer allowedHosts");
      }
    });

    // hostile-library: "fail records whatever a handler threw …", shrunk to fail(current attempt,
    // { __proto__: null, message: <throwing getter> }): the error entry is built with JSON.stringify and
    // then String() of the value, and String() of a null-prototype object throws, so fail() threw a
    // TypeError and the job stayed active: the failure was lost (a Worker's handler can throw this).
    it("records the failure of a handler that threw a value JSON and String() cannot describe", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue("t", null, { id: "throws-oddly" });
      const [job] = await queue.lease({ types: ["t"] });
      const thrown = Object.assign(Object.create(null) as object, { code: 10n });
      expect(await queue.fail(job!, thrown)).toBe(true);
      const stored = await queue.get("throws-oddly");
      expect(stored?.state).toBe("pending");
      expect(stored?.errors).toHaveLength(1);
      expect(typeof stored?.errors[0]?.message).toBe("string");
    });

    // hostile-library: "complete …", "heartbeat …" and the others, shrunk to complete(null, …): TypeError
    // "Cannot read properties of null (reading 'id')"; and heartbeat(job, null): "(reading 'leaseMs')".
    it("refuses a report whose attempt reference or options are not objects", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue } = bundle;
      const active = (await queue.get(SEEDS.active)) as Job;
      for (const ref of [null, undefined, "seed-active", 2]) {
        const r = ref as never;
        await refused(queue, `complete(${String(ref)})`, () => queue.complete(r, null));
        await refused(queue, `fail(${String(ref)})`, () => queue.fail(r, new Error("x")));
        await refused(queue, `heartbeat(${String(ref)})`, () => queue.heartbeat(r));
        await refused(queue, `checkpoint(${String(ref)})`, () => queue.checkpoint(r, {}));
        await refused(queue, `release(${String(ref)})`, () => queue.release(r));
      }
      await refused(queue, "heartbeat(job, null)", () => queue.heartbeat(active, null as never));
      await refused(queue, "fail(job, e, null)", () => queue.fail(active, new Error("x"), null as never));
    });

    // hostile-library: "openQueue refuses hostile options …", shrunk to openQueue({ store, jobs: 100 })
    // (TypeError: not iterable), openQueue({ store, clock: "tomorrow" }) and openQueue(new Map()) (accepted;
    // the first enqueue then throws "this.clock.now is not a function" / reads enqueueMany of undefined).
    it("openQueue refuses options it cannot work with, instead of a queue that crashes later", async () => {
      const bundle = await backend.setup();
      await seedStore(bundle);
      const { queue, store } = bundle;
      for (const [what, options] of [
        ["no store", {}],
        ["a Map", new Map([["store", store]])],
        ["store null", { store: null }],
        ["jobs 100", { store, jobs: 100 }],
        ["jobs [null]", { store, jobs: [null] }],
        ["clock 'tomorrow'", { store, clock: "tomorrow" }],
        ["clock {}", { store, clock: {} }],
        ["random 0", { store, random: 0 }],
        ["retention null-prototype", { store, retention: { dead: Object.create(null) } }],
      ] as const) {
        await refused(queue, `openQueue: ${what}`, () => openQueue(options as never));
      }
    });

    // model: "diverges from the model in no command sequence" (a long run), shrunk to
    // enqueue({ expiresInMs: 1, … }), cancel(job #0), replay(job #0): the replay had no expiry at all
    // (issue 12, item 9). A replay keeps its original's expiry rule; a replay of an expired job never runs.
    it("replays a job with an expiry under an expiry, and an expired job so that it never runs", async () => {
      const { queue, clock } = await backend.setup();
      const cancelled = await queue.enqueue("t", null, { expiresInMs: 1 });
      await queue.cancel(cancelled.id);
      const copy = await queue.replay(cancelled.id);
      expect(copy.expiresAt, "a replay of a job with an expiry").not.toBeNull();
      expect((await queue.get(copy.id))?.expiresAt, "as stored").not.toBeNull();

      const expired = await queue.enqueue("t", null, { delayMs: 10_000, expiresInMs: 1000 });
      await clock.advance(2000);
      await queue.sweep();
      expect((await queue.get(expired.id))?.state).toBe("expired");
      const again = await queue.replay(expired.id);
      await clock.advance(1);
      await queue.sweep();
      const leased = await queue.lease({ types: ["t"], limit: 10 });
      expect(
        leased.map((j) => j.id),
        "a replay of an expired job ran",
      ).not.toContain(again.id);
      expect((await queue.get(again.id))?.state, "the replay of an expired job").toBe("expired");
    });
  });
}
