/**
 * The model-based test of the job state machine, on every store: fast-check generates sequences
 * of commands (enqueue, lease, heartbeat, checkpoint, complete, fail, release, cancel, retry,
 * replay, reschedule, clock advance, sweep), runs each against the reference model
 * (job-model.ts) and a real Queue on a ManualClock, and after every command compares the model's
 * view of each job (state, attempt, runAt, queue, priority, errors, result, …) with the store's.
 * Zero divergences is the property; a shrunk counterexample is the shortest command sequence
 * that shows one.
 *
 * Runs share one store and clock per test (a fresh schema per run would cost more than the run):
 * each run has its own queues, ids and unique keys, and cancels what the run before it left
 * live, so sweeps see only its own jobs.
 *
 * `lease` sweeps first: the model of the main property does not depend on when a lease call runs
 * maintenance itself. That a lease alone recovers expired leases and expires jobs (issue 12,
 * item 8) is its own property, at the end.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import { ErrandError } from "../../src/errors.js";
import type { Delivery, Job, JobState } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import { selectedBackends } from "../conformance/backend.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import type { JobModel, ModelJob } from "./job-model.js";
import * as model from "./job-model.js";

const RUNS = 12;
const MAX_COMMANDS = 40;
const TIMEOUT = propertyTimeout(RUNS, 60_000);
const WORKER = "model-worker";

/** The real side of a run: the queue, its clock, and this run's names. */
interface Real {
  queue: Queue;
  clock: ManualClock;
  /** This run's two queues. */
  queues: [string, string];
  prefix: string;
}

type Cmd = fc.AsyncCommand<JobModel, Real>;

// ---- comparing the model with the store ----------------------------------------------------------

/** What the model predicts of a job, as the store shows it. */
function view(j: ModelJob | Job) {
  const ms = (d: Date | number | null) => (d === null ? null : typeof d === "number" ? d : d.getTime());
  if ("backoffMs" in j) {
    return {
      state: j.state,
      type: j.type,
      queue: j.queue,
      priority: j.priority,
      attempt: j.attempt,
      maxAttempts: j.maxAttempts,
      runAt: j.runAt,
      expiresAt: j.expiresAt,
      leaseExpiresAt: j.leaseExpiresAt,
      workerId: j.workerId,
      errors: j.errors,
      lastErrorKind: j.lastErrorKind,
      result: j.result,
      checkpoint: j.checkpoint,
      uniqueKey: j.uniqueKey,
      startedAt: j.startedAt,
      finishedAt: j.finishedAt,
    };
  }
  return {
    state: j.state,
    type: j.type,
    queue: j.queue,
    priority: j.priority,
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    runAt: ms(j.runAt),
    expiresAt: ms(j.expiresAt),
    leaseExpiresAt: ms(j.leaseExpiresAt),
    workerId: j.workerId,
    errors: j.errors.length,
    lastErrorKind: j.errors.at(-1)?.kind ?? null,
    result: j.result === null ? null : JSON.stringify(j.result),
    checkpoint: j.checkpoint === null ? null : JSON.stringify(j.checkpoint),
    uniqueKey: j.uniqueKey,
    startedAt: ms(j.startedAt),
    finishedAt: ms(j.finishedAt),
  };
}

/** Every job of the run, in the store and in the model: the same ids, and each the same. */
async function compare(m: JobModel, r: Real, after: string): Promise<void> {
  const stored = new Map<string, Job>();
  for (const q of r.queues) {
    const page = await r.queue.list({ queue: q, limit: 1000 });
    for (const j of page.jobs) stored.set(j.id, j);
  }
  expect([...stored.keys()].sort(), `after ${after}: the run's jobs`).toEqual([...m.order].sort());
  for (const id of m.order) {
    expect(view(stored.get(id)!), `after ${after}: job ${id}`).toEqual(view(m.jobs.get(id)!));
  }
}

/** The job a command picks: the `pick`-th the model knows, wrapping around. */
const picked = (m: JobModel, pick: number): ModelJob => m.jobs.get(m.order[pick % m.order.length]!)!;

