/**
 * Fair types in the PostgreSQL claim (KeyRules.fair; queries/fair.sql): the slots the usual claim
 * order gives a fair type (fairSlots) are filled by a variant of the claim statement that walks
 * the type's turned jobs in turn order (errand_job_fair), and the rest of the share by a variant
 * that leaves those jobs out (its peek keeps, of a fair type's first jobs, those without a turn, so
 * a fair type's backlog of turned jobs is not read to its end). The variants are made from the
 * claim statements themselves, so they keep every other rule (caps, key rules, pauses, expiry,
 * weight); each rewrite is checked once, when the store opens (postgres-store.ts), and a claim
 * statement that no longer reads as expected fails loudly.
 * @module
 */
import type { StatementName } from "../generated/postgres-queries.js";
import type { EnqueueResult, NewJob } from "../store.js";
import { type PgConnection, type Queryable, sqlTextArray } from "./connection.js";
import { ONE_TYPE, oneTypeStatements } from "./one-type.js";
import { perStore } from "./per-store.js";

/** The claim statements a fair claim runs instead of claim, claimCapped, claimKeyed and keyPeek. */
export interface FairStatements {
  /** Turn order, one type (`$8` / keyPeek's `$4` hold exactly it), turned jobs only. */
  turn: {
    claim: string;
    claimCapped: string;
    claimKeyed: string;
    keyPeek: string;
  };
  /** The usual order without the fair types' turned jobs (named by one more parameter). */
  rest: { claim: string; claimCapped: string; claimKeyed: string };
  /** fairClaimKeyed in the usual order, for a keyed type that is not fair (see usualKeyed). */
  keyedAlone: string;
}

/** One rewrite of a statement's text; throws when the text no longer holds what it rewrites. */
function swap(text: string, name: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`claim.sql ${name} no longer holds "${from}" (postgres/fair.ts)`);
  return text.replaceAll(from, to);
}

/** The aliases under which claim.sql's statements order rows in claim order. */
const ORDER_ALIASES = ["", "c.", "j.", "w."];

/**
 * The turn-ordered variant of a claim statement: the turned jobs of its one open type, ordered by
 * priority, then turn (errand_job_fair serves the walk; the candidates carry fair_turn, so the
 * statement's later windows order by it too). `walked` is the line that names the walked type:
 * the one-type claim's (one-type.ts), or keyPeek's.
 */
function turnVariant(text: string, name: string, walked: string): string {
  let t =
    walked === ONE_TYPE
      ? swap(text, name, "j.priority, j.run_at, least(", "j.priority, j.fair_turn, j.run_at, least(")
      : text;
  t = swap(t, name, "j.priority DESC, j.run_at, j.id", "j.priority DESC, j.fair_turn, j.run_at, j.id");
  for (const a of ORDER_ALIASES) {
    t = t.replaceAll(
      `${a}priority DESC, ${a}run_at, ${a}id`,
      `${a}priority DESC, ${a}fair_turn, ${a}run_at, ${a}id`,
    );
  }
  return swap(t, name, walked, `${walked.trimEnd()} AND j.fair_turn IS NOT NULL\n`);
}

/**
 * The rest variant (of the merged form, whatever the number of open types): the fair types'
 * turned jobs (parameter `$n`) left out. The peek keeps, of a fair type's first `$3` jobs, those
 * without a turn, and its locking walk takes as many jobs without a turn as the peek counted; so
 * a fair type's backlog of turned jobs is never read to its end. A fair type's job without a turn
 * (enqueued before the type was fair, or retried by hand from dead) is so taken once it is among
 * the type's first `$3` ready jobs.
 */
function restVariant(text: string, name: string, n: number): string {
  const left = (a: string) => `(${a}.fair_turn IS NULL OR ${a}.type <> ALL($${n}::text[]))`;
  const t = swap(
    text,
    name,
    "  ) AS c\n  ORDER BY c.priority DESC",
    `  ) AS c\n  WHERE ${left("c")}\n  ORDER BY c.priority DESC`,
  );
  return swap(t, name, "AND j.type = s.type\n", `AND j.type = s.type AND ${left("j")}\n`);
}

