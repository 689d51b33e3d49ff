/**
 * Hostile input to every library entry point that takes user input, on every store: prototype
 * keys, NUL and lone surrogates, 10,000 levels of nesting, numbers at and past every bound, huge
 * strings, dates in year 10000, unknown option keys, values of the wrong type.
 *
 * The property, for each call: it either succeeds, and then what it stored is well-formed and
 * reads back exactly as the call returned it (and the store still answers `stats()` and
 * `list()`); or it throws an ErrandError with a client code, and then the store is exactly as it
 * was. No call crashes with another error class, and none pollutes `Object.prototype`.
 *
 * A fixed seed and a modest number of runs by default (see test/helpers/property.ts);
 * `ERRAND_FC_RUNS=10000 ERRAND_FC_SEED=<n> npx vitest run test/property/hostile-library.test.ts`
 * for a long run.
 */
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import { toMs } from "../../src/duration.js";
import { ErrandError } from "../../src/errors.js";
import { FINISHED_STATES, JOB_STATES, type Job } from "../../src/job.js";
import { openQueue, Queue } from "../../src/queue.js";
import { Worker } from "../../src/worker/worker.js";
import { type Backend, type Bundle, selectedBackends } from "../conformance/backend.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import {
  assertPrototypeClean,
  assertSameJob,
  assertWellFormedJob,
  isStorableText,
  jsonOf,
  storeSnapshot,
} from "./checks.js";
import {
  assertClientError,
  awkwardJson,
  describeError,
  hostileDate,
  hostileDuration,
  hostileNumber,
  hostileOptions,
  hostileString,
  hostileValue,
  labelled,
  MAX_DATE_MS,
  MAX_TIMER_MS,
  outcome,
  own,
  prototypeKeys,
  wrongType,
} from "./hostile.js";
import { SEEDS, seedStore } from "./seed.js";

const RUNS = 15;
const TIMEOUT = propertyTimeout(RUNS, 30_000);

const silent = pino({ level: "silent" });
const noop = defineJob({ type: "noop", handler: async () => null });

// ---- valid values, mixed with the hostile ones -------------------------------------------------

const validName = fc.constantFrom(
  "default",
  "q1",
  "a.b:c-d_e",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "isPrototypeOf",
  "n".repeat(128),
);
const validType = validName;
const validQueue = validName;
const validId = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_.:@+=-][A-Za-z0-9_.:@+=/-]{0,20}$/),
  fc.constantFrom("i".repeat(255), "a/b", "toString", "__proto__", "constructor"),
);
const validText = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
  fc.constantFrom("k".repeat(255), "é".repeat(100), "😀".repeat(60), "toString", "__proto__"),
);
const validDuration = fc.oneof(
  fc.nat(10_000_000),
  fc.constantFrom("2h", "30s", "1h30m", "250ms", MAX_TIMER_MS, "24d"),
);
const validDate = fc.oneof(
  fc.date({ min: new Date(0), max: new Date(MAX_DATE_MS), noInvalidDate: true }),
  fc.date({ min: new Date(0), max: new Date(MAX_DATE_MS), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.integer({ min: 0, max: MAX_DATE_MS }),
);
const validBackoff = fc.oneof(
  fc.record({ type: fc.constant("fixed"), delayMs: validDuration }),
  fc.record(
    {
      type: fc.constant("exponential"),
      baseMs: validDuration,
      maxMs: validDuration,
      factor: fc.double({ min: 1, max: 10, noNaN: true }),
      jitter: fc.boolean(),
    },
    { requiredKeys: ["type"] },
  ),
);
const hostileBackoff = fc.oneof(
  hostileValue,
  fc.record({ type: fc.constantFrom("fixed", "exponential", "__proto__"), delayMs: hostileDuration }),
  fc.record({
    type: fc.constant("exponential"),
    baseMs: hostileDuration,
    maxMs: hostileDuration,
    factor: hostileNumber,
  }),
);
const anyPayload = fc.oneof({ arbitrary: awkwardJson, weight: 4 }, { arbitrary: hostileValue, weight: 1 });

/** Enqueue options: each valid, hostile or absent, and sometimes an unknown key. */
const enqueueFields = {
  id: validId,
  uniqueKey: validText,
  owner: validName,
  delayMs: validDuration,
  runAt: validDate,
  expiresAt: validDate,
  expiresInMs: validDuration,
  queue: validQueue,
  priority: fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1)),
  weight: fc.integer({ min: 1, max: 100 }),
  maxAttempts: fc.integer({ min: 1, max: 25 }),
  backoff: validBackoff,
  retryQueue: validQueue,
  timeoutMs: validDuration,
  delivery: fc.constantFrom("at_least_once", "at_most_once"),
};
const NUMERIC_OPTIONS = new Set([
  "priority",
  "weight",
  "maxAttempts",
  "limit",
  "maxWeight",
  "weightCap",
  "concurrency",
  "minConcurrency",
  "maxPayloadBytes",
]);
/**
 * Hostile values for an option, weighted toward its kind (durations for `…Ms`, dates for `…At`,
 * numbers for counts, strings for names, ids and keys), mixed with any hostile value.
 */