/** An ErrandError's code, or the error itself when it is anything else (a divergence of its own). */
async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (error) {
    if (error instanceof ErrandError) return error.code;
    throw error;
  }
}

// ---- commands -------------------------------------------------------------------------------------

interface EnqueueSpec {
  idSlot: number | null;
  type: string;
  queueSlot: 0 | 1;
  priority: number;
  delayMs: number;
  expiresInMs: number | null;
  maxAttempts: number;
  delivery: Delivery;
  backoffMs: number;
  retryToOther: boolean;
  uniqueSlot: number | null;
}

class Enqueue implements Cmd {
  constructor(readonly s: EnqueueSpec) {}
  check = () => true;
  async run(m: JobModel, r: Real) {
    const s = this.s;
    const id = s.idSlot === null ? undefined : `${r.prefix}j${s.idSlot}`;
    const uniqueKey = s.uniqueSlot === null ? null : `${r.prefix}u${s.uniqueSlot}`;
    const got = await r.queue.enqueue(
      s.type,
      { n: s.idSlot },
      {
        ...(id === undefined ? {} : { id }),
        queue: r.queues[s.queueSlot],
        priority: s.priority,
        delayMs: s.delayMs,
        ...(s.expiresInMs === null ? {} : { expiresInMs: s.expiresInMs }),
        maxAttempts: s.maxAttempts,
        delivery: s.delivery,
        backoff: { type: "fixed", delayMs: s.backoffMs },
        ...(s.retryToOther ? { retryQueue: r.queues[s.queueSlot === 0 ? 1 : 0] } : {}),
        ...(uniqueKey === null ? {} : { uniqueKey }),
      },
    );
    const want = model.enqueue(m, {
      // A generated id is new unless the unique key matched: then no id can match in the model.
      id: id ?? (got.duplicate ? `${r.prefix}generated` : got.id),
      type: s.type,
      queue: r.queues[s.queueSlot],
      priority: s.priority,
      delayMs: s.delayMs,
      expiresInMs: s.expiresInMs,
      maxAttempts: s.maxAttempts,
      delivery: s.delivery,
      backoffMs: s.backoffMs,
      retryQueue: s.retryToOther ? r.queues[s.queueSlot === 0 ? 1 : 0] : null,
      uniqueKey,
    });
    expect({ id: got.id, duplicate: got.duplicate }, `${this}: the job it returned`).toEqual({
      id: want.job.id,
      duplicate: want.duplicate,
    });
    expect(view(got), `${this}: the job it returned`).toEqual(view(want.job));
    await compare(m, r, this.toString());
  }
  toString = () => `enqueue(${JSON.stringify(this.s)})`;
}

/** Sweeps (so the model does not depend on whether a lease runs maintenance), then leases. */
class Lease implements Cmd {
  constructor(
    readonly queueSlot: 0 | 1,
    readonly types: string[] | null,
    readonly limit: number,
    readonly leaseMs: number,
  ) {}
  check = () => true;
  async run(m: JobModel, r: Real) {
    const swept = await r.queue.sweep();
    expect(swept, `${this}: its sweep`).toEqual({ ...model.sweep(m), fired: 0 });
    const got = await r.queue.lease({
      queues: [r.queues[this.queueSlot]],
      ...(this.types ? { types: this.types } : {}),
      limit: this.limit,
      leaseMs: this.leaseMs,
      workerId: WORKER,
    });
    const want = model.claim(m, {
      queue: r.queues[this.queueSlot],
      types: this.types,
      limit: this.limit,
      leaseMs: this.leaseMs,
      workerId: WORKER,
    });
    expect(got.map((j) => j.id).sort(), `${this}: the jobs leased`).toEqual(want.map((j) => j.id).sort());
    for (const j of got) expect(view(j), `${this}: leased ${j.id}`).toEqual(view(m.jobs.get(j.id)!));
    await compare(m, r, this.toString());
  }
  toString = () =>
    `sweep + lease(q${this.queueSlot}, types ${JSON.stringify(this.types)}, limit ${this.limit}, ${this.leaseMs} ms)`;
}

