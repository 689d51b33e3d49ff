/**
 * Names that are also keys of `Object.prototype` (issue 12, prototype pollution). A queue or type
 * named `toString`, `hasOwnProperty`, `valueOf` or `__defineGetter__` is a valid name and works like
 * any other: enqueued, counted under its own name, capped, paused, listed. The three reserved
 * names (`__proto__`, `constructor`, `prototype`) are refused at the edge with the name's code and
 * nothing is stored. A job that holds a reserved name anyway (written by an older version, or
 * straight into the database) is counted under that name like any other, and no read of it ever
 * adds a property to `Object.prototype`.
 */
import fc from "fast-check";
import { describe, expect, it, onTestFinished } from "vitest";
import { DEFAULT_BACKOFF } from "../../src/backoff.js";
import { defineJob } from "../../src/define-job.js";
import { nameRecord } from "../../src/name-record.js";
import type { Queue } from "../../src/queue.js";
import type { NewJob } from "../../src/store/store.js";
import { NAME_PATTERN, RESERVED_NAMES } from "../../src/validation.js";
import { newJob } from "../helpers/new-job.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

/** A variable, so the key is read as a key (the linter takes `x.__proto__` for the accessor). */
export const PROTO = "__proto__";

/** Valid names that a `{}` finds on its prototype. */
const PROTOTYPE_NAMES = ["toString", "hasOwnProperty", "valueOf", "__defineGetter__"];

/** Every own key of Object.prototype, and of each object or function it holds (where `x.pending = 1` lands). */
function prototypeKeys(): string[] {
  const out: string[] = [];
  for (const name of Object.getOwnPropertyNames(Object.prototype)) {
    out.push(name);
    // The descriptor, not Object.prototype[name]: reading __proto__ through its getter is not needed.
    const value: unknown = Object.getOwnPropertyDescriptor(Object.prototype, name)?.value;
    if (typeof value === "function" || (typeof value === "object" && value !== null)) {
      for (const key of Object.getOwnPropertyNames(value)) out.push(`${name}.${key}`);
    }
  }
  return out.sort();
}

/**
 * Snapshots {@link prototypeKeys} now; the returned check asserts nothing was added since. Whatever
 * was added is removed when the test ends, so one polluting test does not break the rest.
 */
export function guardPrototype(): () => void {
  const before = prototypeKeys();
  const known = new Set(before);
  onTestFinished(() => {
    for (const key of prototypeKeys()) {
      if (known.has(key)) continue;
      const dot = key.indexOf(".");
      const target: object =
        dot < 0
          ? Object.prototype
          : (Object.getOwnPropertyDescriptor(Object.prototype, key.slice(0, dot))!.value as object);
      Reflect.deleteProperty(target, dot < 0 ? key : key.slice(dot + 1));
    }
  });
  return () => expect(prototypeKeys()).toEqual(before);
}

/** A job as the store takes it, bypassing the Queue's checks (as an older version or a direct write would). */
export function storedJob(id: string, name: string, now: number): NewJob {
  return newJob({ id, type: name, queue: name, runAt: now, backoff: JSON.stringify(DEFAULT_BACKOFF) });
}

/** Everything observable in the store, for "nothing stored" checks. */
async function snapshot(queue: Queue) {
  return {
    jobs: (await queue.list({ limit: 1000 })).jobs,
    stats: await queue.stats(),
    schedules: await queue.schedules(),
  };
}

