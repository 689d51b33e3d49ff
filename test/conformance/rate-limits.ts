/**
 * Rate limits: a type's `rateLimit` lets at most `limit` of its jobs start in any interval of
 * `periodMs` (a sliding window of starts, not fixed buckets), counted across every claimer on the
 * store; `keyRateLimit` does the same per key. A job held back stays pending; the claim tells
 * when the window has room again, and a Worker claims then, without polling. Other types and
 * keys are not slowed.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { defineJob, type JobDefinitionOptions } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import { Worker } from "../../src/worker/worker.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const partner = defineJob({
  type: "call-partner-api",
  rateLimit: { limit: 3, periodMs: 1_000 },
  handler: async () => null,
});

export function exerciseRateLimits(backend: Backend): void {
  describe("rate limits", () => {
    it("starts at most limit jobs of the type in any period, in a sliding window", async () => {
      const { queue, clock } = await backend.setup();
      queue.register(partner);
      await queue.enqueueMany(
        partner,
        Array.from({ length: 10 }, (_, i) => ({ i })),
      );
      expect(await queue.lease({ limit: 2 })).toHaveLength(2); // t = 0: 2 starts
      await clock.advance(500);
      expect(await queue.lease({ limit: 10 })).toHaveLength(1); // t = 500: the third
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      await clock.advance(499);
      expect(await queue.lease({ limit: 10 })).toEqual([]); // t = 999: the window (−1, 999] holds 3
      await clock.advance(1);
      expect(await queue.lease({ limit: 10 })).toHaveLength(2); // t = 1000: the two of t = 0 left it
      await clock.advance(500);
      expect(await queue.lease({ limit: 10 })).toHaveLength(1); // t = 1500: the one of t = 500 left
      expect((await queue.stats()).states).toMatchObject({ pending: 4, active: 6 });
    });

    it("takes a raised limit at once, in a window it had found full", async () => {
      const { queue } = await backend.setup();
      queue.register(partner);
      await queue.enqueueMany(
        partner,
        Array.from({ length: 10 }, (_, i) => ({ i })),
      );
      expect(await queue.lease({ limit: 10 })).toHaveLength(3);
      expect(await queue.lease({ limit: 10 })).toEqual([]); // full, and found so
      queue.setTypeSettings(partner.type, { rateLimit: { limit: 5, periodMs: 1_000 } });
      expect(await queue.lease({ limit: 10 })).toHaveLength(2);
    });

    it("tells the claimer when the window has room again", async () => {
      const { queue, clock } = await backend.setup();
      const start = clock.now();
      await queue.enqueueMany(
        partner,
        Array.from({ length: 5 }, (_, i) => ({ i })),
      );
      const rateLimits = Object.assign(Object.create(null), {
        [partner.type]: { limit: 3, periodMs: 1_000 },
      });
      const claim = (held: { until: number | null }) =>
        queue.attempts.claim({
          workerId: "w",
          queues: [{ name: "default", weight: 1 }],
          limit: 10,
          leaseMs: 60_000,
          rateLimits,
          held,
        });
      const first = { until: null as number | null };
      expect(await claim(first)).toHaveLength(3);
      expect(first.until).toBe(start + 1_000);
      await clock.advance(200);
      const second = { until: null as number | null };
      expect(await claim(second)).toEqual([]);
      expect(second.until).toBe(start + 1_000);
      // Nothing held back: `until` stays as given.
      const other = { until: null as number | null };
      await queue.enqueue("unlimited", {});
      expect(
        await queue.attempts.claim({
          workerId: "w",
          queues: [{ name: "default", weight: 1 }],
          types: ["unlimited"],
          limit: 10,
          leaseMs: 60_000,
          rateLimits,
          held: other,
        }),
      ).toHaveLength(1);
      expect(other.until).toBeNull();
    });

    it("limits each key on its own with keyRateLimit, and does not slow other types", async () => {
      const { queue } = await backend.setup();
      const perKey = defineJob({
        type: "sync",
        keyRateLimit: { limit: 2, periodMs: "1s" },
        handler: async () => null,
      });
      queue.register(perKey);
      for (const key of ["a", "a", "a", "b", "b", "b"]) await queue.enqueue(perKey, {}, { key });
      await queue.enqueue(perKey, { nokey: 1 });
      await queue.enqueueMany(
        "other",
        Array.from({ length: 5 }, (_, i) => ({ i })),
      );
      const leased = await queue.lease({ limit: 100 });
      const count = (pred: (j: Job) => boolean) => leased.filter(pred).length;
      expect(count((j) => j.key === "a")).toBe(2);
      expect(count((j) => j.key === "b")).toBe(2);
      expect(count((j) => j.type === "sync" && j.key === null)).toBe(1);
      expect(count((j) => j.type === "other")).toBe(5);
    });

    it("counts starts across connections: two claimers never exceed the limit together", async () => {
      const { queue, connect } = await backend.setup();
      const other = await connect();
      queue.register(partner);
      other.register(partner);
      await queue.enqueueMany(
        partner,
        Array.from({ length: 10 }, (_, i) => ({ i })),
      );
      const [x, y] = await Promise.all([queue.lease({ limit: 10 }), other.lease({ limit: 10 })]);
      expect(x.length + y.length).toBe(3);
    });

    it("tells when a key's window has room again: its oldest start that must leave, plus the period", async () => {
      const { queue, clock } = await backend.setup();
      const start = clock.now();
      await queue.enqueueMany(
        "sync",
        Array.from({ length: 4 }, (_, i) => ({ i })),
        { key: "a" },
      );
      await queue.enqueue("sync", {}, { key: "b" });
      const keyRules = Object.assign(Object.create(null), {
        sync: { keyRateLimit: { limit: 2, periodMs: 1_000 } },
      });
      const claim = async (limit: number) => {
        const held = { until: null as number | null };
        const jobs = await queue.attempts.claim({
          workerId: "w",
          queues: [{ name: "default", weight: 1 }],
          limit,
          leaseMs: 60_000,
          keyRules,
          held,
        });
        return { keys: jobs.map((j) => j.key).sort(), until: held.until };
      };
      expect(await claim(1)).toEqual({ keys: ["a"], until: null }); // t = 0
      await clock.advance(300);
      // t = 300: a's second start fills its window while two of its jobs wait; b is not slowed.
      expect(await claim(10)).toEqual({ keys: ["a", "b"], until: start + 1_000 });
      await clock.advance(700);
      // t = 1000: the start of t = 0 left; the one taken now fills the window with that of t = 300.
      expect(await claim(10)).toEqual({ keys: ["a"], until: start + 1_300 });
      await clock.advance(299);
      expect(await claim(10)).toEqual({ keys: [], until: start + 1_300 });
    });

    it("counts a key's starts across connections", async () => {
      const { queue, connect } = await backend.setup();
      const other = await connect();
      const perKey = defineJob({
        type: "sync",
        keyRateLimit: { limit: 2, periodMs: "1s" },
        handler: async () => null,
      });
      queue.register(perKey);
      other.register(perKey);
      for (let i = 0; i < 6; i++) await queue.enqueue(perKey, { i }, { key: "a" });
      const [x, y] = await Promise.all([queue.lease({ limit: 10 }), other.lease({ limit: 10 })]);
      expect(x.length + y.length).toBe(2);
    });

    it("passes over a held type's jobs ahead of the others and keeps the claim order of the rest", async () => {
      const { queue } = await backend.setup();
      const held = defineJob({
        type: "held",
        rateLimit: { limit: 1, periodMs: "1h" },
        handler: async () => null,
      });
      queue.register(held);
      const heldIds = (
        await queue.enqueueMany(
          held,
          Array.from({ length: 5 }, (_, i) => ({ i })),
        )
      ).map((j) => j.id);
      const a1 = await queue.enqueue("a", { n: 1 });
      const b1 = await queue.enqueue("b", { n: 1 }, { priority: 5 });
      const a2 = await queue.enqueue("a", { n: 2 });
      const b2 = await queue.enqueue("b", { n: 2 });
      const a3 = await queue.enqueue("a", { n: 3 });
      const lease = async (limit: number) =>
        (await queue.lease({ types: ["held", "a", "b"], limit })).map((j) => j.id);
      // The held type's one start, then its jobs are passed over for the rest.
      expect(await lease(3)).toEqual([b1.id, heldIds[0], a1.id]);
      expect(await lease(2)).toEqual([a2.id, b2.id]);
      expect(await lease(10)).toEqual([a3.id]);
      expect((await queue.stats()).types.held).toMatchObject({ pending: 4, active: 1 });
    });

    it("claims another type behind a held type's backlog, whether the claim names its types or not", async () => {
      const { queue } = await backend.setup();
      const held = defineJob({
        type: "held",
        rateLimit: { limit: 2, periodMs: "1h" },
        handler: async () => null,
      });
      queue.register(held);
      // More held jobs ahead than any claim asks for, at a higher priority too.
      await queue.enqueueMany(
        held,
        Array.from({ length: 300 }, (_, i) => ({ i })),
        { priority: 1 },
      );
      const others = await queue.enqueueMany(
        "other",
        Array.from({ length: 5 }, (_, i) => ({ i })),
      );
      const ids = (jobs: Job[]) => jobs.map((j) => j.id);
      // The window's two starts go first, then only the other type comes out.
      const first = await queue.lease({ limit: 4 });
      expect(first.map((j) => j.type)).toEqual(["held", "held", "other", "other"]);
      expect(ids(first.slice(2))).toEqual(ids(others.slice(0, 2)));
      expect(ids(await queue.lease({ types: ["held", "other"], limit: 2 }))).toEqual(ids(others.slice(2, 4)));
      expect(ids(await queue.lease({ limit: 10 }))).toEqual(ids(others.slice(4)));
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      expect((await queue.stats()).types.held).toMatchObject({ pending: 298, active: 2 });
    });

    it("still counts, for a claim whose now is behind another's, the starts that left only the other's window", async () => {
      // A claim's `now` is read before it waits for the store, so claims from several processes
      // can be counted out of their nows' order (found by test/integration/rate-limits.test.ts).
      const { queue, store, clock } = await backend.setup();
      const t0 = clock.now();
      await queue.enqueueMany(
        "call-partner-api",
        Array.from({ length: 10 }, (_, i) => ({ i })),
      );
      await queue.enqueueMany(
        "sync",
        Array.from({ length: 10 }, (_, i) => ({ i })),
        { key: "a" },
      );
      const claim = async (now: number, type: string, limit: number) =>
        (
          await store.claim({
            now,
            workerId: "w",
            queues: [{ name: "default", weight: 1 }],
            types: [type],
            limit,
            leaseMs: 60_000,
            rateLimits: Object.assign(Object.create(null), {
              "call-partner-api": { limit: 3, periodMs: 1_000 },
            }),
            keyRules: Object.assign(Object.create(null), {
              sync: { keyRateLimit: { limit: 3, periodMs: 1_000 } },
            }),
          })
        ).length;
      for (const type of ["call-partner-api", "sync"]) {
        expect(await claim(t0, type, 10), type).toBe(3);
        // At t0 + 1010 the three of t0 have left the window: one more starts.
        expect(await claim(t0 + 1_010, type, 1), type).toBe(1);
        // Counted after it, a claim at t0 + 990: its window (t0 - 10, t0 + 990] holds the three of
        // t0 (and the later one, counted as inside it): none may start.
        expect(await claim(t0 + 990, type, 10), type).toBe(0);
      }
    });

    it("lets a Worker take held-back jobs as soon as the window allows, without polling", async () => {
      const { queue, clock } = await backend.setup();
      const ran: number[] = [];
      const limited = defineJob({
        type: "limited",
        rateLimit: { limit: 2, periodMs: 1_000 },
        handler: async () => {
          ran.push(clock.now());
          return null;
        },
      });
      await queue.enqueueMany(
        limited,
        Array.from({ length: 5 }, (_, i) => ({ i })),
      );
      const start = clock.now();
      // Polling once an hour: only the rate limit's own wake-up can start the later jobs.
      const worker = new Worker(queue, {
        jobs: [limited],
        pollIntervalMs: 3_600_000,
        sweepIntervalMs: 3_600_000,
      });
      let onDone = () => {};
      worker.on("completed", () => onDone());
      const completions = (n: number) =>
        new Promise<void>((resolve) => {
          onDone = () => ran.length >= n && worker.running === 0 && resolve();
          onDone();
        });
      onTestFinished(async () => {
        const closing = worker.close({ graceMs: 0 });
        await clock.advance(0);
        await closing;
      });
      await worker.start();
      await completions(2);
      await clock.advance(1_000);
      await completions(4);
      await clock.advance(1_000);
      await completions(5);
      expect(ran).toEqual([start, start, start + 1_000, start + 1_000, start + 2_000]);
    });

    exerciseKeyRateStops(backend);

    it("refuses a rate limit that is not { limit, periodMs } within bounds", async () => {
      for (const bad of [
        0,
        {},
        { limit: 0, periodMs: 1000 },
        { limit: 1.5, periodMs: 1000 },
        { limit: 1, periodMs: 0 },
        { limit: 1, periodMs: -1 },
        { limit: 1, periodMs: "soon" },
        { limit: 1, periodMs: 1000, burst: 2 },
        { limit: 2_000_000, periodMs: 1000 },
      ]) {
        await refused(
          () => defineJob({ type: "x", rateLimit: bad as never, handler: async () => null }),
          "INVALID_RATE_LIMIT",
        );
        await refused(
          () => defineJob({ type: "x", keyRateLimit: bad as never, handler: async () => null }),
          "INVALID_RATE_LIMIT",
        );
      }
    });
  });
}

/**
 * What stops the one running job of a key whose other jobs wait for its keyRateLimit window
 * (and its keyConcurrency), leaving the key idle with its window open each time it is claimed.
 */
