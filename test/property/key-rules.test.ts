/**
 * Per-key rules under random work, on every store: fast-check generates sequences of enqueues
 * (a few keys, two priorities, bursts), leases, completions, retried and final failures, snoozes,
 * releases, cancels, reschedules and clock steps, for a type with `keyConcurrency` 1 or 2,
 * `ordered`, or `keyConcurrency` with `keyRateLimit`. After every lease: no key runs more than its
 * room or starts more than its window holds, an ordered key runs only its earliest unfinished job,
 * and a lease asking for every job took every job the rules let start (no job that may start is
 * left waiting: a busy key's backlog, or its parked jobs, never hides another's, and a job its
 * window held back starts once the window has room). At the end, with the clock far ahead,
 * leasing and completing (a window apart) until nothing comes drains every job.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { selectedBackends } from "../conformance/backend.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";

const RUNS = 10;
const TIMEOUT = propertyTimeout(RUNS, 120_000);
const BACKOFF_MS = 1_000;
const KEYS = ["a", "b", "c"] as const;

type Action =
  | { kind: "enqueue"; key: number; priority: number; n: number }
  | { kind: "lease"; limit: number }
  | { kind: "complete"; pick: number }
  | { kind: "fail"; pick: number; retry: boolean }
  | { kind: "snooze"; pick: number; delayMs: number }
  | { kind: "release"; pick: number }
  | { kind: "cancel"; pick: number }
  | { kind: "reschedule"; pick: number; delayMs: number }
  | { kind: "advance"; ms: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant("enqueue" as const),
    key: fc.nat(KEYS.length - 1),
    priority: fc.constantFrom(0, 5),
    n: fc.integer({ min: 1, max: 12 }),
  }),
  fc.record({ kind: fc.constant("lease" as const), limit: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant("complete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("fail" as const), pick: fc.nat(), retry: fc.boolean() }),
  fc.record({ kind: fc.constant("snooze" as const), pick: fc.nat(), delayMs: fc.nat(2_000) }),
  fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("reschedule" as const), pick: fc.nat(), delayMs: fc.nat(2_000) }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.nat(1_500) }),
);

/** A job as the test knows it: enough to say which may start. */
interface Known {
  id: string;
  key: string;
  seq: number;
  state: "pending" | "active" | "done";
  runAt: number;
  job?: Job;
}

/** A key's rate window in the rules below that have one. */
const WINDOW = { limit: 2, periodMs: 200 };

const rules = [
  { name: "keyConcurrency 1", room: 1, window: null, options: { keyConcurrency: 1 } },
  { name: "keyConcurrency 2", room: 2, window: null, options: { keyConcurrency: 2 } },
  { name: "ordered", room: 1, window: null, options: { ordered: true } },
  {
    name: "keyConcurrency 1 and keyRateLimit",
    room: 1,
    window: WINDOW,
    options: { keyConcurrency: 1, keyRateLimit: WINDOW },
  },
] as const;

