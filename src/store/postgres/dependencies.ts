/**
 * How the PostgreSQL store keeps blocked jobs in step with the jobs they wait for: the inserts of
 * jobs with dependencies, and the settling of a finished job's dependents. Every function here
 * runs inside the caller's transaction, with the statements of queries/dependencies.sql.
 *
 * The rule that makes concurrent writers safe: a statement that changes dependents never runs in
 * the statement that finished their dependency, but after it, so its snapshot is taken once the
 * dependency's row lock is held; and an enqueue holds the row locks of the dependencies it names
 * (`lockDependencies`, `shareDependencies`) until it commits. So a completion either sees a new
 * dependent (it waited for the enqueue's commit), or the enqueue sees the dependency finished (it
 * waited for the completion's).
 *
 * The hot path pays one flag: `lockDependencies` sets `has_dependents` with an UPDATE, so a
 * statement finishing the job, having waited for that row lock, reads the flag as committed (a
 * job that a later job of the same call waits for goes in with the flag set: no one sees it
 * before that commit). A job whose flag is false under its lock has no dependent and can get none
 * before that statement commits, so completeMany and failMany finish it in their one statement as
 * before; one whose flag is set is finished again in a transaction with the statements here.
 * @module
 */
import { dependencyNotFound } from "../../errors.js";
import type { JobErrorEntry, JobRecord, JobState } from "../../job.js";
import { attachExpired, type ExpiredByIndex, noteExpired } from "../enqueue-result.js";
import type { StatementName } from "../generated/postgres-queries.js";
import { attachCascaded, type EnqueueResult, type NewJob } from "../store.js";
import type { PgConnection, Queryable } from "./connection.js";
import { expireKeyHolders, type InitialState, insertJobs } from "./insert.js";

type Sql = Readonly<Record<StatementName, string>>;

/** A job that ended without succeeding, whose blocked dependents are to be settled. */
export interface FailedJob {
  id: string;
  state: "dead" | "cancelled" | "expired";
}

/** What {@link settleFailed} did. */
export interface SettledFailed {
  /** A dependent became ready now (the statement NOTIFYed). */
  ready: boolean;
  /** The dependents it cancelled, as stored (Store's `cascaded`); undefined when none. */
  cancelled: JobRecord[] | undefined;
}

const UNFINISHED: ReadonlySet<string> = new Set<JobState>(["blocked", "pending", "active"]);

/** The error entry of a job cancelled because `dependency` ended `state`. */
export function dependencyFailedEntry(
  attempt: number,
  dependency: string,
  state: string,
  now: number,
): string {
  const entry: JobErrorEntry = {
    attempt,
    message: `dependency ${dependency} ended ${state}`,
    kind: "dependency_failed",
    dependency,
    at: now,
  };
  return JSON.stringify(entry);
}

/**
 * Expires the holders past their expiresAt of the unique and debounce keys of the jobs in `jobs`
 * that the call will insert (not those whose id is stored already), as insertWithDependencies
 * needs before it reads dependencies, and the ids of `jobs` stored already. Null when no job to
 * insert has a key.
 */
async function freeKeysFirst(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  jobs: readonly NewJob[],
  now: number,
  notifyTag: string,
): Promise<{
  expired: JobRecord[];
  ready: boolean;
  cascaded: JobRecord[] | undefined;
  stored: ReadonlySet<string>;
} | null> {
  const keyed = jobs.filter((j) => j.uniqueKey !== null || j.debounceKey !== null);
  if (keyed.length === 0) return null;
  const rows = await connection.query<{ id: string; byKey: boolean }>(db, sql.existing, [
    keyed.map((j) => j.id),
    [],
  ]);
  const stored = new Set(rows.map((r) => r.id));
  const uniqueKeys: string[] = [];
  const debounceKeys: string[] = [];
  for (const j of keyed) {
    if (stored.has(j.id)) continue;
    if (j.uniqueKey !== null) uniqueKeys.push(j.uniqueKey);
    if (j.debounceKey !== null) debounceKeys.push(j.debounceKey);
  }
  if (uniqueKeys.length === 0 && debounceKeys.length === 0) return null;
  return {
    ...(await expireKeyHolders(connection, sql, db, now, uniqueKeys, debounceKeys, notifyTag)),
    stored,
  };
}

