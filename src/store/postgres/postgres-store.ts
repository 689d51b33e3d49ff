import { EventEmitter } from "node:events";
import type pg from "pg";
import { FINISHED_STATES, isFinished, type JobRecord, type JobState } from "../../job.js";
import { planClaimAsync } from "../claim-plan.js";
import { type StatementName, statements } from "../generated/postgres-queries.js";
import { expandJobs, sharedAlone } from "../new-jobs.js";
import { pickStatements, renderStatements } from "../sql-template.js";
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
import { LIST_SCAN, listTables, requeued, scansList, withCascade } from "../store.js";
import { integerArray, textArray } from "./arrays.js";
import { claimJobs, wakeParked } from "./claim.js";
import { SUMMARY_FRAGMENTS, sqlFragments } from "./columns.js";
import {
  createPool,
  PgConnection,
  type Queryable,
  storeError,
  uniqueConflict,
  uniqueKeyHeld,
} from "./connection.js";
import { type FailedJob, lockDependencyStates, settleFailed } from "./dependencies.js";
import { assignTurns, fairStatements } from "./fair.js";
import { pgLimitStats } from "./held-sample.js";
import {
  expireKeyHolders,
  freshStatements,
  hasKeys,
  insertAny,
  insertOnConnection,
  insertShared,
  needsTransaction,
} from "./insert.js";
import { type MigrateResult, migratePool, openSchema } from "./migrate.js";
import { PostgresNotifier, type PostgresStoreEvents } from "./notifier.js";
import { oneTypeStatements } from "./one-type.js";
import { checkOptions, type PostgresStoreOptions } from "./options.js";
import { completeJobs, failJobs } from "./outcomes.js";

// Besides errand/postgres (index.ts), tests import these from here.
export { migrate } from "./migrate.js";
export type { PostgresStoreEvents } from "./notifier.js";
export type { PostgresStoreOptions } from "./options.js";

/** Fold statements (each of `limit` deltas) one prune() call runs at most. */
const FOLDS_PER_PRUNE = 64;

/** The list statements (queries/list.sql), which have twins for summaries. */
const LIST_STATEMENTS = [
  "listAll",
  "listAllOwner",
  "listHot",
  "listHotOwner",
  "listDone",
  "listDoneOwner",
] as const satisfies readonly StatementName[];
type ListStatement = (typeof LIST_STATEMENTS)[number];

