/**
 * Fair types in the PostgreSQL claim (KeyRules.fair; queries/fair.sql): the slots the usual claim
 * order gives a fair type (fairSlots) are filled by a variant of the claim statement that walks
 * the type's turned jobs in turn order (errand_job_fair), and the rest of the share by a variant
 * that leaves those jobs out. The variants are made from the claim statements themselves, so they
 * keep every other rule (caps, key rules, pauses, expiry, weight); each rewrite is checked once,
 * when the store opens (postgres-store.ts), and a claim statement that no longer reads as expected fails loudly.
 * @module
 */
import type { StatementName } from "../generated/postgres-queries.js";
import type { EnqueueResult, NewJob } from "../store.js";
import type { PgConnection, Queryable } from "./connection.js";

/** The claim statements a fair claim runs instead of claim, claimCapped, claimKeyed and keyPeek. */
export interface FairStatements {
  /** Turn order, one type (`$8` / keyPeek's `$4` hold exactly it), turned jobs only. */
  turn: { claim: string; claimCapped: string; claimKeyed: string; keyPeek: string };
  /** The usual order without the fair types' turned jobs (named by one more parameter). */
  rest: { claim: string; claimCapped: string; claimKeyed: string };
}

/** One rewrite of a statement's text; throws when the text no longer holds what it rewrites. */
function swap(text: string, name: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`claim.sql ${name} no longer holds "${from}" (postgres/fair.ts)`);
  return text.replaceAll(from, to);
}

/**
 * The turn-ordered variant of a claim statement whose candidates are read under alias `a` ("" for
 * none): turned jobs of the one type `typesParam` names, ordered by priority, then turn (the
 * candidates carry fair_turn, so the statement's later windows order by it too).
 */
function turnVariant(text: string, name: string, a: string, typesParam: string, selects = true): string {
  let t = selects
    ? swap(text, name, `${a}priority, ${a}run_at,`, `${a}priority, ${a}fair_turn, ${a}run_at,`)
    : text;
  t = swap(
    t,
    name,
    `${a}priority DESC, ${a}run_at, ${a}id`,
    `${a}priority DESC, ${a}fair_turn, ${a}run_at, ${a}id`,
  );
  for (const other of ["", "c."]) {
    if (other !== a) {
      t = t.replaceAll(
        `${other}priority DESC, ${other}run_at, ${other}id`,
        `${other}priority DESC, ${other}fair_turn, ${other}run_at, ${other}id`,
      );
    }
  }
  return swap(
    t,
    name,
    `(${typesParam}::text[] IS NULL OR ${a}type = ANY(${typesParam}::text[]))`,
    `${a}type = (${typesParam}::text[])[1] AND ${a}fair_turn IS NOT NULL`,
  );
}

/** The rest variant: the fair types' turned jobs (parameter `$n`) left out of the walk. */
function restVariant(text: string, name: string, a: string, n: number): string {
  const filter = `($9::text[] IS NULL OR ${a}type <> ALL($9::text[]))`;
  return swap(
    text,
    name,
    filter,
    `${filter}\n    AND (${a}fair_turn IS NULL OR ${a}type <> ALL($${n}::text[]))`,
  );
}

const made = new WeakMap<object, FairStatements>();

/** The fair variants of a store's statements, made once per store (see the module's comment). */
export function fairStatements(sql: Readonly<Record<StatementName, string>>): FairStatements {
  let f = made.get(sql);
  if (f === undefined) {
    f = makeFairStatements(sql);
    made.set(sql, f);
  }
  return f;
}

function makeFairStatements(sql: Readonly<Record<StatementName, string>>): FairStatements {
  return {
    turn: {
      claim: turnVariant(sql.claim, "claim", "", "$8"),
      claimCapped: turnVariant(sql.claimCapped, "claimCapped", "", "$8"),
      claimKeyed: turnVariant(sql.claimKeyed, "claimKeyed", "j.", "$8"),
      keyPeek: turnVariant(sql.keyPeek, "keyPeek", "j.", "$4", false),
    },
    rest: {
      claim: restVariant(sql.claim, "claim", "", 10),
      claimCapped: restVariant(sql.claimCapped, "claimCapped", "", 12),
      claimKeyed: restVariant(sql.claimKeyed, "claimKeyed", "j.", 17),
    },
  };
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
