/**
 * Enqueue planning: an enqueue's options and its type's defaults resolved into the {@link NewJob}
 * a store inserts, every option checked before anything is stored.
 * @module
 */
import {
  type AnyJobDefinition,
  isJobDefinition,
  JOB_DEFAULT_KEYS,
  resolveDefaults,
  validatePayload,
} from "./define-job.js";
import { type Duration, toMs } from "./duration.js";
import { ErrandError } from "./errors.js";
import { uuidv7 } from "./id.js";
import { standsAlone } from "./job-fields.js";
import { checkKnownKeys } from "./known-keys.js";
import type { EnqueueOptions } from "./queue-options.js";
import { expandJobs, withPayload } from "./store/new-jobs.js";
import type { NewJob, SharedJobs } from "./store/store.js";
import {
  addToDate,
  checkDependsOn,
  checkJobId,
  checkJobKey,
  checkOwnerName,
  checkText,
  checkTypeName,
  describe,
  MAX_KEY_LENGTH,
  toEpochMs,
  toJsonText,
} from "./validation.js";

const ENQUEUE_KEYS = new Set([
  "id",
  "uniqueKey",
  "owner",
  "delayMs",
  "runAt",
  "expiresAt",
  "expiresInMs",
  "dependsOn",
  "key",
  "debounce",
  ...JOB_DEFAULT_KEYS,
  "db",
]);

/**
 * The type and definition of the job an enqueue (or a schedule) names: a type name, checked, with
 * its registered definition if any; or a definition made by `defineJob`. Anything else (a Symbol,
 * null, an object that only looks like a definition) is refused here, before it reaches a store.
 * @param where - the call, for the message (`"enqueue"`, `"jobs[3]"`).
 * @throws ErrandError `INVALID_TYPE_NAME` for a bad name, `INVALID_OPTION` for what is neither.
 */
export function jobTarget(
  where: string,
  job: unknown,
  definition: (type: string) => AnyJobDefinition | undefined,
): { type: string; def: AnyJobDefinition | undefined } {
  if (typeof job === "string") {
    const type = checkTypeName(job);
    return { type, def: definition(type) };
  }
  if (isJobDefinition(job)) return { type: checkTypeName(job.type), def: job };
  throw new ErrandError(
    "INVALID_OPTION",
    `${where}: the job must be a type name or a definition made by defineJob, got ${describe(job)}`,
  );
}

/** What planning a batch needs of the Queue, at one instant. */
export interface Planner {
  now: number;
  /** The known definition of a type named by a string (its name checked). */
  definition(type: string): AnyJobDefinition | undefined;
  /** {@link planEnqueue} with the Queue's store capabilities. */
  plan(type: string, def: AnyJobDefinition | undefined, options: EnqueueOptions): NewJob;
  maxPayloadBytes: number;
}

/** Jobs ready to insert, with each payload as given (for the jobs returned without a parse). */
export interface PlannedJobs {
  jobs: NewJob[] | SharedJobs;
  values: unknown[];
  /** Every id was generated here (see `EnqueueManyParams.idsGenerated`). */
  idsGenerated: boolean;
}

/**
 * Many jobs of one type with the same options: every payload checked against the type's schema
 * and serialised before anything is stored. With ids errand makes and nothing tying a job to
 * another, they go to the store in the shared form ({@link SharedJobs}): ids and payloads beside
 * the one job they share, not a NewJob each.
 */
export async function planMany(
  p: Planner,
  type: string,
  def: AnyJobDefinition | undefined,
  payloads: readonly unknown[],
  options: EnqueueOptions,
): Promise<PlannedJobs> {
  const base = p.plan(type, def, options);
  const idsGenerated = options.id === undefined;
  const ids: string[] = new Array(payloads.length);
  const texts: string[] = new Array(payloads.length);
  const values: unknown[] = new Array(payloads.length);
  for (let i = 0; i < payloads.length; i++) {
    const value = def?.schema ? await validatePayload(def, payloads[i]) : payloads[i];
    values[i] = value;
    ids[i] = idsGenerated ? uuidv7(p.now) : base.id;
    texts[i] = toJsonText("payload", value, p.maxPayloadBytes);
  }
  const shared: SharedJobs = { shared: base, ids, payloads: texts };
  const shareable = idsGenerated && payloads.length > 1 && standsAlone(base);
  return { jobs: shareable ? shared : expandJobs(shared), values, idsGenerated };
}

