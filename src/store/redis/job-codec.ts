/**
 * How a job is laid out in its Redis hash, on the client side: decoding script replies into
 * {@link JobRecord}s and packing the backoff policy. The field table is in
 * `lua/includes/job.lua`; the two must agree.
 * @module
 */
import type { JobRecord, JobState } from "../../job.js";
import { JOB_DEFAULTS } from "../../job-fields.js";
import type { NewJob } from "../store.js";

/**
 * Left out of the hash when a job has it (as the scripts' DEFAULT_MAX_ATTEMPTS, which `npm run gen`
 * writes into lua/includes/job.lua from JOB_DEFAULTS).
 */
const DEFAULT_MAX_ATTEMPTS = JOB_DEFAULTS.maxAttempts;
const DEFAULT_BACKOFF_TEXT = JSON.stringify(JOB_DEFAULTS.backoff);

/**
 * Each record field's name in the job hash (lua/includes/job.lua); the id is the hash's key. The
 * decoder below switches on these letters (a switch is the fast path per job);
 * test/unit/job-fields.test.ts checks that it covers every field of JOB_FIELDS.
 * @internal
 */
export const HASH_FIELDS: ReadonlyMap<Exclude<keyof JobRecord, "id">, string> = new Map<
  Exclude<keyof JobRecord, "id">,
  string
>([
  ["type", "t"],
  ["queue", "q"],
  ["state", "s"],
  ["payload", "p"],
  ["checkpoint", "k"],
  ["result", "x"],
  ["priority", "y"],
  ["weight", "w"],
  ["runAt", "r"],
  ["expiresAt", "v"],
  ["attempt", "a"],
  ["maxAttempts", "m"],
  ["backoff", "b"],
  ["retryQueue", "rq"],
  ["delivery", "d"],
  ["timeoutMs", "o"],
  ["uniqueKey", "u"],
  ["leaseExpiresAt", "l"],
  ["workerId", "h"],
  ["errors", "e"],
  ["leaseExpirations", "z"],
  ["createdAt", "c"],
  ["startedAt", "g"],
  ["finishedAt", "f"],
  ["owner", "ow"],
  ["dependsOn", "dp"],
  ["blockedBy", "bb"],
  ["onDependencyFailure", "df"],
  ["key", "ky"],
  ["debounceKey", "dk"],
  ["snoozes", "sn"],
]);

// Maps, not object literals: a stray field or value such as "constructor" must find nothing.
const STATES: ReadonlyMap<string, JobState> = new Map<string, JobState>([
  ["b", "blocked"],
  ["p", "pending"],
  ["a", "active"],
  ["c", "completed"],
  ["d", "dead"],
  ["x", "cancelled"],
  ["e", "expired"],
]);

/** Long text fields, which may be stored in pieces (`p`, `p:1`, `p:2`, …). */
type LongField = "payload" | "checkpoint" | "result" | "uniqueKey" | "errors" | "workerId" | "dependsOn";
const LONG_FIELDS: ReadonlyMap<string, LongField> = new Map<string, LongField>([
  ["p", "payload"],
  ["k", "checkpoint"],
  ["x", "result"],
  ["u", "uniqueKey"],
  ["e", "errors"],
  ["h", "workerId"],
  ["dp", "dependsOn"],
]);

/**
 * A job reply from a script (`[id, field, value, field, value, …]`, the job hash's HGETALL after
 * its id) as a record. Fields left out of the hash take their initial values (JOB_FIELDS); runAt's
 * is createdAt.
 */
