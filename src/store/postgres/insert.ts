/**
 * How the PostgreSQL store inserts jobs: the statement shape a batch fits, its parameters, and the
 * insert-then-look-up of jobs whose id or unique key is taken.
 * @module
 */
import { ErrandError, refuseHolder } from "../../errors.js";
import type { JobRecord } from "../../job.js";
import { NEW_JOB_FIELDS, shareAllButIdAndPayload, standsAlone } from "../../job-fields.js";
import {
  answerOwnExpired,
  attachExpired,
  type ExpiredByIndex,
  INSERTED,
  noteExpired,
  pastExpiry,
} from "../enqueue-result.js";
import type { StatementName } from "../generated/postgres-queries.js";
import { expandJobs } from "../new-jobs.js";
import {
  attachCascaded,
  type EnqueueManyParams,
  type EnqueueResult,
  type NewJob,
  type SharedJobs,
} from "../store.js";
import { textArray } from "./arrays.js";
import { type PgConnection, type Queryable, storeError } from "./connection.js";
import { insertWithDependencies, settleFailed } from "./dependencies.js";
import { perStore } from "./per-store.js";

/**
 * The fields of a NewJob in the order of their insert parameters, after the fixed ones ($4 on,
 * see INSERT_FIXED_PARAMS in columns.ts): the table's order.
 */
const JOB_FIELDS = NEW_JOB_FIELDS;

/** Each insert shape's statements: [errand-generated ids, caller-chosen ids (checked against history)]. */
const INSERT_STATEMENTS = {
  one: ["insertOne", "insertOneChecked"],
  uniform: ["insertUniform", "insertUniformChecked"],
  columns: ["insert", "insertChecked"],
  settled: ["insertSettled", "insertSettledChecked"],
} as const satisfies Record<string, readonly [StatementName, StatementName]>;

/** The clause by which the insert statements skip a job whose id or unique key is taken. */
const SKIP_TAKEN = "\n  ON CONFLICT DO NOTHING\n";

/**
 * The `one`, `uniform` and `columns` statements for jobs nothing can be in the way of: without
 * ON CONFLICT, PostgreSQL inserts each row outright rather than speculatively (a look in every
 * unique index first, then a WAL record confirming the row), which took ~20% of the server's time
 * for a 20,000-job insert (bench/RESULTS.md, session 13). Made from the statements' own text, once
 * per store; throws when the text no longer holds the clause once.
 */
export const freshStatements = perStore((sql): Record<"one" | "uniform" | "columns", string> => {
  const fresh = (name: StatementName) => {
    const text = sql[name];
    const at = text.indexOf(SKIP_TAKEN);
    if (at < 0 || text.indexOf(SKIP_TAKEN, at + 1) >= 0) {
      throw new Error(
        `enqueueMany.sql ${name} no longer holds "ON CONFLICT DO NOTHING" once (postgres/insert.ts)`,
      );
    }
    return `${text.slice(0, at)}\n${text.slice(at + SKIP_TAKEN.length)}`;
  };
  return {
    one: fresh(INSERT_STATEMENTS.one[0]),
    uniform: fresh(INSERT_STATEMENTS.uniform[0]),
    columns: fresh(INSERT_STATEMENTS.columns[0]),
  };
});

/**
 * The insert's field parameters ($4 on) and the statement shape they fit: one job (every enqueue()
 * call) as plain values; else ids and payloads as arrays, and the other fields as one value each
 * when every job shares it (`uniform`), or every field as an array (`columns`).
 */
