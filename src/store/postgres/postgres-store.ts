import { EventEmitter } from "node:events";
import pg from "pg";
import type { Logger } from "pino";
import { defaultLogger } from "../../default-logger.js";
import { ErrandError } from "../../errors.js";
import { FINISHED_STATES, type JobRecord, type JobState } from "../../job.js";
import { checkKnownKeys } from "../../known-keys.js";
import { planClaimAsync } from "../claim-plan.js";
import { type StatementName, statements } from "../generated/postgres-queries.js";
import { HOT_RECORD_KEYS, hotRecord } from "../hot-record.js";
import { renderStatements } from "../sql-template.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  CompleteManyParams,
  DeleteJobTypeParams,
  DeleteScheduleParams,
  EnqueueManyParams,
  EnqueueResult,
  FailManyParams,
  FailResult,
  FireScheduleParams,
  GetJobTypeParams,
  GetParams,
  GetScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  JobTypeRecord,
  ListParams,
  ListResult,
  NewJob,
  PauseQueueParams,
  PruneParams,
  PutJobTypeParams,
  PutScheduleParams,
  ReleaseParams,
  ReplayParams,
  RescheduleParams,
  ResumeQueueParams,
  RetryParams,
  ScheduleRecord,
  StatsParams,
  Store,
  StoreCapabilities,
  StoreStats,
  SweepParams,
} from "../store.js";
import {
  checkSchemaName,
  LATEST_VERSION,
  type MigrateResult,
  migrateSchema,
  type Queryable,
  schemaVersion,
} from "./migrate.js";

/**
 * Options for {@link PostgresStore.open}. Give `connectionString` or `pool`, not both.
 * @since 0.1.0
 */
export interface PostgresStoreOptions {
  /** `postgres://user:pass@host:5432/db`; the store makes (and on close ends) its own pool. */
  connectionString?: string;
  /**
   * Your own `pg.Pool`. The store never ends it, and keeps one of its connections for LISTEN
   * while open: size it for that.
   */
  pool?: pg.Pool;
  /**
   * The schema errand's tables live in, created on first migrate. Several independent errand
   * installations can share a database under different schemas.
   * @defaultValue "errand"
   */
  schema?: string;
  /**
   * Apply pending migrations when opening. Off: opening fails unless the schema is already at
   * this errand's version (run {@link migrate} from a deploy step instead).
   * @defaultValue true
   */
  migrate?: boolean;
  /**
   * Connections in the store's own pool (with `connectionString`), besides the one kept for LISTEN.
   * @defaultValue 10
   */
  poolSize?: number;
  /**
   * How long an operation retries after a connection fault (a restart, a terminated backend, a
   * refused connection) before it fails with `STORE_ERROR`. Every operation is compare-and-set,
   * so running it again is safe; see the README for the rare case where a commit's reply was lost.
   * @defaultValue 10_000
   */
  retryMs?: number;
  /**
   * Backoff between attempts to re-establish the LISTEN connection after it drops, doubling
   * from `min` to `max`. Workers poll (their `pollIntervalMs`) until it is back.
   * @defaultValue { min: 100, max: 5_000 }
   */
  reconnectDelayMs?: { min?: number; max?: number };
  /** Where connection faults are logged. @defaultValue pino at level "warn" */
  logger?: Logger;
}

const OPTION_KEYS = new Set([
  "connectionString",
  "pool",
  "schema",
  "migrate",
  "poolSize",
  "retryMs",
  "reconnectDelayMs",
  "logger",
]);

/** Events a {@link PostgresStore} emits about its LISTEN connection. */
export interface PostgresStoreEvents {
  /** LISTEN is (again) in place on the connection with this backend pid. */
  listen: [pid: number];
  /** The LISTEN connection was lost; the store reconnects with backoff and workers poll meanwhile. */
  unlisten: [error: unknown];
}

/** bigint columns (epoch ms, priorities, counts) come back as numbers, not strings. */
const INT8_OID = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID && format !== "binary"
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/**
 * First key of the two-key advisory lock that serialises claims of one capped type ("errc"); the
 * second is a hash of the schema and the type, so installations in other schemas do not contend.
 */
const CAP_LOCK = 0x65727263;

/** A fault that a fresh connection (and a moment) may cure; anything else is thrown at once. */
function isTransient(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : "";
  if (code.startsWith("08")) return true; // connection exceptions
  if (["57P01", "57P02", "57P03", "40001", "40P01", "53300"].includes(code)) return true;
  if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"].includes(code))
    return true;
  const message = typeof e?.message === "string" ? e.message : "";
  return /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect/i.test(
    message,
  );
}

/** A fault that leaves the session unusable: its connection is thrown away, not reused. */
function isConnectionFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isTransient(error) && code !== "40001" && code !== "40P01" && code !== "53300";
}