export function decodeJob(reply: readonly string[]): JobRecord {
  const r: JobRecord = {
    id: reply[0]!,
    type: "",
    queue: "",
    state: "pending",
    payload: "",
    checkpoint: null,
    result: null,
    priority: JOB_DEFAULTS.priority,
    weight: JOB_DEFAULTS.weight,
    runAt: 0,
    expiresAt: null,
    attempt: 0,
    maxAttempts: DEFAULT_MAX_ATTEMPTS,
    backoff: DEFAULT_BACKOFF_TEXT,
    retryQueue: null,
    delivery: JOB_DEFAULTS.delivery,
    timeoutMs: null,
    uniqueKey: null,
    leaseExpiresAt: null,
    workerId: null,
    errors: "[]",
    leaseExpirations: 0,
    createdAt: 0,
    startedAt: null,
    finishedAt: null,
    owner: null,
    dependsOn: null,
    blockedBy: 0,
    onDependencyFailure: JOB_DEFAULTS.onDependencyFailure,
    key: null,
    debounceKey: null,
    snoozes: 0,
  };
  let pieces: Map<LongField, string[]> | undefined;
  let runAt: string | undefined;
  for (let i = 1; i < reply.length; i += 2) {
    const v = reply[i + 1]!;
    switch (reply[i]) {
      case "t":
        r.type = v;
        break;
      case "q":
        r.queue = v;
        break;
      case "s":
        r.state = STATES.get(v) ?? "pending";
        break;
      case "p":
        r.payload = v;
        break;
      case "k":
        r.checkpoint = v;
        break;
      case "x":
        r.result = v;
        break;
      case "y":
        r.priority = Number(v);
        break;
      case "w":
        r.weight = Number(v);
        break;
      case "r":
        runAt = v;
        break;
      case "v":
        r.expiresAt = Number(v);
        break;
      case "a":
        r.attempt = Number(v);
        break;
      case "m":
        r.maxAttempts = Number(v);
        break;
      case "b":
        r.backoff = unpackBackoff(v);
        break;
      case "rq":
        r.retryQueue = v;
        break;
      case "d":
        r.delivery = v === "1" ? "at_most_once" : "at_least_once";
        break;
      case "o":
        r.timeoutMs = Number(v);
        break;
      case "u":
        r.uniqueKey = v;
        break;
      case "l":
        r.leaseExpiresAt = Number(v);
        break;
      case "h":
        r.workerId = v;
        break;
      case "e":
        r.errors = v;
        break;
      case "z":
        r.leaseExpirations = Number(v);
        break;
      case "c":
        r.createdAt = Number(v);
        break;
      case "g":
        r.startedAt = Number(v);
        break;
      case "f":
        r.finishedAt = Number(v);
        break;
      case "ow":
        r.owner = v;
        break;
      case "dp":
        r.dependsOn = v;
        break;
      case "bb":
        r.blockedBy = Number(v);
        break;
      case "df":
        // Stored only when not the default ("cancel"), as the policy's own name.
        r.onDependencyFailure = v === "run" ? "run" : "cancel";
        break;
      case "ky":
        r.key = v;
        break;
      case "dk":
        r.debounceKey = v;
        break;
      case "sn":
        r.snoozes = Number(v);
        break;
      default: {
        // A later piece of a long value: "<field>:<n>".
        const field = reply[i]!;
        const colon = field.indexOf(":");
        const long = colon > 0 ? LONG_FIELDS.get(field.slice(0, colon)) : undefined;
        if (!long) break;
        pieces ??= new Map();
        let list = pieces.get(long);
        if (!list) pieces.set(long, (list = []));
        list[Number(field.slice(colon + 1))] = v;
      }
    }
  }
  r.runAt = runAt === undefined ? r.createdAt : Number(runAt);
  if (pieces) {
    for (const [field, list] of pieces) {
      list[0] = r[field] ?? "";
      r[field] = list.join("");
    }
  }
  return r;
}

/**
 * The values a new job takes in a script's arguments (see `lua/includes/insert-job.lua`), one per
 * NewJob field in NEW_JOB_FIELDS' order (checked by test/unit/job-fields.test.ts); `id` and
 * `payload` stand in for the job's own (a SharedJobs' first job).
 */
export function pushNewJob(
  args: Array<string | number>,
  j: NewJob,
  id: string = j.id,
  payload: string = j.payload,
): void {
  args.push(
    id,
    j.type,
    j.queue,
    payload,
    String(j.priority),
    String(j.weight),
    j.runAt,
    j.expiresAt ?? "",
    j.maxAttempts,
    packBackoff(j.backoff),
    j.retryQueue ?? "",
    j.delivery === "at_most_once" ? "1" : "",
    j.timeoutMs ?? "",
    j.uniqueKey ?? "",
    j.owner ?? "",
    j.dependsOn ?? "",
    j.onDependencyFailure,
    j.key ?? "",
    j.debounceKey ?? "",
  );
}

// ---- backoff ------------------------------------------------------------------------------------
//
// The default policy's JSON is 75 bytes, longer than a compact hash value may be (64), and every
// job stores one. The default policy is left out of the hash (""); other common shapes are stored
// as short text ("f5000", "e1000,60000,3,1") and turned back into the very same JSON text; anything
// else is stored as it came (JSON starts with "{", a packed policy never does).

const packed = new Map<string, string>();
const unpacked = new Map<string, string>();
const CACHE_MAX = 256;

/** A backoff policy's JSON text in its stored form ("" for the default policy). */
export function packBackoff(text: string): string {
  if (text === DEFAULT_BACKOFF_TEXT) return "";
  const hit = packed.get(text);
  if (hit !== undefined) return hit;
  let out = text;
  try {
    const b = JSON.parse(text) as Record<string, unknown>;
    const exp = (e: Record<string, unknown>) => `${e.baseMs},${e.maxMs},${e.factor},${e.jitter ? 1 : 0}`;
    const candidate =
      b.type === "fixed"
        ? `f${b.delayMs}`
        : b.type === "exponential"
          ? `e${exp(b)}`
          : b.type === "custom" && b.fallback && typeof b.fallback === "object"
            ? `c${exp(b.fallback as Record<string, unknown>)}`
            : undefined;
    // Only when it comes back byte for byte (same keys, same order, same numbers).
    if (candidate !== undefined && unpackBackoff(candidate) === text) out = candidate;
  } catch {
    // Not JSON: stored as is.
  }
  if (packed.size < CACHE_MAX) packed.set(text, out);
  return out;
}

/** The JSON text of a stored backoff policy. */
export function unpackBackoff(stored: string): string {
  if (stored.startsWith("{")) return stored;
  const hit = unpacked.get(stored);
  if (hit !== undefined) return hit;
  const [a, b, c, d] = stored.slice(1).split(",");
  const exponential = () => ({
    type: "exponential",
    baseMs: Number(a),
    maxMs: Number(b),
    factor: Number(c),
    jitter: d === "1",
  });
  const text =
    stored[0] === "f"
      ? JSON.stringify({ type: "fixed", delayMs: Number(a) })
      : stored[0] === "e"
        ? JSON.stringify(exponential())
        : stored[0] === "c"
          ? JSON.stringify({ type: "custom", fallback: exponential() })
          : stored;
  if (unpacked.size < CACHE_MAX) unpacked.set(stored, text);
  return text;
}