function insertParams(
  jobs: NewJob[],
  initial: readonly InitialState[] | undefined,
): {
  ids: string[];
  params: unknown[];
  shape: keyof typeof INSERT_STATEMENTS;
} {
  const first = jobs[0]!;
  const ids = jobs.map((j) => j.id);
  if (initial !== undefined) {
    return { ids, params: JOB_FIELDS.map((f) => jobs.map((j) => j[f])), shape: "settled" };
  }
  if (jobs.length === 1) return { ids, params: JOB_FIELDS.map((f) => first[f]), shape: "one" };
  const payloads = jobs.map((j) => j.payload);
  if (shareAllButIdAndPayload(jobs))
    return { ids, params: uniformParams(first, ids, payloads), shape: "uniform" };
  const idArray = textArray(ids);
  const payloadArray = textArray(payloads);
  const params = JOB_FIELDS.map((f) =>
    f === "id" ? idArray : f === "payload" ? payloadArray : jobs.map((j) => j[f]),
  );
  return { ids, params, shape: "columns" };
}

/** The `uniform` statement's field parameters: ids and payloads as arrays, `shared`'s other fields once. */
function uniformParams(shared: NewJob, ids: readonly string[], payloads: readonly string[]): unknown[] {
  const idArray = textArray(ids);
  const payloadArray = textArray(payloads);
  return JOB_FIELDS.map((f) => (f === "id" ? idArray : f === "payload" ? payloadArray : shared[f]));
}

/**
 * Inserts {@link SharedJobs} (ids errand made, nothing that ties a job to another) on the pool in
 * one `uniform` statement without ON CONFLICT, as {@link insertRows}' first try would the same jobs
 * one NewJob each, without making or comparing a NewJob per job. When that try clashes (23505: an
 * earlier try, whose reply was lost, committed them), the jobs go through insertJobs as NewJobs,
 * straight to the statement that skips taken jobs and tells each one's outcome.
 */
export async function insertShared(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  jobs: SharedJobs,
  now: number,
  notifyTag: string,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  const { shared, ids, payloads } = jobs;
  const values = [now, notifyTag, ids.length, ...uniformParams(shared, ids, payloads)];
  try {
    await connection.query(connection.pool, freshStatements(sql).uniform, values);
  } catch (error) {
    if ((error as { code?: string }).code !== "23505") throw error;
    return insertJobs(
      connection,
      sql,
      connection.pool,
      expandJobs(jobs),
      now,
      false,
      notifyTag,
      undefined,
      true,
    );
  }
  return { results: new Array(ids.length).fill(INSERTED), ready: shared.runAt <= now };
}

/**
 * The state a job with dependencies is inserted in (dependencies.ts): blocked on `blockedBy`
 * unfinished dependencies, or pending. One that is to be cancelled goes in blocked, so that, like
 * every blocked job, it never enters the claim index.
 */
export interface InitialState {
  state: "blocked" | "pending";
  blockedBy: number;
  /** A job later in the call waits for it: it goes in marked has_dependents (dependencies.ts). */
  hasDependents?: boolean;
}

/**
 * Inserts in one statement (unnest of one array per column), skipping jobs whose id or unique
 * key is taken, then looks up what the skipped ones matched. With `initial` (one per job), each
 * job goes in in that state rather than pending.
 *
 * With caller-chosen ids (`checkDone`), ids are unique across both tables: the insert skips ids
 * found in `errand_job_done`, and — inside the same transaction, in a later statement with a
 * fresh snapshot — deletes again any it inserted whose id a concurrent completion has just moved
 * to history (the insert waited on that completion's row lock, then found the hot row gone).
 */
export async function insertJobs(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  jobs: NewJob[],
  now: number,
  checkDone: boolean,
  notifyTag: string,
  initial?: readonly InitialState[],
  freshTried = false,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  for (const j of jobs) {
    if (j.debounceKey !== null) {
      return insertDebounced(connection, sql, db, jobs, now, checkDone, notifyTag, initial);
    }
  }
  return insertRows(connection, sql, db, jobs, now, checkDone, notifyTag, initial, freshTried);
}