const keyStops: Array<[string, (queue: Queue, job: Job, clock: ManualClock) => Promise<unknown>]> = [
  ["fails, to retry in an hour", (queue, job) => queue.fail(job, new Error("later"))],
  ["is released", (queue, job) => queue.release(job)],
  ["is snoozed for an hour", (queue, job) => queue.snooze(job, "1h")],
  ["is cancelled", (queue, job) => queue.cancel(job.id)],
  [
    "ends dead and is retried",
    async (queue, job) => {
      await queue.fail(job, new Error("fatal"), { retryable: false });
      return queue.retry(job.id);
    },
  ],
  [
    "loses its lease, recovered by the sweep",
    async (queue, _job, clock) => {
      await clock.advance(30_000);
      return queue.sweep();
    },
  ],
];

/**
 * keyRateLimit with keyConcurrency (and `fair`, `ordered`): a job the window held back is taken as
 * soon as the window allows, however the job that started before it stopped (define-job.ts). On
 * PostgreSQL these are the paths by which a key's jobs parked by its window come back (migration
 * 0013).
 */
function exerciseKeyRateStops(backend: Backend): void {
  const rules: Array<[string, Omit<JobDefinitionOptions<unknown, unknown>, "type" | "handler">]> = [
    ["keyConcurrency 1", { keyConcurrency: 1, keyRateLimit: { limit: 1, periodMs: 100 } }],
    ["keyConcurrency 1, 2 a window", { keyConcurrency: 1, keyRateLimit: { limit: 2, periodMs: 100 } }],
    ["keyConcurrency 1, fair", { keyConcurrency: 1, fair: true, keyRateLimit: { limit: 1, periodMs: 100 } }],
  ];
  /**
   * J1 of key "a" runs (as often as the window holds) and fills the window at t = 0; J2-J5 wait.
   * At t = 1 s J2 starts and `stop` ends it (for `stop` null, J2's turn comes with the sweep and it
   * is moved an hour on before it starts).
   */
  const setup = async (rule: (typeof rules)[number][1], stop: (typeof keyStops)[number][1] | null) => {
    const { queue, clock } = await backend.setup();
    const type = defineJob({ type: "krate", ...rule, handler: async () => null });
    queue.register(type);
    const lease = () => queue.lease({ types: [type.type], limit: 10, leaseMs: 10_000, maintenance: false });
    for (let i = 0; i < rule.keyRateLimit!.limit; i++) {
      await queue.enqueue(type, { n: 1 }, { key: "a" });
      const [j1] = await lease();
      expect(await queue.complete(j1!, null)).toBe(true);
    }
    const jobs = await queue.enqueueMany(
      type,
      [2, 3, 4, 5].map((n) => ({ n })),
      { key: "a", backoff: { type: "fixed", delayMs: 3_600_000 } },
    );
    expect(await lease()).toEqual([]); // the window is full
    await clock.advance(1_000);
    if (stop) {
      const [j2] = await lease();
      expect(j2?.id).toBe(jobs[0]!.id);
      await stop(queue, j2!, clock);
    } else {
      await queue.sweep();
      await queue.reschedule(jobs[0]!.id, { runAt: new Date(clock.now() + 3_600_000) });
    }
    return { queue, clock, lease };
  };
  /** Each second the window has room and nothing of the key runs: one job starts, until none waits. */
  const drain = async ({ queue, clock, lease }: Awaited<ReturnType<typeof setup>>) => {
    const perStep: number[] = [];
    const ran: number[] = [];
    for (let step = 0; step < 8; step++) {
      await clock.advance(1_000);
      await queue.sweep();
      const got = await lease();
      perStep.push(got.length);
      for (const j of got) {
        ran.push((j.payload as { n: number }).n);
        expect(await queue.complete(j, null)).toBe(true);
      }
    }
    return { ran, perStep };
  };

  describe("keyRateLimit with keyConcurrency: a job the window held back starts once it may", () => {
    for (const [ruleName, rule] of rules) {
      for (const [stopName, stop] of keyStops) {
        it(`${ruleName}: when the key's running job ${stopName}`, async () => {
          const { ran, perStep } = await drain(await setup(rule, stop));
          // J2 runs again where its stop left it ready (released, retried, recovered now).
          expect(ran.filter((n) => n !== 2)).toEqual([3, 4, 5]);
          expect(perStep).toEqual([...ran.map(() => 1), ...Array(8 - ran.length).fill(0)]);
        });
      }
      it(`${ruleName}: when the job whose turn came is moved an hour on before it starts`, async () => {
        const { ran, perStep } = await drain(await setup(rule, null));
        expect(ran).toEqual([3, 4, 5]);
        expect(perStep).toEqual([1, 1, 1, 0, 0, 0, 0, 0]);
      });
    }

    it("ordered: a retrying job holds its key; the rest start one a window once it completes", async () => {
      const bundle = await setup({ ordered: true, keyRateLimit: { limit: 1, periodMs: 100 } }, (queue, job) =>
        queue.fail(job, new Error("later")),
      );
      expect(await drain(bundle)).toEqual({ ran: [], perStep: [0, 0, 0, 0, 0, 0, 0, 0] });
      await bundle.clock.advance(3_600_000);
      expect(await drain(bundle)).toEqual({ ran: [2, 3, 4, 5], perStep: [1, 1, 1, 1, 0, 0, 0, 0] });
    });
  });
}