type Report = "heartbeat" | "checkpoint" | "complete" | "fail" | "fail-not-retryable" | "release";

/** A report on an attempt: the job's current attempt (`stale` 0) or a later one that is not. */
class ReportCmd implements Cmd {
  constructor(
    readonly op: Report,
    readonly pick: number,
    readonly stale: 0 | 1,
    readonly n: number,
  ) {}
  check = (m: Readonly<JobModel>) => m.order.length > 0;
  async run(m: JobModel, r: Real) {
    const j = picked(m, this.pick);
    const ref = { id: j.id, attempt: Math.max(1, j.attempt + this.stale) };
    const data = JSON.stringify({ n: this.n });
    let got: boolean;
    let want: boolean;
    switch (this.op) {
      case "heartbeat":
        got = await r.queue.heartbeat(ref, { leaseMs: this.n });
        want = model.heartbeat(m, ref.id, ref.attempt, this.n);
        break;
      case "checkpoint":
        got = await r.queue.checkpoint(ref, { n: this.n });
        want = model.checkpoint(m, ref.id, ref.attempt, data);
        break;
      case "complete":
        got = await r.queue.complete(ref, { n: this.n });
        want = model.complete(m, ref.id, ref.attempt, data);
        break;
      case "fail":
      case "fail-not-retryable": {
        const retryable = this.op === "fail";
        got = await r.queue.fail(ref, new Error("boom"), retryable ? {} : { retryable: false });
        want = model.fail(m, ref.id, ref.attempt, retryable);
        break;
      }
      case "release":
        got = await r.queue.release(ref);
        want = model.release(m, ref.id, ref.attempt);
        break;
    }
    expect(got, `${this} on ${ref.id} attempt ${ref.attempt}: its answer`).toBe(want);
    await compare(m, r, `${this} on ${ref.id}`);
  }
  toString = () => `${this.op}(job #${this.pick}${this.stale ? ", next attempt" : ""}, ${this.n})`;
}

class ById implements Cmd {
  constructor(
    readonly op: "cancel" | "retry" | "replay",
    readonly pick: number | "missing",
  ) {}
  check = (m: Readonly<JobModel>) => this.pick === "missing" || m.order.length > 0;
  async run(m: JobModel, r: Real) {
    const id = this.pick === "missing" ? `${r.prefix}missing` : picked(m, this.pick).id;
    const source = m.jobs.get(id);
    let got: Job | undefined;
    const code = await codeOf(
      r.queue[this.op](id).then((j) => {
        got = j;
      }),
    );
    let want: model.ByIdResult;
    if (this.op === "cancel") want = model.cancel(m, id);
    else if (this.op === "retry") want = model.retry(m, id);
    else {
      // The replay's expiry rule is the store's to compute; the model checks its shape.
      if (got && source) {
        if (source.expiresAt === null) {
          expect(got.expiresAt, `${this}: a replay of a job without expiry has none`).toBeNull();
        } else {
          expect(got.expiresAt, `${this}: a replay keeps the original's expiry rule`).not.toBeNull();
        }
        if (source.state === "expired") {
          const never =
            got.state === "expired" || (got.expiresAt !== null && got.expiresAt.getTime() <= m.now);
          expect(never, `${this}: a replay of an expired job ends expired, never runs`).toBe(true);
        }
      }
      want = model.replay(m, id, got?.id ?? "", {
        expiresAt: got?.expiresAt?.getTime() ?? null,
        state: (got?.state ?? "pending") as JobState,
      });
    }
    expect(code, `${this} on ${id}: refused with`).toBe("code" in want ? want.code : null);
    if (got && "job" in want)
      expect(view(got), `${this} on ${id}: the job it returned`).toEqual(view(want.job));
    await compare(m, r, `${this} on ${id}`);
  }
  toString = () => `${this.op}(${this.pick === "missing" ? "a missing id" : `job #${this.pick}`})`;
}