/**
 * {@link insertJobs} for a batch with debounced jobs: the others in one insert, then each
 * debounced job in batch order, as its own `debounce` update (the pending, never started job
 * holding its key takes its payload and runAt) or, when no job holds the key, its own insert. An
 * insert that conflicts on errand_job_debounce lost the key to a concurrent enqueue, committed by
 * then (ON CONFLICT waited for it), so the update runs again and finds that job. One at a time,
 * because a later job of the batch may debounce onto an earlier one.
 */
async function insertDebounced(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  jobs: NewJob[],
  now: number,
  checkDone: boolean,
  notifyTag: string,
  initial: readonly InitialState[] | undefined,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  const results: EnqueueResult[] = new Array(jobs.length);
  let ready = false;
  /** The key holders each debounced job expired, by the job's index. */
  let expiredBy: ExpiredByIndex | undefined;
  /** The dependents their expiry cancelled, by the same index (Store's `cascaded`). */
  let cascadedBy: ExpiredByIndex | undefined;
  const plain: number[] = [];
  const debounced: number[] = [];
  for (let i = 0; i < jobs.length; i++) (jobs[i]!.debounceKey === null ? plain : debounced).push(i);
  // Many debounced jobs with distinct keys: their holders checked, debounced onto and the rest
  // inserted in a few statements for the batch (debounceMany), not a few per job. A job that loses
  // its key to a concurrent enqueue meanwhile is left to the one-at-a-time loop below.
  const batch = debounced.length > 1 ? await debounceBatch(debounced) : null;
  if (plain.length > 0) {
    const some = await insertRows(
      connection,
      sql,
      db,
      plain.map((i) => jobs[i]!),
      now,
      checkDone,
      notifyTag,
      initial && plain.map((i) => initial[i]!),
    );
    plain.forEach((i, k) => {
      results[i] = some.results[k]!;
    });
    if (some.ready) ready = true;
  }
  if (batch !== null) await batch();
  /** The jobs the loop debounced onto a job, by that job's id, in batch order. */
  let onto: Map<string, number[]> | undefined;
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i]!;
    if (j.debounceKey === null) continue;
    for (let round = 0; results[i] === undefined; round++) {
      if (round === 10)
        throw new Error("enqueue: debounce key holders kept changing; gave up after 10 rounds");
      const [held] = await connection.query<JobRecord>(db, sql.debounce, [
        j.debounceKey,
        j.payload,
        j.runAt,
        now,
        notifyTag,
        j.type,
        j.owner,
        j.expiresAt,
      ]);
      if (held) {
        results[i] = { inserted: false, existing: held };
        if (j.runAt <= now) ready = true;
        const at = (onto ??= new Map()).get(held.id);
        if (at === undefined) onto.set(held.id, [i]);
        else at.push(i);
        break;
      }
      const [other] = await connection.query<{ type: string; owner: string | null; expired: boolean }>(
        db,
        sql.debounceHolderType,
        [j.debounceKey, now],
      );
      if (other?.expired) {
        // A holder no claim can take holds the key no longer (Store.enqueueMany): expired, then
        // the next round inserts.
        const freed = await expireKeyHolders(connection, sql, db, now, [], [j.debounceKey], notifyTag);
        if (freed.ready) ready = true;
        if (freed.expired.length > 0) expiredBy = noteExpired(expiredBy, i, freed.expired);
        if (freed.cascaded !== undefined) cascadedBy = noteExpired(cascadedBy, i, freed.cascaded);
        continue;
      }
      // A holder of this type and owner, committed by a concurrent enqueue since the update
      // looked: the next round debounces onto it.
      if (other?.type === j.type && other.owner === j.owner) continue;
      // A holder of another type or owner. Thrown inside the call's transaction
      // (needsTransaction), or before this lone job wrote anything: nothing of the call is stored.
      if (other) throw refuseHolder(j.debounceKey, j, other);
      const one = await insertRows(
        connection,
        sql,
        db,
        [j],
        now,
        checkDone,
        notifyTag,
        initial && [initial[i]!],
      );
      if (one.results[0] !== undefined) results[i] = one.results[0];
      if (one.ready) ready = true;
    }
  }
  // Several jobs of the batch debounced onto one job: each is answered with it as the call left
  // it (Store.enqueueMany: duplicates as stored), the answer of the last, which the last write to
  // it returned (the call's transaction holds its row; nothing later in the loop changes it).
  // Reads nothing.
  if (onto !== undefined) {
    for (const at of onto.values()) {
      if (at.length === 1) continue;
      const last = results[at[at.length - 1]!]!;
      if (last.inserted) continue;
      for (let k = 0; k < at.length - 1; k++) results[at[k]!] = { inserted: false, existing: last.existing };
    }
  }
  attachExpired(results, expiredBy);
  attachCascaded(results, cascadedBy);
  return { results, ready };

  /**
   * The batch form for the debounced jobs at `at` (indexes), when their keys are distinct: checks
   * every key's holder before any write (one of another type refuses the call, as the loop
   * would), expires those past their expiresAt, and returns the writes to make after the plain
   * jobs' insert: the debounces in one statement, then one insert of the jobs whose key no job
   * holds. Null when two jobs share a key (the later one debounces onto the earlier: the loop).
   */
  async function debounceBatch(at: number[]): Promise<(() => Promise<void>) | null> {
    const keys = at.map((i) => jobs[i]!.debounceKey!);
    if (new Set(keys).size !== keys.length) return null;
    const holders = await connection.query<{
      key: string;
      type: string;
      owner: string | null;
      expired: boolean;
    }>(db, sql.debounceHolders, [keys, now]);
    const index = new Map(at.map((i) => [jobs[i]!.debounceKey!, i]));
    const stale: string[] = [];
    for (const h of holders) {
      const j = jobs[index.get(h.key)!]!;
      if (h.expired) stale.push(h.key);
      else if (h.type !== j.type || h.owner !== j.owner) throw refuseHolder(h.key, j, h);
    }
    return async () => {
      if (stale.length > 0) {
        const freed = await expireKeyHolders(connection, sql, db, now, [], stale, notifyTag);
        if (freed.ready) ready = true;
        for (const r of freed.expired) expiredBy = noteExpired(expiredBy, index.get(r.debounceKey!)!, [r]);
        // On the first holder's job: one expiry settled them all.
        const first = freed.expired[0];
        if (freed.cascaded !== undefined && first !== undefined) {
          cascadedBy = noteExpired(cascadedBy, index.get(first.debounceKey!)!, freed.cascaded);
        }
      }
      const moved = await connection.query<JobRecord>(db, sql.debounceMany, [
        keys,
        at.map((i) => jobs[i]!.payload),
        at.map((i) => jobs[i]!.runAt),
        now,
        notifyTag,
        at.map((i) => jobs[i]!.type),
        at.map((i) => jobs[i]!.owner),
        at.map((i) => jobs[i]!.expiresAt),
      ]);
      for (const r of moved) {
        results[index.get(r.debounceKey!)!] = { inserted: false, existing: r };
        if (r.runAt <= now) ready = true;
      }
      const free = at.filter((i) => results[i] === undefined);
      if (free.length === 0) return;
      const some = await insertRows(
        connection,
        sql,
        db,
        free.map((i) => jobs[i]!),
        now,
        checkDone,
        notifyTag,
        initial && free.map((i) => initial[i]!),
      );
      free.forEach((i, k) => {
        if (some.results[k] !== undefined) results[i] = some.results[k];
      });
      if (some.ready) ready = true;
    };
  }
}