/**
 * Locks the jobs `ids` name and returns the state of each found: those in errand_job are marked
 * as having dependents, those in errand_job_done held FOR SHARE, so none of them finishes, is
 * retried or is pruned before the caller commits. An id found in neither table is looked for
 * again once: a retry may have moved it between the two statements.
 */
export async function lockDependencyStates(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  ids: string[],
): Promise<Map<string, string>> {
  const states = new Map<string, string>();
  let missing = ids;
  for (let round = 0; round < 2 && missing.length > 0; round++) {
    for (const r of await connection.query<{ id: string; state: string }>(db, sql.lockDependencies, [
      missing,
    ])) {
      states.set(r.id, r.state);
    }
    const rest = missing.filter((id) => !states.has(id));
    if (rest.length > 0) {
      for (const r of await connection.query<{ id: string; state: string }>(db, sql.shareDependencies, [
        rest,
      ])) {
        states.set(r.id, r.state);
      }
    }
    missing = missing.filter((id) => !states.has(id));
  }
  return states;
}

/** What the inserts of a call did. */
interface Inserted {
  /** Each job's result, by its index in the call. */
  results: EnqueueResult[];
  /** A job went in ready (the statement NOTIFYed). */
  ready: boolean;
  /** The indexes of the jobs inserted with dependencies, in call order. */
  withDependencies: number[];
}

/** The savepoint under which a call's plan is tried when a job it waits for might be skipped. */
const SAVEPOINT = "SAVEPOINT errand_dependencies";
const ROLLBACK_TO = "ROLLBACK TO SAVEPOINT errand_dependencies";
const RELEASE = "RELEASE SAVEPOINT errand_dependencies";

/**
 * Inserts jobs some of which have dependencies, inside the caller's transaction (all or none).
 *
 * The stored jobs the call names are locked first, all at once and in id order (so two calls
 * naming the same jobs cannot deadlock), and an unknown id is refused before anything is written.
 * A dependency's state, once read under its lock, holds to the commit, so each job goes in as it
 * will stay: blocked on its unfinished dependencies, or pending when every one is done, or (a
 * dependency already failed, under `"cancel"`) blocked and then moved to history as cancelled.
 * Then its edges go in.
 *
 * A job that waits for a job earlier in the call counts that one as the call inserts it
 * (unfinished, or cancelled), so the whole call is planned at once and goes in with a few
 * statements however deep its graph ({@link planCall}, {@link insertPlanned}): a 10,000-deep
 * chain took three statements per level, 7.6 s. The plan holds when every job that others of the
 * call wait for is inserted by it. One whose id or unique key is taken, or that is debounced onto
 * another job, is skipped and stands for the job that holds its id or key, whose state the plan
 * did not know. When that can happen (ids the caller chose, unique or debounce keys), the plan is
 * tried under a savepoint, and if it did happen, rolled back: the jobs then go in waves
 * ({@link insertInWaves}), each wave's dependencies read under their locks.
 * @throws ErrandError `DEPENDENCY_NOT_FOUND` (details `{ id }`) when a dependency names no job;
 *   the caller's transaction must then be rolled back.
 */
