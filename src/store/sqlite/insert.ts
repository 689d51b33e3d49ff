/**
 * How the SQLite store inserts jobs: many rows per statement when errand made the ids, else row
 * by row, looking up what each row that was not inserted clashed with.
 * @module
 */

import { refuseHolder } from "../../errors.js";
import type { JobRecord } from "../../job.js";
import { sameSharedFields, standsAlone } from "../../job-fields.js";
import {
  answerOwnExpired,
  attachExpired,
  type ExpiredByIndex,
  INSERTED,
  noteExpired,
  pastExpiry,
} from "../enqueue-result.js";
import { withPayload } from "../new-jobs.js";
import { attachCascaded, type EnqueueResult, type NewJob, type SharedJobs } from "../store.js";
import type { DependencyPlan, SqliteDependencies } from "./dependencies.js";
import { INSERT_CHUNK, ROW_PARAMS, type Statements, storedBackoff, UNIFORM_PARAMS } from "./statements.js";

/** Key holders an enqueue expired, as stored, and the dependents their expiry cancelled. */
export interface ExpiredHolders {
  expired: JobRecord[];
  /** Store's `cascaded`: undefined when their expiry cancelled no dependent. */
  cascaded: JobRecord[] | undefined;
}

/** What inserting needs of the store besides its statements. */
export interface InsertHooks {
  /** The job holding a skipped job's id or unique key. */
  existing(job: NewJob): JobRecord | null;
  /**
   * Expires the jobs holding `job`'s unique or debounce key past their expiresAt (see
   * Store.enqueueMany) and returns them as stored, or null when there are none.
   */
  expireHolders(job: NewJob, now: number): ExpiredHolders | null;
  /** The job as stored, for the result of a job with dependencies. */
  record(id: string): JobRecord;
  dependencies: SqliteDependencies;
}

/**
 * Inserts `jobs` inside the caller's write transaction; `ready` when one of them can run now.
 * A job with dependencies goes row by row: they are checked first (any missing one throws and the
 * caller's savepoint undoes the whole call), then it is blocked or cancelled as they stand.
 */