/**
 * {@link insertJobs}' insert of rows; a debounced job that lost its key to a concurrent enqueue is
 * left without a result, for {@link insertDebounced} to update that enqueue's job instead.
 * `freshTried`: the insert without ON CONFLICT was tried already and clashed (insertShared).
 */
async function insertRows(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  jobs: NewJob[],
  now: number,
  checkDone: boolean,
  notifyTag: string,
  initial?: readonly InitialState[],
  freshTried = false,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  const results: EnqueueResult[] = new Array(jobs.length);
  let ready = false;
  /** The key holders a job's insert expired, by the job's index. */
  let expiredBy: ExpiredByIndex | undefined;
  /** The dependents their expiry cancelled, by the same index (Store's `cascaded`). */
  let cascadedBy: ExpiredByIndex | undefined;
  /** The jobs of this round, by index; null in the first, which takes them all. */
  let pending: number[] | null = null;
  for (let round = 0; pending === null || pending.length > 0; round++) {
    // A unique key's holder can finish between our insert and our lookup: insert those again.
    if (round === 10) throw new Error("enqueue: unique-key holders kept changing; gave up after 10 rounds");
    const batch = pending === null ? jobs : pending.map((i) => jobs[i]!);
    const batchInitial =
      initial === undefined || pending === null ? initial : pending.map((i) => initial[i]!);
    const { ids, params, shape } = insertParams(batch, batchInitial);
    const text = sql[INSERT_STATEMENTS[shape][checkDone ? 1 : 0]];
    // The fixed parameters first (INSERT_FIXED_PARAMS), then the job's fields, then for jobs
    // with dependencies each one's initial state, count and mark (the /*@afterFields*/ parameters).
    const values = [now, notifyTag, batch.length, ...params];
    if (batchInitial !== undefined) {
      values.push(
        batchInitial.map((x) => x.state),
        batchInitial.map((x) => x.blockedBy),
        batchInitial.map((x) => x.hasDependents === true),
      );
    }
    // Ids errand just made, no unique or debounce key: nothing can be in the way but this very
    // insert, committed by an earlier try whose reply was lost (the connection's retry). So the
    // first try goes without ON CONFLICT; a clash (23505) means that earlier try, and the
    // statement that skips and looks up taken jobs then tells which are there. Only as a statement
    // of its own (on the pool): inside a transaction the failed try would abort it.
    const fresh =
      !freshTried &&
      round === 0 &&
      !checkDone &&
      shape !== "settled" &&
      db === connection.pool &&
      jobs.every(standsAlone);
    let row: { n: number; ids: string[] | null } | undefined;
    if (fresh) {
      try {
        [row] = await connection.query<{ n: number; ids: string[] | null }>(
          db,
          freshStatements(sql)[shape],
          values,
        );
      } catch (error) {
        if ((error as { code?: string }).code !== "23505") throw error;
      }
    }
    if (row === undefined) {
      [row] = await connection.query<{ n: number; ids: string[] | null }>(db, text, values);
    }
    let inserted: Set<string> | null = row!.n === batch.length ? null : new Set(row!.ids ?? []);
    if (checkDone && row!.n > 0) {
      const raced = await connection.query<{ id: string }>(db, sql.dropRaced, [
        inserted ? [...inserted] : ids,
      ]);
      if (raced.length > 0) {
        inserted ??= new Set(ids);
        for (const r of raced) inserted.delete(r.id);
      }
    }
    if (inserted === null && pending === null) {
      // Every job of the call went in, so no two share an id: nothing to look up. (A bulk enqueue's
      // usual case: one shared result, no set of 20,000 ids; see bench/RESULTS.md, session 21.)
      results.fill(INSERTED);
      for (let i = 0; i < jobs.length && !ready; i++) {
        if (jobs[i]!.runAt <= now && (initial === undefined || initial[i]!.state === "pending")) ready = true;
      }
      break;
    }
    const lookups: number[] = [];
    const claimed = new Set<string>();
    for (const i of pending ?? jobs.keys()) {
      const j = jobs[i]!;
      if ((inserted === null || inserted.has(j.id)) && !claimed.has(j.id)) {
        claimed.add(j.id);
        results[i] = INSERTED;
        if (j.runAt <= now && (initial === undefined || initial[i]!.state === "pending")) ready = true;
      } else {
        lookups.push(i);
      }
    }
    if (lookups.length === 0) break;
    const lookupIds = lookups.map((i) => jobs[i]!.id);
    const keys = lookups.map((i) => jobs[i]!.uniqueKey).filter((k): k is string => k !== null);
    const found = await connection.query<JobRecord & { byKey: boolean }>(db, sql.existing, [lookupIds, keys]);
    const byId = new Map<string, JobRecord>();
    const byKey = new Map<string, JobRecord>();
    for (const { byKey: k, ...r } of found) {
      if (k) byKey.set(r.uniqueKey!, r);
      else byId.set(r.id, r);
    }
    pending = [];
    /** Jobs whose unique key a job past its expires_at holds, by that key. */
    let stale: Map<string, number[]> | undefined;
    for (const i of lookups) {
      const j = jobs[i]!;
      const held = j.uniqueKey === null ? undefined : byKey.get(j.uniqueKey);
      const existing = byId.get(j.id) ?? held;
      if (existing !== undefined && existing === held && pastExpiry(held, now)) {
        const waiting = (stale ??= new Map()).get(held.uniqueKey!);
        if (waiting) waiting.push(i);
        else stale.set(held.uniqueKey!, [i]);
      } else if (existing) results[i] = { inserted: false, existing };
      else if (j.debounceKey === null) pending.push(i);
    }
    if (stale !== undefined) {
      // No claim can take such a holder, so it holds the key no longer (Store.enqueueMany):
      // expired, and its jobs go in the next round.
      const freed = await expireKeyHolders(connection, sql, db, now, [...stale.keys()], [], notifyTag);
      if (freed.ready) ready = true;
      let cascadeAt: number | undefined;
      for (const r of freed.expired) {
        const first = stale.get(r.uniqueKey!)?.[0];
        if (first !== undefined) expiredBy = noteExpired(expiredBy, first, [r]);
        cascadeAt ??= first;
      }
      // On the first holder's job: one expiry settled them all.
      if (freed.cascaded !== undefined && cascadeAt !== undefined) {
        cascadedBy = noteExpired(cascadedBy, cascadeAt, freed.cascaded);
      }
      for (const waiting of stale.values()) pending.push(...waiting);
      pending.sort((a, b) => a - b);
    }
  }
  attachExpired(results, expiredBy);
  attachCascaded(results, cascadedBy);
  return { results, ready };
}