export async function insertWithDependencies(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  jobs: NewJob[],
  now: number,
  checkDone: boolean,
  notifyTag: string,
): Promise<{ results: EnqueueResult[]; ready: boolean }> {
  let ready = false;
  // Unique and debounce keys held past their expiresAt are freed before the dependencies are
  // read: a job of the call may wait for such a holder, which must then read as expired (the
  // insert would free the key only after this call's plan had counted the holder unfinished, and
  // settle dependents before this call's edges to it exist). Only the keys of jobs the call will
  // insert: a job whose id is stored already is that job, and frees nothing.
  const freed = await freeKeysFirst(connection, sql, db, jobs, now, notifyTag);
  if (freed?.ready) ready = true;
  // Dependencies that are not jobs earlier in the call must be stored already.
  const earlier = new Set<string>();
  const stored = new Set<string>();
  for (const j of jobs) {
    if (j.dependsOn !== null) {
      for (const d of JSON.parse(j.dependsOn) as string[]) if (!earlier.has(d)) stored.add(d);
    }
    earlier.add(j.id);
  }
  const states =
    stored.size > 0
      ? await lockDependencyStates(connection, sql, db, [...stored])
      : new Map<string, string>();
  // A job whose id is stored already is that job, as it is (its insert will find it): it waits on
  // nothing new, so a re-run stays a no-op after a dependency it named was pruned.
  let taken: ReadonlySet<string> = new Set();
  const missing = [...stored].filter((id) => !states.has(id));
  if (missing.length > 0) {
    const rows = await connection.query<{ id: string; byKey: boolean }>(db, sql.existing, [
      jobs.map((j) => j.id),
      [],
    ]);
    taken = new Set(rows.filter((r) => !r.byKey).map((r) => r.id));
    for (const j of jobs) {
      if (j.dependsOn === null || taken.has(j.id)) continue;
      for (const d of JSON.parse(j.dependsOn) as string[])
        if (missing.includes(d)) throw dependencyNotFound(d);
    }
  }
  const plan = planCall(jobs, states, taken, now, checkDone);
  let out: Inserted | null;
  if (!plan.mayBeSkipped) {
    out = await insertPlanned(connection, sql, db, plan, now, checkDone, notifyTag);
    // Ids errand made, no keys: only an earlier try of this very call, committed (its reply lost),
    // holds them, and it holds them all, dependents too, unless one of those has finished since.
    if (out === null) {
      throw new Error(
        "enqueue: a job that others of the call wait for was stored already, by an earlier try of the call",
      );
    }
  } else {
    await connection.query(db, SAVEPOINT, []);
    out = await insertPlanned(connection, sql, db, plan, now, checkDone, notifyTag);
    if (out === null) {
      await connection.query(db, ROLLBACK_TO, []);
      out = await insertInWaves(connection, sql, db, jobs, states, taken, now, checkDone, notifyTag);
    }
    await connection.query(db, RELEASE, []);
  }
  const { results, withDependencies } = out;
  if (out.ready) ready = true;
  if (withDependencies.length > 0) {
    const ids = withDependencies.map((i) => jobs[i]!.id);
    const rows = await connection.query<JobRecord>(db, sql.getMany, [ids]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const i of withDependencies) results[i] = { inserted: true, record: byId.get(jobs[i]!.id)! };
  }
  if (freed !== null && freed.expired.length > 0) {
    // Each on the first job of the call with its key that the call inserts: by unique key, else
    // by debounce key.
    const byUnique = new Map<string, number>();
    const byDebounce = new Map<string, number>();
    jobs.forEach((j, i) => {
      if (freed.stored.has(j.id)) return;
      if (j.uniqueKey !== null && !byUnique.has(j.uniqueKey)) byUnique.set(j.uniqueKey, i);
      if (j.debounceKey !== null && !byDebounce.has(j.debounceKey)) byDebounce.set(j.debounceKey, i);
    });
    let expiredBy: ExpiredByIndex | undefined;
    let cascadeAt: number | undefined;
    for (const r of freed.expired) {
      const at =
        (r.uniqueKey !== null ? byUnique.get(r.uniqueKey) : undefined) ??
        (r.debounceKey !== null ? byDebounce.get(r.debounceKey) : undefined);
      if (at !== undefined) expiredBy = noteExpired(expiredBy, at, [r]);
      cascadeAt ??= at;
    }
    attachExpired(results, expiredBy);
    // On the first holder's job: one expiry settled them all.
    if (freed.cascaded !== undefined && cascadeAt !== undefined) {
      attachCascaded(results, new Map([[cascadeAt, freed.cascaded]]));
    }
  }
  return { results, ready };
}

/** A whole call planned at once ({@link planCall}), for {@link insertPlanned}. */
interface CallPlan {
  /** The jobs as they go in: a dependency named twice, once. */
  jobs: NewJob[];
  /** Each job's dependencies (each once), null for none. */
  deps: Array<string[] | null>;
  /** The index of the first job of the call with each id. */
  first: ReadonlyMap<string, number>;
  /** The state each job goes in with. */
  initial: InitialState[];
  /** The error entry of each job to be cancelled, by index. */
  cancel: Map<number, string>;
  /** A job that others of the call wait for might be skipped by its insert: try under a savepoint. */
  mayBeSkipped: boolean;
}