/**
 * One job of `enqueueBatch` / `enqueueBatchIds`: a definition made by `defineJob` (of any payload
 * type, so one batch may mix types) or a type name, its payload (checked against that type's
 * schema) and its options.
 */
export interface BatchItem {
  /** A definition made by `defineJob`, or a type name. */
  job: AnyJobDefinition | string;
  /** The job's payload, checked against the type's schema when the definition is known. */
  payload: unknown;
  /** The job's own options over its type's defaults, as `enqueue` takes them. */
  options?: EnqueueOptions;
}

/** Jobs of any types, each with its own options (the server's bulk enqueue). */
export async function planBatch(p: Planner, items: ReadonlyArray<BatchItem>): Promise<PlannedJobs> {
  const jobs: NewJob[] = new Array(items.length);
  const values: unknown[] = new Array(items.length);
  let idsGenerated = true;
  for (let i = 0; i < items.length; i++) {
    const item: unknown = items[i];
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `enqueueBatch: jobs[${i}] must be an object { job, payload, options? }, got ${describe(item)}`,
      );
    }
    const { job, payload, options = {} } = item as (typeof items)[number];
    const { type, def } = jobTarget(`enqueueBatch: jobs[${i}]`, job, p.definition);
    if (options.db !== undefined) {
      throw new ErrandError(
        "INVALID_OPTION",
        `enqueueBatch: jobs[${i}].db is not supported; use enqueueMany`,
      );
    }
    const base = p.plan(type, def, options);
    const value = def?.schema ? await validatePayload(def, payload) : payload;
    if (options.id !== undefined) idsGenerated = false;
    values[i] = value;
    jobs[i] = withPayload(
      base,
      options.id === undefined ? uuidv7(p.now) : base.id,
      toJsonText(`jobs[${i}].payload`, value, p.maxPayloadBytes),
    );
  }
  return { jobs, values, idsGenerated };
}

/**
 * Resolves one enqueue's options over its type's definition (or errand's defaults, for a type
 * not known here) into a job without its id and payload (see {@link withPayload}).
 * @param canEnlist - whether the store can insert inside the caller's transaction (`db`).
 * @throws ErrandError naming the field, on any invalid option.
 */
export function planEnqueue(
  type: string,
  def: AnyJobDefinition | undefined,
  o: EnqueueOptions,
  now: number,
  canEnlist: boolean,
): NewJob {
  checkKnownKeys("enqueue", o, ENQUEUE_KEYS);
  if (o.db !== undefined && !canEnlist) {
    throw new ErrandError(
      "INVALID_OPTION",
      "enqueue: this store cannot enqueue inside your own transaction (the db option needs the PostgreSQL store)",
    );
  }
  if (typeof o.backoff === "function") {
    // It would be stored as "custom" and never called: retries would silently use the default.
    throw new ErrandError(
      "INVALID_OPTION",
      "enqueue: a function backoff cannot be stored with a job; set it on the job type (defineJob)",
    );
  }
  const own = resolveDefaults({
    queue: o.queue ?? def?.queue,
    priority: o.priority ?? def?.priority,
    weight: o.weight ?? def?.weight,
    maxAttempts: o.maxAttempts ?? def?.maxAttempts,
    retryQueue: o.retryQueue ?? def?.retryQueue ?? undefined,
    timeoutMs: o.timeoutMs ?? def?.timeoutMs ?? undefined,
    delivery: o.delivery ?? def?.delivery,
    backoff: o.backoff,
    onDependencyFailure: o.onDependencyFailure ?? def?.onDependencyFailure,
  });
  const debounce = o.debounce === undefined ? null : checkDebounce(o, now);
  const runAt =
    debounce?.runAt ??
    instant("enqueue", ["delayMs", o.delayMs, "after"], ["runAt", o.runAt, "at"], now) ??
    now;
  const expiresAt =
    instant("enqueue", ["expiresAt", o.expiresAt, "at"], ["expiresInMs", o.expiresInMs, "after"], now) ??
    null;
  const backoff = o.backoff !== undefined ? own.backoff : (def?.backoff ?? own.backoff);
  return {
    id: o.id === undefined ? "" : checkJobId(o.id),
    type,
    queue: own.queue,
    payload: "",
    priority: own.priority,
    weight: own.weight,
    runAt,
    expiresAt,
    maxAttempts: own.maxAttempts,
    backoff: JSON.stringify(backoff),
    retryQueue: own.retryQueue,
    delivery: own.delivery,
    timeoutMs: own.timeoutMs,
    uniqueKey: o.uniqueKey === undefined ? null : checkText("uniqueKey", o.uniqueKey, MAX_KEY_LENGTH),
    owner: o.owner === undefined ? null : checkOwnerName(o.owner),
    dependsOn:
      o.dependsOn === undefined
        ? null
        : checkDependsOn("enqueue", o.dependsOn, o.id === undefined ? undefined : String(o.id)),
    onDependencyFailure: own.onDependencyFailure,
    key: o.key === undefined ? null : checkJobKey(o.key),
    debounceKey: debounce?.key ?? null,
  };
}