function hostileOption(key: string): fc.Arbitrary<unknown> {
  const kind = /Ms$/.test(key)
    ? hostileDuration
    : /At$/.test(key)
      ? hostileDate
      : NUMERIC_OPTIONS.has(key)
        ? hostileNumber
        : key === "backoff"
          ? hostileBackoff
          : hostileString;
  return fc.oneof({ arbitrary: kind, weight: 2 }, { arbitrary: hostileValue, weight: 1 });
}
const enqueueOptions = hostileOptions(enqueueFields, hostileOption);
/** A `db` that is no database connection (only the PostgreSQL store takes one at all). */
const enqueueOptionsWithDb = fc
  .oneof(
    wrongType.filter((v) => v !== undefined),
    fc.constant(labelled("{ query: 1 }", { query: 1 })),
  )
  .map((db) => own([["db", db]]));

/** What to enqueue: a type name, a definition, or a forged "definition" that defineJob never made. */
const jobTarget = fc.oneof(
  { arbitrary: validType, weight: 6 },
  { arbitrary: fc.constant(noop), weight: 3 },
  { arbitrary: hostileString, weight: 2 },
  { arbitrary: wrongType, weight: 1 },
  {
    arbitrary: fc
      .oneof(hostileString, validType)
      .map((type) => labelled(`forged {type: ${type.slice(0, 40)}}`, { type })),
    weight: 1,
  },
);

/** A job's epoch ms from any accepted instant input, as the library documents it. */
function instantMs(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "number") return Math.trunc(value);
  if (typeof value === "string") return Math.trunc(Date.parse(value));
  return undefined;
}

/** A duration's ms, if the library's own parser reads it; undefined when it refuses it. */
function durationMs(value: unknown): number | undefined {
  try {
    return toMs("d", value as string);
  } catch {
    return undefined;
  }
}

// ---- the world each property runs in ----------------------------------------------------------

type World = Bundle;

/** A fresh store of the backend's, seeded (see seed.ts). */
async function seeded(backend: Backend): Promise<World> {
  const bundle = await backend.setup();
  await seedStore(bundle);
  return bundle;
}

const seedId = fc.constantFrom(...Object.values(SEEDS), "no-such-job");
const anyId = fc.oneof({ arbitrary: seedId, weight: 3 }, { arbitrary: hostileValue, weight: 2 });

/**
 * The property for one call: refused with a client code and nothing changed, or accepted and
 * `sound` (which checks what it stored). Either way no prototype pollution, and the store still
 * answers reads afterwards.
 */
async function refusedOrSound<T>(
  w: World,
  where: string,
  call: () => T | Promise<T>,
  sound: (value: Awaited<T>) => Promise<void> | void,
): Promise<void> {
  const before = await storeSnapshot(w.queue);
  const proto = prototypeKeys();
  const result = await outcome(call);
  assertPrototypeClean(proto, where);
  if (result.ok) {
    await sound(result.value);
    // Whatever was stored, reads keep working and keep the prototype clean.
    await storeSnapshot(w.queue);
  } else {
    assertClientError(result.error, where);
    const after = await storeSnapshot(w.queue);
    expect(after, `${where}: refused (${describeError(result.error)}) but the store changed`).toEqual(before);
  }
  assertPrototypeClean(proto, `${where}, then stats() and list()`);
}

/** A job an accepted call returned: well-formed, stored exactly so, and counted under its own names. */
async function assertStored(w: World, job: Job, where: string): Promise<void> {
  assertWellFormedJob(job, where);
  const stored = await w.queue.get(job.id);
  assertSameJob(job, stored, where);
  assertWellFormedJob(stored!, `${where} (read back)`);
  const stats = await w.queue.stats();
  expect(Object.hasOwn(stats.queues, job.queue), `${where}: stats().queues lacks ${job.queue}`).toBe(true);
  expect(Object.hasOwn(stats.types, job.type), `${where}: stats().types lacks ${job.type}`).toBe(true);
  expect(stats.queues[job.queue]?.[stored!.state] ?? 0, `${where}: stats() count`).toBeGreaterThanOrEqual(1);
}