/**
 * Plans every job of a call at once: a dependency stored already counts in the state read under
 * its lock (`states`); one that is a job earlier in the call, as the call inserts it: cancelled
 * when its plan cancels it, else unfinished (blocked or pending), and it goes in marked
 * has_dependents, as lockDependencies marks a stored one. A job whose id is stored already
 * (`taken`) is that job: its insert finds it and changes nothing, so its state here is never
 * written.
 */
function planCall(
  jobs: readonly NewJob[],
  states: ReadonlyMap<string, string>,
  taken: ReadonlySet<string>,
  now: number,
  checkDone: boolean,
): CallPlan {
  const first = new Map<string, number>();
  const cancelled: boolean[] = new Array(jobs.length).fill(false);
  const planned: NewJob[] = new Array(jobs.length);
  const deps: Array<string[] | null> = new Array(jobs.length);
  const initial: InitialState[] = new Array(jobs.length);
  const cancel = new Map<number, string>();
  let mayBeSkipped = false;
  for (let k = 0; k < jobs.length; k++) {
    const job = jobs[k]!;
    const given = job.dependsOn === null ? null : (JSON.parse(job.dependsOn) as string[]);
    const own = given === null ? null : [...new Set(given)];
    planned[k] =
      own !== null && own.length !== given!.length ? { ...job, dependsOn: JSON.stringify(own) } : job;
    deps[k] = own;
    initial[k] = { state: "pending", blockedBy: 0 };
    if (own !== null) {
      let unfinished = 0;
      let failed: string | null = null;
      let failedState = "";
      for (const d of own) {
        const j = first.get(d);
        let state: string | undefined;
        if (j === undefined) {
          state = states.get(d);
        } else {
          state = cancelled[j] ? "cancelled" : "blocked";
          initial[j]!.hasDependents = true;
          const by = jobs[j]!;
          // Skipped, it would stand for the job holding its id or key, in a state not planned.
          if (checkDone || by.uniqueKey !== null || by.debounceKey !== null || taken.has(by.id)) {
            mayBeSkipped = true;
          }
        }
        if (taken.has(job.id)) continue;
        if (state === undefined) throw dependencyNotFound(d);
        if (UNFINISHED.has(state)) unfinished++;
        else if (state !== "completed" && failed === null) {
          failed = d;
          failedState = state;
        }
      }
      if (!taken.has(job.id)) {
        if (failed !== null && job.onDependencyFailure === "cancel") {
          cancel.set(k, dependencyFailedEntry(0, failed, failedState, now));
          cancelled[k] = true;
          initial[k] = { state: "blocked", blockedBy: unfinished };
        } else if (unfinished > 0) {
          initial[k] = { state: "blocked", blockedBy: unfinished };
        }
      }
    }
    // After its own dependencies: a job naming its own id names a stored job.
    if (!first.has(job.id)) first.set(job.id, k);
  }
  return { jobs: planned, deps, first, initial, cancel, mayBeSkipped };
}

/**
 * Inserts a call as {@link planCall} planned it: the jobs in one insert, then the edges in one
 * statement and the jobs to be cancelled moved in one. Returns null, having written what the
 * caller must roll back, when a job that others of the call wait for was not inserted by it, or
 * was expired by it (enqueued past its expiresAt, then met by a later job with its unique key):
 * the plan counted it wrongly.
 */
async function insertPlanned(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  plan: CallPlan,
  now: number,
  checkDone: boolean,
  notifyTag: string,
): Promise<Inserted | null> {
  const { jobs, deps, first } = plan;
  const inserted = await insertJobs(connection, sql, db, jobs, now, checkDone, notifyTag, plan.initial);
  const results = inserted.results;
  const withDependencies: number[] = [];
  const waitedFor = new Set<string>();
  const edgeDeps: string[] = [];
  const edgeJobs: string[] = [];
  const cancelIds: string[] = [];
  const entries: string[] = [];
  for (let k = 0; k < jobs.length; k++) {
    const own = deps[k]!;
    if (own === null || !results[k]!.inserted) continue;
    const id = jobs[k]!.id;
    for (const d of own) {
      const j = first.get(d);
      if (j !== undefined && j < k) {
        if (!results[j]!.inserted) return null;
        waitedFor.add(d);
      }
      edgeDeps.push(d);
      edgeJobs.push(id);
    }
    withDependencies.push(k);
    const entry = plan.cancel.get(k);
    if (entry !== undefined) {
      cancelIds.push(id);
      entries.push(entry);
    }
  }
  if (waitedFor.size > 0) {
    for (const r of results) for (const e of r.expired ?? []) if (waitedFor.has(e.id)) return null;
  }
  if (edgeDeps.length > 0) await connection.query(db, sql.addEdges, [edgeDeps, edgeJobs]);
  if (cancelIds.length > 0) await connection.query(db, sql.cancelDependents, [cancelIds, entries, now]);
  return { results, ready: inserted.ready, withDependencies };
}

