/**
 * The one-type form of the claim statements. queries/claim.sql writes claim, claimCapped and
 * claimKeyed for any number of open types: an unlocked peek at each type's first jobs, merged,
 * then a locking walk per type of as many jobs as the peek gave it. With exactly one open type
 * (the usual worker of one type, a fair type's turn, a share whose other types are held) the peek
 * is wasted work, so this form keeps only the locking walk, of `$3` jobs of the type `$8[1]`: the
 * one index walk of the claim before types led the claim index. Made from claim.sql's own text,
 * once per store, and checked when the store opens (postgres-store.ts), like fair.ts's variants.
 * @module
 */
import type { StatementName } from "../generated/postgres-queries.js";

/** The claim statements a share with one open type runs instead of claim.sql's merged ones. */
export interface OneTypeStatements {
  claim: string;
  claimCapped: string;
  claimKeyed: string;
}

/**
 * claim.sql's merged walk: the peek, its count per type, and the locking walk per type (the
 * capture), limited in all to `$3`.
 */
const MERGED =
  /peek AS \(\n[\s\S]*?\n\), share AS \(\n[\s\S]*?\n\), cand AS \(\n {2}SELECT c\.\* FROM share s\n {2}CROSS JOIN LATERAL \(\n([\s\S]*?)\n {2}\) AS c\n {2}LIMIT \$3\n\)/;

/** The line of the locking walk that names its type, in the merged form and in this one. */
const WALKED = "AND j.type = s.type\n";
/** The line of the one-type form's walk that names its type. */
export const ONE_TYPE = "AND j.type = ($8::text[])[1]\n";

/** The one-type form of a merged claim statement; throws when the text no longer reads as expected. */
export function oneType(text: string, name: string): string {
  const m = MERGED.exec(text);
  if (m === null || !m[1]!.includes(WALKED) || !m[1]!.includes("LIMIT s.n\n")) {
    throw new Error(`claim.sql ${name} no longer holds the merged walk (postgres/one-type.ts)`);
  }
  const walk = m[1]!.replace(WALKED, ONE_TYPE).replace("LIMIT s.n\n", "LIMIT $3\n");
  // A function, so the `$n` of the walk are not read as references to the match.
  return text.replace(MERGED, () => `cand AS (\n${walk}\n)`);
}

const made = new WeakMap<object, OneTypeStatements>();

/** The one-type forms of a store's claim statements, made once per store. */
export function oneTypeStatements(sql: Readonly<Record<StatementName, string>>): OneTypeStatements {
  let o = made.get(sql);
  if (o === undefined) {
    o = {
      claim: oneType(sql.claim, "claim"),
      claimCapped: oneType(sql.claimCapped, "claimCapped"),
      claimKeyed: oneType(sql.claimKeyed, "claimKeyed"),
    };
    made.set(sql, o);
  }
  return o;
}