/** Whether a blocked, pending or active job of the world holds `value` as its unique or debounce key. */
async function holds(w: World, field: "uniqueKey" | "debounceKey", value: string): Promise<boolean> {
  for (const state of ["blocked", "pending", "active"] as const) {
    let cursor: string | undefined;
    do {
      const page = await w.queue.list({ state, limit: 1000, cursor });
      if (page.jobs.some((j) => j[field] === value)) return true;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return false;
}

/**
 * The fields of an options argument an operation accepted: none for `undefined` (or `null`),
 * which the generators give as a wrong type and an operation may take as "no options".
 */
function fieldsOf(options: unknown): Record<string, unknown> {
  return (options ?? {}) as Record<string, unknown>;
}

/** What the enqueue options say the stored job must hold. */
function assertOptionsKept(
  job: Job & { duplicate?: boolean },
  options: Record<string, unknown>,
  now: number,
  where: string,
): void {
  if (job.duplicate) return;
  const runAt = options.runAt !== undefined ? instantMs(options.runAt) : undefined;
  if (runAt !== undefined) expect(job.runAt.getTime(), `${where}: runAt`).toBe(runAt + 0);
  const delay = options.delayMs !== undefined ? durationMs(options.delayMs) : undefined;
  if (delay !== undefined) expect(job.runAt.getTime(), `${where}: runAt from delayMs`).toBe(now + delay);
  const expiresAt = options.expiresAt !== undefined ? instantMs(options.expiresAt) : undefined;
  if (expiresAt !== undefined) expect(job.expiresAt?.getTime(), `${where}: expiresAt`).toBe(expiresAt + 0);
  const expiresIn = options.expiresInMs !== undefined ? durationMs(options.expiresInMs) : undefined;
  if (expiresIn !== undefined) {
    expect(job.expiresAt?.getTime(), `${where}: expiresAt from expiresInMs`).toBe(now + expiresIn);
  }
  if (options.uniqueKey !== undefined) expect(job.uniqueKey, `${where}: uniqueKey`).toBe(options.uniqueKey);
  if (typeof options.priority === "number") {
    expect(job.priority, `${where}: priority`).toBe(options.priority + 0);
  }
  const timeout = options.timeoutMs !== undefined ? durationMs(options.timeoutMs) : undefined;
  if (timeout !== undefined) expect(job.timeoutMs, `${where}: timeoutMs`).toBe(timeout);
}

// ---- arbitraries of each entry point's arguments ------------------------------------------------

const batchItem = fc.oneof(
  { arbitrary: fc.record({ job: jobTarget, payload: anyPayload, options: enqueueOptions }), weight: 5 },
  { arbitrary: hostileValue, weight: 1 },
);
const listOptions = fc.oneof(
  hostileOptions({
    state: fc.constantFrom(...JOB_STATES),
    queue: validQueue,
    type: validType,
    owner: validName,
    limit: fc.integer({ min: 1, max: 1000 }),
    cursor: seedId,
  }),
  wrongType,
);
const rescheduleOptions = fc.oneof(
  hostileOptions(
    { runAt: validDate, delayMs: validDuration, priority: enqueueFields.priority, queue: validQueue },
    hostileOption,
  ),
  wrongType,
);
const cron = fc.oneof(
  fc.constantFrom("0 * * * *", "*/5 * * * *", "0 3 * * 1-5", "30 2 29 2 *", "59 59 23 31 12 *", "@yearly"),
  fc.constantFrom("0 0 30 2 *", "0 0 31 4 *", "* * * * * * *", "@reboot", "0 0 L * *", "*/0 * * * *"),
  hostileString,
  wrongType,
);
const timezone = fc.oneof(
  fc.constantFrom("UTC", "Europe/Berlin", "America/St_Johns", "Pacific/Kiritimati", "Etc/GMT+12"),
  hostileString,
  wrongType,
);
const scheduleOptions = hostileOptions({
  cron,
  timezone,
  job: fc.oneof(validType, fc.constant(noop)),
  payload: awkwardJson,
  options: fc.oneof(
    hostileOptions(
      {
        // One key often, so a tick meets a job from an earlier run still holding it.
        uniqueKey: fc.oneof(fc.constant("tick-key"), validText),
        owner: validName,
        expiresInMs: validDuration,
        queue: validQueue,
        priority: enqueueFields.priority,
        maxAttempts: enqueueFields.maxAttempts,
        backoff: validBackoff,
        timeoutMs: validDuration,
        delivery: enqueueFields.delivery,
        debounce: fc.oneof(
          fc.record({ key: fc.oneof(fc.constant("tick-key"), validText), delayMs: validDuration }),
          hostileValue,
        ),
        dependsOn: fc.oneof(fc.array(validId, { maxLength: 2 }), hostileValue),
      },
      hostileOption,
    ),
    fc.constant({}),
  ),
});
const queueWeights = fc.oneof(
  fc.array(validQueue, { minLength: 1, maxLength: 3 }),
  fc
    .array(
      fc.tuple(fc.oneof(validQueue, hostileString), fc.oneof(fc.integer({ min: 1, max: 10 }), hostileNumber)),
      { minLength: 1, maxLength: 3 },
    )
    .map(own),
);
const leaseOptions = fc.oneof(
  hostileOptions(
    {
      types: fc.array(fc.oneof(validType, fc.constant("lease-me")), { minLength: 1, maxLength: 3 }),
      queues: queueWeights,
      limit: fc.integer({ min: 1, max: 5 }),
      leaseMs: validDuration,
      workerId: validText,
      maxWeight: fc.integer({ min: 1, max: 10 }),
      weightCap: fc.integer({ min: 1, max: 10 }),
    },
    hostileOption,
  ),
  wrongType,
);

/** How a report names its attempt: the current one, a stale or foreign one, or a hostile one. */
type RefSpec = string | { kind: string; id?: unknown; attempt?: unknown; value?: unknown };
const attemptRef: fc.Arbitrary<RefSpec> = fc.oneof(
  { arbitrary: fc.constant("current"), weight: 4 },
  { arbitrary: fc.constantFrom("next-attempt", "other-job"), weight: 2 },
  {
    arbitrary: fc.oneof(
      fc.record({ id: hostileValue }).map((r) => ({ ...r, kind: "hostile-id" })),
      fc
        .record({ attempt: fc.oneof(hostileNumber, wrongType) })
        .map((r) => ({ ...r, kind: "hostile-attempt" })),
    ),
    weight: 2,
  },
  { arbitrary: wrongType.map((value) => ({ kind: "not-a-ref", value })), weight: 1 },
);
function toRef(job: Job, spec: RefSpec): unknown {
  if (spec === "current") return job;
  if (spec === "next-attempt") return { id: job.id, attempt: job.attempt + 1 };
  if (spec === "other-job") return { id: SEEDS.pending, attempt: 1 };
  const s = spec as Exclude<RefSpec, string>;
  if (s.kind === "not-a-ref") return s.value;
  return { id: "id" in s ? s.id : job.id, attempt: "attempt" in s ? s.attempt : job.attempt };
}
/** Whether `ref` names the job's current attempt (a hostile attempt may happen to). */
function namesCurrent(job: Job, ref: unknown): boolean {
  return (
    typeof ref === "object" &&
    ref !== null &&
    (ref as Job).id === job.id &&
    (ref as Job).attempt === job.attempt
  );
}
/** What a handler may throw: anything at all. */
const thrown = fc.oneof(
  hostileValue,
  hostileString.map((m) => new Error(m)),
  fc.record({ message: hostileValue, name: hostileValue, stack: hostileValue }),
  hostileString.map((name) => Object.assign(new Error("named"), { name, code: name })),
);
const failOptions = fc.oneof(hostileOptions({ retryable: fc.boolean() }), wrongType);
const heartbeatOptions = fc.oneof(hostileOptions({ leaseMs: validDuration }, hostileOption), wrongType);

const definitionOptions = fc.oneof(
  {
    arbitrary: hostileOptions(
      {
        type: fc.oneof(validType, fc.constant("prop-type")),
        handler: fc.constant(async () => null),
        queue: validQueue,
        priority: enqueueFields.priority,
        weight: enqueueFields.weight,
        maxAttempts: enqueueFields.maxAttempts,
        backoff: validBackoff,
        retryQueue: validQueue,
        timeoutMs: validDuration,
        delivery: enqueueFields.delivery,
        concurrency: fc.integer({ min: 1, max: 100 }),
      },
      hostileOption,
    ).map((o) => ({ type: "prop-type", handler: async () => null, ...o })),
    weight: 5,
  },
  { arbitrary: wrongType, weight: 1 },
);
const retention = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...FINISHED_STATES), hostileString),
      fc.oneof(validDuration, hostileDuration),
    ),
    { maxLength: 2 },
  )
  .map(own);