/**
 * Inserts a call's jobs in waves, as {@link insertWithDependencies} does when the plan of the
 * whole call did not hold: a wave ends before the first job that depends on a job of the same
 * wave, so every dependency is stored (or was skipped, and stands for the job that took its id or
 * unique key) before a job naming it is inserted, and is read under its lock first. `states`:
 * the stored dependencies' states, read under their locks (added to here).
 */
async function insertInWaves(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  jobs: NewJob[],
  states: Map<string, string>,
  taken: ReadonlySet<string>,
  now: number,
  checkDone: boolean,
  notifyTag: string,
): Promise<Inserted> {
  const results: EnqueueResult[] = new Array(jobs.length);
  // An id of this call whose job was skipped for a taken unique key → the job that holds the key.
  const standIn = new Map<string, string>();
  const withDependencies: number[] = [];
  let ready = false;
  for (let start = 0; start < jobs.length; ) {
    const waveIds = new Set<string>();
    const wave: NewJob[] = [];
    const waveDeps: Array<string[] | null> = [];
    for (let i = start; i < jobs.length; i++) {
      const job = jobs[i]!;
      const given = job.dependsOn === null ? null : (JSON.parse(job.dependsOn) as string[]);
      if (given?.some((d) => waveIds.has(d))) break;
      waveIds.add(job.id);
      const deps = given === null ? null : [...new Set(given.map((d) => standIn.get(d) ?? d))];
      const changed =
        deps !== null && (deps.length !== given!.length || deps.some((d, k) => d !== given![k]));
      wave.push(changed ? { ...job, dependsOn: JSON.stringify(deps) } : job);
      waveDeps.push(deps);
    }
    const plan = await planWave(connection, sql, db, wave, waveDeps, states, now, taken);
    const inserted = await insertJobs(connection, sql, db, wave, now, checkDone, notifyTag, plan.initial);
    if (inserted.ready) ready = true;
    const edgeDeps: string[] = [];
    const edgeJobs: string[] = [];
    const cancelIds: string[] = [];
    const entries: string[] = [];
    wave.forEach((job, k) => {
      const r = inserted.results[k]!;
      results[start + k] = r;
      if (!r.inserted) {
        if (r.existing.id !== job.id) standIn.set(job.id, r.existing.id);
        return;
      }
      const deps = waveDeps[k] ?? null;
      if (deps === null) return;
      withDependencies.push(start + k);
      for (const d of deps) {
        edgeDeps.push(d);
        edgeJobs.push(job.id);
      }
      const entry = plan.cancel.get(k);
      if (entry !== undefined) {
        cancelIds.push(job.id);
        entries.push(entry);
      }
    });
    if (edgeDeps.length > 0) await connection.query(db, sql.addEdges, [edgeDeps, edgeJobs]);
    if (cancelIds.length > 0) await connection.query(db, sql.cancelDependents, [cancelIds, entries, now]);
    start += wave.length;
  }
  return { results, ready, withDependencies };
}

/**
 * The state each job of a wave goes in with (see {@link insertWithDependencies}), and the error
 * entry of each to be cancelled, by index in the wave. Reads, under their locks, the dependencies
 * not read yet: jobs of earlier waves of the call, or stored jobs standing for them.
 */