export function insertJobs(
  q: Statements,
  jobs: NewJob[],
  now: number,
  idsGenerated: boolean,
  hooks: InsertHooks,
): { results: EnqueueResult[]; ready: boolean } {
  // Ids are unique across both tables, so a finished job's id is taken. A separate lookup (same
  // transaction) costs far less than a NOT EXISTS inside INSERT … SELECT: ~20% on bulk enqueue.
  const finished = q.enqueueFinishedId;
  const insert = q.enqueueOne;
  const results: EnqueueResult[] = new Array(jobs.length);
  let ready = false;
  let i = 0;
  if (idsGenerated) {
    // Fresh ids and no unique keys: insert many rows per statement, which spares SQLite a
    // statement step per row. A chunk that meets any conflict is redone row by row below.
    const chunk = q.enqueueChunk;
    const args: unknown[] = new Array(INSERT_CHUNK * ROW_PARAMS);
    // Jobs that share every field but the id and the payload (an enqueueMany of one type) bind
    // those two per row and the rest once (enqueueChunkUniform): binding is most of the cost.
    const first = jobs[0]!;
    const shared = jobs.length >= INSERT_CHUNK && standsAlone(first) ? uniformParams(first, now) : null;
    const uniformArgs: unknown[] | null = shared === null ? null : new Array(2 * INSERT_CHUNK + 1);
    if (uniformArgs !== null) uniformArgs[2 * INSERT_CHUNK] = shared;
    for (; i + INSERT_CHUNK <= jobs.length; i += INSERT_CHUNK) {
      let statement = chunk;
      let bound = args;
      let uniform = uniformArgs !== null;
      if (uniformArgs !== null) {
        let k = 0;
        for (let r = i; r < i + INSERT_CHUNK; r++) {
          const j = jobs[r]!;
          if (!sameSharedFields(j, first)) {
            uniform = false;
            break;
          }
          uniformArgs[k++] = j.id;
          uniformArgs[k++] = j.payload;
        }
        if (uniform) {
          statement = q.enqueueChunkUniform;
          bound = uniformArgs;
        }
      }
      if (!uniform) {
        let k = 0;
        let unique = false;
        for (let r = i; r < i + INSERT_CHUNK; r++) {
          const j = jobs[r]!;
          if (j.uniqueKey !== null || j.dependsOn !== null || j.debounceKey !== null) unique = true;
          args[k++] = j.id;
          args[k++] = j.type;
          args[k++] = j.queue;
          args[k++] = j.payload;
          args[k++] = j.priority;
          args[k++] = j.weight;
          args[k++] = j.runAt;
          args[k++] = j.expiresAt;
          args[k++] = j.maxAttempts;
          args[k++] = storedBackoff(j.backoff);
          args[k++] = j.retryQueue;
          args[k++] = j.delivery;
          args[k++] = j.timeoutMs;
          args[k++] = j.uniqueKey;
          args[k++] = now;
          args[k++] = j.owner;
          args[k++] = j.dependsOn;
          args[k++] = j.onDependencyFailure;
          args[k++] = j.key;
          args[k++] = j.debounceKey;
        }
        if (unique) break;
      }
      if (!insertChunk(q, statement, bound)) break;
      for (let r = i; r < i + INSERT_CHUNK; r++) {
        results[r] = INSERTED;
        if (jobs[r]!.runAt <= now) ready = true;
      }
    }
  }
  // Jobs of this call that were not inserted, by id, and the job that stood in their place.
  let replaced: Map<string, string> | undefined;
  // The key holders each job expired, by the job's index.
  let freed: ExpiredByIndex | undefined;
  // The dependents their expiry cancelled, by the same index (Store's `cascaded`).
  let cascaded: ExpiredByIndex | undefined;
  // The jobs of this call that debounced onto a job, by that job's id, in call order.
  let debounced: Map<string, number[]> | undefined;
  /**
   * Expires job k's key holders past their expiresAt, which no claim can take (Store.enqueueMany),
   * and steps back so the loop does job k again: its dependency plan too, which may have counted
   * a holder as unfinished. False when there was none.
   */
  const freeKey = (k: number): boolean => {
    const holders = hooks.expireHolders(jobs[k]!, now);
    if (holders === null) return false;
    freed = noteExpired(freed, k, holders.expired);
    if (holders.cascaded !== undefined) cascaded = noteExpired(cascaded, k, holders.cascaded);
    i = k - 1;
    return true;
  };
  for (; i < jobs.length; i++) {
    const given = jobs[i]!;
    let plan: DependencyPlan | null = null;
    if (given.dependsOn !== null) {
      try {
        plan = hooks.dependencies.plan(given, (replaced ??= new Map()));
      } catch (error) {
        // A job stored already is returned as it is, whatever became of its dependencies since
        // (re-running a flow whose finished jobs were pruned is still a no-op).
        const stored = hooks.existing(given);
        if (stored?.id !== given.id) throw error;
        results[i] = { inserted: false, existing: stored };
        continue;
      }
    }
    const j =
      plan === null || plan.dependsOn === given.dependsOn ? given : { ...given, dependsOn: plan.dependsOn };
    if (j.debounceKey !== null) {
      const held = q.enqueueDebounced.get(
        j.payload,
        j.runAt,
        j.expiresAt,
        j.debounceKey,
        j.type,
        j.owner,
        now,
      ) as { id: string } | undefined;
      if (held) {
        if (j.runAt <= now) ready = true;
        results[i] = { inserted: false, existing: hooks.record(held.id) };
        const at = (debounced ??= new Map()).get(held.id);
        if (at === undefined) debounced.set(held.id, [i]);
        else at.push(i);
        continue;
      }
      const holder = q.debounceHolder.get(now, j.debounceKey) as
        | { type: string; owner: string | null; expired: number }
        | undefined;
      if (holder?.expired === 1 && freeKey(i)) continue;
      // Thrown inside the caller's savepoint: the whole call is undone.
      if (holder !== undefined) throw refuseHolder(j.debounceKey, j, holder);
    }
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
          storedBackoff(j.backoff),
          j.retryQueue,
          j.delivery,
          j.timeoutMs,
          j.uniqueKey,
          now,
          j.owner,
          j.dependsOn,
          j.onDependencyFailure,
          j.key,
          j.debounceKey,
        );
    if (info.changes === 1) {
      if (plan === null) {
        results[i] = INSERTED;
        if (j.runAt <= now) ready = true;
      } else {
        if (hooks.dependencies.attach(j, plan, now) && j.runAt <= now) ready = true;
        results[i] = { inserted: true, record: hooks.record(j.id) };
      }
    } else {
      const found = hooks.existing(j);
      if (!found) throw new Error(`job ${j.id} was neither inserted nor found`);
      if (found.id !== j.id && pastExpiry(found, now) && freeKey(i)) continue;
      if (found.id !== j.id) (replaced ??= new Map()).set(j.id, found.id);
      results[i] = { inserted: false, existing: found };
    }
  }
  if (debounced !== undefined) answerLastDebounce(results, debounced);
  if (freed !== undefined) {
    // A holder expired for a later job may have settled a job answered earlier in the call (it
    // waited for that holder): every job the call answers with is read again, as stored now.
    for (let k = 0; k < results.length; k++) {
      const r = results[k]!;
      if (r.inserted && r.record !== undefined) results[k] = { ...r, record: hooks.record(r.record.id) };
      else if (!r.inserted) results[k] = { ...r, existing: hooks.record(r.existing.id) };
    }
    attachExpired(results, freed);
    answerOwnExpired(results, (k) => jobs[k]!.id);
    // After answerOwnExpired, which makes some answers anew.
    attachCascaded(results, cascaded);
  }
  return { results, ready };
}

