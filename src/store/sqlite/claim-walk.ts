/**
 * The SQLite claim's candidates over several types in one queue, in claim order: claimArm walks
 * over errand_job_claim (led by queue, type), three a type, one per priority band, merged by a
 * compound statement (queries/claim.sql says why). Statements are made per number of types,
 * prepared once each.
 * @module
 */
import type Database from "better-sqlite3";
import type { JobRecord } from "../../job.js";
import { claimOrder } from "../claim-order.js";
import { PENDING_COLUMNS, pendingRecord } from "./pending-row.js";
import { SQL, type Stmt } from "./statements.js";

/**
 * The most types one statement walks (three arms each). SQLite nests a compound's merges (one per
 * arm), and a claim over more types runs one statement per group of this many and merges their
 * rows here.
 */
export const MAX_TYPES = 8;

/** The per-claim parameters every arm shares. */
export interface WalkParams {
  queue: string;
  now: number;
  skip: string | null;
  xkeys: string | null;
}

const strip = (sql: string) => sql.trim().replace(/;$/, "");
const ARM = strip(SQL.claimArm);
const BANDS = strip(SQL.claimBands);
const ARM_TYPE = "type = $type AND";
if (ARM.split(ARM_TYPE).length !== 2 || (ARM.match(/\$type\b/g) ?? []).length !== 1) {
  throw new Error(`claimArm in queries/claim.sql must name $type once, as "${ARM_TYPE}" (claim-walk.ts)`);
}

/**
 * The merged statement's text for `types` types. Type i's arms are claimArm with `$ti` for its
 * type and one priority band each: its highest priority (`a` of claimBands, a CTE evaluated once
 * per statement), its next (`b`), and every lower one. A band of one priority is a walk the index
 * bounds by run_at; the third band is the range a walk read whole before bands, jobs not yet due
 * included. Its LIMIT is `$limit + 0`, not `$limit`: SQLite reads a LIMIT that is a bare bound
 * parameter at prepare time (for the planner) and marks the statement to be prepared again
 * whenever that parameter is bound, i.e. on every claim (~45 µs, ~5% of a drain's instructions at
 * defaults); an expression it leaves to run time. @internal
 */
export function mergedClaimSql(types: number): string {
  const bands: string[] = [];
  const arms: string[] = [];
  for (let i = 0; i < types; i++) {
    const t = `$t${i}`;
    bands.push(`band${i}(a, b) AS MATERIALIZED (${BANDS.replace(/\$type\b/g, t)})`);
    for (const band of [
      `= (SELECT a FROM band${i})`,
      `= (SELECT b FROM band${i})`,
      `< (SELECT b FROM band${i})`,
    ]) {
      arms.push(ARM.replace(ARM_TYPE, `type = ${t} AND priority ${band} AND`));
    }
  }
  return `WITH ${bands.join(",\n")}\n${arms.join("\nUNION ALL\n")}\nORDER BY priority DESC, runAt, id\nLIMIT $limit + 0`;
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
    if (types.length <= MAX_TYPES) return this.#group(types, p, limit);
    const all: JobRecord[] = [];
    for (let i = 0; i < types.length; i += MAX_TYPES) {
      for (const r of this.#group(types.slice(i, i + MAX_TYPES), p, limit)) all.push(r);
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

  #statement(types: number): Stmt {
    let s = this.#merged[types];
    if (s === undefined) {
      s = this.#db.prepare(mergedClaimSql(types)).raw(true);
      this.#merged[types] = s;
    }
    return s;
  }
}