/** Store URLs that name no store errand would open (a hostile sqlite: URL would make files). */
const storeUrl = hostileString.filter((s) => !/^(sqlite|file|redis|rediss|postgres|postgresql):/i.test(s));
const workerDef = defineJob({ type: "worker-prop", queue: "worker-prop", handler: async () => null });
const workerOptions = fc.oneof(
  {
    arbitrary: hostileOptions(
      {
        jobs: fc.constant([workerDef]),
        queues: fc.oneof(fc.constant(["worker-prop"]), fc.constant(own([["worker-prop", 2]]))),
        concurrency: fc.integer({ min: 1, max: 50 }),
        minConcurrency: fc.integer({ min: 0, max: 5 }),
        leaseMs: validDuration,
        heartbeatMs: validDuration,
        pollIntervalMs: validDuration,
        maintenance: fc.boolean(),
        sweepIntervalMs: validDuration,
        pruneIntervalMs: validDuration,
        workerId: validText,
        logger: fc.constant(silent),
      },
      hostileOption,
    ).map((o) => ({ jobs: [workerDef], logger: silent, ...o })),
    weight: 6,
  },
  { arbitrary: wrongType, weight: 1 },
);
const TIMER_OPTIONS = ["leaseMs", "heartbeatMs", "pollIntervalMs", "sweepIntervalMs", "pruneIntervalMs"];

// ---- the properties, one per entry point, on every store ------------------------------------------