for (const backend of selectedBackends({ conformance: true })) {
  describe(`${backend.name}: per-key rules under random work`, () => {
    for (const rule of rules) {
      it(
        `${rule.name}: keys never run past their room, and every job that may start does`,
        async () => {
          await fc.assert(
            fc.asyncProperty(
              fc.array(action, { minLength: 1, maxLength: 40 }),
              catalogued(`key rules, ${backend.name}, ${rule.name}`, async (actions: Action[]) => {
                const { queue, clock, store } = await backend.setup();
                // Each run's own store, closed when it ends: runs would otherwise hold every connection
                // PostgreSQL has (the backend closes what a test opened only when the test ends).
                try {
                  const type = defineJob({
                    type: "tenant",
                    ...rule.options,
                    maxAttempts: 3,
                    backoff: { type: "fixed", delayMs: BACKOFF_MS },
                    handler: async () => null,
                  });
                  queue.register(type);
                  const known: Known[] = [];
                  const byId = new Map<string, Known>();
                  /** Each key's starts (lease times), for its rate window. */
                  const starts = new Map<string, number[]>();
                  const inWindow = (key: string) =>
                    rule.window === null
                      ? 0
                      : (starts.get(key) ?? []).filter((t) => t > clock.now() - rule.window!.periodMs).length;
                  const windowRoom = (key: string) =>
                    rule.window === null || inWindow(key) < rule.window.limit;
                  const live = () => known.filter((k) => k.state !== "done");
                  const pickOf = (state: Known["state"], pick: number) => {
                    const of = known.filter((k) => k.state === state);
                    return of.length === 0 ? undefined : of[pick % of.length];
                  };
                  /** The jobs the rules let start now that a lease did not take. */
                  const startable = () => {
                    const now = clock.now();
                    const out: Known[] = [];
                    for (const key of KEYS) {
                      const mine = live()
                        .filter((k) => k.key === key)
                        .sort((x, y) => x.seq - y.seq);
                      const active = mine.filter((k) => k.state === "active").length;
                      const due = mine.filter((k) => k.state === "pending" && k.runAt <= now);
                      if (rule.name === "ordered") {
                        const head = mine[0];
                        if (head?.state === "pending" && head.runAt <= now) out.push(head);
                      } else if (active < rule.room && due.length > 0 && windowRoom(key)) {
                        out.push(due[0]!);
                      }
                    }
                    return out;
                  };
                  const checkLeased = (jobs: Job[]) => {
                    for (const job of jobs) {
                      const k = byId.get(job.id)!;
                      expect(k.state, `job ${job.id} leased`).toBe("pending");
                      expect(k.runAt, `job ${job.id} leased before its time`).toBeLessThanOrEqual(
                        clock.now(),
                      );
                      if (rule.name === "ordered") {
                        const head = live()
                          .filter((x) => x.key === k.key)
                          .sort((x, y) => x.seq - y.seq)[0];
                        expect(head?.id, `key ${k.key}: only its earliest job starts`).toBe(job.id);
                      }
                      k.state = "active";
                      k.job = job;
                      const running = known.filter((x) => x.key === k.key && x.state === "active").length;
                      expect(running, `key ${k.key} running`).toBeLessThanOrEqual(rule.room);
                      starts.set(k.key, [...(starts.get(k.key) ?? []), clock.now()]);
                      if (rule.window !== null)
                        expect(inWindow(k.key), `key ${k.key} starts in its window`).toBeLessThanOrEqual(
                          rule.window.limit,
                        );
                    }
                  };

                  for (const a of actions) {
                    switch (a.kind) {
                      case "enqueue": {
                        const key = KEYS[a.key]!;
                        const jobs = await queue.enqueueMany(
                          type,
                          Array.from({ length: a.n }, (_, i) => ({ i })),
                          { key, priority: a.priority },
                        );
                        for (const j of jobs) {
                          const k: Known = {
                            id: j.id,
                            key,
                            seq: known.length,
                            state: "pending",
                            runAt: clock.now(),
                          };
                          known.push(k);
                          byId.set(k.id, k);
                        }
                        break;
                      }
                      case "lease": {
                        checkLeased(await queue.lease({ limit: a.limit }));
                        break;
                      }
                      case "complete": {
                        const k = pickOf("active", a.pick);
                        if (!k) break;
                        expect(await queue.complete(k.job!, null)).toBe(true);
                        k.state = "done";
                        break;
                      }
                      case "fail": {
                        const k = pickOf("active", a.pick);
                        if (!k) break;
                        expect(await queue.fail(k.job!, new Error("x"), { retryable: a.retry })).toBe(true);
                        const stored = await queue.get(k.id);
                        if (stored?.state === "pending") {
                          k.state = "pending";
                          k.runAt = stored.runAt.getTime();
                        } else {
                          expect(stored?.state).toBe("dead");
                          k.state = "done";
                        }
                        break;
                      }
                      case "snooze": {
                        const k = pickOf("active", a.pick);
                        if (!k) break;
                        expect(await queue.snooze(k.job!, a.delayMs)).toBe(true);
                        k.state = "pending";
                        k.runAt = clock.now() + a.delayMs;
                        break;
                      }
                      case "release": {
                        const k = pickOf("active", a.pick);
                        if (!k) break;
                        expect(await queue.release(k.job!)).toBe(true);
                        k.state = "pending";
                        k.runAt = (await queue.get(k.id))!.runAt.getTime();
                        break;
                      }
                      case "cancel": {
                        const k = pickOf("pending", a.pick);
                        if (!k) break;
                        expect((await queue.cancel(k.id))?.state).toBe("cancelled");
                        k.state = "done";
                        break;
                      }
                      case "reschedule": {
                        const k = pickOf("pending", a.pick);
                        if (!k) break;
                        const runAt = clock.now() + a.delayMs;
                        expect((await queue.reschedule(k.id, { runAt: new Date(runAt) }))?.state).toBe(
                          "pending",
                        );
                        k.runAt = runAt;
                        break;
                      }
                      case "advance":
                        await clock.advance(a.ms);
                        break;
                    }
                    // A lease asking for every job takes every job the rules let start.
                    const all = await queue.lease({ limit: 1_000 });
                    checkLeased(all);
                    expect(
                      startable().map((k) => k.id),
                      `after ${a.kind}: left waiting`,
                    ).toEqual([]);
                  }

                  // The end: what runs finishes; with the clock far ahead, every job runs.
                  for (const k of known.filter((x) => x.state === "active")) {
                    expect(await queue.complete(k.job!, null)).toBe(true);
                    k.state = "done";
                  }
                  await clock.advance(10 * BACKOFF_MS + 10_000);
                  for (let round = 0; round < 1_000; round++) {
                    const jobs = await queue.lease({ limit: 1_000 });
                    checkLeased(jobs);
                    if (jobs.length === 0 && live().length === 0) break;
                    // A rate window holds back the rest until it opens again.
                    if (jobs.length === 0 && rule.window !== null) await clock.advance(rule.window.periodMs);
                    else if (jobs.length === 0) break;
                    for (const j of jobs) {
                      expect(await queue.complete(j, null)).toBe(true);
                      byId.get(j.id)!.state = "done";
                    }
                  }
                  expect(
                    live().map((k) => k.id),
                    "never ran",
                  ).toEqual([]);
                  expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 0 });
                } finally {
                  await store.close();
                }
              }),
            ),
            fcParams(RUNS),
          );
        },
        TIMEOUT,
      );
    }
  });
}
