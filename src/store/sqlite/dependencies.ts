/**
 * The SQLite store's dependency edges: checking a new job's dependencies, blocking it, and what a
 * job's end does to the jobs waiting on it. Every method runs inside the calling Store method's
 * write transaction (queries/dependencies.sql says what each statement guarantees).
 * @module
 */
import { dependencyNotFound } from "../../errors.js";
import type { DependencyFailurePolicy, JobRecord, JobState } from "../../job.js";
import type { NewJob } from "../store.js";
import type { Statements } from "./statements.js";

/** A new job's dependencies, checked before it is inserted. */
export interface DependencyPlan {
  /** The ids to store (JSON text), with jobs of the same call that were skipped replaced. */
  dependsOn: string;
  ids: string[];
  /** How many are blocked, pending or active. */
  unfinished: number;
  /** The first dependency that ended dead, cancelled or expired, if any. */
  failed: { id: string; state: JobState } | null;
}

const UNFINISHED: ReadonlySet<string> = new Set(["blocked", "pending", "active"]);

/** A dependent whose count changed: its id and the count left. */
interface Counted {
  job_id: string;
  blocked_by: number;
}

export class SqliteDependencies {
  readonly #q: Statements;
  /** Called when a job became pending: claimers are woken after the commit. */
  readonly #ready: () => void;

  constructor(q: Statements, ready: () => void) {
    this.#q = q;
    this.#ready = ready;
  }

  /**
   * Checks a new job's dependencies.
   * @param replaced - ids of jobs earlier in the same call that were not inserted, mapped to the
   *   job that held their id or unique key.
   * @throws ErrandError `DEPENDENCY_NOT_FOUND` when one names no job.
   */
  plan(job: NewJob, replaced: ReadonlyMap<string, string>): DependencyPlan {
    const given = JSON.parse(job.dependsOn!) as string[];
    const ids = [...new Set(given.map((id) => replaced.get(id) ?? id))];
    const state = this.#q.dependencyState;
    let unfinished = 0;
    let failed: DependencyPlan["failed"] = null;
    for (const id of ids) {
      const s = state.get({ id }) as { state: JobState } | undefined;
      if (!s) {
        throw dependencyNotFound(id);
      }
      if (UNFINISHED.has(s.state)) unfinished++;
      else if (s.state !== "completed" && failed === null) failed = { id, state: s.state };
    }
    const same = ids.length === given.length && ids.every((id, i) => id === given[i]);
    return { dependsOn: same ? job.dependsOn! : JSON.stringify(ids), ids, unfinished, failed };
  }

  /**
   * Writes a just-inserted job's edges and puts it in its state: cancelled when a dependency has
   * failed and it says "cancel", blocked while some are unfinished, else it stays pending.
   * @returns whether it is pending.
   */
  attach(job: NewJob, plan: DependencyPlan, now: number): boolean {
    for (const dep of plan.ids) {
      this.#q.dependencyEdge.run(dep, job.id);
      this.#q.dependencyMark.run(dep);
    }
    if (plan.failed && job.onDependencyFailure === "cancel") {
      this.#cancel(job.id, plan.failed.id, plan.failed.state, now);
      return false;
    }
    // Under "run" a failed dependency is finished, as a completed one is.
    if (plan.unfinished > 0) {
      this.#block(job.id, plan.unfinished, job.onDependencyFailure);
      return false;
    }
    return true;
  }

  /** A job completed: each blocked dependent counts one dependency fewer. */
  completed(id: string): void {
    this.#counted(this.#q.dependencyUnblock.all(id) as Counted[]);
  }

  /**
   * A job ended dead, cancelled or expired: its blocked dependents under "cancel" are cancelled,
   * and theirs in turn; those under "run" count it finished. Call only for a job with dependents
   * (moveDelete says so).
   * @param into - where the jobs this cancels go, as stored (Store's `cascaded`): made on the
   *   first one when undefined.
   * @returns `into`, or the list made for the first job cancelled (undefined: none was).
   */
  ended(id: string, state: JobState, now: number, into?: JobRecord[]): JobRecord[] | undefined {
    let cancelled = into;
    const frontier: Array<[string, JobState]> = [[id, state]];
    for (let next = frontier.pop(); next; next = frontier.pop()) {
      const [dep, depState] = next;
      this.#counted(this.#q.dependencyRunOn.all(dep) as Counted[]);
      for (const { id: doomed } of this.#q.dependencyDoomed.all(dep) as Array<{ id: string }>) {
        if (this.#cancel(doomed, dep, depState, now)) frontier.push([doomed, "cancelled"]);
        (cancelled ??= []).push(this.#q.getDone.get(doomed) as JobRecord);
      }
    }
    return cancelled;
  }

  /**
   * A finished job went back to errand_job (retry): blocked on its own unfinished dependencies,
   * if it has any; and its blocked dependents, which had counted it finished, count it again.
   * @returns whether it is pending.
   */
  retried(id: string, dependsOn: string | null, policy: DependencyFailurePolicy): boolean {
    const unfinished = dependsOn === null ? 0 : (this.#q.dependencyUnfinished.get(dependsOn) as number);
    this.#q.dependencyRestore.run({ blockedBy: unfinished, id });
    if (unfinished > 0) this.#q.dependencyBlock.run(id, unfinished, policy);
    this.#q.dependencyRetried.run(id);
    return unfinished === 0;
  }

  /** A job left `blocked` by a cancel or an expiry: its count goes with it. */
  left(id: string): void {
    this.#q.dependencyUnblocked.run(id);
  }

  /** A finished job was pruned: its edges go with it. */
  pruned(id: string, dependsOn: string | null): void {
    this.#q.dropEdgesAsDependency.run(id);
    if (dependsOn !== null) this.#q.dropEdgesOfJob.run(id, dependsOn);
  }

  /** The ids of the jobs waiting on `id`, in id order, after `cursor`. */
  dependents(id: string, cursor: string | undefined, limit: number): string[] {
    return this.#q.dependentsPage.all({ id, cursor: cursor ?? null, limit }) as string[];
  }

  /** Moves a blocked job to the done table as cancelled; true when it has dependents of its own. */
  #cancel(id: string, dep: string, depState: JobState, now: number): boolean {
    this.#q.dependencyCancel.run(`dependency ${dep} ended ${depState}`, dep, now, now, id);
    this.#q.dependencyUnblocked.run(id);
    return this.#q.moveDelete.get(id) === 1;
  }

  #block(id: string, unfinished: number, policy: DependencyFailurePolicy): void {
    this.#q.dependencyBlock.run(id, unfinished, policy);
    this.#q.dependencyBlockState.run(id);
  }

  /** Dependents whose count went down: those at 0 are pending now (one write of their row each). */
  #counted(rows: readonly Counted[]): void {
    let ready = false;
    for (const r of rows) {
      if (r.blocked_by > 0) continue;
      this.#q.dependencyRelease.run(r.job_id);
      this.#q.dependencyUnblocked.run(r.job_id);
      ready = true;
    }
    if (ready) this.#ready();
  }
}