/**
 * Inserts {@link SharedJobs} inside the caller's write transaction, as {@link insertJobs} would the
 * same jobs one NewJob each: whole chunks bind each job's id and payload and the shared fields once
 * (enqueueChunkUniform), with no NewJob made or compared per job; the last rows, and the rest from
 * a chunk that met a conflict (an id taken: not for ids errand made), go through insertJobs.
 */
export function insertShared(
  q: Statements,
  { shared, ids, payloads }: SharedJobs,
  now: number,
  hooks: InsertHooks,
): { results: EnqueueResult[]; ready: boolean } {
  const n = ids.length;
  const results: EnqueueResult[] = new Array(n);
  const args: unknown[] = new Array(2 * INSERT_CHUNK + 1);
  args[2 * INSERT_CHUNK] = uniformParams(shared, now);
  let i = 0;
  for (; i + INSERT_CHUNK <= n; i += INSERT_CHUNK) {
    let k = 0;
    for (let r = i; r < i + INSERT_CHUNK; r++) {
      args[k++] = ids[r];
      args[k++] = payloads[r];
    }
    if (!insertChunk(q, q.enqueueChunkUniform, args)) break;
  }
  results.fill(INSERTED, 0, i);
  let ready = i > 0 && shared.runAt <= now;
  if (i < n) {
    const rest: NewJob[] = new Array(n - i);
    for (let r = i; r < n; r++) rest[r - i] = withPayload(shared, ids[r]!, payloads[r]!);
    const tail = insertJobs(q, rest, now, true, hooks);
    for (let r = 0; r < rest.length; r++) results[i + r] = tail.results[r]!;
    if (tail.ready) ready = true;
  }
  return { results, ready };
}

/**
 * Answers every job of a call that debounced onto the same job with that job as the call left it
 * (Store.enqueueMany: duplicates as stored), not as each one's update left it: with the answer
 * of the last of them, read right after the last write the call made to it (nothing later in
 * the call changes it; an expiry reads every answer again). Reads nothing.
 * @param debounced - the indexes that debounced onto a job, by its id, in call order.
 */
function answerLastDebounce(
  results: EnqueueResult[],
  debounced: ReadonlyMap<string, readonly number[]>,
): void {
  for (const at of debounced.values()) {
    if (at.length === 1) continue;
    const last = results[at[at.length - 1]!]!;
    if (last.inserted) continue;
    for (let k = 0; k < at.length - 1; k++) results[at[k]!] = { inserted: false, existing: last.existing };
  }
}

/** One chunk's insert in a savepoint of its own: false, and nothing of it kept, when a row was not inserted. */
function insertChunk(q: Statements, statement: Statements["enqueueChunk"], args: unknown[]): boolean {
  q.enqueueChunkSavepoint.run();
  if (statement.run(...args).changes !== INSERT_CHUNK) {
    q.enqueueChunkRollback.run();
    q.enqueueChunkRelease.run();
    return false;
  }
  q.enqueueChunkRelease.run();
  return true;
}

/** enqueueChunkUniform's named parameters: `job`'s fields but the id and the payload, by column. */
function uniformParams(job: NewJob, now: number): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const p of UNIFORM_PARAMS) params[p.column] = p.field === null ? now : job[p.field];
  params.backoff = storedBackoff(job.backoff);
  return params;
}
