/**
 * The SQLite claim's candidates over several types in one queue, in claim order: one claimArm walk
 * per type over errand_job_claim (led by queue, type), merged by a compound statement
 * (queries/claim.sql says why). Statements are made per number of types, prepared once each.
 * @module
 */
import type Database from "better-sqlite3";
import type { JobRecord } from "../../job.js";
import { claimOrder } from "../claim-order.js";
import { PENDING_COLUMNS, pendingRecord } from "./pending-row.js";
import { SQL, type Stmt } from "./statements.js";

/**
 * The most arms one statement merges. SQLite nests a compound's merges (one per arm), and a claim
 * over more types runs one statement per group of this many and merges their rows here.
 */
export const MAX_ARMS = 8;

/** The per-claim parameters every arm shares. */
export interface WalkParams {
  queue: string;
  now: number;
  skip: string | null;
  xkeys: string | null;
}

const TYPE_PARAM = /\$type\b/g;
const ARM = SQL.claimArm.trim().replace(/;$/, "");
if ((ARM.match(TYPE_PARAM) ?? []).length !== 1) {
  throw new Error("claimArm in queries/claim.sql must name $type exactly once (claim-walk.ts)");
}

/**
 * The merged statement's text for `arms` types. Its LIMIT is `$limit + 0`, not `$limit`: SQLite
 * reads a LIMIT that is a bare bound parameter at prepare time (for the planner) and marks the
 * statement to be prepared again whenever that parameter is bound, i.e. on every claim (~45 µs,
 * ~5% of a drain's instructions at defaults); an expression it leaves to run time. @internal
 */
export function mergedClaimSql(arms: number): string {
  const parts: string[] = [];
  for (let i = 0; i < arms; i++) parts.push(ARM.replace(TYPE_PARAM, `$t${i}`));
  return `${parts.join("\nUNION ALL\n")}\nORDER BY priority DESC, runAt, id\nLIMIT $limit + 0`;
}

/** Candidates of several types, in claim order, for one connection. */
export class ClaimWalk {
  readonly #db: Database.Database;
  readonly #merged: Stmt[] = [];
  /** The candidates whose row had a fair turn (claimArm's last column), for {@link hadTurn}. */
  readonly #turned = new WeakSet<JobRecord>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  /** Up to `limit` ready jobs of `types` (distinct) in the queue, in claim order. */
  candidates(types: readonly string[], p: WalkParams, limit: number): JobRecord[] {
    if (types.length <= MAX_ARMS) return this.#group(types, p, limit);
    const all: JobRecord[] = [];
    for (let i = 0; i < types.length; i += MAX_ARMS) {
      for (const r of this.#group(types.slice(i, i + MAX_ARMS), p, limit)) all.push(r);
    }
    all.sort(claimOrder);
    return all.length > limit ? all.slice(0, limit) : all;
  }

  #group(types: readonly string[], p: WalkParams, limit: number): JobRecord[] {
    const params: Record<string, unknown> = { ...p, limit };
    for (let i = 0; i < types.length; i++) params[`t${i}`] = types[i];
    const rows = this.#statement(types.length).all(params) as unknown[][];
    const out: JobRecord[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const record = pendingRecord(row, p.queue);
      if (row[PENDING_COLUMNS] !== null) this.#turned.add(record);
      out[i] = record;
    }
    return out;
  }

  /**
   * Whether `candidate`, as {@link candidates} read it, was a job of a fair type waiting for its
   * turn. Within a claim's write transaction only the claim changes turns, and a job it takes by
   * its turn is one FairClaim remembers, so the walk's reading stands for the rest of the claim.
   */
  hadTurn(candidate: JobRecord): boolean {
    return this.#turned.has(candidate);
  }

  #statement(arms: number): Stmt {
    let s = this.#merged[arms];
    if (s === undefined) {
      s = this.#db.prepare(mergedClaimSql(arms)).raw(true);
      this.#merged[arms] = s;
    }
    return s;
  }
}