/** 32-bit FNV-1a, for short stable prepared-statement names. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

const HOT_FIELDS = `id, type, queue, state, payload, checkpoint, NULL::text AS result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  lease_expires_at AS "leaseExpiresAt", worker_id AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  NULL::bigint AS "finishedAt", owner`;

const DONE_FIELDS = `id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  NULL::bigint AS "leaseExpiresAt", NULL::text AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  finished_at AS "finishedAt", owner`;

/** {@link HOT_FIELDS} with every column qualified by a table alias (UPDATE … FROM needs it). */
function hotFields(alias: string): string {
  return HOT_FIELDS.replace(
    /(^|[\s,(])(id|type|queue|state|payload|checkpoint|priority|weight|run_at|expires_at|attempt|max_attempts|backoff|retry_queue|delivery|timeout_ms|unique_key|lease_expires_at|worker_id|errors|lease_expirations|created_at|started_at|owner)\b(?!")/g,
    `$1${alias}.$2`,
  );
}
const HOT_FIELD_COUNT = 26;

// hotRecord reads columns by position: fail at load, loudly, if HOT_FIELDS and it ever disagree.
{
  const names = HOT_FIELDS.split(",").map((f) => /"?(\w+)"?\s*$/.exec(f.trim())![1]);
  const keys = HOT_RECORD_KEYS;
  if (names.length !== HOT_FIELD_COUNT || names.join() !== keys.join()) {
    throw new Error(`hotRecord does not match HOT_FIELDS: ${names} vs ${keys}`);
  }
}

/** Columns shared by both job tables, for moving a row from the hot table to history. */
const SHARED = `id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors, lease_expirations,
  created_at, started_at, owner`;

/**
 * The `{{fragment}}`s of queries/*.sql: table names qualified by the schema (a quoted identifier),
 * the NOTIFY channel (a quoted literal), both checked by {@link checkSchemaName}, and the
 * column lists many statements share.
 */
function sqlFragments(schema: string, channel: string): Record<string, string> {
  return {
    errandJob: `"${schema}".errand_job`,
    errandJobDone: `"${schema}".errand_job_done`,
    errandSchedule: `"${schema}".errand_schedule`,
    errandJobType: `"${schema}".errand_job_type`,
    errandQueuePause: `"${schema}".errand_queue_pause`,
    channel: `'${channel}'`,
    hotFields: HOT_FIELDS,
    hotFieldsJ: hotFields("j"),
    doneFields: DONE_FIELDS,
    sharedColumns: SHARED,
    insertJob: `INSERT INTO "${schema}".errand_job (id, type, queue, state, payload, priority, weight, run_at,
    expires_at, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, owner, created_at)`,
    insertOutcome: `SELECT count(*)::integer AS n,
  CASE WHEN count(*) < $18::integer THEN array_agg(id) END AS ids,
  (SELECT count(*) FROM n) AS notified
FROM ins`,
  };
}

/**
 * The PostgreSQL store: any number of worker processes on any number of machines share one
 * database, and a job still has one holder at a time.
 *
 * - Claims take ready rows with `FOR UPDATE SKIP LOCKED`, one statement per queue share (see
 *   {@link planClaimAsync}), so concurrent claimers never wait on each other's rows.
 * - A type's cluster-wide cap is held by a transaction-scoped advisory lock per capped type,
 *   taken before counting its active jobs, so no two claimers can both see the same free room.
 * - Pending and active jobs live in `errand_job`, finished ones in `errand_job_done`: the claim's
 *   partial index covers the hot set only.
 * - Enqueue, completion batches and heartbeats are one statement each, whatever the batch size
 *   (enqueue with caller-chosen ids adds a second, in the same transaction, see `#insertJobs`).
 * - Wake-ups travel by LISTEN/NOTIFY on a channel per schema; the NOTIFY is part of the statement
 *   that made jobs ready, so it is delivered exactly when they become visible.
 * - Connection faults are retried for {@link PostgresStoreOptions.retryMs}; a lost LISTEN
 *   connection is re-established with backoff while workers poll.
 *
 * Times are epoch-ms `bigint`s, always the `now` passed in; the database's clock is never used.
 * @since 0.1.0
 */
export class PostgresStore extends EventEmitter<PostgresStoreEvents> implements Store {
  /** What every PostgreSQL store can do (see {@link StoreCapabilities}); tests read it before opening one. */
  static readonly capabilities: StoreCapabilities = {
    listen: true,
    multiProcess: true,
    transactionalEnqueue: true,
  };
  readonly capabilities = PostgresStore.capabilities;
  /** The schema this store's tables live in. */
  readonly schema: string;
  readonly #pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #logger: Logger | undefined;
  readonly #retryMs: number;
  readonly #reconnectMin: number;
  readonly #reconnectMax: number;
  /** The NOTIFY channel: one per schema, so installations sharing a database do not wake each other. */
  readonly #channel: string;
  /** Tags this store's own notifications, which it has already delivered to its listeners. */
  readonly #origin = Math.random().toString(36).slice(2, 12);
  readonly #listeners = new Set<() => void>();
  readonly #names = new Map<string, string>();
  /** queries/*.sql, by statement name, with this store's schema and channel filled in. */
  readonly #sql: Record<StatementName, string>;
  #listenClient: pg.PoolClient | null = null;
  /** Gives the LISTEN connection back (destroyed); safe to call more than once. */
  #dropListener: (() => void) | null = null;
  #listenPid: number | null = null;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #reconnectAttempt = 0;
  #inFlight = 0;
  #heartbeats: Promise<unknown> = Promise.resolve();
  #idle: Array<() => void> = [];
  #closed = false;

  private constructor(pool: pg.Pool, ownsPool: boolean, schema: string, options: PostgresStoreOptions) {
    super();
    this.#pool = pool;
    this.#ownsPool = ownsPool;
    this.schema = schema;
    this.#channel = `${schema}_wake`;
    this.#logger = options.logger;
    this.#retryMs = options.retryMs ?? 10_000;
    this.#reconnectMin = options.reconnectDelayMs?.min ?? 100;
    this.#reconnectMax = options.reconnectDelayMs?.max ?? 5_000;
    this.#sql = renderStatements(statements, sqlFragments(schema, this.#channel));
  }

  /**
   * Connects, migrates (unless `migrate: false`) and starts listening for wake-ups.
   * @throws ErrandError `INVALID_OPTION` for bad options, `STORE_ERROR` when the database cannot
   * be reached or its schema is not at this errand's version.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const o = checkOptions(options);
    const pool =
      o.pool ??
      new pg.Pool({
        connectionString: o.connectionString,
        // One more than asked: the LISTEN connection is taken from the pool and kept.
        max: (o.poolSize ?? 10) + 1,
        keepAlive: true,
        connectionTimeoutMillis: 10_000,
        application_name: new URL(o.connectionString!).searchParams.get("application_name") ?? "errand",
      });
    const store = new PostgresStore(pool, !o.pool, o.schema, o);
    // An idle pooled connection that dies emits "error" on the pool; unheard, it would crash the process.
    pool.on("error", store.#onPoolError);
    try {
      if (o.migrate !== false) await withClient(pool, (c) => migrateSchema(c, o.schema));
      else {
        const version = await schemaVersion(pool, o.schema);
        if (version !== LATEST_VERSION) {
          throw new ErrandError(
            "STORE_ERROR",
            `schema "${o.schema}" is at version ${version}, this errand needs ${LATEST_VERSION}: run migrate() or open with migrate: true`,
          );
        }
      }
      await store.#listen();
    } catch (error) {
      await store.close().catch(() => {});
      throw storeError(error, `cannot open the PostgreSQL store (schema "${o.schema}")`);
    }
    return store;
  }

  /** Where faults are logged; pino is loaded only when there is something to log. */
  get #log(): Logger {
    return this.#logger ?? defaultLogger();
  }

  readonly #onPoolError = (error: Error): void => {
    this.#log.warn({ err: error }, "errand: an idle PostgreSQL connection failed; the pool replaces it");
  };

  /** Whether the LISTEN connection is up (wake-ups arrive at once); polling covers the gaps. */
  get listening(): boolean {
    return this.#listenClient !== null;
  }

  /** The backend pid of the LISTEN connection, when it is up (for diagnostics and tests). */
  get listenerPid(): number | null {
    return this.#listenPid;
  }

  // ---- plumbing ------------------------------------------------------------------------------

  #name(text: string): string {
    let name = this.#names.get(text);
    if (!name) {
      name = `errand_${fnv1a(text)}`;
      this.#names.set(text, name);
    }
    return name;
  }

  /** Runs one statement (prepared once per connection) and returns its rows (as arrays with `raw`). */
  async #q<R = Record<string, unknown>>(
    db: Queryable,
    text: string,
    values: unknown[],
    raw = false,
  ): Promise<R[]> {
    // Prepared statements only on errand's own connections: a caller's client is left as it was.
    const config: pg.QueryConfig =
      db === this.#pool || (db as { errandOwned?: boolean }).errandOwned
        ? { name: this.#name(text), text, values, types: TYPES }
        : { text, values, types: TYPES };
    if (raw) (config as { rowMode?: string }).rowMode = "array";
    const result = await db.query(config);
    return result.rows as R[];
  }

  /**
   * Runs `fn` on the pool (`"pool"`: each statement on any connection) or in a transaction on one
   * connection (`"tx"`), retrying the whole of it after a connection fault, a deadlock or a
   * serialisation failure until `retryMs` has passed. Every operation is compare-and-set, so a
   * retry cannot apply a change twice.
   */
  async #op<T>(mode: "pool" | "tx", fn: (db: Queryable) => Promise<T>): Promise<T> {
    if (this.#closed) throw new ErrandError("CLOSED", "the PostgreSQL store is closed");
    this.#inFlight++;
    try {
      const deadline = Date.now() + this.#retryMs;
      for (let attempt = 0; ; attempt++) {
        try {
          return mode === "pool" ? await fn(this.#pool) : await this.#transaction(fn);
        } catch (error) {
          if (error instanceof ErrandError) throw error;
          if (!isTransient(error) || this.#closed || Date.now() >= deadline) {
            throw storeError(error, "PostgreSQL operation failed");
          }
          const delay = Math.min(1_000, 25 * 2 ** attempt, Math.max(0, deadline - Date.now()));
          this.#log.warn({ err: error, retryInMs: delay }, "errand: PostgreSQL connection fault; retrying");
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    } finally {
      if (--this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  async #transaction<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    (client as { errandOwned?: boolean }).errandOwned = true;
    let broken: Error | undefined;
    // A checked-out client whose connection dies emits "error" besides failing its query;
    // unheard, that would crash the process.
    const onError = (error: Error) => {
      broken = error;
    };
    client.on("error", onError);
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      if (isConnectionFault(error)) broken = error as Error;
      else await client.query("ROLLBACK").catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.removeListener("error", onError);
      // A broken connection is destroyed, not handed to the next caller.
      client.release(broken);
    }
  }

  // ---- wake-ups ------------------------------------------------------------------------------

  #emitWake(): void {
    for (const listener of this.#listeners) listener();
  }

  onWake(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  wake(): void {
    this.#emitWake();
    if (this.#closed) return;
    this.#pool.query({ text: this.#sql.notify, values: [this.#origin] }).catch((error: unknown) => {
      // Best effort: other processes still poll.
      this.#log.warn({ err: error }, "errand: NOTIFY failed");
    });
  }

  /** Takes a connection for LISTEN and keeps it; on loss, {@link #scheduleReconnect}. */
  async #listen(): Promise<void> {
    const client = await this.#pool.connect();
    let lost = false;
    let released = false;
    const drop = (error?: Error) => {
      if (released) return;
      released = true;
      client.removeListener("notification", onNotification);
      client.release(error ?? true);
    };
    const onLost = (error: unknown) => {
      if (lost) return;
      lost = true;
      drop(error instanceof Error ? error : undefined);
      if (this.#listenClient !== client) return;
      this.#listenClient = null;
      this.#listenPid = null;
      if (this.#closed) return;
      this.#log.warn({ err: error }, "errand: LISTEN connection lost; reconnecting (workers poll meanwhile)");
      this.emit("unlisten", error);
      this.#scheduleReconnect();
    };
    const onNotification = (msg: pg.Notification) => {
      if (msg.channel === this.#channel && msg.payload !== this.#origin) this.#emitWake();
    };
    client.on("notification", onNotification);
    client.on("error", onLost);
    client.on("end", () => onLost(new Error("the LISTEN connection ended")));
    try {
      await client.query(`LISTEN "${this.#channel}"`);
    } catch (error) {
      onLost(error);
      throw error;
    }
    if (lost) throw new Error("the LISTEN connection was lost while starting");
    this.#listenClient = client;
    this.#dropListener = () => {
      lost = true;
      drop();
    };
    this.#listenPid = (client as unknown as { processID: number }).processID;
    this.#reconnectAttempt = 0;
    this.emit("listen", this.#listenPid);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const base = Math.min(this.#reconnectMax, this.#reconnectMin * 2 ** this.#reconnectAttempt++);
    const delay = base / 2 + (Math.random() * base) / 2;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (this.#closed) return;
      this.#listen().then(
        () => {
          this.#log.info({ pid: this.#listenPid }, "errand: LISTEN connection re-established");
          // Notifications sent while it was down are gone: have every claimer look now.
          this.#emitWake();
        },
        (error: unknown) => {
          this.#log.warn({ err: error }, "errand: LISTEN reconnect failed; trying again");
          this.#scheduleReconnect();
        },
      );
    }, delay);
    this.#reconnectTimer.unref();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]> {
    const checkDone = params.idsGenerated !== true;
    if (params.connection !== undefined) {
      const db = params.connection as Queryable | null;
      if (typeof db?.query !== "function") {
        throw new ErrandError(
          "INVALID_OPTION",
          "enqueue: db must be a pg Client or PoolClient (inside your transaction)",
        );
      }
      if (this.#closed) throw new ErrandError("CLOSED", "the PostgreSQL store is closed");
      try {
        // The NOTIFY goes out with the caller's commit; untagged, so this process hears it too.
        return (await this.#insertJobs(db, params.jobs, params.now, checkDone, "")).results;
      } catch (error) {
        throw error instanceof ErrandError
          ? error
          : storeError(error, "enqueue on the given connection failed");
      }
    }
    // Ids the caller chose may belong to finished jobs: that check needs a transaction (see #insertJobs).
    const { results, ready } = await this.#op(checkDone ? "tx" : "pool", (db) =>
      this.#insertJobs(db, params.jobs, params.now, checkDone, this.#origin),
    );
    if (ready) this.#emitWake();
    return results;
  }

  /**
   * Inserts in one statement (unnest of one array per column), skipping jobs whose id or unique
   * key is taken, then looks up what the skipped ones matched.
   *
   * With caller-chosen ids (`checkDone`), ids are unique across both tables: the insert skips ids
   * found in `errand_job_done`, and — inside the same transaction, in a later statement with a
   * fresh snapshot — deletes again any it inserted whose id a concurrent completion has just moved
   * to history (the insert waited on that completion's row lock, then found the hot row gone).
   */
  async #insertJobs(
    db: Queryable,
    jobs: NewJob[],
    now: number,
    checkDone: boolean,
    notifyTag: string,
  ): Promise<{ results: EnqueueResult[]; ready: boolean }> {
    const results: EnqueueResult[] = new Array(jobs.length);
    let ready = false;
    let pending = jobs.map((_, i) => i);
    for (let round = 0; pending.length > 0; round++) {
      // A unique key's holder can finish between our insert and our lookup: insert those again.
      if (round === 10) throw new Error("enqueue: unique-key holders kept changing; gave up after 10 rounds");
      const batch = round === 0 ? jobs : pending.map((i) => jobs[i]!);
      const { ids, params, shape } = insertParams(batch);
      const sql = this.#sql[INSERT_STATEMENTS[shape][checkDone ? 1 : 0]];
      const [row] = await this.#q<{ n: number; ids: string[] | null }>(db, sql, [
        ...params,
        now,
        notifyTag,
        batch.length,
      ]);
      let inserted: Set<string> | null = row!.n === batch.length ? null : new Set(row!.ids ?? []);
      if (checkDone && row!.n > 0) {
        const raced = await this.#q<{ id: string }>(db, this.#sql.dropRaced, [
          inserted ? [...inserted] : ids,
        ]);
        if (raced.length > 0) {
          inserted ??= new Set(ids);
          for (const r of raced) inserted.delete(r.id);
        }
      }
      const lookups: number[] = [];
      const claimed = new Set<string>();
      for (const i of pending) {
        const j = jobs[i]!;
        if ((inserted === null || inserted.has(j.id)) && !claimed.has(j.id)) {
          claimed.add(j.id);
          results[i] = { inserted: true };
          if (j.runAt <= now) ready = true;
        } else {
          lookups.push(i);
        }
      }
      if (lookups.length === 0) break;
      const lookupIds = lookups.map((i) => jobs[i]!.id);
      const keys = lookups.map((i) => jobs[i]!.uniqueKey).filter((k): k is string => k !== null);
      const found = await this.#q<JobRecord & { byKey: boolean }>(db, this.#sql.existing, [lookupIds, keys]);
      const byId = new Map<string, JobRecord>();
      const byKey = new Map<string, JobRecord>();
      for (const { byKey: k, ...r } of found) {
        if (k) byKey.set(r.uniqueKey!, r);
        else byId.set(r.id, r);
      }
      pending = [];
      for (const i of lookups) {
        const j = jobs[i]!;
        const existing = byId.get(j.id) ?? (j.uniqueKey === null ? undefined : byKey.get(j.uniqueKey));
        if (existing) results[i] = { inserted: false, existing };
        else pending.push(i);
      }
    }
    return { results, ready };
  }

  // ---- claim ---------------------------------------------------------------------------------

  async claim(p: ClaimParams): Promise<JobRecord[]> {
    const filterTypes = p.types && p.types.length > 0 ? p.types : null;
    const capped = p.concurrencyLimits
      ? Object.keys(p.concurrencyLimits)
          .filter((t) => !filterTypes || filterTypes.includes(t))
          .sort()
      : [];
    // One queue and no caps: a single statement, atomic by itself. Otherwise one transaction, so
    // the cap locks hold throughout and a fault leaves no share claimed and unreported.
    const mode = capped.length === 0 && p.queues.length === 1 ? "pool" : "tx";
    return this.#op(mode, async (db) => {
      const room = new Map<string, number>();
      if (capped.length > 0) {
        await this.#q(db, this.#sql.lockCaps, [CAP_LOCK, capped]);
        for (const t of capped) room.set(t, p.concurrencyLimits![t]!);
        const counts = await this.#q<{ type: string; n: number }>(db, this.#sql.countActive, [capped]);
        for (const { type, n } of counts) room.set(type, room.get(type)! - n);
      }
      const weightCap = p.weightCap ?? Number.POSITIVE_INFINITY;
      let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
      const leaseExpiresAt = p.now + p.leaseMs;
      const taken = await planClaimAsync(p.queues, p.limit, p.random ?? Math.random, async (queue, count) => {
        const out: JobRecord[] = [];
        for (;;) {
          const excluded: string[] = [];
          const capTypes: string[] = [];
          const capRoom: number[] = [];
          for (const [t, n] of room) {
            if (n <= 0) excluded.push(t);
            else {
              capTypes.push(t);
              capRoom.push(n);
            }
          }
          const values: unknown[] = [
            queue,
            p.now,
            count - out.length,
            Number.isFinite(weightCap) ? weightCap : null,
            Number.isFinite(budget) ? budget : null,
            p.workerId,
            leaseExpiresAt,
            filterTypes,
            excluded.length > 0 ? excluded : null,
          ];
          if (capTypes.length > 0) values.push(capTypes, capRoom);
          const rows = await this.#q<unknown[]>(
            db,
            capTypes.length > 0 ? this.#sql.claimCapped : this.#sql.claim,
            values,
            true,
          );
          let overflow = false;
          let skipped = false;
          for (const row of rows) {
            if (row[0] === null) {
              overflow = row[HOT_FIELD_COUNT] === true;
              skipped = row[HOT_FIELD_COUNT + 1] === true;
              continue;
            }
            const record = hotRecord(row);
            budget -= Math.min(record.weight, weightCap);
            const left = room.get(record.type);
            if (left !== undefined) room.set(record.type, left - 1);
            out.push(record);
          }
          if (overflow) return { taken: out, full: true };
          // Rows of a type that just hit its cap were passed over: look again without that type.
          if (out.length === count || !skipped) return { taken: out, full: budget <= 0 };
        }
      });
      taken.sort(claimOrder);
      return taken;
    });
  }

  // ---- outcomes ------------------------------------------------------------------------------

  async completeMany(params: CompleteManyParams): Promise<boolean[]> {
    const { items } = params;
    if (items.length === 0) return [];
    const done = await this.#op("pool", (db) =>
      this.#q<{ id: string; attempt: number }>(db, this.#sql.completeMany, [
        items.map((i) => i.id),
        items.map((i) => i.attempt),
        items.map((i) => i.result),
        params.now,
      ]),
    );
    const won = new Set(done.map((r) => `${r.attempt}:${r.id}`));
    // Exactly one report per attempt wins, even when a batch names an attempt twice.
    return items.map((i) => won.delete(`${i.attempt}:${i.id}`));
  }

  async failMany(params: FailManyParams): Promise<FailResult[]> {
    const { items, now } = params;
    if (items.length === 0) return [];
    const rows = await this.#op("pool", (db) =>
      this.#q<{ id: string; attempt: number; state: "pending" | "dead" }>(db, this.#sql.failMany, [
        items.map((i) => i.id),
        items.map((i) => i.attempt),
        items.map((i) => (i.leaseExpired ? 1 : 0)),
        items.map((i) => i.retryAt),
        items.map((i) => (i.retryAt === null ? null : (i.retryQueue ?? null))),
        items.map((i) => JSON.stringify(i.error)),
        now,
        this.#origin,
      ]),
    );
    const outcome = new Map(rows.map((r) => [`${r.attempt}:${r.id}`, r.state]));
    let ready = false;
    // The statement applied the first item naming each attempt; a repeat of it is stale.
    const results = items.map((i): FailResult => {
      const key = `${i.attempt}:${i.id}`;
      const state = outcome.get(key);
      if (state === undefined) return null;
      outcome.delete(key);
      if (state === "pending" && i.retryAt !== null && i.retryAt <= now) ready = true;
      return state;
    });
    if (ready) this.#emitWake();
    return results;
  }

  /**
   * Heartbeats run one after another, in call order: on a pool they could otherwise overtake each
   * other (one waiting for a fresh connection), and a late older one would shorten the lease.
   */
  heartbeatMany(p: HeartbeatManyParams): Promise<boolean[]> {
    const run = this.#heartbeats.then(() => this.#heartbeatMany(p));
    this.#heartbeats = run.catch(() => {});
    return run;
  }

  async #heartbeatMany(p: HeartbeatManyParams): Promise<boolean[]> {
    if (p.items.length === 0) return [];
    const rows = await this.#op("pool", (db) =>
      this.#q<{ id: string; attempt: number }>(db, this.#sql.heartbeatMany, [
        p.now + p.leaseMs,
        p.items.map((i) => i.id),
        p.items.map((i) => i.attempt),
      ]),
    );
    const alive = new Set(rows.map((r) => `${r.attempt}:${r.id}`));
    return p.items.map((i) => alive.has(`${i.attempt}:${i.id}`));
  }

  async checkpoint(p: CheckpointParams): Promise<boolean> {
    const rows = await this.#op("pool", (db) =>
      this.#q(db, this.#sql.checkpoint, [p.id, p.attempt, p.checkpoint]),
    );
    return rows.length === 1;
  }

  async release(p: ReleaseParams): Promise<boolean> {
    const [row] = await this.#op("pool", (db) =>
      this.#q<{ changed: number }>(db, this.#sql.release, [p.id, p.attempt, p.now, this.#origin]),
    );
    const changed = (row?.changed ?? 0) > 0;
    if (changed) this.#emitWake();
    return changed;
  }

  // ---- reads ---------------------------------------------------------------------------------

  async get({ id }: GetParams): Promise<JobRecord | null> {
    const [row] = await this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.get, [id]));
    return row ?? null;
  }

  async list(p: ListParams): Promise<ListResult> {
    const owned = p.owner !== undefined;
    const source =
      p.state === undefined
        ? owned
          ? this.#sql.listAllOwner
          : this.#sql.listAll
        : p.state === "pending" || p.state === "active"
          ? owned
            ? this.#sql.listHotOwner
            : this.#sql.listHot
          : owned
            ? this.#sql.listDoneOwner
            : this.#sql.listDone;
    const rows = await this.#op("pool", (db) =>
      this.#q<JobRecord>(db, source, [
        p.state ?? null,
        p.queue ?? null,
        p.type ?? null,
        p.cursor ?? null,
        p.limit + 1,
        ...(owned ? [p.owner] : []),
      ]),
    );
    const more = rows.length > p.limit;
    if (more) rows.pop();
    return { jobs: rows, nextCursor: more ? rows[rows.length - 1]!.id : null };
  }

  async stats(p: StatsParams): Promise<StoreStats> {
    const rows = await this.#op("pool", (db) =>
      this.#q<{
        state: JobState;
        queue: string;
        type: string;
        n: number;
        scheduled: number;
        retrying: number;
        oldest: number | null;
      }>(db, this.#sql.stats, [p.now]),
    );
    const states = Object.fromEntries(["pending", "active", ...FINISHED_STATES].map((s) => [s, 0])) as Record<
      JobState,
      number
    >;
    const queues: StoreStats["queues"] = {};
    const types: StoreStats["types"] = {};
    let scheduled = 0;
    let retrying = 0;
    let oldestReadyAt: number | null = null;
    for (const r of rows) {
      states[r.state] += r.n;
      const q = (queues[r.queue] ??= {});
      q[r.state] = (q[r.state] ?? 0) + r.n;
      const t = (types[r.type] ??= {});
      t[r.state] = (t[r.state] ?? 0) + r.n;
      scheduled += r.scheduled;
      retrying += r.retrying;
      if (r.oldest !== null && (oldestReadyAt === null || r.oldest < oldestReadyAt)) oldestReadyAt = r.oldest;
    }
    return { states, scheduled, retrying, queues, types, oldestReadyAt };
  }

  // ---- changes by id -------------------------------------------------------------------------

  async cancel(p: CancelParams): Promise<JobMutation> {
    return this.#op("pool", async (db): Promise<JobMutation> => {
      const [moved] = await this.#q<JobRecord>(db, this.#sql.cancel, [p.id, p.now]);
      if (moved) return { record: moved, changed: true };
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
  }

  async reschedule(p: RescheduleParams): Promise<JobMutation> {
    const m = await this.#op("pool", async (db): Promise<JobMutation> => {
      const [updated] = await this.#q<JobRecord>(db, this.#sql.reschedule, [
        p.id,
        p.runAt ?? null,
        p.priority ?? null,
        p.queue ?? null,
        p.now,
        this.#origin,
      ]);
      if (updated) return { record: updated, changed: true };
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
    if (m?.changed && m.record.runAt <= p.now) this.#emitWake();
    return m;
  }

  async retry(p: RetryParams): Promise<JobMutation> {
    const m = await this.#op("pool", async (db): Promise<JobMutation> => {
      const [moved] = await uniqueConflict(
        this.#q<JobRecord>(db, this.#sql.retry, [p.id, p.now, this.#origin]),
      );
      if (moved) return { record: moved, changed: true };
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
    if (m?.changed) this.#emitWake();
    return m;
  }

  async replay(p: ReplayParams): Promise<JobMutation> {
    const m = await this.#op("pool", async (db): Promise<JobMutation> => {
      const [copy] = await uniqueConflict(
        this.#q<JobRecord>(db, this.#sql.replay, [p.id, p.newId, p.now, this.#origin]),
      );
      if (copy) return { record: copy, changed: true };
      // No finished job to copy: it is pending or active (unchanged), or there is none.
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
    if (m?.changed) this.#emitWake();
    return m;
  }

  // ---- sweeps --------------------------------------------------------------------------------

  expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    return this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.expiredLeases, [p.now, p.limit]));
  }

  expirePending(p: SweepParams): Promise<JobRecord[]> {
    return this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.expirePending, [p.now, p.limit]));
  }

  prune(p: PruneParams): Promise<number> {
    return this.#op("pool", async (db) => {
      let deleted = 0;
      for (const state of FINISHED_STATES) {
        if (deleted >= p.limit) break;
        const [row] = await this.#q<{ n: number }>(db, this.#sql.prune, [
          state,
          p.now - p.retainMs[state],
          p.limit - deleted,
        ]);
        deleted += row!.n;
      }
      return deleted;
    });
  }

  // ---- schedules -----------------------------------------------------------------------------

  async putSchedule(r: PutScheduleParams): Promise<void> {
    await this.#op("pool", (db) =>
      this.#q(db, this.#sql.putSchedule, [
        r.name,
        r.cron,
        r.timezone,
        r.type,
        r.payload,
        r.options,
        r.nextRunAt,
        r.createdAt,
        r.updatedAt,
      ]),
    );
  }

  async deleteSchedule({ name }: DeleteScheduleParams): Promise<boolean> {
    const rows = await this.#op("pool", (db) => this.#q(db, this.#sql.deleteSchedule, [name]));
    return rows.length === 1;
  }

  async getSchedule({ name }: GetScheduleParams): Promise<ScheduleRecord | null> {
    const [row] = await this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.getSchedule, [name]));
    return row ?? null;
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.listSchedules, []));
  }

  dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    return this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.dueSchedules, [p.now, p.limit]));
  }

  async fireSchedule(p: FireScheduleParams): Promise<boolean> {
    // The compare-and-set on next_run_at makes a second scheduler wait for the first's commit,
    // then find the tick taken: one job per tick, however many schedulers run.
    const { advanced, ready } = await this.#op("tx", async (db) => {
      const rows = await this.#q(db, this.#sql.advanceSchedule, [
        p.name,
        p.expectedRunAt,
        p.nextRunAt,
        p.now,
      ]);
      if (rows.length === 0) return { advanced: false, ready: false };
      const { ready } = await this.#insertJobs(db, [p.job], p.now, true, this.#origin);
      return { advanced: true, ready };
    });
    if (ready) this.#emitWake();
    return advanced;
  }

  // ---- job types -----------------------------------------------------------------------------

  async putJobType(r: PutJobTypeParams): Promise<boolean> {
    const [row] = await this.#op("pool", (db) =>
      this.#q<{ inserted: boolean }>(db, this.#sql.putJobType, [r.name, r.config, r.createdAt, r.updatedAt]),
    );
    return row!.inserted;
  }

  async getJobType({ name }: GetJobTypeParams): Promise<JobTypeRecord | null> {
    const [row] = await this.#op("pool", (db) => this.#q<JobTypeRecord>(db, this.#sql.getJobType, [name]));
    return row ?? null;
  }

  listJobTypes(): Promise<JobTypeRecord[]> {
    return this.#op("pool", (db) => this.#q<JobTypeRecord>(db, this.#sql.listJobTypes, []));
  }

  async deleteJobType({ name }: DeleteJobTypeParams): Promise<boolean> {
    const rows = await this.#op("pool", (db) => this.#q(db, this.#sql.deleteJobType, [name]));
    return rows.length === 1;
  }

  // ---- paused queues -------------------------------------------------------------------------

  async pauseQueue(p: PauseQueueParams): Promise<boolean> {
    const rows = await this.#op("pool", (db) => this.#q(db, this.#sql.pauseQueue, [p.name, p.now]));
    return rows.length === 1;
  }

  async resumeQueue(p: ResumeQueueParams): Promise<boolean> {
    const rows = await this.#op("pool", (db) => this.#q(db, this.#sql.resumeQueue, [p.name]));
    return rows.length === 1;
  }

  async pausedQueues(): Promise<string[]> {
    const rows = await this.#op("pool", (db) => this.#q<{ name: string }>(db, this.#sql.pausedQueues, []));
    return rows.map((r) => r.name);
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /**
   * Brings this store's schema up to date (what `open` does unless `migrate: false`).
   * @see {@link migrate}
   */
  migrate(): Promise<MigrateResult> {
    return withClient(this.#pool, (c) => migrateSchema(c, this.schema));
  }

  /** Waits for operations under way, stops listening and, if the store made its pool, ends it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    // New operations are refused from here; those under way finish (a retrying one gives up).
    this.#closed = true;
    if (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    this.#listenClient = null;
    this.#listenPid = null;
    this.#dropListener?.();
    this.#dropListener = null;
    this.#listeners.clear();
    this.#pool.removeListener("error", this.#onPoolError);
    if (this.#ownsPool) await this.#pool.end();
  }
}

/**
 * Brings errand's schema in a PostgreSQL database up to this errand's version, without opening a
 * store: for a deploy step, before workers start with `migrate: false`.
 * @example `await migrate({ connectionString: process.env.DATABASE_URL, schema: "errand" })`
 * @since 0.1.0
 */
export async function migrate(
  options: Pick<PostgresStoreOptions, "connectionString" | "pool" | "schema">,
): Promise<MigrateResult> {
  const o = checkOptions(options);
  const pool = o.pool ?? new pg.Pool({ connectionString: o.connectionString, max: 1 });
  try {
    return await withClient(pool, (c) => migrateSchema(c, o.schema));
  } catch (error) {
    throw storeError(error, `cannot migrate schema "${o.schema}"`);
  } finally {
    if (!o.pool) await pool.end();
  }
}

function checkOptions(options: PostgresStoreOptions): PostgresStoreOptions & { schema: string } {
  checkKnownKeys("PostgresStore", options, OPTION_KEYS);
  if ((options.connectionString === undefined) === (options.pool === undefined)) {
    throw new ErrandError("INVALID_OPTION", "PostgresStore: give connectionString or pool (exactly one)");
  }
  if (options.connectionString !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(options.connectionString);
    } catch {}
    if (!url || !/^postgres(ql)?:$/.test(url.protocol)) {
      throw new ErrandError(
        "INVALID_OPTION",
        "PostgresStore: connectionString must be a postgres:// or postgresql:// URL",
      );
    }
  }
  const poolMax = (options.pool as { options?: { max?: number } } | undefined)?.options?.max;
  if (poolMax !== undefined && poolMax < 2) {
    throw new ErrandError(
      "INVALID_OPTION",
      `PostgresStore: pool.max must be ≥ 2 (one connection is kept for LISTEN), got ${poolMax}`,
    );
  }
  for (const [field, value, min] of [
    ["poolSize", options.poolSize, 1],
    ["retryMs", options.retryMs, 0],
    ["reconnectDelayMs.min", options.reconnectDelayMs?.min, 1],
    ["reconnectDelayMs.max", options.reconnectDelayMs?.max, 1],
  ] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
      throw new ErrandError("INVALID_OPTION", `PostgresStore: ${field} must be an integer ≥ ${min}`);
    }
  }
  return { ...options, schema: checkSchemaName(options.schema ?? "errand") };
}

