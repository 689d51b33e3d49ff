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
import { perStore } from "./per-store.js";

/** The claim statements a share with one open type runs instead of claim.sql's merged ones. */
export interface OneTypeStatements {
  claim: string;
  claimCapped: string;
  claimKeyed: string;
  /**
   * claimCapped's one-type form for a claim of one capped type on its own (claim.ts
   * claimCappedAlone): its room counted in the statement, by capRoom, before any row is locked.
   */
  claimCappedAlone: string;
}

/** One rewrite of a statement's text; throws when the text no longer holds what it rewrites. */
function swapOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) {
    throw new Error(`claim.sql claimCapped no longer holds "${from}" once (postgres/one-type.ts)`);
  }
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * claimCappedAlone from claimCapped's one-type form and capRoom: `cap` (MATERIALIZED: the locks
 * and the count run once) limits the walk, so the cap lock is taken and the room counted before
 * the first row is locked, as lockCaps and countActive come first in a claim's transaction, and a
 * type at its cap locks no row at all. `$9` is the cap, `$10` CAP_LOCK; the room also stands as
 * the type's room in `ranked`.
 */
function cappedAlone(oneCapped: string, capRoom: string): string {
  let t = swapOnce(
    oneCapped,
    "WITH cand AS (",
    `WITH cap AS MATERIALIZED (\n  ${capRoom.trim()}\n), cand AS (`,
  );
  t = swapOnce(
    t,
    "    LIMIT $3\n    FOR UPDATE OF j SKIP LOCKED",
    "    LIMIT least($3, (SELECT greatest(room, 0) FROM cap))\n    FOR UPDATE OF j SKIP LOCKED",
  );
  return swapOnce(
    t,
    "LEFT JOIN unnest($9::text[], $10::bigint[]) AS r(type, room) ON r.type = c.type",
    "LEFT JOIN (SELECT ($8::text[])[1] AS type, room FROM cap) AS r ON r.type = c.type",
  );
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

/** The one-type forms of a store's claim statements, made once per store. */
export const oneTypeStatements = perStore((sql): OneTypeStatements => {
  const claimCapped = oneType(sql.claimCapped, "claimCapped");
  return {
    claim: oneType(sql.claim, "claim"),
    claimCapped,
    claimKeyed: oneType(sql.claimKeyed, "claimKeyed"),
    claimCappedAlone: cappedAlone(claimCapped, sql.capRoom),
  };
});