async function planWave(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  wave: NewJob[],
  waveDeps: Array<string[] | null>,
  states: Map<string, string>,
  now: number,
  taken: ReadonlySet<string>,
): Promise<{ initial: InitialState[]; cancel: Map<number, string> }> {
  const unread = [
    ...new Set(waveDeps.flatMap((deps, k) => (taken.has(wave[k]!.id) ? [] : (deps ?? [])))),
  ].filter((d) => !states.has(d));
  if (unread.length > 0) {
    for (const [id, state] of await lockDependencyStates(connection, sql, db, unread)) states.set(id, state);
  }
  const cancel = new Map<number, string>();
  const initial = wave.map((job, k): InitialState => {
    const deps = waveDeps[k] ?? null;
    // A stored job's insert finds it and changes nothing: its state here is never written.
    if (deps === null || taken.has(job.id)) return { state: "pending", blockedBy: 0 };
    let unfinished = 0;
    let failed: string | null = null;
    for (const d of deps) {
      const state = states.get(d);
      if (state === undefined) throw dependencyNotFound(d);
      if (UNFINISHED.has(state)) unfinished++;
      else if (state !== "completed" && failed === null) failed = d;
    }
    if (failed !== null && job.onDependencyFailure === "cancel") {
      cancel.set(k, dependencyFailedEntry(0, failed, states.get(failed)!, now));
      return { state: "blocked", blockedBy: unfinished };
    }
    return unfinished > 0 ? { state: "blocked", blockedBy: unfinished } : { state: "pending", blockedBy: 0 };
  });
  return { initial, cancel };
}

/**
 * Settles, in the caller's transaction, the blocked dependents of jobs that just ended dead,
 * cancelled or expired (in an earlier statement of it): under `"cancel"` each is cancelled with a
 * `dependency_failed` entry naming the first failed dependency in its `dependsOn`, and its own
 * dependents are settled in turn; under `"run"` each counts the failed ones finished and becomes
 * pending when none is left. Returns whether a job became ready (the statement NOTIFYed), and the
 * jobs it cancelled as stored (Store's `cascaded`; undefined when none).
 */
export async function settleFailed(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  failed: FailedJob[],
  now: number,
  notifyTag: string,
): Promise<SettledFailed> {
  let ready = false;
  let cancelled: JobRecord[] | undefined;
  // Each round is the next level down the graph: a new statement, so a fresh snapshot.
  for (let frontier = failed; frontier.length > 0; ) {
    const ids = frontier.map((f) => f.id);
    const stateOf = new Map(frontier.map((f) => [f.id, f.state]));
    const dependents = await connection.query<{
      id: string;
      attempt: number;
      dependsOn: string;
      onDependencyFailure: string;
    }>(db, sql.dependentsToSettle, [ids]);
    const cancelIds: string[] = [];
    const entries: string[] = [];
    for (const d of dependents) {
      if (d.onDependencyFailure !== "cancel") continue;
      const dependency = (JSON.parse(d.dependsOn) as string[]).find((x) => stateOf.has(x))!;
      cancelIds.push(d.id);
      entries.push(dependencyFailedEntry(d.attempt, dependency, stateOf.get(dependency)!, now));
    }
    const next: FailedJob[] = [];
    if (cancelIds.length > 0) {
      const moved = await connection.query<JobRecord & { hasDependents: boolean }>(db, sql.cancelDependents, [
        cancelIds,
        entries,
        now,
      ]);
      for (const { hasDependents, ...record } of moved) {
        if (hasDependents) next.push({ id: record.id, state: "cancelled" });
        (cancelled ??= []).push(record);
      }
    }
    if (dependents.length > cancelIds.length) {
      const [row] = await connection.query<{ ready: number }>(db, sql.unblock, [ids, now, notifyTag]);
      if (row!.ready > 0) ready = true;
    }
    frontier = next;
  }
  return { ready, cancelled };
}

/**
 * Counts one finished dependency for each blocked dependent of jobs that just completed (in an
 * earlier statement of the caller's transaction); a dependent with none left becomes pending.
 * Returns whether a job became ready (the statement NOTIFYed).
 */
export async function unblockDependents(
  connection: PgConnection,
  sql: Sql,
  db: Queryable,
  completed: string[],
  now: number,
  notifyTag: string,
): Promise<boolean> {
  const [row] = await connection.query<{ ready: number }>(db, sql.unblock, [completed, now, notifyTag]);
  return row!.ready > 0;
}