/**
 * Expires the jobs holding these unique or debounce keys past their expiresAt (expireKeyHolders)
 * and settles their dependents, as expirePending does: in `db`'s transaction, or, on the pool, in
 * a transaction of its own (the move and the settling are one change). `ready` when a dependent
 * became pending; `cascaded`, the dependents it cancelled (Store's `cascaded`), when it did.
 */
export async function expireKeyHolders(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  now: number,
  uniqueKeys: string[],
  debounceKeys: string[],
  notifyTag: string,
): Promise<{ expired: JobRecord[]; ready: boolean; cascaded: JobRecord[] | undefined }> {
  const run = async (tx: Queryable) => {
    const rows = await connection.query<JobRecord & { hasDependents: boolean }>(tx, sql.expireKeyHolders, [
      now,
      uniqueKeys,
      debounceKeys,
    ]);
    const failed = rows.filter((r) => r.hasDependents).map((r) => ({ id: r.id, state: "expired" as const }));
    const settled =
      failed.length > 0 ? await settleFailed(connection, sql, tx, failed, now, notifyTag) : null;
    return {
      expired: rows.map(({ hasDependents: _, ...record }) => record),
      ready: settled?.ready === true,
      cascaded: settled?.cancelled,
    };
  };
  return db === connection.pool ? connection.op("tx", run) : run(db);
}