for (const backend of selectedBackends({ conformance: true })) {
  describe(`hostile input to the library on ${backend.name}`, () => {
    /** One entry point's property, on a freshly seeded store of its own. */
    const property = <A extends unknown[]>(
      name: string,
      arbitraries: { [K in keyof A]: fc.Arbitrary<A[K]> },
      predicate: (w: World, ...args: A) => Promise<void>,
    ) =>
      it(
        name,
        async () => {
          const w = await seeded(backend);
          const check = catalogued(`${backend.name}: ${name}`, (...args: A) => predicate(w, ...args));
          // fast-check types asyncProperty per arity; the tuple of arbitraries matches the predicate's.
          const asyncProperty = fc.asyncProperty as unknown as (
            ...args: [...fc.Arbitrary<unknown>[], (...a: A) => Promise<void>]
          ) => fc.IAsyncProperty<A>;
          await fc.assert(asyncProperty(...arbitraries, check), fcParams(RUNS));
        },
        TIMEOUT,
      );

    property(
      "enqueue stores a well-formed job exactly as returned, or refuses with a client code and stores nothing",
      [jobTarget, anyPayload, enqueueOptions],
      async (w, job, payload, options) => {
        await refusedOrSound(
          w,
          "enqueue",
          () => w.queue.enqueue(job as string, payload, options),
          async (stored) => {
            await assertStored(w, stored, "enqueue");
            if (!stored.duplicate) {
              expect(jsonOf(stored.payload), "enqueue: payload").toBe(jsonOf(payload));
              assertOptionsKept(stored, options, w.clock.now(), "enqueue");
            }
          },
        );
      },
    );

    property(
      "enqueueMany stores every payload or none",
      [jobTarget, fc.oneof(fc.array(anyPayload, { maxLength: 3 }), hostileValue), enqueueOptions],
      async (w, job, payloads, options) => {
        await refusedOrSound(
          w,
          "enqueueMany",
          () => w.queue.enqueueMany(job as string, payloads as unknown[], options),
          async (jobs) => {
            expect(jobs).toHaveLength((payloads as unknown[]).length);
            for (const j of jobs) await assertStored(w, j, "enqueueMany");
          },
        );
      },
    );

    property(
      "enqueueManyIds stores every payload or none, answering the id of each",
      [jobTarget, fc.oneof(fc.array(anyPayload, { maxLength: 3 }), hostileValue), enqueueOptions],
      async (w, job, payloads, options) => {
        await refusedOrSound(
          w,
          "enqueueManyIds",
          () => w.queue.enqueueManyIds(job as string, payloads as unknown[], options),
          async (ids) => {
            expect(ids).toHaveLength((payloads as unknown[]).length);
            for (const id of ids) {
              const stored = await w.queue.get(id);
              expect(stored, `enqueueManyIds: ${id} is stored`).not.toBeNull();
              await assertStored(w, stored!, "enqueueManyIds");
            }
          },
        );
      },
    );

    property(
      "enqueueBatch stores every item or none",
      [fc.oneof(fc.array(batchItem, { maxLength: 3 }), hostileValue)],
      async (w, items) => {
        await refusedOrSound(
          w,
          "enqueueBatch",
          () => w.queue.enqueueBatch(items as Parameters<Queue["enqueueBatch"]>[0]),
          async (jobs) => {
            for (const j of jobs) await assertStored(w, j, "enqueueBatch");
          },
        );
      },
    );

    property(
      "enqueueBatchIds stores every item or none, answering the id of each",
      [fc.oneof(fc.array(batchItem, { maxLength: 3 }), hostileValue)],
      async (w, items) => {
        await refusedOrSound(
          w,
          "enqueueBatchIds",
          () => w.queue.enqueueBatchIds(items as Parameters<Queue["enqueueBatchIds"]>[0]),
          async (ids) => {
            expect(ids).toHaveLength((items as unknown[]).length);
            for (const id of ids) {
              const stored = await w.queue.get(id);
              expect(stored, `enqueueBatchIds: ${id} is stored`).not.toBeNull();
              await assertStored(w, stored!, "enqueueBatchIds");
            }
          },
        );
      },
    );

    property(
      "enqueue refuses a db that is no database connection",
      [validType, enqueueOptionsWithDb],
      async (w, job, options) => {
        await refusedOrSound(
          w,
          "enqueue with db",
          () => w.queue.enqueue(job, {}, options),
          async (stored) => {
            expect(backend.capabilities.transactionalEnqueue, "enqueue took db on a store without it").toBe(
              true,
            );
            await assertStored(w, stored, "enqueue with db");
          },
        );
      },
    );

    property("get answers hostile ids", [anyId], async (w, id) => {
      await refusedOrSound(
        w,
        "get",
        () => w.queue.get(id as string),
        (job) => {
          if (job) assertWellFormedJob(job, "get");
        },
      );
    });

    property("list answers hostile filters and cursors", [listOptions], async (w, options) => {
      await refusedOrSound(
        w,
        "list",
        () => w.queue.list(options as object),
        (page) => {
          for (const job of page.jobs) assertWellFormedJob(job, "list");
          const o = fieldsOf(options);
          if (typeof o.limit === "number") expect(page.jobs.length).toBeLessThanOrEqual(o.limit);
          if (o.state !== undefined) expect(page.jobs.every((j) => j.state === o.state)).toBe(true);
        },
      );
    });

    for (const op of ["cancel", "retry", "replay"] as const) {
      property(`${op} refuses hostile ids and leaves jobs well-formed`, [anyId], async (w, id) => {
        await refusedOrSound(
          w,
          op,
          () => w.queue[op](id as string),
          async (job) => {
            await assertStored(w, job, op);
            if (op === "cancel") expect(job.state).toBe("cancelled");
            if (op === "retry") expect(job.state).toBe("pending");
            if (op === "replay") expect(job.id).not.toBe(id);
          },
        );
      });
    }

    property(
      "reschedule refuses hostile times, priorities and queues, and stores accepted ones exactly",
      [
        fc.oneof({ arbitrary: fc.constant(SEEDS.scheduled), weight: 3 }, { arbitrary: anyId, weight: 1 }),
        rescheduleOptions,
      ],
      async (w, id, options) => {
        await refusedOrSound(
          w,
          "reschedule",
          () => w.queue.reschedule(id as string, options as object),
          async (job) => {
            await assertStored(w, job, "reschedule");
            assertOptionsKept(job, fieldsOf(options), w.clock.now(), "reschedule");
          },
        );
      },
    );

    property(
      "schedule refuses hostile names, crons, zones and options; an accepted schedule's tick fires a well-formed job",
      [
        fc.oneof({ arbitrary: validName, weight: 3 }, { arbitrary: hostileValue, weight: 2 }),
        scheduleOptions,
      ],
      async (w, name, options) => {
        await refusedOrSound(
          w,
          "schedule",
          () => w.queue.schedule(name as string, options as never),
          async (schedule) => {
            const listed = (await w.queue.schedules()).find((s) => s.name === name);
            expect(listed, "schedule: not listed").toBeDefined();
            const tick = schedule.nextRunAt.getTime();
            expect(Number.isFinite(tick) && tick <= MAX_DATE_MS, `schedule: nextRunAt ${tick}`).toBe(true);
            expect(listed!.nextRunAt.getTime()).toBe(tick);
            // The options were checked when the schedule was made: its tick must fire, not fail at 3 a.m.
            const firer = new Queue(w.store, { clock: new ManualClock(tick) });
            const errors: unknown[] = [];
            firer.on("error", (e) => errors.push(e));
            await firer.sweep();
            // The one refusal a checked tick may meet: its debounce key held by a waiting job of
            // another type (then skipped, and that job is there to show for it).
            const debounceKey = (schedule.options as { debounce?: { key: string } } | undefined)?.debounce
              ?.key;
            const heldElsewhere = errors.filter((e) => e instanceof ErrandError && e.code === "INVALID_KEY");
            if (heldElsewhere.length > 0) {
              expect(debounceKey, "schedule: INVALID_KEY without a debounce key").toBeDefined();
              expect(
                await holds(w, "debounceKey", debounceKey!),
                "schedule: no job holds its debounce key",
              ).toBe(true);
            }
            expect(
              errors.filter((e) => !heldElsewhere.includes(e)).map(describeError),
              "schedule: its tick failed",
            ).toEqual([]);
            const moved = (await w.queue.schedules()).find((s) => s.name === name);
            expect(moved!.nextRunAt.getTime(), "schedule: moved past its tick").toBeGreaterThan(tick);
            const fired = await w.queue.get(`schedule:${schedule.name}:${tick}`);
            expect(schedule.options, "schedule: stored with dependsOn").not.toHaveProperty("dependsOn");
            if (fired !== null) assertWellFormedJob(fired, "scheduled job");
            else {
              // A tick stores no job only while a live job holds its unique key, or a waiting one
              // its debounce key (an earlier run's tick, in this world that outlives each run).
              const { uniqueKey, debounce } = schedule.options as {
                uniqueKey?: string;
                debounce?: { key: string };
              };
              const [field, value] =
                uniqueKey !== undefined
                  ? (["uniqueKey", uniqueKey] as const)
                  : (["debounceKey", debounce?.key] as const);
              expect(value, "schedule: the tick's job").toBeDefined();
              expect(await holds(w, field, value!), `schedule: no live job holds ${field} ${value}`).toBe(
                true,
              );
            }
          },
        );
      },
    );

    property(
      "unschedule refuses hostile names",
      [fc.oneof(fc.constant("existing"), validName, hostileValue)],
      async (w, name) => {
        await refusedOrSound(
          w,
          "unschedule",
          () => w.queue.unschedule(name as string),
          async () => {
            expect((await w.queue.schedules()).some((s) => s.name === name)).toBe(false);
          },
        );
      },
    );

    property(
      "lease refuses hostile types, queues, limits, leases and worker ids, and leases well-formed jobs",
      [leaseOptions],
      async (w, options) => {
        await w.queue.enqueue("lease-me", { n: 1 });
        await w.queue.enqueue("lease-me", { n: 2 }, { queue: "toString" });
        const now = w.clock.now();
        await refusedOrSound(
          w,
          "lease",
          () => w.queue.lease(options as object),
          async (jobs) => {
            const o = fieldsOf(options);
            for (const job of jobs) {
              await assertStored(w, job, "lease");
              expect(job.state).toBe("active");
              if (typeof o.workerId === "string") expect(job.workerId, "lease: workerId").toBe(o.workerId);
              const leaseMs = o.leaseMs === undefined ? 30_000 : durationMs(o.leaseMs);
              if (leaseMs !== undefined) expect(job.leaseExpiresAt?.getTime()).toBe(now + leaseMs);
            }
          },
        );
      },
    );

    /** A fresh active job to report on. */
    const leaseOne = async (w: World): Promise<Job> => {
      await w.queue.enqueue("lease-me", null, { queue: "leasing" });
      const [job] = await w.queue.lease({ types: ["lease-me"], queues: ["leasing"] });
      return job!;
    };

    property(
      "complete refuses hostile attempts and results, and completes the current attempt exactly once",
      [attemptRef, anyPayload],
      async (w, spec, result) => {
        const job = await leaseOne(w);
        const ref = toRef(job, spec);
        await refusedOrSound(
          w,
          "complete",
          () => w.queue.complete(ref as Job, result),
          async (ok) => {
            const stored = (await w.queue.get(job.id))!;
            assertWellFormedJob(stored, "complete");
            if (ok) {
              expect(stored.state).toBe("completed");
              expect(jsonOf(stored.result), "complete: result").toBe(jsonOf(result));
            } else expect(namesCurrent(job, ref), "complete: false for the current attempt").toBe(false);
          },
        );
      },
    );

    property(
      "fail records whatever a handler threw for the current attempt, and refuses hostile references",
      [attemptRef, thrown, failOptions],
      async (w, spec, error, options) => {
        const job = await leaseOne(w);
        const ref = toRef(job, spec);
        const o = options as Record<string, unknown> | null;
        const plainOptions =
          typeof o === "object" &&
          o !== null &&
          !Array.isArray(o) &&
          Object.keys(o).every((k) => k === "retryable") &&
          (o.retryable === undefined || typeof o.retryable === "boolean");
        const before = (await w.queue.get(job.id))!;
        const recorded = async () => {
          const stored = (await w.queue.get(job.id))!;
          assertWellFormedJob(stored, "fail");
          expect(stored.errors, "fail: the error entry").toHaveLength(before.errors.length + 1);
          const entry = stored.errors.at(-1)!;
          expect(isStorableText(entry.message), `fail: message ${JSON.stringify(entry.message)}`).toBe(true);
          if (entry.name !== undefined) expect(isStorableText(entry.name), "fail: name").toBe(true);
          if (entry.stack !== undefined) expect(isStorableText(entry.stack), "fail: stack").toBe(true);
        };
        if (namesCurrent(job, ref) && plainOptions) {
          // Never refused for what the error holds: that would lose the attempt's failure.
          const result = await outcome(() => w.queue.fail(ref as Job, error, options as object));
          expect(result.ok ? result.value : describeError(result.error), "fail of the current attempt").toBe(
            true,
          );
          await recorded();
          await storeSnapshot(w.queue);
        } else {
          await refusedOrSound(
            w,
            "fail",
            () => w.queue.fail(ref as Job, error, options as object),
            async (ok) => {
              if (ok) await recorded();
              else expect(namesCurrent(job, ref), "fail: false for the current attempt").toBe(false);
            },
          );
        }
      },
    );

    property(
      "heartbeat refuses hostile attempts and leases, and extends the current lease exactly",
      [attemptRef, heartbeatOptions],
      async (w, spec, options) => {
        const job = await leaseOne(w);
        const ref = toRef(job, spec);
        const now = w.clock.now();
        await refusedOrSound(
          w,
          "heartbeat",
          () => w.queue.heartbeat(ref as Job, options as object),
          async (ok) => {
            const stored = (await w.queue.get(job.id))!;
            assertWellFormedJob(stored, "heartbeat");
            if (ok) {
              const leaseMs = durationMs(fieldsOf(options).leaseMs ?? 30_000);
              if (leaseMs !== undefined) expect(stored.leaseExpiresAt?.getTime()).toBe(now + leaseMs);
            } else expect(namesCurrent(job, ref), "heartbeat: false for the current attempt").toBe(false);
          },
        );
      },
    );

    property(
      "checkpoint refuses hostile attempts and data, and stores accepted data exactly",
      [attemptRef, anyPayload],
      async (w, spec, data) => {
        const job = await leaseOne(w);
        const ref = toRef(job, spec);
        await refusedOrSound(
          w,
          "checkpoint",
          () => w.queue.checkpoint(ref as Job, data),
          async (ok) => {
            const stored = (await w.queue.get(job.id))!;
            assertWellFormedJob(stored, "checkpoint");
            if (ok) expect(jsonOf(stored.checkpoint), "checkpoint: data").toBe(jsonOf(data));
            else expect(namesCurrent(job, ref), "checkpoint: false for the current attempt").toBe(false);
          },
        );
      },
    );

    property(
      "release refuses hostile attempts and releases the current one",
      [attemptRef],
      async (w, spec) => {
        const job = await leaseOne(w);
        const ref = toRef(job, spec);
        await refusedOrSound(
          w,
          "release",
          () => w.queue.release(ref as Job),
          async (ok) => {
            const stored = (await w.queue.get(job.id))!;
            assertWellFormedJob(stored, "release");
            if (ok) expect(stored.state).toBe("pending");
            else expect(namesCurrent(job, ref), "release: false for the current attempt").toBe(false);
          },
        );
      },
    );

    property(
      "pauseQueue and resumeQueue refuse hostile names and work for every valid one",
      [fc.constantFrom("pauseQueue" as const, "resumeQueue" as const), fc.oneof(validQueue, hostileValue)],
      async (w, op, name) => {
        await refusedOrSound(
          w,
          op,
          () => w.queue[op](name as string),
          async () => {
            const paused = op === "pauseQueue";
            expect((await w.queue.pausedQueues()).includes(name as string), `${op}: pausedQueues()`).toBe(
              paused,
            );
            expect((await w.queue.stats()).paused.includes(name as string), `${op}: stats().paused`).toBe(
              paused,
            );
          },
        );
      },
    );

    property(
      "defineJob refuses hostile options, and a definition it accepts makes jobs every store holds",
      [definitionOptions],
      async (w, options) => {
        await refusedOrSound(
          w,
          "defineJob",
          () => defineJob(options as never),
          async (def) => {
            expect(Object.isFrozen(def)).toBe(true);
            if (def.timeoutMs !== null) expect(def.timeoutMs).toBeLessThanOrEqual(MAX_TIMER_MS);
            const job = await w.queue.enqueue(def, { n: 1 });
            await assertStored(w, job, "enqueue of an accepted definition");
          },
        );
      },
    );

    property(
      "openQueue refuses hostile options, and a queue it opens works",
      [
        fc.oneof(
          { arbitrary: fc.constant(null), weight: 6 },
          { arbitrary: storeUrl, weight: 1 },
          { arbitrary: wrongType, weight: 1 },
        ),
        hostileOptions(
          {
            clock: fc.oneof(
              { arbitrary: fc.constant("bundle"), weight: 3 },
              {
                // A clock in shape whose now() is no date a store keeps (refused since d685fbd).
                arbitrary: fc
                  .oneof(hostileNumber, hostileDate, wrongType)
                  .map((v) =>
                    labelled(`clock.now() = ${String(v)}`, { now: () => v, setTimer: () => () => {} }),
                  ),
                weight: 1,
              },
            ),
            retention,
            maxPayloadBytes: fc.integer({ min: 1, max: 2 ** 20 }),
            jobs: fc.constant([noop]),
            random: fc.constant(Math.random),
          },
          hostileOption,
        ),
      ],
      async (w, target, rest) => {
        const o = own(Object.entries(rest).map(([k, v]) => [k, v === "bundle" ? w.clock : v]));
        // null: the store under test with hostile options; otherwise a hostile URL or target.
        const options = target === null ? own([["store", w.store], ...Object.entries(o)]) : target;
        await refusedOrSound(
          w,
          "openQueue",
          () => openQueue(options as never),
          async (queue) => {
            // It works: valid calls succeed, or are refused for their own input (a tiny maxPayloadBytes).
            const used = await outcome(async () => {
              const job = await queue.enqueue("open-queue-prop", 1, { queue: "open-queue-prop" });
              assertWellFormedJob(job, "openQueue: enqueue");
              const [leased] = await queue.lease({ types: ["open-queue-prop"], queues: ["open-queue-prop"] });
              if (leased) expect(await queue.complete(leased, null)).toBe(true);
            });
            if (!used.ok) assertClientError(used.error, "a queue openQueue accepted");
            const maintained = await outcome(async () => {
              await queue.sweep();
              await queue.prune();
              await queue.stats();
            });
            await queue.close();
            if (!maintained.ok) throw maintained.error;
          },
        );
      },
    );

    property(
      "new Worker refuses hostile options, and a worker it makes starts and stops cleanly",
      [workerOptions],
      async (w, options) => {
        const queue = new Queue(w.store, { clock: new ManualClock(w.clock.now()) });
        await refusedOrSound(
          w,
          "new Worker",
          () => new Worker(queue, options as never),
          async (worker) => {
            const o = fieldsOf(options);
            for (const field of TIMER_OPTIONS) {
              const ms = o[field] === undefined ? undefined : durationMs(o[field]);
              if (ms !== undefined) {
                expect(
                  ms,
                  `Worker took ${field} = ${String(o[field])}, past what a timer waits`,
                ).toBeLessThanOrEqual(MAX_TIMER_MS);
              }
            }
            const logger = o.logger as Record<string, unknown>;
            for (const level of ["error", "warn", "info", "debug"]) {
              expect(typeof logger?.[level], `Worker took a logger without ${level}()`).toBe("function");
            }
            expect(isStorableText(worker.workerId), "Worker: workerId").toBe(true);
            const errors: unknown[] = [];
            worker.on("error", (e) => errors.push(e));
            await worker.start();
            await worker.close({ graceMs: 0 });
            expect(errors.map(describeError), "Worker: errors while it ran").toEqual([]);
          },
        );
      },
    );
  });
}
