/**
 * The Queue's arguments checked at the edge: the options a Queue is opened with, the lease API's
 * options and the attempt references reports name. Each refuses with an {@link ErrandError} that
 * names the option, before anything is stored.
 * @module
 */
import { type Clock, checkClock } from "./clock.js";
import { checkJobDefinition } from "./define-job.js";
import { type Duration, toMs } from "./duration.js";
import { instant } from "./enqueue-plan.js";
import { ErrandError } from "./errors.js";
import { defaultWorkerId } from "./id.js";
import { type FinishedState, JOB_STATES } from "./job.js";
import { checkKnownKeys } from "./known-keys.js";
import { resolveRetention } from "./maintenance/pruner.js";
import type { Queue } from "./queue.js";
import {
  DEFAULT_RETENTION,
  type DependentsOptions,
  type LeaseOptions,
  type ListViewOptions,
  type OpenQueueOptions,
  type SchedulePageOptions,
} from "./queue-options.js";
import { toQueueWeights } from "./queue-weights.js";
import type {
  AttemptRef,
  ClaimParams,
  DependentsParams,
  ListParams,
  ListSchedulesParams,
  RescheduleParams,
  Store,
} from "./store/store.js";
import {
  addToDate,
  checkAttempt,
  checkInt,
  checkJobId,
  checkJobKey,
  checkListCursor,
  checkOwnerName,
  checkQueueName,
  checkScheduleName,
  checkText,
  checkTypeName,
  describe,
  MAX_COUNT,
  MAX_KEY_LENGTH,
  MAX_LIMIT,
  MAX_PAYLOAD_BYTES,
  MAX_PRIORITY,
  MIN_PRIORITY,
} from "./validation.js";

const OPEN_QUEUE_KEYS = new Set([
  "store",
  "clock",
  "retention",
  "maxPayloadBytes",
  "jobs",
  "random",
  "maintenance",
  "sweepIntervalMs",
]);

/** `reschedule`'s options, as {@link Queue.reschedule} takes them. */
type RescheduleOptions = {
  runAt?: Date | string | number;
  delayMs?: Duration;
  priority?: number;
  queue?: string;
};

const LIST_KEYS = new Set(["state", "queue", "type", "owner", "key", "limit", "cursor", "view"]);
const RESCHEDULE_KEYS = new Set(["runAt", "delayMs", "priority", "queue"]);

const LEASE_KEYS = new Set([
  "types",
  "queues",
  "limit",
  "leaseMs",
  "workerId",
  "maxWeight",
  "weightCap",
  "ahead",
  "maintenance",
]);

/**
 * `openQueue`'s argument as options, checked.
 * @throws ErrandError `INVALID_OPTION`, or `INVALID_STORE_URL` when no store is given.
 */
export function checkOpenQueueTarget(target: string | OpenQueueOptions): OpenQueueOptions {
  const options = typeof target === "string" ? { store: target } : target;
  if (!isPlainObject(options)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `openQueue: give a store URL or an options object, got ${describe(options)}`,
    );
  }
  checkKnownKeys("openQueue", options, OPEN_QUEUE_KEYS);
  if (options.store === undefined) {
    throw new ErrandError("INVALID_STORE_URL", "openQueue: store is required (a store URL or a store)");
  }
  return options;
}

/**
 * Refuses what a Queue could not work with, when it is made rather than at its first call: the
 * store, the clock, `random` and `jobs` are used later, where a wrong one would crash far from its
 * cause. The other options are checked where they are read.
 * @throws ErrandError `INVALID_OPTION`, naming the option.
 */
function checkQueueOptions(store: unknown, options: unknown): void {
  if (!isPlainObject(options)) {
    throw new ErrandError("INVALID_OPTION", `Queue: options must be an object, got ${describe(options)}`);
  }
  const s = store as Partial<Store> | null;
  if (
    typeof s !== "object" ||
    s === null ||
    typeof s.capabilities !== "object" ||
    s.capabilities === null ||
    typeof s.enqueueMany !== "function" ||
    typeof s.claim !== "function"
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `store must be a store URL or a store (openStore), got ${describe(store)}`,
    );
  }
  const { clock, random, jobs } = options as Partial<OpenQueueOptions>;
  checkClock(clock);
  if (random !== undefined && typeof random !== "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      `random must be a function returning [0, 1), got ${describe(random)}`,
    );
  }
  if (jobs !== undefined) {
    if (!Array.isArray(jobs)) {
      throw new ErrandError("INVALID_OPTION", `jobs must be a list of definitions, got ${describe(jobs)}`);
    }
    jobs.forEach((def, i) => {
      checkJobDefinition(`jobs[${i}]`, def);
    });
  }
}

