import { closeSync, constants, type FSWatcher, openSync, watch, writeSync } from "node:fs";
import Database from "better-sqlite3";
import { ErrandError } from "../../errors.js";
import { FINISHED_STATES, type JobRecord, type JobState } from "../../job.js";
import { planClaim } from "../claim-plan.js";
import { migrations } from "../generated/sqlite-migrations.js";
import { HOT_RECORD_KEYS, hotRecord } from "../hot-record.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  CompleteManyParams,
  EnqueueManyParams,
  EnqueueResult,
  FailManyParams,
  FailResult,
  FireScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  JobTypeRecord,
  ListParams,
  ListResult,
  NewJob,
  PruneParams,
  ReleaseParams,
  ReplayParams,
  RescheduleParams,
  RetryParams,
  ScheduleRecord,
  Store,
  StoreCapabilities,
  StoreStats,
  SweepParams,
} from "../store.js";
import { WriteBatcher } from "./write-batcher.js";

/**
 * Options for {@link SqliteStore.open}.
 * @since 0.1.0
 */
export interface SqliteStoreOptions {
  /** A file path, or `":memory:"` for a private in-memory database (one process, nothing kept). */
  filename: string;
  /**
   * SQLite's `synchronous` setting. `"normal"` (the default) with WAL keeps every committed write
   * through a process crash; a power loss or OS crash may lose the last commits. `"full"` fsyncs
   * the WAL on every commit and survives power loss too, at the price of one fsync per batch.
   * @defaultValue "normal"
   */
  synchronous?: "normal" | "full";
  /**
   * How long a writer waits for another process's write lock before retrying.
   * @defaultValue 60_000
   */
  busyTimeoutMs?: number;
  /**
   * Wake workers in other processes when jobs become ready, through a small doorbell file beside
   * the database (`<file>-wake`) that they watch. Off for `:memory:`.
   * @defaultValue true
   */
  crossProcessWake?: boolean;
}

const HOT_COLUMNS = `id, type, queue, state, payload, checkpoint, NULL AS result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  lease_expires_at AS leaseExpiresAt, worker_id AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  NULL AS finishedAt, owner`;

const DONE_COLUMNS = `id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  NULL AS leaseExpiresAt, NULL AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  finished_at AS finishedAt, owner`;

/** Columns shared by both job tables, for moving a row from the hot table to history. */
const SHARED = `id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors, lease_expirations,
  created_at, started_at, owner`;

const JOB_TYPE_COLUMNS = "name, config, created_at AS createdAt, updated_at AS updatedAt";

const SCHEDULE_COLUMNS = `name, cron, timezone, type, payload, options, next_run_at AS nextRunAt,
  created_at AS createdAt, updated_at AS updatedAt`;

type Stmt = Database.Statement;

/** Rows per multi-row INSERT on the bulk path: 64 × 16 parameters stays far below SQLite's limit. */
const INSERT_CHUNK = 64;
const INSERTED: EnqueueResult = Object.freeze({ inserted: true });

/**
 * The embedded store: one SQLite file, WAL, any number of processes.
 *
 * Writes go through a {@link WriteBatcher} (one transaction per event-loop turn); reads run
 * straight on the connection, which WAL never blocks. Wake-ups reach this process's workers
 * through an emitter and other processes' workers through a watched doorbell file.
 * @since 0.1.0
 */
