import Database from "better-sqlite3";
import { ErrandError } from "../../errors.js";
import { FINISHED_STATES, isFinished, type JobRecord } from "../../job.js";
import { claimOrder } from "../claim-order.js";
import { planClaim } from "../claim-plan.js";
import { expandJobs, jobCount, sharedAlone } from "../new-jobs.js";
import { type StatsRow, statsFromRows } from "../stats-rows.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  CompleteManyParams,
  DeleteJobTypeParams,
  DeleteScheduleParams,
  DependentsParams,
  EnqueueManyParams,
  EnqueueResult,
  ExpirePendingResult,
  FailManyParams,
  FailManyResult,
  FailResult,
  FireScheduleParams,
  GetJobTypeParams,
  GetManyParams,
  GetParams,
  GetScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  JobTypeRecord,
  ListParams,
  ListResult,
  ListSchedulesParams,
  NewJob,
  PauseQueueParams,
  PruneParams,
  PutJobTypeParams,
  PutScheduleParams,
  ReleaseParams,
  ReplayParams,
  RequeueResult,
  RescheduleParams,
  ResumeQueueParams,
  RetryParams,
  ScheduleRecord,
  SnoozeParams,
  StatsParams,
  Store,
  StoreCapabilities,
  StoreStats,
  SweepParams,
} from "../store.js";
import { holdUntil, LIST_SCAN, listTables, requeued, scansList, withCascade } from "../store.js";
import { Checkpointer } from "./checkpointer.js";
import { ClaimWalk } from "./claim-walk.js";
import { SqliteDependencies } from "./dependencies.js";
import { assignTurns, type FairClaim, fairClaim } from "./fair.js";
import { sqliteLimitStats } from "./held-sample.js";
import { type ExpiredHolders, type InsertHooks, insertJobs, insertShared } from "./insert.js";
import { type ClosedRates, KeyGate } from "./key-gate.js";
import { migrate } from "./migrate.js";
import { SqliteNotifier } from "./notifier.js";
import { prepareStatements, type Statements, type Stmt } from "./statements.js";
import {
  STATS_THREAD_AFTER_MS,
  STATS_THREAD_AFTER_ROWS,
  type StatsRead,
  StatsReader,
} from "./stats-reader.js";
import { sqliteFault, WriteBatcher } from "./write-batcher.js";

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

/**
 * Jobs in one enqueueMany from which its write is large enough to start the checkpoint thread
 * (checkpointer.ts): a stored job is ~330 bytes of WAL, so ~10,000 come near SQLite's 1,000-page
 * checkpoint threshold, whose checkpoint would otherwise run inside that write's commit.
 */
const LARGE_WRITE_JOBS = 10_000;

/** The `synchronous` pragma for the store's option: the writer's, and the checkpoint thread's. */
function synchronousPragma(options: SqliteStoreOptions): "FULL" | "NORMAL" {
  return options.synchronous === "full" ? "FULL" : "NORMAL";
}

/** The candidates query's per-key parameters when the claim has no per-key rules. */
const NO_KEY_PARAMS = { skip: null, xkeys: null } as const;
const NO_RULES: Record<string, never> = Object.freeze(Object.create(null));

/**
 * The embedded store: one SQLite file, WAL, any number of processes.
 *
 * Writes go through a {@link WriteBatcher} (one transaction per event-loop turn); reads run
 * straight on the connection, which WAL never blocks. Wake-ups reach this process's workers
 * through an emitter and other processes' workers through a watched doorbell file.
 * @since 0.1.0
 */
export class SqliteStore implements Store {
  /**
   * What a SQLite store on `filename` can do (see {@link StoreCapabilities}): an in-memory
   * database belongs to one process. Tests read it before opening one.
   */
  static capabilitiesFor(filename: string): StoreCapabilities {
    return {
      listen: true,
      multiProcess: filename !== ":memory:",
      transactionalEnqueue: false,
      claimChunk: 150,
      prefetchChunk: 500,
      claimAhead: false,
      listScan: LIST_SCAN,
    };
  }
  readonly capabilities: StoreCapabilities;
  readonly #db: Database.Database;
  readonly #writer: WriteBatcher;
  /** The in-process emitter and the doorbell file (notifier.ts). */
  readonly #notifier: SqliteNotifier;
  #ringAfterCommit = false;
  #closed = false;
  /** Every statement of queries/*.sql, each prepared on its first use (statements.ts). */
  readonly #q: Statements;
  /** Dependency edges: blocking, unblocking, cascades (dependencies.ts). */
  readonly #deps: SqliteDependencies;
  /** The claim's candidates, merged across types (claim-walk.ts). */
  readonly #walk: ClaimWalk;
  /** Rate-limited types found with no room, until when (key-gate.ts). */
  readonly #closedRates: ClosedRates = new Map();
  /** WAL checkpoints off the writer's thread (checkpointer.ts); none for `:memory:`. */
  readonly #checkpointer: Checkpointer | null;
  /** The file a stats reader thread may open; null for an in-memory database. */
  readonly #statsFile: string | null;
  readonly #busyTimeoutMs: number;
  /** Counts stats() on its own thread, once they took STATS_THREAD_AFTER_MS here. */
  #statsReader: StatsReader | null = null;
  /** The history's size was looked at (once, at the first count). */
  #statsSized = false;
  /** What inserting needs of the store besides its statements (insert.ts). */
  readonly #insertHooks: InsertHooks;

