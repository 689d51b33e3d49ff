/**
 * The remote-worker protocol: long-poll lease, then complete, fail, heartbeat, checkpoint,
 * release or snooze each attempt by its number, or report many outcomes at once.
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { FastifyInstance } from "fastify";
import type { Duration } from "../../duration.js";
import { ErrandError } from "../../errors.js";
import { recordsFailure } from "../../failure-rule.js";
import type { Job } from "../../job.js";
import type { Queue } from "../../queue.js";
import { roomNow } from "../../queue-checks.js";
import type { Completion } from "../../store/instrument.js";
import type { ServerContext } from "../context.js";
import { claimSize, leaseInClaims } from "../lease-claims.js";
import { drainingError } from "../lifecycle.js";
import { itemsWithin, MAX_PAGE_CHARS, serialized } from "../page-size.js";
import { body, params } from "../routing.js";
import { type FailError, stale, toError } from "./attempts.js";

/** The lease a lease or heartbeat grants when the request names none (the Worker's default too). */
const DEFAULT_LEASE_MS = 30_000;

interface LeaseBody {
  types?: string[];
  queues?: string[] | Record<string, number>;
  limit?: number;
  leaseMs?: number;
  waitMs?: number;
  workerId?: string;
  maxWeight?: number;
  weightCap?: number;
  ahead?: number;
}

/** A failure to record, as the fail and report endpoints take it. */
interface FailReport {
  id: string;
  attempt: number;
  error: FailError;
  retryable: boolean | undefined;
}

interface FailOutcome {
  ok: true;
  state: Job["state"];
  runAt: Date;
  /** This failure (same attempt, same error) had been recorded before: a resent report. */
  duplicate: boolean;
}

interface ReportItem {
  id: string;
  attempt: number;
  outcome: "complete" | "fail" | "snooze";
  result?: unknown;
  error?: FailError;
  retryable?: boolean;
  delayMs?: Duration;
}

/** The most attempts a server remembers handing out; past it, the oldest are forgotten first. */
const MAX_LEASED = 100_000;

/**
 * The most JSON characters of jobs a server keeps as handed out (four whole lease answers): past
 * it, the oldest lose their job and keep only their attempt and lease end.
 */
export const MAX_LEASED_CHARS = 4 * MAX_PAGE_CHARS;

/** An attempt handed out, and when its lease runs out as far as this server knows. */
interface LeasedEntry {
  readonly id: string;
  readonly attempt: number;
  /** The job as handed out; null once let go to keep the jobs kept within their bound. */
  job: Job | null;
  /** The job's share of its lease answer's characters: roughly what keeping it costs. */
  readonly chars: number;
  readonly until: number;
}

/**
 * Attempts this server handed out over HTTP, by job id, each with the job as handed out: a remote
 * completion names only the id and attempt, and the job gives its `completed` event (and a
 * snooze's `snoozed`) without reading it back. Only a shortcut: a completion that finds no job
 * has it read back by the door. The attempts also tell a draining server what is outstanding.
 *
 * An entry goes when its attempt is reported through this server; when the queue says the attempt
 * ended some other way (`cancelled` while active, `failed` when a sweep through this queue
 * recovered its lease); when its lease has run out (looked at on each lease call, soonest end
 * first, from a heap of lease ends: with lease lengths that differ, an entry granted behind a
 * longer lease still leaves at its own end); and, past `max`, oldest granted first, live or not.
 * So attempts reported to another server, or recovered by another process, leave at the first
 * lease call after their lease's end, not at a wholesale clear. The jobs kept are bounded by their
 * size too (`maxChars`, counted by each job's share of its answer): past it, the oldest granted
 * keep their attempt but not their job, so large payloads leased far ahead cannot fill the heap.
 * @internal
 */