export class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities;
  readonly #db: Database.Database;
  readonly #writer: WriteBatcher;
  readonly #listeners = new Set<() => void>();
  readonly #doorbellPath: string | null;
  #doorbellFd: number | null = null;
  #watcher: FSWatcher | null = null;
  #ringAfterCommit = false;
  #closed = false;
  readonly #stmts = new Map<string, Stmt>();
  readonly #rawStmts = new WeakSet<Stmt>();

  private constructor(db: Database.Database, options: SqliteStoreOptions) {
    this.#db = db;
    const memory = options.filename === ":memory:" || options.filename === "";
    this.capabilities = { listen: true, multiProcess: !memory, transactionalEnqueue: false };
    this.#doorbellPath = !memory && options.crossProcessWake !== false ? `${options.filename}-wake` : null;
    this.#writer = new WriteBatcher(db, () => {
      if (!this.#ringAfterCommit) return;
      this.#ringAfterCommit = false;
      this.#ring();
    });
  }

  /**
   * Opens (creating if needed) and migrates a database.
   * @throws ErrandError `INVALID_STORE_URL` when the file cannot be opened.
   */
  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    let db: Database.Database;
    try {
      db = new Database(options.filename, { timeout: options.busyTimeoutMs ?? 60_000 });
    } catch (cause) {
      throw new ErrandError(
        "INVALID_STORE_URL",
        `cannot open SQLite database ${options.filename}: ${String(cause)}`,
        {
          cause,
        },
      );
    }
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
    db.pragma("temp_store = MEMORY");
    db.pragma("cache_size = -16000");
    migrate(db);
    const store = new SqliteStore(db, options);
    store.#openDoorbell();
    return store;
  }

  #openDoorbell(): void {
    if (!this.#doorbellPath) return;
    // Not O_APPEND: every ring rewrites byte 0, so the file never grows.
    this.#doorbellFd = openSync(this.#doorbellPath, constants.O_RDWR | constants.O_CREAT, 0o644);
    this.#watcher = watch(this.#doorbellPath, { persistent: false }, () => this.#emitWake());
    this.#watcher.on("error", () => {
      // The doorbell is an optimisation: workers still poll when it is gone.
      this.#watcher?.close();
      this.#watcher = null;
    });
  }

  #ring(): void {
    if (this.#doorbellFd !== null) {
      try {
        writeSync(this.#doorbellFd, "1", 0);
      } catch {
        // Best effort: other processes fall back to polling.
      }
    }
    this.#emitWake();
  }

  #emitWake(): void {
    for (const listener of this.#listeners) listener();
  }

  wake(): void {
    this.#ring();
  }

  onWake(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #stmt(sql: string): Stmt {
    let stmt = this.#stmts.get(sql);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      this.#stmts.set(sql, stmt);
    }
    return stmt;
  }

  #write<T>(fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new ErrandError("CLOSED", "the SQLite store is closed"));
    return this.#writer.write(fn);
  }

  // ---- enqueue -------------------------------------------------------------------------------

  enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]> {
    return this.#write(() => this.#insertJobs(params.jobs, params.now, params.idsGenerated === true));
  }

  #insertJobs(jobs: NewJob[], now: number, idsGenerated = false): EnqueueResult[] {
    // Ids are unique across both tables, so a finished job's id is taken. A separate lookup (same
    // transaction) costs far less than a NOT EXISTS inside INSERT … SELECT: ~20% on bulk enqueue.
    const finished = this.#stmt("SELECT 1 FROM errand_job_done WHERE id = ?").pluck();
    const insert = this.#stmt(
      `INSERT INTO errand_job (id, type, queue, state, payload, priority, weight, run_at, expires_at,
         max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, created_at, owner)
       VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    );
    const results: EnqueueResult[] = new Array(jobs.length);
    let ready = false;
    let i = 0;
    if (idsGenerated) {
      // Fresh ids and no unique keys: insert many rows per statement, which spares SQLite a
      // statement step per row. A chunk that meets any conflict is redone row by row below.
      const chunk = this.#stmt(
        `INSERT INTO errand_job (id, type, queue, state, payload, priority, weight, run_at, expires_at,
           max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, created_at, owner)
         VALUES ${Array(INSERT_CHUNK).fill("(?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}
         ON CONFLICT DO NOTHING`,
      );
      const args: unknown[] = new Array(INSERT_CHUNK * 16);
      for (; i + INSERT_CHUNK <= jobs.length; i += INSERT_CHUNK) {
        let k = 0;
        let unique = false;
        for (let r = i; r < i + INSERT_CHUNK; r++) {
          const j = jobs[r]!;
          if (j.uniqueKey !== null) unique = true;
          args[k++] = j.id;
          args[k++] = j.type;
          args[k++] = j.queue;
          args[k++] = j.payload;
          args[k++] = j.priority;
          args[k++] = j.weight;
          args[k++] = j.runAt;
          args[k++] = j.expiresAt;
          args[k++] = j.maxAttempts;
          args[k++] = j.backoff;
          args[k++] = j.retryQueue;
          args[k++] = j.delivery;
          args[k++] = j.timeoutMs;
          args[k++] = j.uniqueKey;
          args[k++] = now;
          args[k++] = j.owner;
        }
        if (unique) break;
        this.#stmt("SAVEPOINT errand_chunk").run();
        if (chunk.run(...args).changes !== INSERT_CHUNK) {
          this.#stmt("ROLLBACK TO errand_chunk").run();
          this.#stmt("RELEASE errand_chunk").run();
          break;
        }
        this.#stmt("RELEASE errand_chunk").run();
        for (let r = i; r < i + INSERT_CHUNK; r++) {
          results[r] = INSERTED;
          if (jobs[r]!.runAt <= now) ready = true;
        }
      }
    }
    for (; i < jobs.length; i++) {
      const j = jobs[i]!;
      const taken = !idsGenerated && finished.get(j.id) !== undefined;
      const info = taken
        ? { changes: 0 }
        : insert.run(
            j.id,
            j.type,
            j.queue,
            j.payload,
            j.priority,
            j.weight,
            j.runAt,
            j.expiresAt,
            j.maxAttempts,
            j.backoff,
            j.retryQueue,
            j.delivery,
            j.timeoutMs,
            j.uniqueKey,
            now,
            j.owner,
          );
      if (info.changes === 1) {
        results[i] = INSERTED;
        if (j.runAt <= now) ready = true;
      } else {
        const existing =
          this.#getRecord(j.id) ?? (j.uniqueKey === null ? null : this.#byUniqueKey(j.uniqueKey));
        if (!existing) throw new Error(`job ${j.id} was neither inserted nor found`);
        results[i] = { inserted: false, existing };
      }
    }
    if (ready) this.#ringAfterCommit = true;
    return results;
  }

  #byUniqueKey(key: string): JobRecord | null {
    return (
      (this.#stmt(`SELECT ${HOT_COLUMNS} FROM errand_job WHERE unique_key = ?`).get(key) as JobRecord) ?? null
    );
  }

  // ---- claim ---------------------------------------------------------------------------------

  claim(params: ClaimParams): Promise<JobRecord[]> {
    return this.#write(() => this.#claim(params));
  }

  #claim(p: ClaimParams): JobRecord[] {
    const leaseExpiresAt = p.now + p.leaseMs;
    const weightCap = p.weightCap ?? Number.POSITIVE_INFINITY;
    let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
    const types = p.types && p.types.length > 0 ? JSON.stringify(p.types) : null;

    // Room left under each cluster-wide cap that applies to this claim.
    const room = new Map<string, number>();
    if (p.concurrencyLimits) {
      const capped = Object.keys(p.concurrencyLimits).filter((t) => !p.types || p.types.includes(t));
      if (capped.length > 0) {
        const counts = this.#stmt(
          `SELECT type, count(*) AS n FROM errand_job
           WHERE state = 'active' AND type IN (SELECT value FROM json_each(?)) GROUP BY type`,
        ).all(JSON.stringify(capped)) as Array<{ type: string; n: number }>;
        for (const t of capped) room.set(t, p.concurrencyLimits[t]!);
        for (const { type, n } of counts) room.set(type, room.get(type)! - n);
      }
    }
    const exhausted = () => [...room].filter(([, n]) => n <= 0).map(([t]) => t);

    const activate = this.#stmt(
      `UPDATE errand_job SET state = 'active', attempt = attempt + 1, worker_id = ?, lease_expires_at = ?, started_at = ?
       WHERE id = ?`,
    );

    const taken = planClaim(p.queues, p.limit, p.random ?? Math.random, (queue, count) => {
      const out: JobRecord[] = [];
      for (;;) {
        const excluded = exhausted();
        const rows = (
          this.#candidates(types !== null, excluded.length > 0).all({
            queue,
            now: p.now,
            types,
            excluded: JSON.stringify(excluded),
            limit: count - out.length,
          }) as unknown[][]
        ).map(hotRecord);
        let skipped = false;
        for (const row of rows) {
          const left = room.get(row.type);
          if (left !== undefined && left <= 0) {
            skipped = true;
            continue;
          }
          const w = Math.min(row.weight, weightCap);
          if (w > budget) return { taken: out, full: true };
          budget -= w;
          if (left !== undefined) room.set(row.type, left - 1);
          activate.run(p.workerId, leaseExpiresAt, p.now, row.id);
          row.state = "active";
          row.attempt += 1;
          row.workerId = p.workerId;
          row.leaseExpiresAt = leaseExpiresAt;
          row.startedAt = p.now;
          out.push(row);
          if (out.length === count) return { taken: out, full: budget <= 0 };
        }
        // Rows of a type that just hit its cap were passed over: look again without that type.
        if (!skipped || rows.length === 0) return { taken: out, full: budget <= 0 };
      }
    });
    if (taken.length > 1 && p.queues.length > 1) taken.sort(claimOrder);
    return taken;
  }

  /** The claim's SELECT, in raw mode: rows come as arrays for {@link hotRecord}. */
  #candidates(filterTypes: boolean, exclude: boolean): Stmt {
    const stmt = this.#stmt(
      `SELECT ${HOT_COLUMNS} FROM errand_job
       WHERE queue = $queue AND state = 'pending' AND run_at <= $now
         AND (expires_at IS NULL OR expires_at > $now)
         ${filterTypes ? "AND type IN (SELECT value FROM json_each($types))" : "AND $types IS NULL"}
         ${exclude ? "AND type NOT IN (SELECT value FROM json_each($excluded))" : "AND $excluded IS NOT NULL"}
       ORDER BY priority DESC, run_at, id
       LIMIT $limit`,
    );
    if (!this.#rawStmts.has(stmt)) {
      const names = stmt.columns().map((c) => c.name);
      if (names.join() !== HOT_RECORD_KEYS.join())
        throw new Error(`hotRecord does not match HOT_COLUMNS: ${names}`);
      stmt.raw(true);
      this.#rawStmts.add(stmt);
    }
    return stmt;
  }

  // ---- outcomes ------------------------------------------------------------------------------

  completeMany(params: CompleteManyParams): Promise<boolean[]> {
    return this.#write(() => {
      const move = this.#stmt(
        `INSERT INTO errand_job_done (${SHARED}, state, result, finished_at)
         SELECT ${SHARED}, 'completed', ?, ? FROM errand_job WHERE id = ? AND state = 'active' AND attempt = ?`,
      );
      const del = this.#stmt("DELETE FROM errand_job WHERE id = ?");
      return params.items.map((item) => {
        if (move.run(item.result, params.now, item.id, item.attempt).changes === 0) return false;
        del.run(item.id);
        return true;
      });
    });
  }

  /** Every item in one write transaction; each is its own compare-and-set, as a lone fail would be. */
  failMany(p: FailManyParams): Promise<FailResult[]> {
    return this.#write((): FailResult[] => {
      const retry = this.#stmt(
        `UPDATE errand_job SET state = 'pending', run_at = ?, queue = COALESCE(?, queue),
           errors = json_insert(errors, '$[#]', json(?)), lease_expires_at = NULL, worker_id = NULL,
           lease_expirations = lease_expirations + ?
         WHERE id = ? AND state = 'active' AND attempt = ? AND (? = 0 OR lease_expires_at <= ?)`,
      );
      const kill = this.#stmt(
        `INSERT INTO errand_job_done (${SHARED}, state, result, finished_at)
         SELECT id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
           max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key,
           json_insert(errors, '$[#]', json(?)), lease_expirations + ?, created_at, started_at, owner,
           'dead', NULL, ?
         FROM errand_job WHERE id = ? AND state = 'active' AND attempt = ? AND (? = 0 OR lease_expires_at <= ?)`,
      );
      const del = this.#stmt("DELETE FROM errand_job WHERE id = ?");
      return p.items.map((item): FailResult => {
        const error = JSON.stringify(item.error);
        const expired = item.leaseExpired ? 1 : 0;
        const { id, attempt } = item;
        if (item.retryAt !== null) {
          const queue = item.retryQueue ?? null;
          if (retry.run(item.retryAt, queue, error, expired, id, attempt, expired, p.now).changes === 0)
            return null;
          if (item.retryAt <= p.now) this.#ringAfterCommit = true;
          return "pending";
        }
        if (kill.run(error, expired, p.now, id, attempt, expired, p.now).changes === 0) return null;
        del.run(id);
        return "dead";
      });
    });
  }

  heartbeatMany(p: HeartbeatManyParams): Promise<boolean[]> {
    return this.#write(() => {
      const stmt = this.#stmt(
        "UPDATE errand_job SET lease_expires_at = ? WHERE id = ? AND attempt = ? AND state = 'active'",
      );
      const until = p.now + p.leaseMs;
      return p.items.map((i) => stmt.run(until, i.id, i.attempt).changes === 1);
    });
  }

  checkpoint(p: CheckpointParams): Promise<boolean> {
    return this.#write(
      () =>
        this.#stmt(
          "UPDATE errand_job SET checkpoint = ? WHERE id = ? AND attempt = ? AND state = 'active'",
        ).run(p.checkpoint, p.id, p.attempt).changes === 1,
    );
  }

  release(p: ReleaseParams): Promise<boolean> {
    return this.#write(() => {
      const changed =
        this.#stmt(
          `UPDATE errand_job SET state = 'pending', run_at = ?, lease_expires_at = NULL, worker_id = NULL,
             max_attempts = max_attempts + 1
           WHERE id = ? AND attempt = ? AND state = 'active'`,
        ).run(p.now, p.id, p.attempt).changes === 1;
      if (changed) this.#ringAfterCommit = true;
      return changed;
    });
  }

  // ---- reads ---------------------------------------------------------------------------------

  async get(id: string): Promise<JobRecord | null> {
    return this.#getRecord(id);
  }

  #getRecord(id: string): JobRecord | null {
    return (
      (this.#stmt(`SELECT ${HOT_COLUMNS} FROM errand_job WHERE id = ?`).get(id) as JobRecord | undefined) ??
      (this.#stmt(`SELECT ${DONE_COLUMNS} FROM errand_job_done WHERE id = ?`).get(id) as
        | JobRecord
        | undefined) ??
      null
    );
  }

  async list(p: ListParams): Promise<ListResult> {
    // An owner filter is spelled out (not "$owner IS NULL OR …") so the owner indexes serve it.
    const filters = `($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
      AND ($type IS NULL OR type = $type) AND ($cursor IS NULL OR id < $cursor)
      AND ${p.owner === undefined ? "$owner IS NULL" : "owner = $owner"}`;
    const hot = `SELECT ${HOT_COLUMNS} FROM errand_job WHERE ${filters}`;
    const done = `SELECT ${DONE_COLUMNS} FROM errand_job_done WHERE ${filters}`;
    const source =
      p.state === undefined
        ? `${hot} UNION ALL ${done}`
        : p.state === "pending" || p.state === "active"
          ? hot
          : done;
    const rows = this.#stmt(`SELECT * FROM (${source}) ORDER BY id DESC LIMIT $limit`).all({
      state: p.state ?? null,
      queue: p.queue ?? null,
      type: p.type ?? null,
      owner: p.owner ?? null,
      cursor: p.cursor ?? null,
      limit: p.limit + 1,
    }) as JobRecord[];
    const more = rows.length > p.limit;
    if (more) rows.pop();
    return { jobs: rows, nextCursor: more ? rows[rows.length - 1]!.id : null };
  }

  async stats(p: { now: number }): Promise<StoreStats> {
    const states = Object.fromEntries(["pending", "active", ...FINISHED_STATES].map((s) => [s, 0])) as Record<
      JobState,
      number
    >;
    const queues: StoreStats["queues"] = {};
    const types: StoreStats["types"] = {};
    const add = (state: JobState, queue: string, type: string, n: number) => {
      states[state] += n;
      const q = (queues[queue] ??= {});
      q[state] = (q[state] ?? 0) + n;
      const t = (types[type] ??= {});
      t[state] = (t[state] ?? 0) + n;
    };
    const hot = this.#stmt(
      `SELECT state, queue, type, count(*) AS n,
         sum(state = 'pending' AND run_at > $now) AS scheduled,
         sum(state = 'pending' AND attempt > 0) AS retrying,
         min(CASE WHEN state = 'pending' AND run_at <= $now THEN run_at END) AS oldest
       FROM errand_job GROUP BY state, queue, type`,
    ).all({ now: p.now }) as Array<{
      state: JobState;
      queue: string;
      type: string;
      n: number;
      scheduled: number;
      retrying: number;
      oldest: number | null;
    }>;
    let scheduled = 0;
    let retrying = 0;
    let oldestReadyAt: number | null = null;
    for (const r of hot) {
      add(r.state, r.queue, r.type, r.n);
      scheduled += r.scheduled;
      retrying += r.retrying;
      if (r.oldest !== null && (oldestReadyAt === null || r.oldest < oldestReadyAt)) oldestReadyAt = r.oldest;
    }
    const done = this.#stmt(
      "SELECT state, queue, type, count(*) AS n FROM errand_job_done GROUP BY state, queue, type",
    ).all() as Array<{ state: JobState; queue: string; type: string; n: number }>;
    for (const r of done) add(r.state, r.queue, r.type, r.n);
    return { states, scheduled, retrying, queues, types, oldestReadyAt };
  }

  // ---- changes by id -------------------------------------------------------------------------

  cancel(p: CancelParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (record.state !== "pending" && record.state !== "active") return { record, changed: false };
      this.#moveToDone(p.id, "cancelled", p.now);
      return { record: this.#getRecord(p.id)!, changed: true };
    });
  }

  #moveToDone(id: string, state: "cancelled" | "expired", now: number): void {
    this.#stmt(
      `INSERT INTO errand_job_done (${SHARED}, state, result, finished_at)
       SELECT ${SHARED}, ?, NULL, ? FROM errand_job WHERE id = ?`,
    ).run(state, now, id);
    this.#stmt("DELETE FROM errand_job WHERE id = ?").run(id);
  }

  reschedule(p: RescheduleParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const changed =
        this.#stmt(
          `UPDATE errand_job SET run_at = COALESCE(?, run_at), priority = COALESCE(?, priority), queue = COALESCE(?, queue)
           WHERE id = ? AND state = 'pending'`,
        ).run(p.runAt ?? null, p.priority ?? null, p.queue ?? null, p.id).changes === 1;
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (changed && record.runAt <= p.now) this.#ringAfterCommit = true;
      return { record, changed };
    });
  }

  retry(p: RetryParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (record.state !== "dead" && record.state !== "cancelled" && record.state !== "expired") {
        return { record, changed: false };
      }
      this.#reinsert(
        `SELECT id, type, queue, 'pending', payload, checkpoint, priority, weight, ?, NULL, attempt,
           max(max_attempts, attempt + 1), backoff, retry_queue, delivery, timeout_ms, unique_key, errors, 0,
           created_at, started_at, owner
         FROM errand_job_done WHERE id = ?`,
        [p.now, p.id],
        record.uniqueKey,
      );
      this.#stmt("DELETE FROM errand_job_done WHERE id = ?").run(p.id);
      this.#ringAfterCommit = true;
      return { record: this.#getRecord(p.id)!, changed: true };
    });
  }

  replay(p: ReplayParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (record.state === "pending" || record.state === "active") return { record, changed: false };
      this.#reinsert(
        `SELECT ?, type, queue, 'pending', payload, NULL, priority, weight, ?, NULL, 0,
           max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, '[]', 0, ?, NULL, owner
         FROM errand_job_done WHERE id = ?`,
        [p.newId, p.now, p.now, p.id],
        record.uniqueKey,
      );
      this.#ringAfterCommit = true;
      return { record: this.#getRecord(p.newId)!, changed: true };
    });
  }

  #reinsert(select: string, args: unknown[], uniqueKey: string | null): void {
    try {
      this.#stmt(
        `INSERT INTO errand_job (id, type, queue, state, payload, checkpoint, priority, weight, run_at, expires_at,
           attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
           lease_expirations, created_at, started_at, owner) ${select}`,
      ).run(...args);
    } catch (cause) {
      if ((cause as { code?: string }).code?.startsWith("SQLITE_CONSTRAINT")) {
        throw new ErrandError(
          "INVALID_STATE",
          `another pending or active job holds unique key ${JSON.stringify(uniqueKey)}, or the id is taken`,
          { cause },
        );
      }
      throw cause;
    }
  }

  // ---- sweeps --------------------------------------------------------------------------------

  async expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    return this.#stmt(
      `SELECT ${HOT_COLUMNS} FROM errand_job WHERE state = 'active' AND lease_expires_at <= ?
       ORDER BY lease_expires_at LIMIT ?`,
    ).all(p.now, p.limit) as JobRecord[];
  }

  expirePending(p: SweepParams): Promise<JobRecord[]> {
    return this.#write(() => {
      const rows = this.#stmt(
        `SELECT id FROM errand_job WHERE expires_at IS NOT NULL AND expires_at <= ? AND state = 'pending' LIMIT ?`,
      ).all(p.now, p.limit) as Array<{ id: string }>;
      return rows.map(({ id }) => {
        this.#moveToDone(id, "expired", p.now);
        return this.#getRecord(id)!;
      });
    });
  }

  prune(p: PruneParams): Promise<number> {
    return this.#write(() => {
      let deleted = 0;
      const stmt = this.#stmt(
        `DELETE FROM errand_job_done WHERE rowid IN
           (SELECT rowid FROM errand_job_done WHERE state = ? AND finished_at < ? LIMIT ?)`,
      );
      for (const state of FINISHED_STATES) {
        if (deleted >= p.limit) break;
        deleted += stmt.run(state, p.now - p.retainMs[state], p.limit - deleted).changes;
      }
      return deleted;
    });
  }

  // ---- schedules -----------------------------------------------------------------------------

  upsertSchedule(r: ScheduleRecord): Promise<void> {
    return this.#write(() => {
      this.#stmt(
        `INSERT INTO errand_schedule (name, cron, timezone, type, payload, options, next_run_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone, type = excluded.type,
           payload = excluded.payload, options = excluded.options, next_run_at = excluded.next_run_at,
           updated_at = excluded.updated_at`,
      ).run(r.name, r.cron, r.timezone, r.type, r.payload, r.options, r.nextRunAt, r.createdAt, r.updatedAt);
    });
  }

  deleteSchedule(name: string): Promise<boolean> {
    return this.#write(
      () => this.#stmt("DELETE FROM errand_schedule WHERE name = ?").run(name).changes === 1,
    );
  }

  async getSchedule(name: string): Promise<ScheduleRecord | null> {
    return (
      (this.#stmt(`SELECT ${SCHEDULE_COLUMNS} FROM errand_schedule WHERE name = ?`).get(
        name,
      ) as ScheduleRecord) ?? null
    );
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return this.#stmt(
      `SELECT ${SCHEDULE_COLUMNS} FROM errand_schedule ORDER BY name`,
    ).all() as ScheduleRecord[];
  }

  async dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    return this.#stmt(
      `SELECT ${SCHEDULE_COLUMNS} FROM errand_schedule WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?`,
    ).all(p.now, p.limit) as ScheduleRecord[];
  }

  fireSchedule(p: FireScheduleParams): Promise<boolean> {
    return this.#write(() => {
      const advanced =
        this.#stmt(
          "UPDATE errand_schedule SET next_run_at = ?, updated_at = ? WHERE name = ? AND next_run_at = ?",
        ).run(p.nextRunAt, p.now, p.name, p.expectedRunAt).changes === 1;
      if (advanced) this.#insertJobs([p.job], p.now);
      return advanced;
    });
  }

  // ---- job types -----------------------------------------------------------------------------

  putJobType(r: JobTypeRecord): Promise<boolean> {
    return this.#write(() => {
      const existed = this.#stmt("SELECT 1 FROM errand_job_type WHERE name = ?").get(r.name) !== undefined;
      this.#stmt(
        `INSERT INTO errand_job_type (name, config, created_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`,
      ).run(r.name, r.config, r.createdAt, r.updatedAt);
      return !existed;
    });
  }

  async getJobType(name: string): Promise<JobTypeRecord | null> {
    return (
      (this.#stmt(`SELECT ${JOB_TYPE_COLUMNS} FROM errand_job_type WHERE name = ?`).get(name) as
        | JobTypeRecord
        | undefined) ?? null
    );
  }

  async listJobTypes(): Promise<JobTypeRecord[]> {
    return this.#stmt(
      `SELECT ${JOB_TYPE_COLUMNS} FROM errand_job_type ORDER BY name`,
    ).all() as JobTypeRecord[];
  }

  deleteJobType(name: string): Promise<boolean> {
    return this.#write(
      () => this.#stmt("DELETE FROM errand_job_type WHERE name = ?").run(name).changes === 1,
    );
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#closed) return;
    // Let writes already queued commit before the connection goes.
    await this.#writer.write(() => undefined);
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = null;
    if (this.#doorbellFd !== null) closeSync(this.#doorbellFd);
    this.#doorbellFd = null;
    this.#listeners.clear();
    this.#db.close();
  }
}

function claimOrder(a: JobRecord, b: JobRecord): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Applies the numbered migrations this database has not seen, in order, in one `BEGIN IMMEDIATE`
 * transaction, so two processes opening a new file at once apply each migration exactly once.
 */
function migrate(db: Database.Database): void {
  const run = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS errand_migration (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const row = db.prepare("SELECT max(version) AS v FROM errand_migration").get() as { v: number | null };
    const current = row.v ?? 0;
    const latest = migrations[migrations.length - 1]?.version ?? 0;
    if (current > latest) {
      throw new ErrandError(
        "STORE_ERROR",
        `the database is at schema version ${current}, newer than this errand (${latest}); upgrade errand`,
      );
    }
    for (const m of migrations) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      db.prepare("INSERT INTO errand_migration (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        Date.now(),
      );
    }
  });
  run.immediate();
}