class Reschedule implements Cmd {
  constructor(
    readonly pick: number,
    readonly change: { runAtInMs?: number; priority?: number; queueSlot?: 0 | 1 },
  ) {}
  check = (m: Readonly<JobModel>) => m.order.length > 0;
  async run(m: JobModel, r: Real) {
    const j = picked(m, this.pick);
    const c = this.change;
    const change = {
      ...(c.runAtInMs === undefined ? {} : { runAt: m.now + c.runAtInMs }),
      ...(c.priority === undefined ? {} : { priority: c.priority }),
      ...(c.queueSlot === undefined ? {} : { queue: r.queues[c.queueSlot] }),
    };
    let got: Job | undefined;
    const code = await codeOf(
      r.queue.reschedule(j.id, change).then((x) => {
        got = x;
      }),
    );
    const want = model.reschedule(m, j.id, change);
    expect(code, `${this} on ${j.id}: refused with`).toBe("code" in want ? want.code : null);
    if (got && "job" in want) expect(view(got), `${this}: the job it returned`).toEqual(view(want.job));
    await compare(m, r, `${this} on ${j.id}`);
  }
  toString = () => `reschedule(job #${this.pick}, ${JSON.stringify(this.change)})`;
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: JobModel, r: Real) {
    await r.clock.advance(this.ms);
    m.now += this.ms;
    expect(r.clock.now()).toBe(m.now);
  }
  toString = () => `advance(${this.ms} ms)`;
}

class Sweep implements Cmd {
  check = () => true;
  async run(m: JobModel, r: Real) {
    const got = await r.queue.sweep();
    expect(got, `${this}: what it did`).toEqual({ ...model.sweep(m), fired: 0 });
    await compare(m, r, this.toString());
  }
  toString = () => "sweep()";
}

class Stats implements Cmd {
  check = () => true;
  async run(m: JobModel, r: Real) {
    const stats = await r.queue.stats();
    for (const q of r.queues) {
      const counts = Object.fromEntries(Object.entries(stats.queues[q] ?? {}).filter(([, n]) => n !== 0));
      expect(counts, `stats().queues[${q}]`).toEqual(model.countsByState(m, q));
    }
  }
  toString = () => "stats()";
}

const slot = fc.constantFrom<0 | 1>(0, 1);
const pick = fc.nat(30);
const enqueueCommand = fc
  .record({
    idSlot: fc.option(fc.nat(5), { nil: null }),
    type: fc.constantFrom("a", "b", "c"),
    queueSlot: slot,
    priority: fc.integer({ min: -2, max: 2 }),
    delayMs: fc.constantFrom(0, 0, 500, 1000, 5000, 60_000),
    expiresInMs: fc.option(fc.constantFrom(1, 1000, 3000, 10_000, 120_000), { nil: null }),
    maxAttempts: fc.integer({ min: 1, max: 3 }),
    delivery: fc.constantFrom<Delivery>("at_least_once", "at_least_once", "at_most_once"),
    backoffMs: fc.constantFrom(0, 1000, 5000),
    retryToOther: fc.boolean(),
    uniqueSlot: fc.option(fc.nat(1), { nil: null }),
  })
  .map((s) => new Enqueue(s));
const leaseCommand = fc
  .tuple(
    slot,
    // No types (the queue's pending types), one, or several: claims merge the types' walks.
    fc.option(fc.constantFrom<string[]>(["a"], ["a", "c"], ["c", "b", "a"], ["b", "z"]), { nil: null }),
    fc.integer({ min: 1, max: 4 }),
    fc.constantFrom(1000, 5000, 30_000),
  )
  .map(([q, types, limit, leaseMs]) => new Lease(q, types, limit, leaseMs));
const reportCommand = fc
  .tuple(
    fc.constantFrom<Report>("heartbeat", "checkpoint", "complete", "fail", "fail-not-retryable", "release"),
    pick,
    fc.constantFrom<0 | 1>(0, 0, 0, 1),
    fc.constantFrom(1000, 5000, 30_000),
  )
  .map(([op, p, stale, n]) => new ReportCmd(op, p, stale, n));
