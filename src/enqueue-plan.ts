/**
 * Enqueue planning: an enqueue's options and its type's defaults resolved into the {@link NewJob}
 * a store inserts, every option checked before anything is stored.
 * @module
 */
import { type AnyJobDefinition, resolveDefaults } from "./define-job.js";
import { type Duration, toMs } from "./duration.js";
import { ErrandError } from "./errors.js";
import { checkKnownKeys } from "./known-keys.js";
import type { EnqueueOptions } from "./queue-options.js";
import type { NewJob } from "./store/store.js";
import { checkJobId, checkOwnerName, toEpochMs } from "./validation.js";

const ENQUEUE_KEYS = new Set([
  "id",
  "uniqueKey",
  "owner",
  "delayMs",
  "runAt",
  "expiresAt",
  "expiresInMs",
  "queue",
  "priority",
  "weight",
  "maxAttempts",
  "backoff",
  "retryQueue",
  "timeoutMs",
  "delivery",
  "db",
]);

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
  });
  const runAt = instant("enqueue", ["delayMs", o.delayMs, "after"], ["runAt", o.runAt, "at"], now) ?? now;
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
    uniqueKey: o.uniqueKey === undefined ? null : checkUniqueKey(o.uniqueKey),
    owner: o.owner === undefined ? null : checkOwnerName(o.owner),
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
  return kind === "at" ? toEpochMs(name, value) : now + toMs(name, value as Duration);
}

/** A resolved job with its own id and payload; a literal, not a spread: this runs per bulk job. */
export function withPayload(base: NewJob, id: string, payload: string): NewJob {
  return {
    id,
    type: base.type,
    queue: base.queue,
    payload,
    priority: base.priority,
    weight: base.weight,
    runAt: base.runAt,
    expiresAt: base.expiresAt,
    maxAttempts: base.maxAttempts,
    backoff: base.backoff,
    retryQueue: base.retryQueue,
    delivery: base.delivery,
    timeoutMs: base.timeoutMs,
    uniqueKey: base.uniqueKey,
    owner: base.owner,
  };
}

function checkUniqueKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0 || key.length > 255) {
    throw new ErrandError("INVALID_OPTION", "uniqueKey must be a string of 1 to 255 characters");
  }
  return key;
}
