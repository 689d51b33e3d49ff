import type { BackoffOptions } from "../backoff.js";
import { defineJob, type RateLimit } from "../define-job.js";
import type { Duration } from "../duration.js";
import { ErrandError } from "../errors.js";
import type { Delivery, DependencyFailurePolicy } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import { byteOrder } from "../name-record.js";
import type { Queue, TypeSettings } from "../queue.js";
import type { TypePageOptions } from "../queue-options.js";
import type { JobTypeRecord } from "../store/store.js";
import { checkInt, checkText, checkTypeName, MAX_LIMIT } from "../validation.js";

/** Where and how the server pushes a type's jobs (push delivery). */
export interface PushTarget {
  /** The receiver: the server POSTs `{ id, type, payload, attempt, checkpoint }` here. */
  url: string;
  /** Key of the `x-errand-signature` HMAC-SHA256 header; unsigned without it. */
  secret?: string;
  /** How long a delivery may take before it counts as failed. @defaultValue 30_000 */
  timeoutMs?: number;
}

/**
 * A job type's settings on the server: defaults for every job of the type enqueued through it,
 * cluster-wide caps, order and rate limits applied at lease, and an optional push target. A
 * setting left out keeps the type's definition in code, where the server's process has one, else
 * errand's default; each is checked as {@link defineJob} checks it.
 * @since 0.1.0
 */
export interface JobTypeConfig {
  /** The type's name. */
  type: string;
  /** The queue the type's jobs go to. */
  queue?: string;
  /** Higher runs first within a queue. */
  priority?: number;
  /** How much of a worker's concurrency a running job takes. */
  weight?: number;
  /** Attempts before a job is `dead`, the first included. */
  maxAttempts?: number;
  /** Wait between attempts: fixed or exponential (a function cannot be stored). */
  backoff?: Exclude<BackoffOptions, (...args: never[]) => unknown>;
  /** Retries go to this queue instead of the job's own. */
  retryQueue?: string;
  /** Each attempt fails after this long. */
  timeoutMs?: Duration;
  /** `"at_least_once"` retries after crashes; `"at_most_once"` never starts a job twice. */
  delivery?: Delivery;
  /** What the type's blocked jobs do when a dependency does not succeed. @defaultValue "cancel" */
  onDependencyFailure?: DependencyFailurePolicy;
  /** At most this many jobs of the type running at once, cluster-wide. */
  concurrency?: number;
  /** At most this many jobs of the type and one key running at once, cluster-wide. */
  keyConcurrency?: number;
  /** Jobs of the type with the same key start one at a time, in enqueue order. @defaultValue false */
  ordered?: boolean;
  /** Keys take turns: claims go round-robin across the type's keys. @defaultValue false */
  fair?: boolean;
  /**
   * At most `limit` jobs of the type start in any interval of `periodMs`, counted across every
   * worker and server on the store; held-back jobs stay pending until the window has room.
   */
  rateLimit?: RateLimit;
  /** As `rateLimit`, per key: each key of the type has its own window. */
  keyRateLimit?: RateLimit;
  /** Push the type's jobs to this HTTP receiver rather than wait for workers to lease them. */
  push?: PushTarget;
}