/** Each kind once, and the ones that make jobs and move them more often. */
const commands = [
  enqueueCommand,
  enqueueCommand,
  enqueueCommand,
  leaseCommand,
  leaseCommand,
  reportCommand,
  reportCommand,
  reportCommand,
  fc
    .tuple(
      fc.constantFrom("cancel" as const, "retry" as const, "replay" as const),
      fc.oneof(pick, fc.constant("missing" as const)),
    )
    .map(([op, p]) => new ById(op, p)),
  fc
    .tuple(
      pick,
      fc.record(
        {
          runAtInMs: fc.constantFrom(-1000, 0, 2000, 60_000),
          priority: fc.integer({ min: -2, max: 2 }),
          queueSlot: slot,
        },
        { requiredKeys: [] },
      ),
    )
    .map(([p, change]) => new Reschedule(p, change)),
  fc.constantFrom(1, 500, 999, 1000, 5000, 30_000, 60_000).map((ms) => new Advance(ms)),
  fc.constant(new Sweep()),
  fc.constant(new Stats()),
];

for (const backend of selectedBackends({ conformance: true })) {
  describe(`the job state machine against its model on ${backend.name}`, () => {
    it(
      "diverges from the model in no command sequence",
      async () => {
        const { queue, clock } = await backend.setup();
        let run = 0;
        let last: { m: JobModel; r: Real } | null = null;
        const setup = async () => {
          // Whatever the run before left live is cancelled, so this run's sweeps see only its jobs.
          if (last) {
            for (const j of last.m.jobs.values()) {
              if (j.state !== "pending" && j.state !== "active") continue;
              // One the clock carried past its expiresAt is refused as expired: ended all the same.
              await queue.cancel(j.id).catch((error: unknown) => {
                if ((error as { code?: string }).code !== "INVALID_STATE") throw error;
              });
            }
          }
          const prefix = `r${run++}-`;
          const r: Real = { queue, clock, prefix, queues: [`${prefix}q0`, `${prefix}q1`] };
          const m = model.newModel(clock.now());
          last = { m, r };
          return { model: m, real: r };
        };
        const check = catalogued(`${backend.name}: model`, async (cmds: Iterable<Cmd>) => {
          await fc.asyncModelRun(setup, cmds);
        });
        await fc.assert(
          fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: "max" }), check),
          fcParams(RUNS),
        );
      },
      TIMEOUT,
    );

    it(
      "lease alone, without sweep(), re-leases an expired lease and expires a job past expiresAt (issue 12, item 8)",
      async () => {
        const { queue, clock } = await backend.setup();
        let run = 0;
        const check = catalogued(
          `${backend.name}: lease without sweep`,
          async (leaseMs: number, afterMs: number, expiresInMs: number) => {
            const q = `lease-only-${run++}`;
            const held = await queue.enqueue("t", null, { queue: q, backoff: { type: "fixed", delayMs: 0 } });
            // Never due before it expires: only expiry can end it.
            const late = await queue.enqueue("t", null, {
              queue: q,
              delayMs: expiresInMs + 1000,
              expiresInMs,
            });
            const [first] = await queue.lease({ queues: [q], leaseMs, workerId: "w1" });
            expect(first?.id).toBe(held.id);
            await clock.advance(Math.max(leaseMs, expiresInMs) + afterMs);
            const again = await queue.lease({ queues: [q], leaseMs, workerId: "w2" });
            expect(
              again.map((j) => j.id),
              "the expired lease was not leased again",
            ).toEqual([held.id]);
            expect(again[0]).toMatchObject({ attempt: 2, workerId: "w2", state: "active" });
            expect(again[0]!.errors.map((e) => e.kind)).toEqual(["lease_expired"]);
            const expired = await queue.get(late.id);
            expect(expired?.state, "the job past expiresAt did not end expired").toBe("expired");
          },
        );
        await fc.assert(
          fc.asyncProperty(
            fc.integer({ min: 1000, max: 60_000 }),
            fc.integer({ min: 60_000, max: 3_600_000 }),
            fc.integer({ min: 1, max: 600_000 }),
            check,
          ),
          fcParams(RUNS),
        );
      },
      TIMEOUT,
    );
  });
}