export class LeasedJobs {
  readonly #queue: Queue;
  readonly #max: number;
  readonly #maxChars: number;
  readonly #entries = new Map<string, LeasedEntry>();
  /** The entries that still hold their job, oldest granted first, and their characters. */
  readonly #withJob = new Set<LeasedEntry>();
  #chars = 0;
  /**
   * Lease ends, soonest at the root. A grant or extension pushes a new end and leaves the old one:
   * an end whose entry is gone or has moved on is skipped when it comes up, and the heap is built
   * again from the entries when stale ends outnumber them.
   */
  #ends: LeasedEntry[] = [];
  /** Whether the queue listeners are on: from the first job leased until close. */
  #listening = false;
  #closed = false;
  /** The {@link settled} waiting now, each looking again when called. */
  readonly #waiters = new Set<() => void>();
  readonly #ended = (job: Job): void => {
    const entry = this.#entries.get(job.id);
    if (entry && entry.attempt <= job.attempt) this.#drop(entry);
    this.#compact();
    this.#wakeIfNone();
  };

  constructor(queue: Queue, max = MAX_LEASED, maxChars = MAX_LEASED_CHARS) {
    this.#queue = queue;
    this.#max = max;
    this.#maxChars = maxChars;
  }

  /** Attempts remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Characters of the jobs kept now (each job's share of its answer). */
  get chars(): number {
    return this.#chars;
  }

  /** The job as handed out, when `attempt` is the attempt this server handed out and it is kept. */
  get(id: string, attempt: number): Job | undefined {
    const entry = this.#entries.get(id);
    return entry?.attempt === attempt ? (entry.job ?? undefined) : undefined;
  }

  /**
   * Forgets the attempts whose lease has run out, then remembers `jobs`, just leased for
   * `leaseMs` (or until their `leaseExpiresAt`) and sent in an answer of `answerChars`
   * characters. Called on every lease call, with jobs or none.
   */
  add(jobs: readonly Job[], leaseMs: number, answerChars: number): void {
    if (this.#closed) return;
    const now = this.#queue.clock.now();
    this.#forgetEnded(now);
    if (jobs.length === 0) return;
    if (!this.#listening) {
      // Subscribed with the first entry, not when the routes are registered: a server that was
      // never made, or never leased a job, leaves no listener on the queue.
      this.#listening = true;
      this.#queue.on("cancelled", this.#ended);
      this.#queue.on("failed", this.#ended);
    }
    const chars = Math.ceil(answerChars / jobs.length);
    for (const job of jobs) {
      const until = job.leaseExpiresAt?.getTime() ?? now + leaseMs;
      this.#remember({ id: job.id, attempt: job.attempt, job, chars, until });
    }
    for (const entry of this.#entries.values()) {
      if (this.#entries.size <= this.#max) break;
      this.#drop(entry);
    }
    this.#compact();
  }

  /** A heartbeat through this server extended the attempt's lease by `leaseMs` from now. */
  extend(id: string, attempt: number, leaseMs: number): void {
    const entry = this.#entries.get(id);
    if (entry?.attempt !== attempt) return;
    // A new entry, so the old end in the heap no longer names a live one; to the back, with the
    // leases granted last (the order `max` forgets in).
    this.#remember({ ...entry, until: this.#queue.clock.now() + leaseMs });
    this.#compact();
  }

  /** The attempt of `id` was reported through this server. */
  delete(id: string): void {
    const entry = this.#entries.get(id);
    if (entry) this.#drop(entry);
    // The heap's ends hold their entries too: it must not keep the reported ones for long.
    this.#compact();
    this.#wakeIfNone();
  }

  /**
   * Resolves once no attempt this server handed out is outstanding: each reported through it,
   * ended some other way, or its lease run out (looked at when the soonest runs out, on the
   * queue's clock). At once when none is, and when closed. What a draining server waits for.
   */
  async settled(): Promise<void> {
    const clock = this.#queue.clock;
    while (!this.#closed) {
      this.#forgetEnded(clock.now());
      if (this.#entries.size === 0) return;
      // The soonest end, or a stale one before it: either way, look again then.
      const soonest = this.#ends[0]!.until;
      await new Promise<void>((resolve) => {
        let cancel = () => {};
        const wake = () => {
          cancel();
          this.#waiters.delete(wake);
          resolve();
        };
        this.#waiters.add(wake);
        cancel = clock.setTimer(Math.max(1, soonest - clock.now()), wake);
      });
    }
  }

  /** `entry` in place of any entry of its job, at the back; the oldest jobs let go past the bound. */
  #remember(entry: LeasedEntry): void {
    const old = this.#entries.get(entry.id);
    if (old) this.#drop(old);
    this.#entries.set(entry.id, entry);
    this.#pushEnd(entry);
    if (entry.job === null) return;
    this.#withJob.add(entry);
    this.#chars += entry.chars;
    for (const oldest of this.#withJob) {
      if (this.#chars <= this.#maxChars) break;
      this.#letGo(oldest);
    }
  }

  /** Forgets `entry` (the one its id maps to). */
  #drop(entry: LeasedEntry): void {
    this.#entries.delete(entry.id);
    this.#letGo(entry);
  }

  /** Lets go of `entry`'s job; its stale ends in the heap then hold no payload either. */
  #letGo(entry: LeasedEntry): void {
    if (entry.job === null) return;
    entry.job = null;
    this.#withJob.delete(entry);
    this.#chars -= entry.chars;
  }

  #wakeIfNone(): void {
    if (this.#entries.size > 0) return;
    for (const wake of [...this.#waiters]) wake();
  }

  /** Forgets the entries whose lease ended by `now`, soonest end first. */
  #forgetEnded(now: number): void {
    const ends = this.#ends;
    while (ends.length > 0 && ends[0]!.until <= now) {
      const end = this.#popEnd();
      // Only the entry this end was pushed for: a later grant or extension replaced it.
      if (this.#entries.get(end.id) === end) this.#drop(end);
    }
  }

  /** Builds the heap again from the live entries once stale ends outnumber them. */
  #compact(): void {
    if (this.#ends.length <= 2 * this.#entries.size + 1024) return;
    this.#ends = [];
    for (const entry of this.#entries.values()) this.#pushEnd(entry);
  }

  #pushEnd(entry: LeasedEntry): void {
    const ends = this.#ends;
    let i = ends.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (ends[parent]!.until <= entry.until) break;
      ends[i] = ends[parent]!;
      i = parent;
    }
    ends[i] = entry;
  }

  #popEnd(): LeasedEntry {
    const ends = this.#ends;
    const top = ends[0]!;
    const last = ends.pop()!;
    if (ends.length === 0) return top;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= ends.length) break;
      if (child + 1 < ends.length && ends[child + 1]!.until < ends[child]!.until) child++;
      if (ends[child]!.until >= last.until) break;
      ends[i] = ends[child]!;
      i = child;
    }
    ends[i] = last;
    return top;
  }

  /** Forgets everything and lets go of the queue. Safe to call twice. */
  close(): void {
    this.#closed = true;
    this.#entries.clear();
    this.#withJob.clear();
    this.#chars = 0;
    this.#ends = [];
    this.#wakeIfNone();
    if (!this.#listening) return;
    this.#listening = false;
    this.#queue.off("cancelled", this.#ended);
    this.#queue.off("failed", this.#ended);
  }
}