/**
 * Whether any of `jobs` has a unique or debounce key: what an earlier try wrote under a key may
 * have moved on (its holder run, a newer payload debounced onto it) before a retry, so such an
 * insert is tracked (connection.ts, OpOptions.tracked).
 */
export function hasKeys(jobs: readonly NewJob[]): boolean {
  for (const j of jobs) if (j.uniqueKey !== null || j.debounceKey !== null) return true;
  return false;
}

/** Whether any of `jobs` waits for other jobs: then the insert needs a transaction (dependencies.ts). */
export function hasDependencies(jobs: readonly NewJob[]): boolean {
  for (const j of jobs) if (j.dependsOn !== null) return true;
  return false;
}

/**
 * Whether inserting `jobs` must be one transaction, so that a refusal midway stores nothing: any
 * job has dependencies, or a batch holds a debounced job (a batch whose debounce keys repeat goes
 * one job at a time, and a key a waiting job of another type holds is refused only once the jobs
 * before it, and the expiry of any holder past its expiresAt, are written).
 */
export function needsTransaction(jobs: readonly NewJob[]): boolean {
  if (hasDependencies(jobs)) return true;
  if (jobs.length > 1) for (const j of jobs) if (j.debounceKey !== null) return true;
  return false;
}

/**
 * Inserts jobs on `db` (a transaction when {@link needsTransaction}): {@link insertJobs}, or, for a
 * batch with dependencies, {@link insertWithDependencies}.
 */