  private constructor(db: Database.Database, options: SqliteStoreOptions) {
    this.#db = db;
    this.#q = prepareStatements(db);
    this.#walk = new ClaimWalk(db);
    this.#deps = new SqliteDependencies(this.#q, () => {
      this.#ringAfterCommit = true;
    });
    this.#insertHooks = {
      existing: (j) =>
        this.#getRecord(j.id) ?? (j.uniqueKey === null ? null : this.#byUniqueKey(j.uniqueKey)),
      expireHolders: (j, now) => this.#expireHolders(j.uniqueKey, j.debounceKey, now),
      record: (id) => this.#getRecord(id)!,
      dependencies: this.#deps,
    };
    const memory = options.filename === ":memory:" || options.filename === "";
    this.capabilities = SqliteStore.capabilitiesFor(options.filename);
    this.#notifier = new SqliteNotifier(
      !memory && options.crossProcessWake !== false ? `${options.filename}-wake` : null,
    );
    this.#statsFile = memory ? null : options.filename;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 60_000;
    this.#checkpointer = memory
      ? null
      : new Checkpointer(options.filename, synchronousPragma(options), (pages) =>
          db.pragma(`wal_autocheckpoint = ${pages}`),
        );
    this.#writer = new WriteBatcher(db, () => {
      this.#checkpointer?.afterCommit();
      if (!this.#ringAfterCommit) return;
      this.#ringAfterCommit = false;
      this.#notifier.wake();
    });
  }

  /**
   * Opens (creating if needed) and migrates a database. On any failure the connection is closed
   * again: the file is neither held open nor locked.
   * @throws ErrandError `INVALID_STORE_URL` when the file cannot be opened or is not a database;
   *   `STORE_ERROR` when it is at a schema newer than this errand, or cannot be set up or migrated
   *   (a read-only file that needs a migration, a lock held past `busyTimeoutMs`), with the
   *   SQLite error as `cause`.
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
    let store: SqliteStore;
    try {
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${synchronousPragma(options)}`);
      db.pragma("temp_store = MEMORY");
      // SQLite's own default, 2 MB: a queue's hot pages are few (the claim index's head, the
      // tables' tails), and a 16 MB cache measured no faster in any scenario while each worker's
      // RSS kept what it filled: ~5 MB after a 20,000-job drain, ~15 MB beside 1,000,000 jobs.
      db.pragma("cache_size = -2000");
      migrate(db);
      store = new SqliteStore(db, options);
    } catch (cause) {
      db.close();
      throw openError(options.filename, cause);
    }
    try {
      store.#notifier.open();
    } catch (cause) {
      await store.close().catch(() => {});
      throw openError(options.filename, cause);
    }
    return store;
  }

  wake(): void {
    this.#notifier.wake();
  }

  onWake(listener: () => void): () => void {
    return this.#notifier.onWake(listener);
  }

  #write<T>(fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(closedError());
    return this.#writer.write(fn);
  }

  /** Reads run on the connection directly: once it is closed, CLOSED, not better-sqlite3's TypeError. */
  #checkOpen(): void {
    if (this.#closed) throw closedError();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]> {
    const { jobs, now } = params;
    if (jobCount(jobs) >= LARGE_WRITE_JOBS) this.#checkpointer?.expectLargeWrite();
    const fair = params.fairTypes && params.fairTypes.length > 0 ? params.fairTypes : null;
    const shared = sharedAlone(jobs);
    return this.#write(() => {
      if (shared !== null && fair === null && params.idsGenerated === true) {
        return this.#settle(insertShared(this.#q, shared, now, this.#insertHooks));
      }
      const list = expandJobs(jobs);
      const results = this.#insertJobs(list, now, params.idsGenerated === true);
      if (fair !== null) assignTurns(this.#q, list, results, fair);
      return results;
    });
  }

  #insertJobs(jobs: NewJob[], now: number, idsGenerated = false): EnqueueResult[] {
    return this.#settle(insertJobs(this.#q, jobs, now, idsGenerated, this.#insertHooks));
  }

  /** An insert's results; claimers are rung after the commit when a job it made is ready. */
  #settle({ results, ready }: { results: EnqueueResult[]; ready: boolean }): EnqueueResult[] {
    if (ready) this.#ringAfterCommit = true;
    return results;
  }

  #byUniqueKey(key: string): JobRecord | null {
    return (this.#q.enqueueByUniqueKey.get(key) as JobRecord | undefined) ?? null;
  }

  // ---- claim ---------------------------------------------------------------------------------

  claim(params: ClaimParams): Promise<JobRecord[]> {
    return this.#write(() => this.#claim(params));
  }

  #claim(p: ClaimParams): JobRecord[] {
    const leaseExpiresAt = p.now + p.leaseMs;
    const weightCap = p.weightCap ?? Number.POSITIVE_INFINITY;
    let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
    const types = p.types && p.types.length > 0 ? [...new Set(p.types)] : null;

    // Room left under each cluster-wide cap that applies to this claim.
    const room = new Map<string, number>();
    if (p.concurrencyLimits) {
      const capped = Object.keys(p.concurrencyLimits).filter((t) => !p.types || p.types.includes(t));
      if (capped.length > 0) {
        const counts = this.#q.claimActiveCounts.all(JSON.stringify(capped)) as Array<{
          type: string;
          n: number;
        }>;
        for (const t of capped) room.set(t, p.concurrencyLimits[t]!);
        for (const { type, n } of counts) room.set(type, room.get(type)! - n);
      }
    }
    const gate =
      p.keyRules || p.rateLimits
        ? new KeyGate(this.#q, p.keyRules ?? NO_RULES, p.now, p.rateLimits, p.held, this.#closedRates)
        : null;
    const fair = p.keyRules ? fairClaim(this.#q, p.keyRules, p.types) : null;
    if (p.keyRules) {
      // Keys parked by their rate limit whose window has opened come back first (migration 0011).
      const rules = p.keyRules;
      const rated = Object.keys(rules).filter(
        (t) => rules[t]!.keyRateLimit !== undefined && (types === null || types.includes(t)),
      );
      if (rated.length > 0) {
        this.#wakeParked(p.now, rated);
        const next =
          (this.#q.claimWakeNext.get({ types: JSON.stringify(rated) }) as number | undefined) ?? null;
        holdUntil(p.held, next);
      }
    }
    const exhausted = () => [
      ...[...room].filter(([, n]) => n <= 0).map(([t]) => t),
      ...(gate?.closedTypes ?? []),
    ];

    // The claim's rows are activated together, in one statement per read of the table
    // (claimActivateMany), before the next walk or read of fair turns: nothing else the claim
    // reads needs them active. The key gate reads a type's running jobs before it takes any of
    // them, and closes an ordered key as it takes its job, before it would read the key's
    // earliest again. A job taken by its turn also loses the turn (claimActivateTurnMany).
    const activateIds: string[] = [];
    const turnIds: string[] = [];
    const activateAll = () => {
      if (activateIds.length > 0) {
        this.#q.claimActivateMany.run(p.workerId, leaseExpiresAt, p.now, JSON.stringify(activateIds));
        activateIds.length = 0;
      }
      if (turnIds.length > 0) {
        this.#q.claimActivateTurnMany.run(p.workerId, leaseExpiresAt, p.now, JSON.stringify(turnIds));
        turnIds.length = 0;
      }
    };

    const taken = planClaim(p.queues, p.limit, p.random ?? Math.random, (queue, count) => {
      const out: JobRecord[] = [];
      const queueTypes = types ?? (this.#q.claimQueueTypes.all({ queue }) as string[]);
      gate?.closeKnown(queueTypes);
      for (;;) {
        // Types out of room get no walk: their ranges of the claim index are never read.
        const excluded = exhausted();
        const open = excluded.length === 0 ? queueTypes : queueTypes.filter((t) => !excluded.includes(t));
        if (open.length === 0) return { taken: out, full: budget <= 0 };
        activateAll();
        const rows = this.#walk.candidates(
          open,
          { queue, now: p.now, ...(gate ? gate.params() : NO_KEY_PARAMS) },
          count - out.length,
        );
        let skipped = false;
        for (let row of rows) {
          const left = room.get(row.type);
          if (left !== undefined && left <= 0) {
            skipped = true;
            continue;
          }
          let turn: number | null = null;
          if (fair?.substitutes(row, this.#walk.hadTurn(row))) {
            // The slot is the type's (even when this row was taken already, in an earlier slot);
            // the job whose turn it is takes it, perhaps this one.
            const pick = this.#fairPick(fair, gate, queue, row.type, p.now, activateAll);
            if (pick === null) {
              skipped = true;
              continue;
            }
            row = pick.row;
            turn = pick.turn;
          } else if (gate && !gate.admit(row, queue)) {
            skipped = true;
            continue;
          }
          const w = Math.min(row.weight, weightCap);
          if (w > budget) return { taken: out, full: true };
          budget -= w;
          if (left !== undefined) room.set(row.type, left - 1);
          (turn === null ? activateIds : turnIds).push(row.id);
          gate?.took(row);
          if (turn !== null) fair!.took(row, turn);
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
    activateAll();
    fair?.finish();
    if (gate) this.#park(gate, p.now, p.held);
    if (taken.length > 1 && p.queues.length > 1) taken.sort(claimOrder);
    return taken;
  }

  /**
   * Parks the ready jobs of the keys this claim closed by keyConcurrency or order (migration
   * 0010), or whose rate window it found or left full (0011, with the window's wake): out of the
   * claim index, so later claims do not walk a busy key's backlog to reach the keys behind it.
   * Under order the key's earliest job stays, whatever it waits for.
   */
  #park(gate: KeyGate, now: number, held: { until: number | null } | undefined): void {
    for (const { type, key, mark } of gate.parkable()) {
      const keep =
        mark === 2
          ? ((this.#q.claimKeyEarliest.get({ type, key }) as { id: string } | undefined)?.id ?? "")
          : "";
      this.#q.claimPark.run({ type, key, now, mark, keep });
    }
    // Keys whose rate window is full (migration 0011): parked until it opens, when as many come
    // back as it holds; a key with jobs parked earlier gets its next opening too.
    for (const { type, key, limit, until } of gate.rateParkable()) {
      this.#q.claimPark.run({ type, key, now, mark: 3, keep: "" });
      if (this.#q.claimParkedByRate.get(type, key) === undefined) continue;
      this.#q.claimParkWake.run({ type, key, at: until, n: limit });
      holdUntil(held, until);
    }
  }

  /**
   * Puts back, for each key of `types` (null: all) parked by its rate limit whose window has
   * opened, as many of its parked jobs as the window holds (migration 0011); returns how many.
   * Inside a write transaction.
   */
  #wakeParked(now: number, types: readonly string[] | null): number {
    const list = types === null ? null : JSON.stringify(types);
    let woken = 0;
    for (const d of this.#q.claimWakeDue.all({ now, types: list }) as Array<{
      type: string;
      key: string;
      n: number;
    }>) {
      woken += this.#q.claimWakeKey.run({ type: d.type, key: d.key, n: d.n }).changes;
      this.#q.claimWakeForget.run(d.type, d.key);
    }
    return woken;
  }

  /**
   * The fair type's job whose turn it is and that the claim's rules admit; null when none.
   * @param activate - activates the rows the claim took so far: run before turns are read.
   */
  #fairPick(
    fair: FairClaim,
    gate: KeyGate | null,
    queue: string,
    type: string,
    now: number,
    activate: () => void,
  ): { row: JobRecord; turn: number } | null {
    const keys = () => {
      activate();
      return gate ? gate.params() : NO_KEY_PARAMS;
    };
    for (;;) {
      const pick = fair.next(queue, type, now, keys);
      if (pick === null || !gate || gate.admit(pick.row, queue)) return pick;
      // Refused: the gate now passes it (or its key) over; a type out of room ends the search.
      if (gate.closedTypes.includes(type)) return null;
    }
  }

  // ---- outcomes ------------------------------------------------------------------------------

  completeMany(params: CompleteManyParams): Promise<boolean[]> {
    return this.#write(() => {
      const moved = params.discard === true ? null : this.#completeLeaves(params);
      if (moved === true) return params.items.map(() => true);
      const leaf = this.#q.completeMoveLeaf;
      const plainDelete = this.#q.deleteJob;
      const move = this.#q.completeMove;
      const del = this.#q.moveDelete;
      const discard = params.discard === true ? this.#q.completeDiscard : null;
      const counted = this.#q.countCompletedOne;
      return params.items.map((item) => {
        if (moved !== null && this.#q.completeMovedHere.get({ id: item.id }) === 1) {
          counted.run(item.id);
          plainDelete.run(item.id);
          return true;
        }
        // Not kept: one delete, which leaves a job something depends on to the move below.
        if (discard) {
          const gone = discard.get(item.id, item.attempt) as { depends_on: string | null } | undefined;
          if (gone) {
            if (gone.depends_on !== null) this.#deps.pruned(item.id, gone.depends_on);
            return true;
          }
        }
        if (leaf.run(item.result, params.now, item.id, item.attempt).changes === 1) {
          counted.run(item.id);
          plainDelete.run(item.id);
          return true;
        }
        if (move.run(item.result, params.now, item.id, item.attempt).changes === 0) return false;
        counted.run(item.id);
        // The delete says whether anyone waits on the job: only then are dependents looked for.
        if (del.get(item.id) === 1) this.#deps.completed(item.id);
        return true;
      });
    });
  }

  /**
   * Moves the batch's jobs that are active under the item's attempt and that nothing depends on,
   * in one statement (and deletes them in another): `true` when that was every item, `false` when
   * some were left to completeMany's item-by-item path (the jobs this moved are then in both
   * tables, which no commit ever sees), `null` for no batch at all (one item, or an id twice).
   */
  #completeLeaves({ items, now }: CompleteManyParams): boolean | null {
    if (items.length < 2 || new Set(items.map((i) => i.id)).size !== items.length) return null;
    const arg = JSON.stringify(items.map((i) => [i.id, i.attempt, i.result]));
    const moved = this.#q.completeLeaves.run(now, arg);
    if (moved.changes !== items.length) return false;
    this.#q.countCompletedLeaves.run(BigInt(moved.lastInsertRowid) - BigInt(moved.changes));
    this.#q.deleteLeaves.run(arg);
    return true;
  }

  /** Every item in one write transaction; each is its own compare-and-set, as a lone fail would be. */
  failMany(p: FailManyParams): Promise<FailManyResult> {
    return this.#write((): FailManyResult => {
      const retry = this.#q.failRetry;
      const kill = this.#q.failKill;
      const del = this.#q.moveDelete;
      // Made only when a dead job's end cancels a dependent (Store's `cascaded`).
      let cascaded: JobRecord[] | undefined;
      const results = p.items.map((item): FailResult => {
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
        if (del.get(id) === 1) cascaded = this.#deps.ended(id, "dead", p.now, cascaded);
        return "dead";
      });
      return withCascade(results, cascaded);
    });
  }

  heartbeatMany(p: HeartbeatManyParams): Promise<boolean[]> {
    return this.#write(() => {
      const stmt = this.#q.heartbeat;
      const until = p.now + p.leaseMs;
      return p.items.map((i) => stmt.run(until, i.id, i.attempt).changes === 1);
    });
  }

  checkpoint(p: CheckpointParams): Promise<boolean> {
    return this.#write(() => this.#q.checkpoint.run(p.checkpoint, p.id, p.attempt).changes === 1);
  }

  snooze(p: SnoozeParams): Promise<boolean> {
    return this.#write(() => {
      const changed = this.#q.snooze.run(p.runAt, p.id, p.attempt).changes === 1;
      if (changed && p.runAt <= p.now) this.#ringAfterCommit = true;
      return changed;
    });
  }

  release(p: ReleaseParams): Promise<boolean> {
    return this.#write(() => {
      const changed = this.#q.release.run(p.now, p.id, p.attempt).changes === 1;
      if (changed) this.#ringAfterCommit = true;
      return changed;
    });
  }

  // ---- reads ---------------------------------------------------------------------------------

  async get({ id }: GetParams): Promise<JobRecord | null> {
    this.#checkOpen();
    return this.#getRecord(id);
  }

  #getRecord(id: string): JobRecord | null {
    return (
      (this.#q.getHot.get(id) as JobRecord | undefined) ??
      (this.#q.getDone.get(id) as JobRecord | undefined) ??
      null
    );
  }

  async getMany({ ids }: GetManyParams): Promise<Array<JobRecord | null>> {
    this.#checkOpen();
    return ids.map((id) => this.#getRecord(id));
  }

  async dependents(p: DependentsParams): Promise<ListResult> {
    this.#checkOpen();
    const ids = this.#deps.dependents(p.id, p.cursor, p.limit + 1);
    const more = ids.length > p.limit;
    if (more) ids.pop();
    // An edge outlives nothing it names (prune drops both), so every id reads back.
    const jobs = ids.flatMap((id) => this.#getRecord(id) ?? []);
    return { jobs, nextCursor: more ? ids[ids.length - 1]! : null };
  }

  async list(p: ListParams): Promise<ListResult> {
    this.#checkOpen();
    // The state picks the table, and an owner filter its own statement (queries/list.sql says why).
    const q = this.#q;
    const owned = p.owner !== undefined;
    const table = p.state === undefined ? "All" : isFinished(p.state) ? "Done" : "Hot";
    const stmt: Stmt = q[`list${table}${owned ? "ByOwner" : ""}${p.summary ? "Summary" : ""}` as const];
    const floor = scansList(p) ? this.#listFloor(p) : null;
    const rows = stmt.all({
      state: p.state ?? null,
      queue: p.queue ?? null,
      type: p.type ?? null,
      owner: p.owner ?? null,
      key: p.key ?? null,
      cursor: p.cursor ?? null,
      floor,
      limit: p.limit + 1,
    }) as JobRecord[];
    const more = rows.length > p.limit;
    if (more) rows.pop();
    return { jobs: rows, nextCursor: more ? rows[rows.length - 1]!.id : floor };
  }

  /** The lowest id a filtered page reads (queries/list.sql): null when every table has fewer. */
  #listFloor(p: ListParams): string | null {
    const q = this.#q;
    const owned = p.owner !== undefined;
    const args = {
      cursor: p.cursor ?? null,
      scan: this.capabilities.listScan - 1,
      ...(owned ? { owner: p.owner } : {}),
    };
    const { hot, done } = listTables(p);
    const a = hot
      ? ((owned ? q.listFloorHotByOwner : q.listFloorHot).get(args) as string | undefined)
      : undefined;
    const b = done
      ? ((owned ? q.listFloorDoneByOwner : q.listFloorDone).get(args) as string | undefined)
      : undefined;
    // Both stretches are read whole down to the greater floor, so ids at or above it are all seen.
    if (a === undefined) return b ?? null;
    return b === undefined || a > b ? a : b;
  }

  async stats(p: StatsParams): Promise<StoreStats> {
    this.#checkOpen();
    let read: StatsRead | null = null;
    if (this.#statsReader === null && this.#statsFile !== null && !this.#statsSized) {
      this.#statsSized = true;
      // Counted up to the threshold, on the primary key's index (~1.5 ms for 100,000 rows): the
      // last rowid, which grows with every job the file ever held, started the thread on a
      // long-lived file with a small backlog.
      const rows = this.#db
        .prepare("SELECT count(*) FROM (SELECT 1 FROM errand_job LIMIT ?)")
        .pluck()
        .get(STATS_THREAD_AFTER_ROWS) as number;
      if (rows >= STATS_THREAD_AFTER_ROWS) {
        this.#statsReader = new StatsReader(this.#statsFile, this.#busyTimeoutMs);
      }
    }
    if (this.#statsReader !== null && !this.#statsReader.failed) {
      try {
        read = await this.#statsReader.read(p.now);
      } catch (error) {
        // A thread that failed leaves the counts to this connection, as before it started.
        if (!this.#statsReader.failed) throw error;
      }
      this.#checkOpen();
    }
    if (read === null) {
      const started = performance.now();
      read = this.#db.transaction(() => ({
        hot: this.#q.statsHot.all({ now: p.now }) as StatsRow[],
        done: this.#q.statsDone.all() as StatsRow[],
      }))();
      if (performance.now() - started >= STATS_THREAD_AFTER_MS && this.#statsFile !== null) {
        this.#statsReader ??= new StatsReader(this.#statsFile, this.#busyTimeoutMs);
      }
    }
    const stats = statsFromRows([...read.hot, ...read.done]);
    return p.limits ? { ...stats, limits: sqliteLimitStats(this.#q, p.limits, p.now, read.hot) } : stats;
  }

  /** The reader thread stats() counts on, once it does; null before (tests). @internal */
  get statsReader(): StatsReader | null {
    return this.#statsReader;
  }

  // ---- changes by id -------------------------------------------------------------------------

  cancel(p: CancelParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (isFinished(record.state)) return { record, changed: false };
      const cascaded = this.#moveToDone(p.id, "cancelled", p.now, record.state === "blocked");
      const cancelled = this.#getRecord(p.id)!;
      return cascaded === undefined
        ? { record: cancelled, changed: true }
        : { record: cancelled, changed: true, cascaded };
    });
  }

  /**
   * Store.enqueueMany's expiry of a new job's key holders (and retry's and replay's, of the
   * holders of a job's unique key), and the dependents their expiry cancelled (undefined: none):
   * null when none was past its expiresAt.
   */
  #expireHolders(unique: string | null, debounce: string | null, now: number): ExpiredHolders | null {
    const rows = this.#q.expiredKeyHolders.all({ unique, debounce, now }) as Array<{
      id: string;
      state: string;
    }>;
    if (rows.length === 0) return null;
    let cascaded: JobRecord[] | undefined;
    const expired = rows.map(({ id, state }) => {
      cascaded = this.#moveToDone(id, "expired", now, state === "blocked", cascaded);
      return this.#getRecord(id)!;
    });
    return { expired, cascaded };
  }

  /**
   * Moves a blocked, pending or active job to the done table, and settles its dependents.
   * @param cascaded - the dependents cancelled so far by the caller's call (Store's `cascaded`).
   * @returns `cascaded` with the dependents this cancelled (undefined while none was).
   */
  #moveToDone(
    id: string,
    state: "cancelled" | "expired",
    now: number,
    wasBlocked: boolean,
    cascaded?: JobRecord[],
  ): JobRecord[] | undefined {
    this.#q.moveToDone.run(state, now, id);
    if (wasBlocked) this.#deps.left(id);
    if (this.#q.moveDelete.get(id) === 1) return this.#deps.ended(id, state, now, cascaded);
    return cascaded;
  }

  reschedule(p: RescheduleParams): Promise<JobMutation> {
    return this.#write((): JobMutation => {
      const changed =
        this.#q.reschedule.run(p.runAt ?? null, p.priority ?? null, p.queue ?? null, p.id).changes === 1;
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (changed && record.state === "pending" && record.runAt <= p.now) this.#ringAfterCommit = true;
      return { record, changed };
    });
  }

  retry(p: RetryParams): Promise<RequeueResult> {
    return this.#write((): RequeueResult => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (record.state !== "dead" && record.state !== "cancelled" && record.state !== "expired") {
        return { record, changed: false };
      }
      const freed = this.#reinsert(this.#q.retryReinsert, [p.now, p.id], record.uniqueKey, p.now);
      this.#q.retryDeleteDone.run(p.id);
      this.#q.countDone.run(record.queue, record.type, record.state, -1);
      if (this.#deps.retried(p.id, record.dependsOn, record.onDependencyFailure))
        this.#ringAfterCommit = true;
      return requeued(this.#getRecord(p.id)!, freed?.expired, freed?.cascaded);
    });
  }

  replay(p: ReplayParams): Promise<RequeueResult> {
    return this.#write((): RequeueResult => {
      const record = this.#getRecord(p.id);
      if (!record) return null;
      if (!isFinished(record.state)) return { record, changed: false };
      if (record.state === "expired") {
        // Stored expired at once (replay.sql): nothing to run, no one to wake.
        this.#reinsert(this.#q.replayExpired, [p.newId, p.now, p.now, p.now, p.now, p.id], null, p.now);
        return { record: this.#getRecord(p.newId)!, changed: true };
      }
      const freed = this.#reinsert(
        this.#q.replay,
        [p.newId, p.now, p.now, p.now, p.id],
        record.uniqueKey,
        p.now,
      );
      this.#ringAfterCommit = true;
      return requeued(this.#getRecord(p.newId)!, freed?.expired, freed?.cascaded);
    });
  }

  /**
   * Runs `insert`, which puts a finished job (retry) or its copy (replay) into the hot set with
   * unique key `uniqueKey`. A key held by a job past its expiresAt (no claim can take it; not yet
   * swept) is freed as an enqueue frees it: that holder is expired, its dependents settled, and
   * the insert runs again. Only a conflict pays for the look (retryReinsert and replay read no
   * holder first), as in enqueueMany's expiredKeyHolders.
   * @returns the holders expired (with the dependents their expiry cancelled), or null: none.
   * @throws ErrandError `INVALID_STATE` when another blocked, pending or active job holds the key,
   *   or the new id is taken; thrown, it rolls the whole write back (an expiry made here too).
   */
  #reinsert(insert: Stmt, args: unknown[], uniqueKey: string | null, now: number): ExpiredHolders | null {
    let freed: ExpiredHolders | null = null;
    for (;;) {
      try {
        insert.run(...args);
        return freed;
      } catch (cause) {
        // The unique key's index (errand_job_unique_key, the table's one UNIQUE index), or the id.
        const code = (cause as { code?: string }).code;
        const keyHeld = code === "SQLITE_CONSTRAINT_UNIQUE";
        if (!keyHeld && code !== "SQLITE_CONSTRAINT_PRIMARYKEY") throw cause;
        if (keyHeld && freed === null && uniqueKey !== null) {
          freed = this.#expireHolders(uniqueKey, null, now);
          if (freed !== null) continue;
        }
        throw new ErrandError(
          "INVALID_STATE",
          keyHeld
            ? "another blocked, pending or active job holds this job's unique key"
            : "the new id is taken",
          { cause },
        );
      }
    }
  }

  // ---- sweeps --------------------------------------------------------------------------------

  async expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    this.#checkOpen();
    return this.#q.expiredLeases.all(p.now, p.limit) as JobRecord[];
  }

  expirePending(p: SweepParams): Promise<ExpirePendingResult> {
    return this.#write(() => {
      // The same sweep puts back every type's jobs parked by a key's rate limit whose window has
      // opened (claims do it only for the types whose rules they carry: a type whose workers no
      // longer have the rule must not keep its jobs parked; migration 0011).
      if (this.#wakeParked(p.now, null) > 0) this.#ringAfterCommit = true;
      const rows = this.#q.expirePendingDue.all(p.now, p.limit) as Array<{ id: string; state: string }>;
      let cascaded: JobRecord[] | undefined;
      const expired = rows.map(({ id, state }) => {
        cascaded = this.#moveToDone(id, "expired", p.now, state === "blocked", cascaded);
        return this.#getRecord(id)!;
      });
      return withCascade(expired, cascaded);
    });
  }

  prune(p: PruneParams): Promise<number> {
    return this.#write(() => {
      let deleted = 0;
      const stmt = this.#q.prune;
      for (const state of FINISHED_STATES) {
        if (deleted >= p.limit) break;
        const rows = stmt.all(state, p.now - p.retainMs[state], p.limit - deleted) as Array<{
          id: string;
          depends_on: string | null;
          queue: string;
          type: string;
        }>;
        // The history's counts (migration 12), one change per (queue, type) of the rows deleted.
        const gone = new Map<string, { queue: string; type: string; n: number }>();
        for (const r of rows) {
          this.#deps.pruned(r.id, r.depends_on);
          const group = `${r.queue}\u0000${r.type}`;
          const g = gone.get(group);
          if (g) g.n++;
          else gone.set(group, { queue: r.queue, type: r.type, n: 1 });
        }
        for (const g of gone.values()) this.#q.countDone.run(g.queue, g.type, state, -g.n);
        deleted += rows.length;
      }
      if (deleted > 0) this.#q.dropZeroCounts.run();
      this.#q.pruneFairKeys.run(p.limit);
      return deleted;
    });
  }

  // ---- schedules -----------------------------------------------------------------------------

  putSchedule(r: PutScheduleParams): Promise<void> {
    return this.#write(() => {
      this.#q.putSchedule.run(
        r.name,
        r.cron,
        r.timezone,
        r.type,
        r.payload,
        r.options,
        r.nextRunAt,
        r.createdAt,
        r.updatedAt,
      );
    });
  }

  deleteSchedule({ name }: DeleteScheduleParams): Promise<boolean> {
    return this.#write(() => this.#q.deleteSchedule.run(name).changes === 1);
  }

  async getSchedule({ name }: GetScheduleParams): Promise<ScheduleRecord | null> {
    this.#checkOpen();
    return (this.#q.getSchedule.get(name) as ScheduleRecord | undefined) ?? null;
  }

  async listSchedules(p: ListSchedulesParams): Promise<ScheduleRecord[]> {
    this.#checkOpen();
    return this.#q.listSchedules.all({ after: p.after, limit: p.limit }) as ScheduleRecord[];
  }

  async dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    this.#checkOpen();
    return this.#q.dueSchedules.all(p.now, p.limit) as ScheduleRecord[];
  }

  fireSchedule(p: FireScheduleParams): Promise<EnqueueResult | null> {
    return this.#write(() => {
      const advanced =
        this.#q.fireScheduleAdvance.run(p.nextRunAt, p.now, p.name, p.expectedRunAt).changes === 1;
      return advanced && p.job !== null ? this.#insertJobs([p.job], p.now)[0]! : null;
    });
  }

  // ---- job types -----------------------------------------------------------------------------

  putJobType(r: PutJobTypeParams): Promise<boolean> {
    return this.#write(() => {
      const existed = this.#q.putJobTypeExists.get(r.name) !== undefined;
      this.#q.putJobType.run(r.name, r.config, r.createdAt, r.updatedAt);
      return !existed;
    });
  }

  async getJobType({ name }: GetJobTypeParams): Promise<JobTypeRecord | null> {
    this.#checkOpen();
    return (this.#q.getJobType.get(name) as JobTypeRecord | undefined) ?? null;
  }

  async listJobTypes(): Promise<JobTypeRecord[]> {
    this.#checkOpen();
    return this.#q.listJobTypes.all() as JobTypeRecord[];
  }

  deleteJobType({ name }: DeleteJobTypeParams): Promise<boolean> {
    return this.#write(() => this.#q.deleteJobType.run(name).changes === 1);
  }

  // ---- paused queues -------------------------------------------------------------------------

  pauseQueue(p: PauseQueueParams): Promise<boolean> {
    return this.#write(() => this.#q.pauseQueue.run(p.name, p.now).changes === 1);
  }

  resumeQueue(p: ResumeQueueParams): Promise<boolean> {
    return this.#write(() => this.#q.resumeQueue.run(p.name).changes === 1);
  }

  async pausedQueues(): Promise<string[]> {
    this.#checkOpen();
    return this.#q.pausedQueues.all() as string[];
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#closed) return;
    // Let writes already queued commit before the connection goes; a batch that fails (a lock held
    // past busyTimeoutMs, a full disk) has told its callers, and the store closes all the same.
    await this.#writer.write(() => undefined).catch(() => {});
    this.#closed = true;
    await this.#checkpointer?.close();
    await this.#statsReader?.close();
    await this.#notifier.close();
    this.#db.close();
  }
}