/** What a Queue's constructor takes from its options once they are checked. */
export interface ResolvedQueueOptions {
  maxPayloadBytes: number;
  retainMs: Record<FinishedState, number>;
  sweepMs: number;
}

/**
 * A Queue's options checked ({@link checkQueueOptions} first, then the rest in the order they
 * are read) and resolved against the defaults.
 * @throws ErrandError `INVALID_OPTION`, naming the option, and the codes of the bounds it checks.
 */
export function resolveQueueOptions(
  store: unknown,
  options: Omit<OpenQueueOptions, "store">,
): ResolvedQueueOptions {
  checkQueueOptions(store, options);
  const maxPayloadBytes = checkInt(
    "maxPayloadBytes",
    options.maxPayloadBytes ?? 1_048_576,
    1,
    MAX_PAYLOAD_BYTES,
  );
  const retainMs = resolveRetention(DEFAULT_RETENTION, options.retention);
  if (options.maintenance !== undefined && typeof options.maintenance !== "boolean") {
    throw new ErrandError(
      "INVALID_OPTION",
      `maintenance must be true or false, got ${typeof options.maintenance}`,
    );
  }
  const sweepMs = toMs("sweepIntervalMs", options.sweepIntervalMs ?? 1000);
  return { maxPayloadBytes, retainMs, sweepMs };
}

/**
 * `list`'s options, checked, as the store's params.
 * @throws ErrandError `INVALID_OPTION` and the codes of the names and bounds it checks.
 */
export function checkListOptions(options: ListViewOptions): ListParams {
  checkKnownKeys("list", options, LIST_KEYS);
  if (options.state !== undefined && !JOB_STATES.includes(options.state)) {
    throw new ErrandError("INVALID_OPTION", `list: state must be one of ${JOB_STATES.join(", ")}`);
  }
  const view = options.view;
  if (view !== undefined && view !== "full" && view !== "summary") {
    throw new ErrandError("INVALID_OPTION", `list: view must be "full" or "summary", not ${describe(view)}`);
  }
  return {
    state: options.state,
    queue: options.queue === undefined ? undefined : checkQueueName(options.queue),
    type: options.type === undefined ? undefined : checkTypeName(options.type),
    owner: options.owner === undefined ? undefined : checkOwnerName(options.owner),
    key: options.key === undefined ? undefined : checkJobKey(options.key),
    limit: checkInt("limit", options.limit ?? 50, 1, MAX_LIMIT),
    cursor: options.cursor === undefined ? undefined : checkListCursor(options.cursor),
    ...(view === "summary" ? { summary: true } : {}),
  };
}

/** `dependents`' id and paging, checked, as the store's params. */
export function checkDependents(id: string, options: DependentsOptions): DependentsParams {
  checkKnownKeys("dependents", options, DEPENDENTS_KEYS);
  return {
    id: checkJobId(id),
    limit: checkInt("limit", options.limit ?? 50, 1, MAX_LIMIT),
    cursor: options.cursor === undefined ? undefined : checkJobId(options.cursor),
  };
}

const DEPENDENTS_KEYS = new Set(["limit", "cursor"]);

/** `schedulePage`'s paging, checked, as the store's params. */
export function checkSchedulePage(options: SchedulePageOptions): ListSchedulesParams {
  checkKnownKeys("schedulePage", options, DEPENDENTS_KEYS);
  return {
    after: options.cursor === undefined ? null : checkScheduleName(options.cursor),
    limit: checkInt("limit", options.limit ?? 50, 1, MAX_LIMIT),
  };
}

/**
 * `reschedule`'s id and options, checked, as the store's params.
 * @throws ErrandError `INVALID_OPTION`, `INVALID_DATE`, `INVALID_DURATION`, `INVALID_JOB_ID`, …
 */
export function checkReschedule(id: string, options: RescheduleOptions, now: number): RescheduleParams {
  checkKnownKeys("reschedule", options, RESCHEDULE_KEYS);
  const runAt = instant(
    "reschedule",
    ["runAt", options.runAt, "at"],
    ["delayMs", options.delayMs, "after"],
    now,
  );
  return {
    id: checkJobId(id),
    now,
    runAt,
    priority:
      options.priority === undefined
        ? undefined
        : checkInt("priority", options.priority, MIN_PRIORITY, MAX_PRIORITY),
    queue: options.queue === undefined ? undefined : checkQueueName(options.queue),
  };
}

/** The lease API's options resolved into a claim (all but the caps, `now` and `random`). */
export type LeaseClaim = Omit<
  ClaimParams,
  "now" | "random" | "concurrencyLimits" | "keyRules" | "rateLimits" | "held"
>;

