/**
 * How the PostgreSQL store records outcomes: completions and failures of many attempts, one
 * statement each for jobs nothing waits on, and a transaction that also settles the dependents of
 * those something does (dependencies.ts).
 * @module
 */
import type { JobRecord } from "../../job.js";
import type { StatementName } from "../generated/postgres-queries.js";
import {
  type CompleteManyParams,
  type FailManyParams,
  type FailManyResult,
  type FailResult,
  withCascade,
} from "../store.js";
import { integerArray, textArray } from "./arrays.js";
import type { PgConnection } from "./connection.js";
import { type FailedJob, settleFailed, unblockDependents } from "./dependencies.js";

/**
 * Completes attempts (`Store.completeMany`): one statement for jobs nothing waits for; jobs with
 * dependents come back deferred and are completed again in a transaction that settles their
 * dependents. `ready` when that made jobs pending (the caller wakes this process's claimers).
 */
export async function completeJobs(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  params: CompleteManyParams,
  origin: string,
): Promise<{ results: boolean[]; ready: boolean }> {
  const { items, now } = params;
  if (items.length === 0) return { results: [], ready: false };
  const completeSql = sql.completeMany;
  const args = (list: typeof items, all: boolean) => [
    textArray(list.map((i) => i.id)),
    integerArray(list.map((i) => i.attempt)),
    textArray(list.map((i) => i.result)),
    now,
    all,
    params.discard === true,
  ];
  type Row = { id: string; attempt: number; deferred: boolean };
  const won = new Set<string>();
  // Most batches are jobs nothing waits for that nothing else touched: completeLeaves completes
  // them without row locks. What it leaves (stale attempts, jobs with dependents, rows changed
  // meanwhile) goes through completeMany, which locks and tells them apart.
  const ids = textArray(items.map((i) => i.id));
  const attempts = integerArray(items.map((i) => i.attempt));
  const leaves = await connection.op("pool", (db) =>
    params.discard === true
      ? connection.query<Row>(db, sql.completeLeavesDiscard, [ids, attempts])
      : connection.query<Row>(db, sql.completeLeaves, [
          ids,
          attempts,
          textArray(items.map((i) => i.result)),
          now,
        ]),
  );
  for (const r of leaves) won.add(`${r.attempt}:${r.id}`);
  const left = leaves.length === items.length ? [] : items.filter((i) => !won.has(`${i.attempt}:${i.id}`));
  const deferred = new Set<string>();
  if (left.length > 0) {
    // One statement for jobs nothing waits for; jobs with dependents come back deferred and are
    // completed again in a transaction that settles their dependents (dependencies.ts).
    const rows = await connection.op("pool", (db) =>
      connection.query<Row>(db, completeSql, args(left, false)),
    );
    for (const r of rows) (r.deferred ? deferred : won).add(`${r.attempt}:${r.id}`);
  }
  let woke = false;
  if (deferred.size > 0) {
    const later = items.filter((i) => deferred.delete(`${i.attempt}:${i.id}`));
    const { done, ready } = await connection.op("tx", async (db) => {
      const done = await connection.query<Row>(db, completeSql, args(later, true));
      const ready =
        done.length > 0 &&
        (await unblockDependents(
          connection,
          sql,
          db,
          done.map((r) => r.id),
          now,
          origin,
        ));
      return { done, ready };
    });
    for (const r of done) won.add(`${r.attempt}:${r.id}`);
    woke = ready;
  }
  // Exactly one report per attempt wins, even when a batch names an attempt twice.
  return { results: items.map((i) => won.delete(`${i.attempt}:${i.id}`)), ready: woke };
}

/**
 * Records failed attempts (`Store.failMany`); a job with dependents that ends dead is failed again
 * in a transaction that settles its dependents. `ready` when a job is ready now.
 */
export async function failJobs(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  params: FailManyParams,
  origin: string,
): Promise<{ results: FailManyResult; ready: boolean }> {
  const { items, now } = params;
  if (items.length === 0) return { results: [], ready: false };
  const failSql = sql.failMany;
  const args = (list: typeof items, all: boolean) => [
    textArray(list.map((i) => i.id)),
    integerArray(list.map((i) => i.attempt)),
    list.map((i) => (i.leaseExpired ? 1 : 0)),
    list.map((i) => i.retryAt),
    list.map((i) => (i.retryAt === null ? null : (i.retryQueue ?? null))),
    textArray(list.map((i) => JSON.stringify(i.error))),
    now,
    origin,
    all,
  ];
  type Row = { id: string; attempt: number; state: "pending" | "dead" | "deferred" };
  const rows = await connection.op("pool", (db) => connection.query<Row>(db, failSql, args(items, false)));
  const outcome = new Map<string, "pending" | "dead">();
  const deferred = new Set<string>();
  for (const r of rows) {
    const key = `${r.attempt}:${r.id}`;
    if (r.state === "deferred") deferred.add(key);
    else outcome.set(key, r.state);
  }
  let ready = false;
  // Made only when a dead job's end cancels a dependent (Store's `cascaded`).
  let cascaded: JobRecord[] | undefined;
  if (deferred.size > 0) {
    // Jobs with dependents that end dead: again, in a transaction that settles their dependents.
    const later = items.filter((i) => deferred.delete(`${i.attempt}:${i.id}`));
    // Tracked (connection.ts): a transaction already, so its id rides in the BEGIN's message at
    // no round trip. After a lost commit a retry found the jobs dead already and answered them
    // stale: no `dead` events, no `cancelled` ones for their dependents.
    const killed = await connection.op(
      "tx",
      async (db) => {
        const dead = (await connection.query<Row>(db, failSql, args(later, true))).filter(
          (r) => r.state === "dead",
        );
        const failed: FailedJob[] = dead.map((r) => ({ id: r.id, state: "dead" }));
        const settled =
          failed.length > 0 ? await settleFailed(connection, sql, db, failed, now, origin) : null;
        return { dead, settled };
      },
      { tracked: true },
    );
    for (const r of killed.dead) outcome.set(`${r.attempt}:${r.id}`, "dead");
    if (killed.settled?.ready) ready = true;
    cascaded = killed.settled?.cancelled;
  }
  // The statement applied the first item naming each attempt; a repeat of it is stale.
  const results = items.map((i): FailResult => {
    const key = `${i.attempt}:${i.id}`;
    const state = outcome.get(key);
    if (state === undefined) return null;
    outcome.delete(key);
    if (state === "pending" && i.retryAt !== null && i.retryAt <= now) ready = true;
    return state;
  });
  return { results: withCascade(results, cascaded), ready };
}
