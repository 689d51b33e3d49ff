/**
 * Claim statements with their row limit written into the text, so PostgreSQL keeps one plan.
 *
 * A prepared statement is planned for its parameters (a custom plan) five times; after that
 * PostgreSQL keeps a generic plan, made once, only if its estimated cost is no higher than the
 * custom plans' average (plancache.c, choose_custom_plan). A generic plan cannot know `LIMIT $3`
 * and assumes the walk's first 10% of rows are wanted (planner.c, preprocess_limit): for a claim
 * of 50 from 20,000 pending jobs it costs 1,154 against the custom plan's 227, so every claim was
 * planned again, the same plan each time (~0.4–0.7 ms a claim, 12–14% of the server's CPU in a
 * drain at concurrency 50: bench/RESULTS.md, session 21). With `LIMIT 50` in the text the generic
 * plan costs what the custom one does, and PostgreSQL keeps it after the fifth call, provided the
 * custom plans see no other value the generic one does not ({@link HIDDEN}).
 *
 * Each text is a prepared statement of its own on every pooled connection (~265 KB of a backend's
 * memory for a claim statement, measured with pg_backend_memory_contexts), so only the first
 * {@link LITERAL_LIMITS} limits a statement is run with get a text of their own; a claim of any
 * other limit runs the statement as written, planned per call as before. A worker's claims take
 * few distinct limits (its concurrency, the room its low-water mark leaves), so the first few are
 * the ones it keeps using.
 * @module
 */
import { perStore } from "./per-store.js";

/** Distinct limits per statement that get a text of their own. */
export const LITERAL_LIMITS = 8;

/** The parameter holding the row limit in every claim statement (queries/claim.sql). */
const LIMIT_PARAM = 3;

/** `$3` itself, not the start of `$30`. */
const LIMIT_REF = new RegExp(`\\$${LIMIT_PARAM}(?!\\d)`);
/** `LIMIT $3`, the only use of `$3` a statement may have for this rewrite. */
const LIMIT_CLAUSE = new RegExp(`LIMIT \\$${LIMIT_PARAM}(?!\\d)`, "g");

/**
 * The claim walk's other values, read through a one-row subquery (an InitPlan: evaluated once per
 * statement, and still an index condition) that no plan sees into. A custom plan would otherwise
 * cost the walk with them and a generic plan without: the claim's `now` keeps every due row to
 * the one (`run_at <= $2`) and a third of them to the other, the merged walk's open types are
 * three to the one and ten to the other, a large queue or type is a large share of the table to
 * the one and an average share to the other. Each made the custom plans look cheaper and
 * PostgreSQL plan every claim again; read so, both cost the walk alike and the generic plan,
 * which is the plan either way, is kept. [pattern, its replacement]
 * @internal exported for its test
 */
export const HIDDEN: ReadonlyArray<readonly [string, string]> = [
  ["j.queue = $1 AND", "j.queue = (SELECT $1::text) AND"],
  ["j.run_at <= $2", "j.run_at <= (SELECT $2::bigint)"],
  ["unnest($8::text[])", "unnest((SELECT $8::text[]))"],
  ["j.type = ($8::text[])[1]", "j.type = (SELECT ($8::text[])[1])"],
];

/**
 * `text` with every `LIMIT $3` written as `LIMIT limit` and the parameters after `$3` renumbered
 * one down (its values then leave out the third), and the walk's other values read as
 * {@link HIDDEN} says; null when `$3` is used other than as a `LIMIT` (claimCappedAlone's
 * `least($3, …)`: its generic plan cannot know that limit either).
 */
export function literalLimitText(text: string, limit: number): string | null {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error(`literalLimitText: bad limit ${limit}`);
  let written = text.replace(LIMIT_CLAUSE, `LIMIT ${limit}`);
  if (written === text || LIMIT_REF.test(written)) return null;
  for (const [pattern, hidden] of HIDDEN) written = written.replaceAll(pattern, hidden);
  return written.replace(/\$(\d+)/g, (ref, n: string) => {
    const i = Number(n);
    return i > LIMIT_PARAM ? `$${i - 1}` : ref;
  });
}

/**
 * The texts a store's claim statements run with, per limit: at most {@link LITERAL_LIMITS} per
 * statement, first come first kept. One per store (its statements name its schema).
 */
export class LiteralLimits {
  /** Per statement text: its texts by limit, or null where the statement has no such form. */
  readonly #texts = new Map<string, Map<number, string> | null>();

  /**
   * The statement and values to run for `text` with `values` (its `$3`, `values[2]`, the limit):
   * its literal-limit form when it has one for that limit, else `text` and `values` as given.
   */
  statement(text: string, values: unknown[]): { text: string; values: unknown[] } {
    const limit = values[LIMIT_PARAM - 1];
    if (typeof limit !== "number") return { text, values };
    let forms = this.#texts.get(text);
    if (forms === undefined) {
      forms = literalLimitText(text, 1) === null ? null : new Map();
      this.#texts.set(text, forms);
    }
    if (forms === null) return { text, values };
    let written = forms.get(limit);
    if (written === undefined) {
      if (forms.size >= LITERAL_LIMITS) return { text, values };
      written = literalLimitText(text, limit)!;
      forms.set(limit, written);
    }
    const rest = values.slice();
    rest.splice(LIMIT_PARAM - 1, 1);
    return { text: written, values: rest };
  }
}

/** The {@link LiteralLimits} of the store whose statements are `sql` (made on first use). */
export const literalLimits = perStore(() => new LiteralLimits());