export function exerciseNames(backend: Backend): void {
  describe("names that are keys of Object.prototype", () => {
    it("counts queues and types named toString, hasOwnProperty, valueOf, __defineGetter__ under their own names", async () => {
      const { queue } = await backend.setup();
      const unpolluted = guardPrototype();
      for (const name of PROTOTYPE_NAMES) {
        await queue.enqueueMany(name, [1, 2], { queue: name });
      }
      const [leased] = await queue.lease({ queues: ["valueOf"], types: ["valueOf"] });
      expect(leased).toMatchObject({ type: "valueOf", queue: "valueOf" });

      const stats = await queue.stats();
      for (const byName of [stats.queues, stats.types]) {
        expect(Object.getPrototypeOf(byName)).toBeNull();
        expect(Object.keys(byName).sort()).toEqual([...PROTOTYPE_NAMES].sort());
        for (const name of PROTOTYPE_NAMES) {
          expect(Object.hasOwn(byName, name), name).toBe(true);
          expect(byName[name]?.pending, name).toBe(name === "valueOf" ? 1 : 2);
          expect(byName[name]?.active ?? 0, name).toBe(name === "valueOf" ? 1 : 0);
        }
      }
      expect(stats.states).toMatchObject({ pending: 7, active: 1 });
      // Over the wire the counts go under the names, as any other key.
      expect(JSON.parse(JSON.stringify(stats)).queues.toString).toEqual(stats.queues.toString);
      for (const name of PROTOTYPE_NAMES) {
        expect((await queue.list({ queue: name, type: name })).jobs).toHaveLength(2);
      }
      unpolluted();
    });

    it("caps a type named toString, and leaves an uncapped type named valueOf uncapped", async () => {
      const { queue } = await backend.setup();
      const unpolluted = guardPrototype();
      const capped = defineJob({
        type: "toString",
        queue: "toString",
        concurrency: 1,
        handler: async () => 1,
      });
      const free = defineJob({ type: "valueOf", queue: "toString", handler: async () => 2 });
      queue.register(capped, free);
      await queue.enqueueMany(capped, [1, 2, 3]);
      await queue.enqueueMany(free, [1, 2, 3]);

      const first = await queue.lease({ queues: ["toString"], limit: 10 });
      expect(first.filter((j) => j.type === "toString")).toHaveLength(1);
      expect(first.filter((j) => j.type === "valueOf")).toHaveLength(3);
      expect(await queue.lease({ queues: ["toString"], limit: 10 })).toEqual([]);
      // A finished one makes room for exactly one more.
      expect(await queue.complete(first.find((j) => j.type === "toString")!, "done")).toBe(true);
      const second = await queue.lease({ queues: ["toString"], limit: 10 });
      expect(second.map((j) => j.type)).toEqual(["toString"]);
      expect((await queue.stats()).types.toString).toMatchObject({ pending: 1, active: 1, completed: 1 });
      unpolluted();
    });

    it("claims one type named toString or valueOf with rules given as plain objects: no rule it was not given", async () => {
      // The Store reads a claim's rules through their own keys only (ClaimParams), so rules built
      // as `{}` by another caller than the Queue find nothing on Object.prototype: no cap, no key
      // rule, no rate limit. (PostgreSQL picks a one-statement claim by the one type's rules.)
      const { queue, store, clock } = await backend.setup();
      const records = [{ concurrencyLimits: {} }, { keyRules: {} }, { rateLimits: {} }];
      for (const rules of [...records, Object.assign({}, ...records)]) {
        for (const type of ["toString", "valueOf"]) {
          await queue.enqueueMany(type, [1, 2]);
          const claimed = await store.claim({
            now: clock.now(),
            workerId: "w",
            queues: [{ name: "default", weight: 1 }],
            types: [type],
            limit: 10,
            leaseMs: 30_000,
            ...rules,
          });
          expect({ rules, claimed: claimed.map((r) => r.type) }).toEqual({ rules, claimed: [type, type] });
        }
      }
    });

    it("pauses, lists and resumes queues named toString and hasOwnProperty", async () => {
      const { queue } = await backend.setup();
      const unpolluted = guardPrototype();
      await queue.enqueue("task", 1, { queue: "toString" });
      expect(await queue.pauseQueue("toString")).toBe(true);
      // A paused queue with no jobs at all is listed too.
      expect(await queue.pauseQueue("hasOwnProperty")).toBe(true);
      expect(await queue.pausedQueues()).toEqual(["hasOwnProperty", "toString"]);
      const stats = await queue.stats();
      expect(stats.paused).toEqual(["hasOwnProperty", "toString"]);
      expect(Object.hasOwn(stats.queues, "hasOwnProperty")).toBe(false);
      expect(stats.queues.hasOwnProperty).toBeUndefined();
      expect(await queue.lease({ queues: ["toString"] })).toEqual([]);

      expect(await queue.resumeQueue("toString")).toBe(true);
      expect(await queue.pausedQueues()).toEqual(["hasOwnProperty"]);
      expect(await queue.lease({ queues: ["toString"] })).toMatchObject([{ queue: "toString" }]);
      unpolluted();
    });

    it("refuses __proto__, constructor and prototype as every kind of name, and stores nothing", async () => {
      const { queue } = await backend.setup();
      const unpolluted = guardPrototype();
      await queue.enqueue("task", { seed: true });
      const before = await snapshot(queue);
      for (const name of RESERVED_NAMES) {
        expect(NAME_PATTERN.test(name)).toBe(false);
        await refused(() => queue.enqueue(name, {}), "INVALID_TYPE_NAME");
        await refused(() => queue.enqueue("task", {}, { queue: name }), "INVALID_QUEUE_NAME");
        await refused(() => queue.enqueue("task", {}, { retryQueue: name }), "INVALID_QUEUE_NAME");
        await refused(() => queue.enqueue("task", {}, { owner: name }), "INVALID_OPTION");
        await refused(() => queue.enqueueMany(name, [1]), "INVALID_TYPE_NAME");
        await refused(() => defineJob({ type: name, handler: async () => null }), "INVALID_TYPE_NAME");
        await refused(
          () => defineJob({ type: "ok", queue: name, handler: async () => null }),
          "INVALID_QUEUE_NAME",
        );
        await refused(() => queue.lease({ queues: [name] }), "INVALID_QUEUE_NAME");
        await refused(() => queue.lease({ types: [name] }), "INVALID_TYPE_NAME");
        await refused(() => queue.list({ queue: name }), "INVALID_QUEUE_NAME");
        await refused(() => queue.list({ type: name }), "INVALID_TYPE_NAME");
        await refused(() => queue.list({ owner: name }), "INVALID_OPTION");
        await refused(() => queue.pauseQueue(name), "INVALID_QUEUE_NAME");
        await refused(() => queue.resumeQueue(name), "INVALID_QUEUE_NAME");
        await refused(
          () => queue.schedule(name, { cron: "0 * * * *", job: "task", payload: {} }),
          "INVALID_SCHEDULE_NAME",
        );
        await refused(
          () => queue.schedule("hourly", { cron: "0 * * * *", job: name, payload: {} }),
          "INVALID_TYPE_NAME",
        );
      }
      // The weight map form, built so that "__proto__" is an own key as JSON.parse makes it.
      await refused(() => queue.lease({ queues: JSON.parse('{"__proto__": 2}') }), "INVALID_QUEUE_NAME");
      await refused(() => queue.lease({ queues: { constructor: 1 } }), "INVALID_QUEUE_NAME");
      expect(await queue.pausedQueues()).toEqual([]);
      expect(await snapshot(queue)).toEqual(before);
      unpolluted();
    });

    it("counts, pauses and claims jobs stored with a reserved name anyway, without polluting", async () => {
      const { queue, store, clock } = await backend.setup();
      const unpolluted = guardPrototype();
      const now = clock.now();
      await store.enqueueMany({
        jobs: [
          storedJob("p1", "__proto__", now),
          storedJob("p2", "__proto__", now),
          storedJob("c1", "constructor", now),
          storedJob("r1", "prototype", now),
        ],
        now,
      });
      expect(await store.pauseQueue({ name: "constructor", now })).toBe(true);

      const stats = await queue.stats();
      for (const byName of [stats.queues, stats.types]) {
        expect(Object.getPrototypeOf(byName)).toBeNull();
        expect(Object.keys(byName).sort()).toEqual(["__proto__", "constructor", "prototype"]);
        expect(Object.hasOwn(byName, "__proto__")).toBe(true);
        expect(byName[PROTO]).toEqual({ pending: 2 });
        expect(byName.constructor).toEqual({ pending: 1 });
        expect(byName.prototype).toEqual({ pending: 1 });
      }
      expect(stats.paused).toEqual(["constructor"]);
      expect(stats.states.pending).toBe(4);
      // JSON.stringify writes the own "__proto__" key; JSON.parse reads it back as an own key.
      expect(Object.hasOwn(JSON.parse(JSON.stringify(stats)).queues, "__proto__")).toBe(true);

      // A claim with a cap on "__proto__" (bypassing the Queue's checks too) holds to it.
      const claimed = await store.claim({
        now,
        workerId: "w",
        queues: [{ name: "__proto__", weight: 1 }],
        limit: 10,
        leaseMs: 30_000,
        concurrencyLimits: nameRecord([["__proto__", 1]]),
      });
      expect(claimed.map((r) => r.queue)).toEqual(["__proto__"]);
      expect((await queue.stats()).queues[PROTO]).toMatchObject({ pending: 1, active: 1 });
      // Paused: nothing from "constructor".
      const none = await store.claim({
        now,
        workerId: "w",
        queues: [{ name: "constructor", weight: 1 }],
        limit: 10,
        leaseMs: 30_000,
      });
      expect(none).toEqual([]);

      // The way out: by id, such a job can be moved to a queue with a valid name, or cancelled.
      expect((await queue.reschedule("p2", { queue: "moved" })).queue).toBe("moved");
      expect((await queue.cancel("r1")).state).toBe("cancelled");
      const after = await queue.stats();
      expect(after.queues.moved).toEqual({ pending: 1 });
      expect(after.queues.prototype).toMatchObject({ cancelled: 1 });
      unpolluted();
    });

    it("property: any mix of valid names, Object.prototype's keys among them, is counted exactly", async () => {
      const { queue } = await backend.setup();
      const unpolluted = guardPrototype();
      const prototypeNames = Object.getOwnPropertyNames(Object.prototype).filter((n) => NAME_PATTERN.test(n));
      expect(prototypeNames).toEqual(expect.arrayContaining(PROTOTYPE_NAMES));
      const name = fc.oneof(
        fc.constantFrom(...prototypeNames),
        fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,12}$/).filter((n) => !RESERVED_NAMES.has(n)),
      );
      // The store keeps every run's jobs, so the model does too.
      const queues = new Map<string, number>();
      const types = new Map<string, number>();
      const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(name, name), { minLength: 1, maxLength: 6 }), async (jobs) => {
          for (const [q, t] of jobs) {
            await queue.enqueue(t, null, { queue: q });
            add(queues, q);
            add(types, t);
          }
          const stats = await queue.stats();
          for (const [byName, model] of [
            [stats.queues, queues],
            [stats.types, types],
          ] as const) {
            expect(Object.keys(byName).sort()).toEqual([...model.keys()].sort());
            for (const [k, n] of model) expect(byName[k]?.pending, k).toBe(n);
          }
          unpolluted();
        }),
        { numRuns: 12 },
      );
    });
  });
}