export async function insertAny(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  jobs: NewJob[],
  now: number,
  checkDone: boolean,
  notifyTag: string,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  const out = hasDependencies(jobs)
    ? await insertWithDependencies(connection, sql, db, jobs, now, checkDone, notifyTag)
    : await insertJobs(connection, sql, db, jobs, now, checkDone, notifyTag);
  answerOwnExpired(out.results, (k) => jobs[k]!.id);
  return out;
}

/**
 * Enqueue inside the caller's transaction, on the connection they passed: one attempt, no retry,
 * since the transaction (and whether it commits) is theirs.
 * @throws ErrandError `INVALID_OPTION` when `params.connection` is not a pg client.
 */
export async function insertOnConnection(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  params: EnqueueManyParams,
  checkDone: boolean,
): Promise<EnqueueResult[]> {
  const db = params.connection as Queryable | null;
  if (typeof db?.query !== "function") {
    throw new ErrandError(
      "INVALID_OPTION",
      "enqueue: db must be a pg Client or PoolClient (inside your transaction)",
    );
  }
  if (connection.closed) throw new ErrandError("CLOSED", "the PostgreSQL store is closed");
  try {
    // The NOTIFY goes out with the caller's commit; untagged, so this process hears it too.
    const jobs = expandJobs(params.jobs);
    if (!needsTransaction(jobs)) {
      return (await insertAny(connection, sql, db, jobs, params.now, checkDone, "")).results;
    }
    return await allOrNothing(db, () => insertAny(connection, sql, db, jobs, params.now, checkDone, "")).then(
      (r) => r.results,
    );
  } catch (error) {
    throw error instanceof ErrandError ? error : storeError(error, "enqueue on the given connection failed");
  }
}

/**
 * Runs `fn` on the caller's connection so that a refusal (a dependency that names no job) stores
 * nothing of the call and leaves their transaction usable: under a savepoint inside their
 * transaction, or in a transaction of its own when the connection has none open.
 */
async function allOrNothing<T>(db: Queryable, fn: () => Promise<T>): Promise<T> {
  let own = false;
  try {
    await db.query("SAVEPOINT errand_enqueue");
  } catch (error) {
    // 25P01: no transaction block is open on this connection.
    if ((error as { code?: unknown }).code !== "25P01") throw error;
    await db.query("BEGIN");
    own = true;
  }
  try {
    const result = await fn();
    await db.query(own ? "COMMIT" : "RELEASE SAVEPOINT errand_enqueue");
    return result;
  } catch (error) {
    await db.query(own ? "ROLLBACK" : "ROLLBACK TO SAVEPOINT errand_enqueue").catch(() => {});
    throw error;
  }
}