/**
 * What a failed open throws: an ErrandError as it is; a file that is no database (or cannot be
 * opened) as `INVALID_STORE_URL`; anything else as `STORE_ERROR`, with the error as `cause`.
 */
function openError(filename: string, cause: unknown): ErrandError {
  if (cause instanceof ErrandError) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const notOpened = code === "SQLITE_NOTADB" || code === "SQLITE_CANTOPEN";
  return new ErrandError(
    notOpened ? "INVALID_STORE_URL" : "STORE_ERROR",
    `cannot open SQLite database ${filename}: ${String(cause)}`,
    { cause },
  );
}

function closedError(): ErrandError {
  return new ErrandError("CLOSED", "the SQLite store is closed");
}

/**
 * The store's reads run on the connection directly, not through the WriteBatcher: wrapped here,
 * once, so that a driver fault of theirs (`SQLITE_IOERR`, `SQLITE_CORRUPT`, a lock held past
 * `busyTimeoutMs`) reaches the caller as `STORE_ERROR`, as a write's does ({@link sqliteFault}).
 */
const READS = [
  "get",
  "getMany",
  "dependents",
  "list",
  "stats",
  "expiredLeases",
  "getSchedule",
  "listSchedules",
  "dueSchedules",
  "getJobType",
  "listJobTypes",
  "pausedQueues",
] as const satisfies ReadonlyArray<keyof SqliteStore>;
for (const name of READS) {
  const read = SqliteStore.prototype[name] as (this: SqliteStore, ...args: unknown[]) => Promise<unknown>;
  const operation = `SQLite ${name}`;
  Object.defineProperty(SqliteStore.prototype, name, {
    ...Object.getOwnPropertyDescriptor(SqliteStore.prototype, name),
    value: function (this: SqliteStore, ...args: unknown[]): Promise<unknown> {
      return read.apply(this, args).catch((error: unknown) => {
        throw sqliteFault(operation, error);
      });
    },
  });
}