/** The fair variants of a store's statements, made once per store (see the module's comment). */
export const fairStatements = perStore(makeFairStatements);

function makeFairStatements(sql: Readonly<Record<StatementName, string>>): FairStatements {
  const one = oneTypeStatements(sql);
  return {
    turn: {
      claim: turnVariant(one.claim, "claim", ONE_TYPE),
      claimCapped: turnVariant(one.claimCapped, "claimCapped", ONE_TYPE),
      claimKeyed: turnVariant(one.claimKeyed, "claimKeyed", ONE_TYPE),
      keyPeek: turnVariant(sql.keyPeek, "keyPeek", "AND j.type = t.type\n"),
    },
    rest: {
      claim: restVariant(sql.claim, "claim", 9),
      claimCapped: restVariant(sql.claimCapped, "claimCapped", 11),
      claimKeyed: restVariant(sql.claimKeyed, "claimKeyed", 16),
    },
    keyedAlone: usualKeyed(sql.fairClaimKeyed),
  };
}

/**
 * fairClaimKeyed's form in the usual claim order, for a claim of one keyed type that is not fair
 * (claim.ts claimKeyedAlone): the same statement without turns, slots or a turn to move (its
 * `$14` is always false). The slots become `$3` (every one of the first `$3` jobs is the claim's to
 * take), so the caller never looks for jobs without a turn. Made once per store, checked at open.
 */
function usualKeyed(text: string): string {
  const name = "fairClaimKeyed";
  const SLOTS = /WITH slots AS \(\n[\s\S]*?\n\), seen AS \(/;
  if (!SLOTS.test(text))
    throw new Error(`fair.sql ${name} no longer starts with its slots (postgres/fair.ts)`);
  let t = text.replace(SLOTS, "WITH seen AS (");
  t = swap(t, name, "LIMIT (SELECT n FROM slots)", "LIMIT $3");
  t = swap(t, name, "(SELECT n FROM slots),", "$3::integer,");
  t = swap(t, name, " AND j.fair_turn IS NOT NULL", "");
  for (const a of ORDER_ALIASES) {
    t = t.replaceAll(`${a}priority DESC, ${a}fair_turn, ${a}run_at`, `${a}priority DESC, ${a}run_at`);
  }
  if (t.includes("FROM slots") || t.includes("fair_turn IS NOT NULL") || /DESC, (\w+\.)?fair_turn/.test(t)) {
    throw new Error(`fair.sql ${name}: its usual-order form still names turns (postgres/fair.ts)`);
  }
  return t;
}

/**
 * fairAdvance over the ids a claim took, as a statement without parameters, for the claim to run
 * with its COMMIT (PgConnection.atCommit): it must come last (it locks the type's turn row, and
 * nothing after it in the claim may wait for a lock), so it costs no round trip of its own.
 */
export function fairAdvanceText(
  sql: Readonly<Record<StatementName, string>>,
  ids: readonly string[],
): string {
  return swap(sql.fairAdvance, "fairAdvance", "$1::text[]", sqlTextArray(ids));
}

/** Gives the inserted jobs of fair types their turns (fairAssign), inside the insert's transaction. */
export async function assignTurns(
  connection: PgConnection,
  sql: Readonly<Record<StatementName, string>>,
  db: Queryable,
  jobs: readonly NewJob[],
  results: readonly EnqueueResult[],
  fairTypes: readonly string[],
): Promise<void> {
  const ids: string[] = [];
  const types: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i]!;
    // A duplicate (or a debounced job) keeps the turn it has.
    if (!results[i]!.inserted || !fairTypes.includes(j.type)) continue;
    ids.push(j.id);
    types.push(j.type);
    keys.push(j.key ?? "");
  }
  if (ids.length > 0) await connection.query(db, sql.fairAssign, [ids, types, keys]);
}