const DEBOUNCE_KEYS = new Set(["key", "delayMs"]);

/**
 * The `debounce` option: its key and when the job is due.
 * @throws ErrandError `INVALID_OPTION` for a bad shape or a clashing option, `INVALID_KEY`,
 *   `INVALID_DURATION`.
 */
function checkDebounce(o: EnqueueOptions, now: number): { key: string; runAt: number } {
  const d: unknown = o.debounce;
  if (typeof d !== "object" || d === null || Array.isArray(d)) {
    throw new ErrandError("INVALID_OPTION", `enqueue: debounce must be { key, delayMs }, got ${describe(d)}`);
  }
  checkKnownKeys("enqueue: debounce", d, DEBOUNCE_KEYS);
  for (const clash of ["id", "runAt", "delayMs", "uniqueKey", "dependsOn"] as const) {
    if (o[clash] !== undefined) {
      throw new ErrandError(
        "INVALID_OPTION",
        `enqueue: debounce decides when the job runs and which job it is; not with ${clash}`,
      );
    }
  }
  const { key, delayMs } = d as { key: unknown; delayMs: unknown };
  if (typeof key !== "string" || key.length === 0) {
    throw new ErrandError(
      "INVALID_KEY",
      `enqueue: debounce.key must be a non-empty string, got ${describe(key)}`,
    );
  }
  return {
    key: checkText("debounce.key", key, MAX_KEY_LENGTH, "INVALID_KEY"),
    runAt: addToDate("debounce.delayMs", now, toMs("debounce.delayMs", delayMs as Duration)),
  };
}

/** An instant given as a time (`at`) or as a span from now (`after`). */
type InstantOption = [
  name: string,
  value: Date | string | number | Duration | undefined,
  kind: "at" | "after",
];

/**
 * One instant from the two ways of giving it (`runAt` / `delayMs`, `expiresAt` / `expiresInMs`),
 * which exclude each other; undefined when neither is given. Enqueue and reschedule share it.
 * @throws ErrandError `INVALID_OPTION` for both, `INVALID_DATE` / `INVALID_DURATION` for a bad one.
 */
export function instant(where: string, a: InstantOption, b: InstantOption, now: number): number | undefined {
  if (a[1] !== undefined && b[1] !== undefined) {
    throw new ErrandError("INVALID_OPTION", `${where}: give ${a[0]} or ${b[0]}, not both`);
  }
  const [name, value, kind] = a[1] !== undefined ? a : b;
  if (value === undefined) return undefined;
  return kind === "at" ? toEpochMs(name, value) : addToDate(name, now, toMs(name, value as Duration));
}