/** A page of job types, by name. */
export interface TypePage {
  /** This page's types, by name in byte order. */
  types: JobTypeConfig[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

const TYPE_PAGE_KEYS = new Set(["limit", "cursor"]);

/** How many job types a server keeps by default (`createServer`'s `maxJobTypes`). */
export const DEFAULT_MAX_JOB_TYPES = 1_000;

/**
 * The most `maxJobTypes` may be: every server holds every type in memory and reads them all every
 * `typesRefreshMs`.
 */
export const MAX_JOB_TYPES = 100_000;

/**
 * The job types a server knows, kept in the store (`Store.putJobType`), so every server on that
 * store shares them and a restarted server still has them. Give them to {@link createServer} (or
 * `errand serve --types file.json`, which writes them to the store at start) or PUT them after.
 *
 * Each type's settings are laid over the queue's definition of it (`Queue.setTypeSettings`),
 * which is how its defaults and cap take effect, also for workers running in the server's process. Reads (`get`, `list`, `hasCaps`) answer from this server's copy;
 * {@link JobTypeRegistry.refresh} brings it in line with the store, which the server does at
 * start and every `typesRefreshMs` (and before answering `GET /v1/types`), so a change made
 * through another server takes effect here within that interval.
 */
export class JobTypeRegistry {
  readonly #queue: Queue;
  /** Each type's settings and their stored JSON text (compared on refresh to spot changes). */
  readonly #types = new Map<string, { config: JobTypeConfig; text: string }>();
  #onChange: (config: JobTypeConfig | null, type: string) => void = () => {};
  /**
   * Bumped before and after each write made here, so a refresh whose read overlapped a write (and
   * may hold the state from before it) is dropped instead of undoing it.
   */
  #generation = 0;
  #refreshing: Promise<void> | null = null;
  #queued: Promise<void> | null = null;
  /**
   * The store reads (refresh, refreshType), one after another: a read applies what it found, and
   * an older read landing after a newer one would apply stale settings (the list read before a
   * change, after the one-type read that saw it).
   */
  #reads: Promise<void> = Promise.resolve();
  /** Stored settings already reported unreadable, by type: each is reported once. */
  readonly #unreadable = new Map<string, string>();

  /** The writes of {@link JobTypeRegistry.set}, one after another. */
  #writes: Promise<unknown> = Promise.resolve();

  /** {@link JobTypeRegistry.list}'s order, until a type is added or forgotten. */
  #sorted: string[] | null = null;

  /** The most types {@link JobTypeRegistry.set} lets the store hold. */
  readonly #max: number;

  /**
   * An empty registry over `queue`'s store; {@link JobTypeRegistry.refresh} reads what it holds.
   * @param maxJobTypes - the most types the store may hold when `set` adds one, 1 to
   *   {@link MAX_JOB_TYPES} ({@link DEFAULT_MAX_JOB_TYPES} by default).
   * @throws ErrandError `INVALID_OPTION` for a `maxJobTypes` outside those bounds.
   */
  constructor(queue: Queue, maxJobTypes: number = DEFAULT_MAX_JOB_TYPES) {
    this.#queue = queue;
    this.#max = checkInt("maxJobTypes", maxJobTypes, 1, MAX_JOB_TYPES);
  }

  /** Called after each change, made here or picked up from the store (push delivery follows it). */
  onChange(fn: (config: JobTypeConfig | null, type: string) => void): void {
    this.#onChange = fn;
  }

  /**
   * Creates or replaces a type, in the store and here. Returns whether it was new.
   * @throws ErrandError with the offending field named; `LIMIT_REACHED` for a new type when the
   *   store holds `maxJobTypes` already. Nothing is stored then.
   */
  async set(config: JobTypeConfig): Promise<boolean> {
    const checked = check(config);
    // One at a time: new types checked against the same count while the first one's write was
    // under way would all pass it.
    const turn = this.#writes.then(() => this.#set(checked));
    this.#writes = turn.catch(() => {});
    return turn;
  }

  async #set({ stored, settings }: { stored: JobTypeConfig; settings: TypeSettings }): Promise<boolean> {
    await this.#checkRoom(stored.type);
    const text = JSON.stringify(stored);
    const now = this.#queue.clock.now();
    this.#generation++;
    const created = await this.#queue.typeRecords.putJobType({
      name: stored.type,
      config: text,
      createdAt: now,
      updatedAt: now,
    });
    this.#generation++;
    this.#apply(stored, settings, text);
    return created;
  }

  /**
   * Refuses a type this server does not know when it knows `maxJobTypes` already, after reading the
   * store again (another server may have deleted some). The bound is checked against what this
   * server read, not inside the store's write: servers adding types at the same moment may pass
   * it by as many as they add. It bounds what every server holds, reads and lists, which a
   * manage token could otherwise grow without end.
   */
  async #checkRoom(type: string): Promise<void> {
    if (this.#types.has(type) || this.#types.size < this.#max) return;
    await this.refresh();
    if (this.#types.has(type) || this.#types.size < this.#max) return;
    throw this.#limitReached(
      `the store holds ${this.#types.size} job types, this server's most (maxJobTypes ${this.#max}): delete one before adding ${JSON.stringify(type)}`,
    );
  }

  /**
   * Writes each type unless the store already holds exactly its settings, so a server restarted
   * with the same `--types` file changes nothing. Every type is checked before any is written, and
   * their number against `maxJobTypes` beside the types read last (the server reads them first).
   * @throws ErrandError naming the type and field that is wrong, or `LIMIT_REACHED`; nothing is
   *   stored then.
   */
  async ensure(configs: readonly JobTypeConfig[]): Promise<void> {
    for (const [i, config] of configs.entries()) {
      try {
        check(config);
      } catch (error) {
        if (error instanceof ErrandError) error.message = `types[${i}]: ${error.message}`;
        throw error;
      }
    }
    const added = new Set(configs.map((c) => c.type).filter((t) => !this.#types.has(t)));
    if (added.size > 0 && this.#types.size + added.size > this.#max) {
      throw this.#limitReached(
        `types: ${added.size} new job types beside the store's ${this.#types.size} would pass this server's most (maxJobTypes ${this.#max})`,
      );
    }
    for (const config of configs) {
      const { stored } = check(config);
      const current = await this.#queue.typeRecords.getJobType({ name: stored.type });
      if (current?.config !== JSON.stringify(stored)) await this.set(config);
    }
  }

  /** The refusal of a type past `maxJobTypes`, with the bound in its details for clients. */
  #limitReached(message: string): ErrandError {
    return new ErrandError("LIMIT_REACHED", message, { details: { limit: this.#max } });
  }

  /** A type's settings as this server last read or wrote them; undefined for a type it does not know. */
  get(type: string): JobTypeConfig | undefined {
    return this.#types.get(type)?.config;
  }

  /** Forgets a type's settings, in the store and here; its jobs get the built-in defaults from now on. */
  async delete(type: string): Promise<boolean> {
    this.#generation++;
    const deleted = await this.#queue.typeRecords.deleteJobType({ name: checkTypeName(type) });
    this.#generation++;
    // Gone from the store either way: another server may have deleted it first.
    this.#unreadable.delete(type);
    if (this.#types.has(type)) this.#forget(type);
    return deleted;
  }

  /** Every type's settings this server knows, sorted by type name (byte order, as stores list names). */
  list(): JobTypeConfig[] {
    return this.#names().map((type) => this.#types.get(type)!.config);
  }

  /**
   * A page of the types this server knows, by name (byte order): at most `limit` (default 50, up
   * to 1,000), after `cursor` (the previous page's `nextCursor`). `nextCursor` is null once a page
   * is short; a full page's may lead to an empty one.
   * @throws ErrandError `INVALID_OPTION` for a bad limit or an unknown option, `INVALID_TYPE_NAME`
   *   for a cursor that is not a type name
   */
  page(options: TypePageOptions = {}): TypePage {
    checkKnownKeys("typePage", options, TYPE_PAGE_KEYS);
    const after = options.cursor === undefined ? null : checkTypeName(options.cursor);
    const limit = checkInt("limit", options.limit ?? 50, 1, MAX_LIMIT);
    const names = this.#names();
    // The first name past the cursor, which need not be a type any more (deleted since).
    let lo = 0;
    if (after !== null) {
      for (let hi = names.length; lo < hi; ) {
        const mid = (lo + hi) >>> 1;
        if (byteOrder(names[mid]!, after) <= 0) lo = mid + 1;
        else hi = mid;
      }
    }
    const types = names.slice(lo, lo + limit).map((type) => this.#types.get(type)!.config);
    return { types, nextCursor: types.length < limit ? null : types[types.length - 1]!.type };
  }

  /** The known types' names in byte order, sorted again only after a type came or went. */
  #names(): string[] {
    this.#sorted ??= [...this.#types.keys()].sort(byteOrder);
    return this.#sorted;
  }

  /**
   * True when some type caps its concurrency, per type or per key, or orders its keys: a finished
   * job may let a held-back lease go on.
   */
  get hasCaps(): boolean {
    for (const { config: c } of this.#types.values()) {
      if (c.concurrency !== undefined || c.keyConcurrency !== undefined || c.ordered === true) return true;
    }
    return false;
  }

  /**
   * Reads the stored types and applies what changed since (types created, replaced or deleted
   * through another server). A stored type this errand cannot read (written by a newer one, or
   * by hand) is reported as an `error` event on the queue and left as it was here. The returned
   * promise settles after a read that started after this call.
   */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      // The read under way may have started before the caller's change: read once more after it.
      this.#queued ??= this.#refreshing
        .catch(() => {})
        .then(() => {
          this.#queued = null;
          return this.refresh();
        });
      return this.#queued;
    }
    this.#refreshing = this.#inTurn(() => this.#refresh()).finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    const generation = this.#generation;
    const records = await this.#queue.typeRecords.listJobTypes();
    // A change made here meanwhile may be missing from what was read: the next refresh applies it.
    if (generation !== this.#generation) return;
    const names = new Set<string>();
    for (const r of records) {
      names.add(r.name);
      this.#take(r);
    }
    for (const type of [...this.#types.keys()]) if (!names.has(type)) this.#forget(type);
    // An unreadable record gone from the store is forgotten too: kept, the names of deleted
    // types would pile up, and one written again as it was would not be reported.
    for (const type of [...this.#unreadable.keys()]) if (!names.has(type)) this.#unreadable.delete(type);
  }

  /**
   * Reads one stored type and applies it, or its deletion, here, as {@link refresh} does for all:
   * what `GET /v1/types/:type` answers from, one read whatever the number of types.
   */
  async refreshType(type: string): Promise<void> {
    const name = checkTypeName(type);
    return this.#inTurn(() => this.#refreshType(name));
  }

  /** Runs `read` after every read before it has ended. */
  #inTurn(read: () => Promise<void>): Promise<void> {
    const turn = this.#reads.then(read);
    this.#reads = turn.catch(() => {});
    return turn;
  }

  async #refreshType(type: string): Promise<void> {
    const generation = this.#generation;
    const record = await this.#queue.typeRecords.getJobType({ name: type });
    if (generation !== this.#generation) return;
    if (record !== null) this.#take(record);
    else {
      this.#unreadable.delete(type);
      if (this.#types.has(type)) this.#forget(type);
    }
  }

  /** A stored record applied here when it changed; one this errand cannot read is reported. */
  #take(r: JobTypeRecord): void {
    if (this.#types.get(r.name)?.text === r.config || this.#unreadable.get(r.name) === r.config) return;
    try {
      const { stored, settings } = check(JSON.parse(r.config) as JobTypeConfig);
      if (stored.type !== r.name)
        throw new ErrandError("INVALID_OPTION", `its settings name type "${stored.type}"`);
      this.#apply(stored, settings, r.config);
      this.#unreadable.delete(r.name);
    } catch (cause) {
      this.#unreadable.set(r.name, r.config);
      this.#queue.emit(
        "error",
        new ErrandError("STORE_ERROR", `stored job type "${r.name}" cannot be read: ${String(cause)}`, {
          cause,
        }),
      );
    }
  }

  #apply(config: JobTypeConfig, settings: TypeSettings, text: string): void {
    if (!this.#types.has(config.type)) this.#sorted = null;
    this.#types.set(config.type, { config, text });
    this.#queue.setTypeSettings(config.type, settings);
    this.#onChange(config, config.type);
  }

  #forget(type: string): void {
    this.#types.delete(type);
    this.#sorted = null;
    this.#queue.setTypeSettings(type, null);
    this.#onChange(null, type);
  }
}

/**
 * Checks a type's settings: the name, the push target, and every default (defineJob names the
 * field that is wrong). Returns them as stored and as the settings the queue lays over the type.
 */
function check(config: JobTypeConfig): { stored: JobTypeConfig; settings: TypeSettings } {
  if (typeof config !== "object" || config === null) {
    throw new ErrandError("INVALID_OPTION", "a job type's settings must be an object");
  }
  const type = checkTypeName(config.type);
  const { push, type: _type, ...settings } = config;
  if (push !== undefined) checkPush(push);
  defineJob({ ...settings, type, handler: () => null }); // names the field that is wrong
  return { stored: { ...config, type }, settings };
}

/**
 * A push target's bounds: the HTTP schema's (schemas/components.ts reads them from here) and
 * checkPush's for a type set in code, so the two cannot part.
 */
export const PUSH_LIMITS = {
  urlLength: 2048,
  secretLength: { min: 16, max: 256 },
  timeoutMs: { min: 100, max: 600_000 },
} as const;

const PUSH_KEYS: ReadonlySet<string> = new Set(["url", "secret", "timeoutMs"]);

/**
 * A push target within {@link PUSH_LIMITS}, so a type set in code (`createServer({ types })`,
 * `types.set`) is refused here, not at its first delivery, where a bad secret or timeout would
 * fail every push of the type.
 */
function checkPush(push: PushTarget): void {
  checkKnownKeys("push", push, PUSH_KEYS);
  const { url, secret, timeoutMs } = push;
  let parsed: URL | null = null;
  try {
    // Not URL.parse: it came in Node 20.18, and errand runs on every Node 20.
    if (typeof url === "string" && url.length <= PUSH_LIMITS.urlLength) parsed = new URL(url);
  } catch {}
  if (parsed === null) {
    throw new ErrandError(
      "INVALID_OPTION",
      `push.url must be an absolute http(s) URL of at most ${PUSH_LIMITS.urlLength} characters`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ErrandError("INVALID_OPTION", `push.url must be http: or https:, got ${parsed.protocol}`);
  }
  const { min, max } = PUSH_LIMITS.secretLength;
  if (secret !== undefined && (typeof secret !== "string" || secret.length < min || secret.length > max)) {
    throw new ErrandError("INVALID_OPTION", `push.secret must be a string of ${min} to ${max} characters`);
  }
  // The HMAC key is the secret's UTF-8: a lone surrogate would become U+FFFD there, so two
  // secrets would sign alike; and U+0000 is no text a store keeps as given.
  if (secret !== undefined) checkText("push.secret", secret, max);
  if (timeoutMs !== undefined) {
    checkInt("push.timeoutMs", timeoutMs, PUSH_LIMITS.timeoutMs.min, PUSH_LIMITS.timeoutMs.max);
  }
}

/** A type as shown over HTTP: the push secret is never echoed. */
export function publicType(config: JobTypeConfig): JobTypeConfig {
  if (!config.push?.secret) return config;
  const { secret: _secret, ...push } = config.push;
  return { ...config, push };
}