async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    return await fn(client);
  } catch (error) {
    if (isConnectionFault(error)) broken = error as Error;
    throw error;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

function storeError(error: unknown, what: string): ErrandError {
  if (error instanceof ErrandError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ErrandError("STORE_ERROR", `${what}: ${message}`, { cause: error });
}

/** A unique-key (or id) clash on moving a job back into the hot set is the caller's problem, not a fault. */
async function uniqueConflict<T>(query: Promise<T>): Promise<T> {
  try {
    return await query;
  } catch (cause) {
    if ((cause as { code?: string }).code === "23505") {
      throw new ErrandError(
        "INVALID_STATE",
        "another pending or active job holds this job's unique key, or the id is taken",
        { cause },
      );
    }
    throw cause;
  }
}

function claimOrder(a: JobRecord, b: JobRecord): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The fields of a NewJob in the order of the insert parameters $1..$15 (queries/enqueueMany.sql). */
const JOB_FIELDS = [
  "id",
  "type",
  "queue",
  "payload",
  "priority",
  "weight",
  "runAt",
  "expiresAt",
  "maxAttempts",
  "backoff",
  "retryQueue",
  "delivery",
  "timeoutMs",
  "uniqueKey",
  "owner",
] as const satisfies ReadonlyArray<keyof NewJob>;

/** Each insert shape's statements: [errand-generated ids, caller-chosen ids (checked against history)]. */
const INSERT_STATEMENTS = {
  one: ["insertOne", "insertOneChecked"],
  uniform: ["insertUniform", "insertUniformChecked"],
  columns: ["insert", "insertChecked"],
} as const satisfies Record<string, readonly [StatementName, StatementName]>;

/**
 * The insert's parameters $1..$15 and the statement shape they fit: one job (every enqueue()
 * call) as plain values; else ids and payloads as arrays, and the other fields as one value each
 * when every job shares it (`uniform`), or every field as an array (`columns`).
 */
function insertParams(jobs: NewJob[]): {
  ids: string[];
  params: unknown[];
  shape: keyof typeof INSERT_STATEMENTS;
} {
  const first = jobs[0]!;
  const ids = jobs.map((j) => j.id);
  if (jobs.length === 1) return { ids, params: JOB_FIELDS.map((f) => first[f]), shape: "one" };
  let uniform = true;
  for (let i = 1; i < jobs.length && uniform; i++) {
    const j = jobs[i]!;
    uniform =
      j.type === first.type &&
      j.queue === first.queue &&
      j.priority === first.priority &&
      j.weight === first.weight &&
      j.runAt === first.runAt &&
      j.expiresAt === first.expiresAt &&
      j.maxAttempts === first.maxAttempts &&
      j.backoff === first.backoff &&
      j.retryQueue === first.retryQueue &&
      j.delivery === first.delivery &&
      j.timeoutMs === first.timeoutMs &&
      j.uniqueKey === first.uniqueKey &&
      j.owner === first.owner;
  }
  const payloads = jobs.map((j) => j.payload);
  const params = JOB_FIELDS.map((f) =>
    f === "id" ? ids : f === "payload" ? payloads : uniform ? first[f] : jobs.map((j) => j[f]),
  );
  return { ids, params, shape: uniform ? "uniform" : "columns" };
}