/** The room a lease asks for (`maxWeight`, else `limit` jobs) less what it asks for `ahead`. */
export function roomNow(asked: { limit: number; maxWeight?: number | undefined }, ahead: number): number {
  return (asked.maxWeight ?? asked.limit) - ahead;
}

/**
 * A lease's claim with its `ahead` (LeaseOptions.ahead) taken off when a type leased is rate-ruled
 * (TypeRegistry.rateRuled): what can start at once, or null when nothing can.
 */
export function leaseNow(claim: LeaseClaim, ahead: number, rateRuled: boolean): LeaseClaim | null {
  if (ahead === 0 || !rateRuled) return claim;
  const room = roomNow(claim, ahead);
  if (room <= 0) return null;
  // A job weighs at least 1: no more jobs than the weight left.
  const limit = Math.min(claim.limit, room);
  return claim.maxWeight === undefined ? { ...claim, limit } : { ...claim, limit, maxWeight: room };
}

/**
 * The lease API's options, checked and resolved. `defaultQueues` gives the queues to lease from
 * when the options name none (those of the types asked for).
 * @throws ErrandError `INVALID_OPTION` and the codes of the names and bounds it checks.
 */
export function checkLeaseOptions(
  options: LeaseOptions,
  clock: Clock,
  defaultQueues: (types: string[] | undefined) => string[] | Record<string, number>,
): LeaseClaim & { ahead: number } {
  checkKnownKeys("lease", options, LEASE_KEYS);
  if (options.types !== undefined && !Array.isArray(options.types)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `lease: types must be a list of type names, got ${describe(options.types)}`,
    );
  }
  if (options.queues !== undefined && (typeof options.queues !== "object" || options.queues === null)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `lease: queues must be a list of queue names or a map of weights, got ${describe(options.queues)}`,
    );
  }
  const types = options.types?.map((t) => checkTypeName(t));
  return {
    types,
    queues: toQueueWeights(options.queues ?? defaultQueues(types)),
    limit: checkInt("limit", options.limit ?? 1, 1, MAX_LIMIT),
    leaseMs: leaseMsFrom(clock.now(), options.leaseMs ?? 30_000),
    workerId:
      options.workerId === undefined
        ? defaultWorkerId()
        : checkText("workerId", options.workerId, MAX_KEY_LENGTH),
    maxWeight:
      options.maxWeight === undefined ? undefined : checkInt("maxWeight", options.maxWeight, 1, MAX_COUNT),
    weightCap:
      options.weightCap === undefined ? undefined : checkInt("weightCap", options.weightCap, 1, MAX_COUNT),
    ahead: checkInt("ahead", options.ahead ?? 0, 0, MAX_COUNT),
  };
}

/**
 * A lease taken through the lease API: a date to store, not a timer here (a Worker bounds its own
 * `leaseMs` by its heartbeat timer), so it may run up to the latest date a store keeps.
 * @throws ErrandError `INVALID_DURATION`
 */
export function leaseMsFrom(now: number, value: Duration): number {
  const ms = toMs("leaseMs", value);
  addToDate("leaseMs", now, ms);
  return ms;
}

/**
 * `value` as the Queue an entry point was given (a Worker, createServer, the testing kit): by what
 * they use of it from the first line on, so a wrong one is refused where it is given rather than
 * a TypeError far from its cause. (Not `instanceof`: a queue from another copy of errand works.)
 * @throws ErrandError `INVALID_OPTION`
 */
export function checkQueueArgument(where: string, value: unknown): Queue {
  const q = value as Partial<Queue> | null;
  if (
    typeof q !== "object" ||
    q === null ||
    typeof q.lease !== "function" ||
    typeof q.onWake !== "function" ||
    typeof q.clock?.now !== "function"
  ) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: queue must be a Queue (openQueue), got ${describe(value)}`,
    );
  }
  return value as Queue;
}

/** Refuses an options (or reference) argument that is not an object, before any of it is read. */
export function checkObject(where: string, what: string, value: unknown): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ErrandError("INVALID_OPTION", `${where}: ${what} must be an object, got ${describe(value)}`);
  }
}

/**
 * The id and attempt of a report's reference (a Job or an {@link AttemptRef}), checked.
 * @throws ErrandError `INVALID_OPTION` when it is not an object, `INVALID_JOB_ID`, `INVALID_ATTEMPT`
 */
export function checkRef(where: string, job: unknown): AttemptRef {
  if (typeof job !== "object" || job === null || Array.isArray(job)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: the attempt must be a job or { id, attempt }, got ${describe(job)}`,
    );
  }
  const { id, attempt } = job as { id?: unknown; attempt?: unknown };
  return { id: checkJobId(id), attempt: checkAttempt(attempt) };
}

/** An object literal's kind (or `Object.create(null)`): not a Map, an array or a class instance. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
