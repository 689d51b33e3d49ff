/**
 * Attempts: what happens to a leased attempt, through the Queue's door. Claiming, completing,
 * failing (by the failure rule), heartbeats, checkpoints and releases, for the Queue's lease API
 * and for the Worker, the server and push delivery, which report through the Queue.
 * @internal
 * @module
 */
import type { Clock } from "./clock.js";
import { type Duration, toMs } from "./duration.js";
import { type AttemptOutcome, failureWrite } from "./failure-rule.js";
import type { Job } from "./job.js";
import { checkObject, checkRef, leaseMsFrom } from "./queue-checks.js";
import type { AttemptFailure, FailOptions } from "./queue-options.js";
import type { Completion, StoreDoor } from "./store/instrument.js";
import type { AttemptRef, ClaimParams, HeartbeatManyParams } from "./store/store.js";
import type { ClaimRules, TypeRegistry } from "./type-registry.js";
import { MAX_DATE_MS, toJsonText } from "./validation.js";

/** What {@link Attempts} works with: the Queue's door, clock, randomness, types and bounds. */
export interface AttemptsContext {
  door: StoreDoor;
  clock: Clock;
  random: () => number;
  types: TypeRegistry;
  maxPayloadBytes: number;
  /** Completed jobs are not kept (`retention.completed` is 0): the store deletes them at once. */
  discardCompleted: boolean;
  /** The job as stored (a failure reported by reference is read back for the retry rule). */
  get: (id: string) => Promise<Job | null>;
}

/** @internal The Queue's attempt methods, which delegate here; see the module doc. */
export class Attempts {
  readonly #c: AttemptsContext;

  constructor(context: AttemptsContext) {
    this.#c = context;
  }

  /** Leases jobs at the clock's now, with the Queue's randomness for weighted queues. */
  claim(params: Omit<ClaimParams, "now" | "random">): Promise<Job[]> {
    return this.#c.door.claim({ ...params, now: this.#c.clock.now(), random: this.#c.random });
  }

  /** The caps, per-key rules and rate limits of these types (all known types when undefined). */
  claimRules(types: readonly string[] | undefined): ClaimRules {
    return this.#c.types.claimRules(types);
  }

  /** Whether a type among `types` may not be claimed ahead (TypeRegistry.rateRuled). */
  rateRuled(types: readonly string[] | undefined): boolean {
    return this.#c.types.rateRuled(types);
  }

  /** Whether `type` may not be claimed ahead (TypeRegistry.rateRuledType). */
  rateRuledType(type: string): boolean {
    return this.#c.types.rateRuledType(type);
  }

  /** One attempt completed; `true` exactly once per attempt. */
  async complete(job: AttemptRef | Job, result: unknown): Promise<boolean> {
    const ref = checkRef("complete", job);
    const [ok] = await this.completeMany([
      {
        ...ref,
        result: this.resultText(result),
        value: result,
        ...("state" in job ? { job } : {}),
      },
    ]);
    return ok === true;
  }

  /** A result as the JSON text stored. @throws ErrandError `INVALID_PAYLOAD` */
  resultText(result: unknown): string {
    return toJsonText("result", result === undefined ? null : result, this.#c.maxPayloadBytes);
  }

  /** Attempts completed in one store write, with their `completed` events and wake-ups. */
  completeMany(items: readonly Completion[]): Promise<boolean[]> {
    return this.#c.door.complete(this.#c.clock.now(), items, this.#c.discardCompleted);
  }

  /** One attempt failed, reported by reference or with the job; `false` when it is stale. */
  async fail(job: AttemptRef | Job, error: unknown, options: FailOptions): Promise<boolean> {
    checkRef("fail", job);
    checkObject("fail", "options", options);
    const full = "state" in job ? job : await this.#c.get(job.id);
    if (!full || full.attempt !== job.attempt || full.state !== "active") return false;
    const [failed] = await this.failOutcomes([{ job: full, error, retryable: options.retryable }]);
    return failed != null;
  }

  /** Failed attempts recorded in one store write; one result per item, null when stale. */
  async failMany(items: readonly AttemptFailure[]): Promise<Array<{ job: Job; error: unknown } | null>> {
    const failed = await this.failOutcomes(items);
    return failed.map((job, i) => job && { job, error: items[i]!.error });
  }

  /**
   * Applies the retry rule to failed attempts (lease recovery's too) and records them: each job
   * as it now is, or null when its attempt was stale.
   */
  async failOutcomes(outcomes: readonly AttemptOutcome[]): Promise<Array<Job | null>> {
    if (outcomes.length === 0) return [];
    const now = this.#c.clock.now();
    return this.#c.door.fail(
      now,
      outcomes.map((o) => ({
        job: o.job,
        error: o.error,
        write: failureWrite(o, this.#c.types.get(o.job.type), now, this.#c.random),
      })),
    );
  }

  /** Extends one lease; `false` when the attempt is no longer current. */
  async heartbeat(job: AttemptRef | Job, options: { leaseMs?: Duration }): Promise<boolean> {
    const ref = checkRef("heartbeat", job);
    checkObject("heartbeat", "options", options);
    const [ok] = await this.heartbeatMany({
      leaseMs: leaseMsFrom(this.#c.clock.now(), options.leaseMs ?? 30_000),
      items: [ref],
    });
    return ok === true;
  }

  /** Extends many leases in one write. */
  heartbeatMany(params: Omit<HeartbeatManyParams, "now">): Promise<boolean[]> {
    return this.#c.door.heartbeat({ ...params, now: this.#c.clock.now() });
  }

  /** Saves progress for the attempt; `false` when stale. */
  async checkpoint(job: AttemptRef | Job, data: unknown): Promise<boolean> {
    return this.#c.door.checkpoint({
      ...checkRef("checkpoint", job),
      now: this.#c.clock.now(),
      checkpoint: toJsonText("checkpoint", data, this.#c.maxPayloadBytes),
    });
  }

  /**
   * Ends an attempt without failing it: pending again after `delay` (at the latest date a store
   * keeps, when that comes first), not counted as an attempt.
   * @throws ErrandError `INVALID_DURATION`, `INVALID_JOB_ID`, `INVALID_ATTEMPT`.
   */
  async snooze(job: AttemptRef | Job, delay: Duration): Promise<boolean> {
    const ref = checkRef("snooze", job);
    const now = this.#c.clock.now();
    // Waits as a backoff does past the latest date: a handler's snooze that reached past it was
    // refused after its attempt had ended, and the job sat active until its lease ran out.
    const runAt = snoozeUntil(now, toMs("snooze", delay));
    // A Job handed out by errand (runAt a Date) lets the door build the event without a read.
    const full = (job as Job).runAt instanceof Date ? (job as Job) : undefined;
    return this.#c.door.snooze({ ...ref, now, runAt }, full);
  }

  /** Gives an attempt back without using it up; `false` when stale. */
  async release(job: AttemptRef | Job): Promise<boolean> {
    return this.#c.door.release({ ...checkRef("release", job), now: this.#c.clock.now() });
  }
}

/** When a job snoozed at `now` for `delayMs` is due: then, or the latest date a store keeps. */
export function snoozeUntil(now: number, delayMs: number): number {
  return Math.min(now + delayMs, MAX_DATE_MS);
}