/**
 * The PostgreSQL store: any number of worker processes on any number of machines share one
 * database, and a job still has one holder at a time.
 *
 * - Claims take ready rows with `FOR UPDATE SKIP LOCKED`, one statement per queue share (see
 *   {@link planClaimAsync}), so concurrent claimers never wait on each other's rows. The claim
 *   index is led by (queue, type): a claim walks only the types it may take (those it names, or
 *   the queue's pending types, less the held-back ones) and merges them in claim order, so a
 *   held type's backlog is never read (queries/claim.sql).
 * - A type's cluster-wide cap is held by a transaction-scoped advisory lock per capped type,
 *   taken before counting its active jobs, so no two claimers can both see the same free room.
 *   Rate limits count a type's recent starts (`errand_rate_start`) under the same lock, and a
 *   key's under the key's lock (rates.ts).
 * - Blocked, pending and active jobs live in `errand_job`, finished ones in `errand_job_done`:
 *   the claim's partial index covers pending jobs only, so neither history nor blocked jobs cost
 *   claims anything. Blocked jobs do cost vacuum: every pass over `errand_job` reads its whole
 *   primary key, a million blocked ids included (~0.2 s of a core per pass at a million, at
 *   most one pass per `autovacuum_naptime`). Not worth a third job table and uniqueness across
 *   tables (bench/RESULTS.md, issue 14).
 * - Dependencies: an edge table (`errand_dependency`) finds a job's dependents, and a flag on the
 *   job (`has_dependents`) spares the completion of a job nothing waits for from looking
 *   (dependencies.ts).
 * - Enqueue, completion batches and heartbeats are one statement each, whatever the batch size
 *   (enqueue with caller-chosen ids adds a second, in the same transaction, see insert.ts).
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
    // A claim is a transaction: smaller chunks cost a commit each (100: a quarter of the drain
    // rate at concurrency 300).
    claimChunk: 150,
    prefetchChunk: 500,
    claimAhead: false,
    listScan: LIST_SCAN,
  };
  readonly capabilities = PostgresStore.capabilities;
  /** The schema this store's tables live in. */
  readonly schema: string;
  /** The pool, and operations on it retried after connection faults (connection.ts). */
  readonly #connection: PgConnection;
  /** LISTEN/NOTIFY wake-ups (notifier.ts). */
  readonly #notifier: PostgresNotifier;
  /** queries/*.sql, by statement name, with this store's schema and channel filled in. */
  readonly #sql: Record<StatementName, string>;
  /** The list statements' twins for summaries (ListParams.summary), by the same names. */
  readonly #summarySql: Record<ListStatement, string>;
  #heartbeats: Promise<unknown> = Promise.resolve();

  private constructor(pool: pg.Pool, ownsPool: boolean, schema: string, options: PostgresStoreOptions) {
    super();
    this.schema = schema;
    this.#connection = new PgConnection(pool, ownsPool, options);
    // One channel per schema, so installations sharing a database do not wake each other.
    const channel = `${schema}_wake`;
    const fragments = sqlFragments(schema, channel);
    this.#sql = renderStatements(statements, fragments);
    this.#summarySql = renderStatements(pickStatements(statements, LIST_STATEMENTS), {
      ...fragments,
      ...SUMMARY_FRAGMENTS,
    });
    // The rewrites of the claim and insert statements checked now, not at a claim or an enqueue.
    oneTypeStatements(this.#sql);
    fairStatements(this.#sql);
    freshStatements(this.#sql);
    this.#notifier = new PostgresNotifier(this.#connection, this, {
      channel,
      notifySql: this.#sql.notify,
      reconnectDelayMs: options.reconnectDelayMs,
    });
  }

  /**
   * Connects, migrates (unless `migrate: false`) and starts listening for wake-ups.
   * @throws ErrandError `INVALID_OPTION` for bad options, `STORE_ERROR` when the database cannot
   * be reached or its schema is not at this errand's version.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const o = checkOptions(options);
    const pool = o.pool ?? createPool(o.connectionString!, o.poolSize);
    const store = new PostgresStore(pool, !o.pool, o.schema, o);
    try {
      await openSchema(pool, o.schema, o.migrate !== false);
      await store.#notifier.listen();
    } catch (error) {
      await store.close().catch(() => {});
      throw storeError(error, `cannot open the PostgreSQL store (schema "${o.schema}")`);
    }
    return store;
  }

  /** Whether the LISTEN connection is up (wake-ups arrive at once); polling covers the gaps. */
  get listening(): boolean {
    return this.#notifier.listening;
  }

  /** The backend pid of the LISTEN connection, when it is up (for diagnostics and tests). */
  get listenerPid(): number | null {
    return this.#notifier.listenerPid;
  }

  // ---- plumbing: the connection and the notifier do the work ---------------------------------

  get #origin(): string {
    return this.#notifier.origin;
  }

  #q<R = Record<string, unknown>>(db: Queryable, text: string, values: unknown[], raw = false): Promise<R[]> {
    return this.#connection.query<R>(db, text, values, raw);
  }

  #op<T>(mode: "pool" | "tx", fn: (db: Queryable, again: boolean) => Promise<T>): Promise<T> {
    return this.#connection.op(mode, fn);
  }

  /**
   * An operation whose retry after a lost COMMIT reply could apply its change twice or answer
   * wrongly (a retry by id, a debounce, a pause): tracked (connection.ts, OpOptions.tracked), so
   * that a commit that landed is answered as it was made, and nothing runs again. One transaction
   * each, its id fetched with its BEGIN: for operations off the drain's hot path.
   */
  #tracked<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    return this.#connection.op("tx", fn, { tracked: true });
  }

  /** Wakes this process's claimers only: the statement that made jobs ready sent the NOTIFY. */
  #emitWake(): void {
    this.#notifier.emit();
  }

  onWake(listener: () => void): () => void {
    return this.#notifier.onWake(listener);
  }

  wake(): void {
    this.#notifier.wake();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueueMany(params: EnqueueManyParams): Promise<EnqueueResult[]> {
    const checkDone = params.idsGenerated !== true;
    if (params.connection !== undefined) {
      return insertOnConnection(this.#connection, this.#sql, params, checkDone);
    }
    // Ids the caller chose may belong to finished jobs: that check needs a transaction (see #insertJobs),
    // as do dependencies (all or none, and their row locks held to the commit) and a batch with
    // debounced jobs (all or none: needsTransaction).
    // Fair types' turns are given in the insert's transaction: no claim sees their jobs without.
    const fair = params.fairTypes && params.fairTypes.length > 0 ? params.fairTypes : null;
    //
    // A retry (after a connection fault) checks ids against the history whoever made them: an
    // earlier try may have committed with its reply lost, and a worker may have run its jobs and
    // moved them to history since; inserting errand's own ids again would run them twice.
    const shared = sharedAlone(params.jobs);
    if (shared !== null && !checkDone && fair === null) {
      const { results, ready } = await this.#connection.op(
        "pool",
        (db, again) =>
          again
            ? this.#insertJobs(db, expandJobs(params.jobs), params.now, true, this.#origin)
            : insertShared(this.#connection, this.#sql, shared, params.now, this.#origin),
        "tx",
      );
      if (ready) this.#emitWake();
      return results;
    }
    const jobs = expandJobs(params.jobs);
    const mode = checkDone || fair || needsTransaction(jobs) ? "tx" : "pool";
    // A job with a unique or debounce key is tracked: its retry would meet the world as others left
    // it (the key's holder run and gone, a newer payload debounced onto it) and insert again or put
    // an older payload back. Batches without keys (the bulk enqueue) keep the plain path.
    const { results, ready } = await this.#connection.op(
      mode,
      async (db, again) => {
        const inserted = await this.#insertJobs(db, jobs, params.now, checkDone || again, this.#origin);
        if (fair) await assignTurns(this.#connection, this.#sql, db, jobs, inserted.results, fair);
        return inserted;
      },
      { retryMode: "tx", tracked: hasKeys(jobs) },
    );
    if (ready) this.#emitWake();
    return results;
  }

  /** Inserts jobs, skipping and looking up those whose id or unique key is taken (insert.ts). */
  #insertJobs(db: Queryable, jobs: NewJob[], now: number, checkDone: boolean, notifyTag: string) {
    return insertAny(this.#connection, this.#sql, db, jobs, now, checkDone, notifyTag);
  }

  // ---- claim ---------------------------------------------------------------------------------

  /** Leases ready jobs (claim.ts: one statement per queue share, cap locks in a transaction). */
  async claim(p: ClaimParams): Promise<JobRecord[]> {
    return claimJobs(this.#connection, this.#sql, p);
  }

  // ---- outcomes ------------------------------------------------------------------------------

  async completeMany(params: CompleteManyParams): Promise<boolean[]> {
    const { results, ready } = await completeJobs(this.#connection, this.#sql, params, this.#origin);
    if (ready) this.#emitWake();
    return results;
  }

  async failMany(params: FailManyParams): Promise<FailManyResult> {
    const { results, ready } = await failJobs(this.#connection, this.#sql, params, this.#origin);
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
        textArray(p.items.map((i) => i.id)),
        integerArray(p.items.map((i) => i.attempt)),
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

  async snooze(p: SnoozeParams): Promise<boolean> {
    const [row] = await this.#op("pool", (db) =>
      this.#q<{ changed: number }>(db, this.#sql.snooze, [p.id, p.attempt, p.runAt, p.now, this.#origin]),
    );
    const changed = (row?.changed ?? 0) > 0;
    if (changed && p.runAt <= p.now) this.#emitWake();
    return changed;
  }

  // ---- reads ---------------------------------------------------------------------------------

  async get({ id }: GetParams): Promise<JobRecord | null> {
    const [row] = await this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.get, [id]));
    return row ?? null;
  }

  async list(p: ListParams): Promise<ListResult> {
    const owned = p.owner !== undefined;
    const sql = p.summary ? this.#summarySql : this.#sql;
    const source =
      p.state === undefined
        ? owned
          ? sql.listAllOwner
          : sql.listAll
        : p.state === "blocked" || p.state === "pending" || p.state === "active"
          ? owned
            ? sql.listHotOwner
            : sql.listHot
          : owned
            ? sql.listDoneOwner
            : sql.listDone;
    const { rows, floor } = await this.#op("pool", async (db) => {
      // A filtered page reads a stretch of ids (queries/list.sql): its floor first.
      let floor: string | null = null;
      if (scansList(p)) {
        const { hot, done } = listTables(p);
        const [row] = await this.#q<{ floor: string | null }>(
          db,
          owned ? this.#sql.listFloorOwner : this.#sql.listFloor,
          [p.cursor ?? null, this.capabilities.listScan - 1, hot, done, ...(owned ? [p.owner] : [])],
        );
        floor = row?.floor ?? null;
      }
      const rows = await this.#q<JobRecord>(db, source, [
        p.state ?? null,
        p.queue ?? null,
        p.type ?? null,
        p.cursor ?? null,
        p.limit + 1,
        p.key ?? null,
        floor,
        ...(owned ? [p.owner] : []),
      ]);
      return { rows, floor };
    });
    const more = rows.length > p.limit;
    if (more) rows.pop();
    return { jobs: rows, nextCursor: more ? rows[rows.length - 1]!.id : floor };
  }

  async getMany({ ids }: GetManyParams): Promise<Array<JobRecord | null>> {
    if (ids.length === 0) return [];
    const rows = await this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.getMany, [ids]));
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  async dependents(p: DependentsParams): Promise<ListResult> {
    const rows = await this.#op("pool", (db) =>
      this.#q<JobRecord>(db, this.#sql.dependents, [p.id, p.cursor ?? null, p.limit + 1]),
    );
    const more = rows.length > p.limit;
    if (more) rows.pop();
    return { jobs: rows, nextCursor: more ? rows[rows.length - 1]!.id : null };
  }

  async stats(p: StatsParams): Promise<StoreStats> {
    return this.#op("pool", async (db) => {
      const rows = await this.#q<StatsRow>(db, this.#sql.stats, [p.now]);
      const limits =
        p.limits && (await pgLimitStats(this.#q.bind(this), this.#sql, db, p.limits, p.now, rows));
      return limits ? { ...statsFromRows(rows), limits } : statsFromRows(rows);
    });
  }

  // ---- changes by id -------------------------------------------------------------------------

  async cancel(p: CancelParams): Promise<JobMutation> {
    let ready = false;
    // Tracked: a retry after a lost commit found the job cancelled and answered "unchanged", so no
    // `cancelled` event went out and a local worker running it was not aborted.
    const m = await this.#tracked(async (db): Promise<JobMutation> => {
      ready = false;
      const [moved] = await this.#q<JobRecord & { hasDependents: boolean }>(db, this.#sql.cancel, [
        p.id,
        p.now,
      ]);
      if (moved) {
        const { hasDependents, ...record } = moved;
        if (!hasDependents) return { record, changed: true };
        const failed: FailedJob[] = [{ id: record.id, state: "cancelled" }];
        const settled = await settleFailed(this.#connection, this.#sql, db, failed, p.now, this.#origin);
        ready = settled.ready;
        return settled.cancelled === undefined
          ? { record, changed: true }
          : { record, changed: true, cascaded: settled.cancelled };
      }
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
    if (ready) this.#emitWake();
    return m;
  }

  async reschedule(p: RescheduleParams): Promise<JobMutation> {
    // Tracked: a retry after a lost commit, the job claimed meanwhile, refused as INVALID_STATE a
    // change that was made.
    const m = await this.#tracked(async (db): Promise<JobMutation> => {
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
    if (m?.changed && m.record.state === "pending" && m.record.runAt <= p.now) this.#emitWake();
    return m;
  }

  async retry(p: RetryParams): Promise<RequeueResult> {
    let ready = false;
    // Tracked: after a lost commit, a retry would put the job back once more if it had run and
    // died again meanwhile, or refuse it as INVALID_STATE ("job is pending") though it was retried.
    const m = await this.#tracked(async (db): Promise<RequeueResult> => {
      ready = false;
      // Its own dependencies still unfinished, counted under their row locks, decide whether the
      // job comes back blocked (see dependencies.ts for why the locks).
      const [source] = await this.#q<{
        dependsOn: string | null;
        state: JobState;
        uniqueKey: string | null;
        staleHolder: boolean;
      }>(db, this.#sql.retryDependencies, [p.id, p.now]);
      // A holder of its unique key past its expiresAt (no claim can take it, no sweep has reached
      // it) holds the key no longer: expired first, as an enqueue would (Store.retry). Before the
      // dependencies are read: the holder may be one of them.
      const freed = source?.staleHolder
        ? await expireKeyHolders(
            this.#connection,
            this.#sql,
            db,
            p.now,
            [source.uniqueKey!],
            [],
            this.#origin,
          )
        : null;
      if (freed?.ready) ready = true;
      let unfinished = 0;
      if (source?.dependsOn && source.state !== "completed") {
        const ids = JSON.parse(source.dependsOn) as string[];
        const states = await lockDependencyStates(this.#connection, this.#sql, db, ids);
        for (const state of states.values()) if (!isFinished(state as JobState)) unfinished++;
      }
      const [moved] = await uniqueConflict(
        this.#q<JobRecord & { hasDependents: boolean }>(db, this.#sql.retry, [
          p.id,
          p.now,
          this.#origin,
          unfinished,
        ]),
      );
      if (moved) {
        const { hasDependents, ...record } = moved;
        // Dependents still blocked had counted it finished (under "run"): unfinished again.
        if (hasDependents) await this.#q(db, this.#sql.recountDependents, [record.id]);
        return requeued(record, freed?.expired, freed?.cascaded);
      }
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    });
    if ((m?.changed && m.record.state === "pending") || ready) this.#emitWake();
    return m;
  }

  async replay(p: ReplayParams): Promise<RequeueResult> {
    const copy = async (db: Queryable, again: boolean): Promise<JobMutation> => {
      if (again) {
        // A retry after a connection fault: an earlier try may have committed with its reply lost.
        // The new id is errand's own, so a job holding it is that copy (run and finished since,
        // perhaps): copying again would run the job twice, or refuse the replay as "id taken".
        const [earlier] = await this.#q<JobRecord>(db, this.#sql.get, [p.newId]);
        if (earlier) return { record: earlier, changed: true };
      }
      const [made] = await uniqueConflict(
        this.#q<JobRecord>(db, this.#sql.replay, [p.id, p.newId, p.now, this.#origin]),
      );
      if (made) return { record: made, changed: true };
      // No finished job to copy: it is pending or active (unchanged), or there is none.
      const [record] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
      return record ? { record, changed: false } : null;
    };
    let ready = false;
    let m: RequeueResult;
    try {
      m = await this.#op("pool", copy);
    } catch (error) {
      if (!uniqueKeyHeld(error)) throw error;
      // The copy's unique key is held. A holder past its expiresAt (no claim can take it, no sweep
      // has reached it) holds it no longer (Store.replay, as an enqueue): it is expired and the
      // copy made again, in one transaction. Only a refused copy pays for this; a live holder
      // refuses it again, and the expiry is rolled back with it.
      m = await this.#op("tx", async (db, retried): Promise<RequeueResult> => {
        ready = false;
        // An earlier try's copy holds the key now (see copy): found before the key is judged.
        const [earlier] = retried ? await this.#q<JobRecord>(db, this.#sql.get, [p.newId]) : [];
        if (earlier) return { record: earlier, changed: true };
        const [source] = await this.#q<JobRecord>(db, this.#sql.get, [p.id]);
        const freed =
          source?.uniqueKey != null
            ? await expireKeyHolders(
                this.#connection,
                this.#sql,
                db,
                p.now,
                [source.uniqueKey],
                [],
                this.#origin,
              )
            : null;
        if (freed === null || freed.expired.length === 0) throw error;
        ready = freed.ready;
        const made = await copy(db, false);
        return made?.changed ? requeued(made.record, freed.expired, freed.cascaded) : made;
      });
    }
    if (m?.changed || ready) this.#emitWake();
    return m;
  }

  // ---- sweeps --------------------------------------------------------------------------------

  async expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    // The same sweep puts back the jobs of every type parked by a key's rate limit whose window
    // has opened (claims do it only for the types whose rules they carry: a type whose workers no
    // longer have the rule must not keep its jobs parked), telling every process when it does.
    const { woken } = await wakeParked(this.#connection, this.#sql, p.now, null, this.#origin);
    if (woken > 0) this.#emitWake();
    return this.#op("pool", (db) => this.#q<JobRecord>(db, this.#sql.expiredLeases, [p.now, p.limit]));
  }

  async expirePending(p: SweepParams): Promise<ExpirePendingResult> {
    let ready = false;
    // Tracked (already a transaction: its id rides in the BEGIN's message): after a lost commit a
    // retry finds nothing left to expire and reports no `expired` events.
    const expired = await this.#tracked(async (db) => {
      const rows = await this.#q<JobRecord & { hasDependents: boolean }>(db, this.#sql.expirePending, [
        p.now,
        p.limit,
      ]);
      const failed: FailedJob[] = rows
        .filter((r) => r.hasDependents)
        .map((r) => ({ id: r.id, state: "expired" }));
      const settled =
        failed.length > 0
          ? await settleFailed(this.#connection, this.#sql, db, failed, p.now, this.#origin)
          : null;
      ready = settled?.ready === true;
      return withCascade(
        rows.map(({ hasDependents: _, ...record }) => record),
        settled?.cancelled,
      );
    });
    if (ready) this.#emitWake();
    return expired;
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
      await this.#q(db, this.#sql.pruneFairKeys, [p.limit]);
      // The history's count deltas (migration 12), a short statement each, until a fold comes
      // back short: one delta row per statement that finished jobs, so a busy minute's worth is
      // folded here rather than summed by every stats() until the next pass.
      // At most FOLDS_PER_PRUNE statements: writers outpacing the fold leave the rest to the next
      // call rather than keep this one going.
      for (let i = 0; i < FOLDS_PER_PRUNE; i++) {
        const [fold] = await this.#q<{ n: number }>(db, this.#sql.foldDoneCounts, [p.limit]);
        if (fold!.n < p.limit) break;
      }
      await this.#q(db, this.#sql.dropZeroCounts, []);
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
    // Tracked, as the other yes/no changes below: a retry after a lost commit answers the opposite.
    const rows = await this.#tracked((db) => this.#q(db, this.#sql.deleteSchedule, [name]));
    return rows.length === 1;
  }

  async getSchedule({ name }: GetScheduleParams): Promise<ScheduleRecord | null> {
    const [row] = await this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.getSchedule, [name]));
    return row ?? null;
  }

  listSchedules(p: ListSchedulesParams): Promise<ScheduleRecord[]> {
    return this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.listSchedules, [p.after, p.limit]));
  }

  dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    return this.#op("pool", (db) => this.#q<ScheduleRecord>(db, this.#sql.dueSchedules, [p.now, p.limit]));
  }

  async fireSchedule(p: FireScheduleParams): Promise<EnqueueResult | null> {
    // The compare-and-set on next_run_at makes a second scheduler wait for the first's commit,
    // then find the tick taken: one job per tick, however many schedulers run.
    // Tracked: after a lost commit a retry finds the tick taken and reports it not fired.
    const { result, ready } = await this.#tracked(async (db) => {
      const rows = await this.#q(db, this.#sql.advanceSchedule, [
        p.name,
        p.expectedRunAt,
        p.nextRunAt,
        p.now,
      ]);
      if (rows.length === 0 || p.job === null) return { result: null, ready: false };
      const { results, ready } = await this.#insertJobs(db, [p.job], p.now, true, this.#origin);
      return { result: results[0]!, ready };
    });
    if (ready) this.#emitWake();
    return result;
  }

  // ---- job types -----------------------------------------------------------------------------

  async putJobType(r: PutJobTypeParams): Promise<boolean> {
    const [row] = await this.#tracked((db) =>
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
    const rows = await this.#tracked((db) => this.#q(db, this.#sql.deleteJobType, [name]));
    return rows.length === 1;
  }

  // ---- paused queues -------------------------------------------------------------------------

  async pauseQueue(p: PauseQueueParams): Promise<boolean> {
    const rows = await this.#tracked((db) => this.#q(db, this.#sql.pauseQueue, [p.name, p.now]));
    return rows.length === 1;
  }

  async resumeQueue(p: ResumeQueueParams): Promise<boolean> {
    // Tracked: a retry after a lost commit answered false, and the caller skipped its wake-up.
    const rows = await this.#tracked((db) => this.#q(db, this.#sql.resumeQueue, [p.name]));
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
    return migratePool(this.#connection.pool, this.schema);
  }

  /** Waits for operations under way, stops listening and, if the store made its pool, ends it. */
  async close(): Promise<void> {
    if (this.#connection.closed) return;
    // New operations are refused from here; those under way finish (a retrying one gives up).
    await this.#connection.drain();
    await this.#notifier.close();
    await this.#connection.end();
  }
}