/** Each server's {@link LeasedJobs}, for tests. */
const LEASED = new WeakMap<FastifyInstance, LeasedJobs>();

/** The attempts the worker protocol of `app` remembers handing out, for tests. @internal */
export function leasedJobsOf(app: FastifyInstance): LeasedJobs | undefined {
  return LEASED.get(app);
}

/** Registers the worker protocol's routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue, metrics, longPoll } = ctx;
  const route = ctx.routing.on(app);
  const leased = new LeasedJobs(queue);
  LEASED.set(app, leased);
  app.addHook("onClose", async () => leased.close());
  // A draining server waits for the attempts it handed out to be reported.
  ctx.lifecycle.onDrain(() => leased.settled());

  route("POST /v1/lease", "work", async (request, reply) => {
    // Draining: no new work, and a 503 the worker takes as "lease again later" (lifecycle.ts).
    if (ctx.lifecycle.draining) throw drainingError();
    const b = body<LeaseBody>(request);
    const waitMs = b.waitMs ?? 0;
    const leaseOptions = {
      ...(b.types ? { types: b.types } : {}),
      ...(b.queues ? { queues: b.queues } : {}),
      limit: b.limit ?? 1,
      leaseMs: b.leaseMs ?? DEFAULT_LEASE_MS,
      workerId: b.workerId ?? `remote:${request.ip}`,
      ...(b.maxWeight ? { maxWeight: b.maxWeight } : {}),
      ...(b.weightCap ? { weightCap: b.weightCap } : {}),
      ...(b.ahead ? { ahead: b.ahead } : {}),
      // A server told not to run maintenance runs none, not even the lease API's own.
      ...(ctx.maintenance ? {} : { maintenance: false }),
    };
    // A rate-ruled type is leased only for what can start at once (LeaseOptions.ahead): said in
    // the answer, so a prefetching worker leases when it has a free slot rather than buffer room.
    const rateRuled = queue.attempts.rateRuled(leaseOptions.types);
    const hint = rateRuled ? { ahead: false } : {};
    // Nothing can start at once: no lease to wait for.
    if (rateRuled && roomNow(leaseOptions, b.ahead ?? 0) <= 0) return { jobs: [], ...hint };
    const started = queue.clock.now();
    const jobs = await longPoll.poll({
      group: JSON.stringify([leaseOptions.types ?? null, leaseOptions.queues ?? null]),
      deadline: started + waitMs,
      pollMs: ctx.leasePollMs,
      connection: reply.raw,
      look: (held) =>
        leaseInClaims(
          leaseOptions,
          claimSize(queue.maxPayloadBytes),
          // Looked at again on each look: a type's rate limit may be set while the lease waits.
          queue.attempts.rateRuled(leaseOptions.types),
          async (options) => {
            const t0 = performance.now();
            const jobs = await queue.lease(options, held);
            metrics.claimSeconds.observe(
              { outcome: jobs.length ? "jobs" : "empty" },
              (performance.now() - t0) / 1000,
            );
            return jobs;
          },
          (err) =>
            request.log.warn({ err }, "lease: a later claim failed; answering the jobs already claimed"),
          () => ctx.lifecycle.draining || reply.raw.destroyed || request.raw.socket?.destroyed === true,
        ),
    });
    // Never below 0: the clock may have stepped back during the wait.
    if (waitMs > 0) metrics.leaseWaitSeconds.observe(Math.max(0, queue.clock.now() - started) / 1000);
    if (jobs.length > 0 && (reply.raw.destroyed || request.raw.socket?.destroyed)) {
      // The worker went away while its claim ran (it closed, or the network dropped it): no one
      // will read these jobs, so they go back now, their attempts unspent, rather than wait out
      // their leases leased to no one (and an at-most-once job then go dead unrun).
      await giveBack(jobs, request.log);
      return { jobs: [], ...hint };
    }
    if (ctx.lifecycle.draining) {
      // The server began draining while this lease waited or claimed: a waiting one is answered
      // at once, and what a claim under way took goes back unhanded, its attempts unspent.
      if (jobs.length > 0) await giveBack(jobs, request.log);
      throw drainingError();
    }
    // The answer made here, by the route's own serialiser, so that one too big to send
    // (page-size.ts) is caught before its jobs are handed out, at no cost to the usual one.
    // Said as the types stand now: a rate limit set while the lease waited is told at once.
    const answer = queue.attempts.rateRuled(leaseOptions.types) ? { jobs, ahead: false } : { jobs };
    const text = serialized(() => reply.serialize(answer) as string);
    if (text !== null) {
      leased.add(jobs, leaseOptions.leaseMs, text.length);
      return reply.type("application/json; charset=utf-8").send(text);
    }
    // Jobs past what one answer can carry go back now, their attempts unspent.
    await giveBack(jobs.splice(itemsWithin(jobs)), request.log);
    // Near the bound, so counted at it.
    leased.add(jobs, leaseOptions.leaseMs, MAX_PAGE_CHARS);
    return answer;
  });

  /**
   * Releases jobs leased for a request that will not hand them out (its connection is gone, the
   * server is draining, or its answer has no room for them); a failure is logged (their leases
   * recover them).
   */
  const giveBack = async (jobs: Job[], log: { warn(o: object, msg: string): void }) => {
    const outcomes = await Promise.allSettled(jobs.map((j) => queue.release(j)));
    for (const [i, o] of outcomes.entries()) {
      if (o.status === "rejected")
        log.warn(
          { err: o.reason, jobId: jobs[i]!.id },
          "lease: could not give back a job leased for an answer that will not carry it",
        );
    }
  };

  /** Writes a completion; on a stale attempt, tells a repeat of the same completion from a conflict. */
  const complete = async (id: string, attempt: number, result: unknown) => {
    const resultText = queue.attempts.resultText(result);
    const [ok] = await queue.attempts.completeMany([completion(id, attempt, result, resultText)]);
    if (ok) {
      leased.delete(id);
      return { ok: true, duplicate: false };
    }
    return repeatOrStale(id, attempt, resultText);
  };
  /** A completion through the queue, with the job as this server handed it out when it did. */
  const completion = (id: string, attempt: number, result: unknown, resultText: string): Completion => {
    const job = leased.get(id, attempt);
    return { id, attempt, result: resultText, value: result, ...(job ? { job } : {}) };
  };
  const repeatOrStale = async (id: string, attempt: number, resultText: string) => {
    const job = await queue.get(id);
    if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
    if (
      job.state === "completed" &&
      job.attempt === attempt &&
      isDeepStrictEqual(job.result, JSON.parse(resultText))
    ) {
      return { ok: true, duplicate: true };
    }
    throw stale(job, attempt, "different result");
  };

  route("POST /v1/jobs/:id/complete", "work", async (request) => {
    const b = body<{ attempt: number; result?: unknown }>(request);
    return complete(params(request).id!, b.attempt, b.result);
  });

  /**
   * Fails the current attempts among `items` in one store write. Per item: the outcome, or the
   * error to answer with (a missing job, an attempt that is not current). A report sent again
   * after its answer was lost is answered as the first was, `duplicate`, when the job is still
   * where that failure left it (its attempt's last history entry records this same error).
   */
  const failMany = async (items: FailReport[]): Promise<Array<FailOutcome | ErrandError>> => {
    const jobs = await Promise.all(items.map((f) => queue.get(f.id)));
    const out: Array<FailOutcome | ErrandError> = new Array(items.length);
    const current: number[] = [];
    for (const [k, f] of items.entries()) {
      const job = jobs[k];
      if (!job) out[k] = new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(f.id)}`);
      else if (job.state !== "active" || job.attempt !== f.attempt) out[k] = repeatOrStaleFail(job, f);
      else current.push(k);
    }
    const failed = await queue.attempts.failMany(
      current.map((k) => ({
        job: jobs[k]!,
        error: toError(items[k]!.error),
        retryable: items[k]!.retryable,
      })),
    );
    for (const [n, k] of current.entries()) {
      const f = items[k]!;
      const done = failed[n];
      if (!done) {
        // Changed since it was read: a repeat of this report may have landed in between.
        out[k] = repeatOrStaleFail((await queue.get(f.id)) ?? jobs[k]!, f);
        continue;
      }
      leased.delete(f.id);
      out[k] = { ok: true, state: done.job.state, runAt: done.job.runAt, duplicate: false };
    }
    return out;
  };
  /** A failure report that changed nothing: a repeat of one that landed, or the 409. */
  const repeatOrStaleFail = (job: Job, f: FailReport): FailOutcome | ErrandError => {
    const recorded =
      job.attempt === f.attempt && (job.state === "pending" || job.state === "dead")
        ? job.errors.findLast((e) => e.attempt === f.attempt)
        : undefined;
    if (recorded && recordsFailure(recorded, toError(f.error))) {
      return { ok: true, state: job.state, runAt: job.runAt, duplicate: true };
    }
    return stale(job, f.attempt);
  };

  route("POST /v1/jobs/:id/fail", "work", async (request) => {
    const b = body<{ attempt: number; error: FailError; retryable?: boolean }>(request);
    const [out] = await failMany([
      { id: params(request).id!, attempt: b.attempt, error: b.error, retryable: b.retryable },
    ]);
    if (out instanceof ErrandError) throw out;
    return out!;
  });

  /** For a report that changed nothing: 404 for a missing job, else 409 with its state. */
  const refused = async (id: string, attempt: number): Promise<never> => {
    const job = await queue.get(id);
    if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
    throw stale(job, attempt);
  };

  route("POST /v1/jobs/:id/heartbeat", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number; leaseMs?: number }>(request);
    const leaseMs = b.leaseMs ?? DEFAULT_LEASE_MS;
    const ok = await queue.heartbeat({ id: id!, attempt: b.attempt }, { leaseMs });
    if (ok) leased.extend(id!, b.attempt, leaseMs);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/heartbeats", "work", async (request) => {
    const b = body<{ jobs: Array<{ id: string; attempt: number }>; leaseMs?: number }>(request);
    const leaseMs = b.leaseMs ?? DEFAULT_LEASE_MS;
    const [oks, pausedQueues] = await Promise.all([
      queue.attempts.heartbeatMany({ leaseMs, items: b.jobs }),
      queue.pausedQueues(),
    ]);
    for (const [i, j] of b.jobs.entries()) if (oks[i] === true) leased.extend(j.id, j.attempt, leaseMs);
    return { results: b.jobs.map((j, i) => ({ id: j.id, ok: oks[i] === true })), pausedQueues };
  });

  route("POST /v1/jobs/:id/checkpoint", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number; data: unknown }>(request);
    const ok = await queue.checkpoint({ id: id!, attempt: b.attempt }, b.data);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/jobs/:id/release", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number }>(request);
    const ok = await queue.release({ id: id!, attempt: b.attempt });
    if (ok) leased.delete(id!);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  /**
   * Snoozes an attempt, with the job as this server handed it out when it did (its `snoozed`
   * event then needs no read-back). `false` when the attempt is not current.
   * @throws ErrandError `INVALID_DURATION` for a bad delay, before anything changes.
   */
  const snooze = async (id: string, attempt: number, delayMs: Duration | undefined): Promise<boolean> => {
    const ok = await queue.snooze(leased.get(id, attempt) ?? { id, attempt }, delayMs as Duration);
    if (ok) leased.delete(id);
    return ok;
  };

  // Answered as a release is: `{ ok }`, or 404 / 409 for a report that changed nothing.
  route("POST /v1/jobs/:id/snooze", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number; delayMs: Duration }>(request);
    const ok = await snooze(id!, b.attempt, b.delayMs);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/report", "work", async (request) => {
    const { reports } = body<{ reports: ReportItem[] }>(request);
    const results: Array<{ id: string; ok: boolean; code?: string; state?: string }> = reports.map((r) => ({
      id: r.id,
      ok: false,
    }));
    // Completions go to the store in one write, then failures in another.
    const completes: Array<{ i: number; item: Completion }> = [];
    for (const [i, r] of reports.entries()) {
      if (r.outcome !== "complete") continue;
      try {
        const result = r.result ?? null;
        completes.push({ i, item: completion(r.id, r.attempt, result, queue.attempts.resultText(result)) });
      } catch (error) {
        results[i]!.code = (error as ErrandError).code;
      }
    }
    const oks = await queue.attempts.completeMany(completes.map((c) => c.item));
    for (const [k, { i, item }] of completes.entries()) {
      try {
        if (oks[k]) leased.delete(item.id);
        const duplicate = !oks[k] && (await repeatOrStale(item.id, item.attempt, item.result)).duplicate;
        results[i] = { id: item.id, ok: true, ...(duplicate ? { state: "completed" } : {}) };
      } catch (error) {
        results[i]!.code = error instanceof ErrandError ? error.code : "INTERNAL";
      }
    }
    const fails = [...reports.entries()].filter(([, r]) => r.outcome === "fail");
    const failed = await failMany(
      fails.map(([, r]) => ({
        id: r.id,
        attempt: r.attempt,
        error: r.error ?? "failed",
        retryable: r.retryable,
      })),
    );
    for (const [n, [i, r]] of fails.entries()) {
      const out = failed[n]!;
      if (out instanceof ErrandError) results[i]!.code = out.code;
      else results[i] = { id: r.id, ok: true, state: out.state };
    }
    // Snoozes are rare beside completions: one write each.
    for (const [i, r] of reports.entries()) {
      if (r.outcome !== "snooze") continue;
      try {
        if (await snooze(r.id, r.attempt, r.delayMs)) results[i] = { id: r.id, ok: true, state: "pending" };
        else await refused(r.id, r.attempt);
      } catch (error) {
        results[i]!.code = error instanceof ErrandError ? error.code : "INTERNAL";
      }
    }
    return { results };
  });
}
