/**
 * The claim statements' literal-limit forms (postgres/literal-limit.ts): every form a claim of one
 * open type may run is rewritten whole (each `LIMIT $3` written in, the later parameters one
 * down), and a statement that uses `$3` otherwise is left as it is.
 */
import { describe, expect, it } from "vitest";
import { statements } from "../../src/store/generated/postgres-queries.js";
import { sqlFragments } from "../../src/store/postgres/columns.js";
import { fairStatements } from "../../src/store/postgres/fair.js";
import {
  HIDDEN,
  LITERAL_LIMITS,
  LiteralLimits,
  literalLimitText,
} from "../../src/store/postgres/literal-limit.js";
import { oneTypeStatements } from "../../src/store/postgres/one-type.js";
import { renderStatements } from "../../src/store/sql-template.js";

const sql = renderStatements(statements, sqlFragments("errand_unit", "errand_unit_wake"));
const one = oneTypeStatements(sql);
const fair = fairStatements(sql);

/** The parameter numbers a text references, sorted. */
function params(text: string): number[] {
  return [...new Set([...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
}

const count = (text: string, what: string) => text.split(what).length - 1;

describe("literalLimitText", () => {
  const forms: Record<string, string> = {
    "claim, one type": one.claim,
    "claimCapped, one type": one.claimCapped,
    "claimKeyed, one type": one.claimKeyed,
    "fair turn claim": fair.turn.claim,
    "fair turn claimCapped": fair.turn.claimCapped,
    "fair turn claimKeyed": fair.turn.claimKeyed,
    "fair rest claim": fair.rest.claim,
    "fair rest claimCapped": fair.rest.claimCapped,
    "fair rest claimKeyed": fair.rest.claimKeyed,
    "claim, merged": sql.claim,
  };
  for (const [name, text] of Object.entries(forms)) {
    it(`writes the limit into ${name} and numbers its parameters without a gap`, () => {
      const written = literalLimitText(text, 37)!;
      expect(written).not.toBeNull();
      expect(count(written, "LIMIT 37")).toBe(count(text, "LIMIT $3"));
      const before = params(text);
      expect(before.slice(0, 3)).toEqual([1, 2, 3]);
      expect(params(written)).toEqual(before.slice(0, -1));
      // The walk's values are read where no plan sees them: none is compared bare.
      expect(written).not.toMatch(/j\.run_at <= \$|j\.queue = \$|unnest\(\$\d+::text\[\]\)|j\.type = \(\$/);
      expect(written).toContain("j.run_at <= (SELECT $2::bigint)");
      // The rest of the text is untouched: undoing the renumbering and the hiding gives the
      // original back.
      let undone = written
        .replace(/\$(\d+)/g, (_, n: string) => (Number(n) >= 3 ? `$${Number(n) + 1}` : `$${n}`))
        .replaceAll("LIMIT 37", "LIMIT $3");
      for (const [pattern, hidden] of HIDDEN) undone = undone.replaceAll(hidden, pattern);
      expect(undone).toBe(text);
    });
  }

  it("leaves a statement that uses $3 other than as a LIMIT", () => {
    expect(one.claimCappedAlone).toContain("least($3,");
    expect(literalLimitText(one.claimCappedAlone, 5)).toBeNull();
    expect(literalLimitText("SELECT $1, $2 FROM t LIMIT $3 OFFSET $3", 5)).toBeNull();
  });

  it("leaves a statement without LIMIT $3, and does not take $30 for $3", () => {
    expect(literalLimitText("SELECT $1 FROM t LIMIT $2", 5)).toBeNull();
    expect(literalLimitText("SELECT $30 FROM t LIMIT $3", 5)).toBe("SELECT $29 FROM t LIMIT 5");
  });
});

describe("LiteralLimits", () => {
  const text = "SELECT $1, $2 FROM t WHERE a = $4 LIMIT $3";

  it("runs a limit's own text without its value", () => {
    const l = new LiteralLimits();
    expect(l.statement(text, ["q", 1, 9, "x"])).toEqual({
      text: "SELECT $1, $2 FROM t WHERE a = $3 LIMIT 9",
      values: ["q", 1, "x"],
    });
  });

  it(`keeps the first ${LITERAL_LIMITS} limits' texts and runs any other as written`, () => {
    const l = new LiteralLimits();
    for (let limit = 1; limit <= LITERAL_LIMITS; limit++) {
      expect(l.statement(text, ["q", 1, limit, "x"]).text).toContain(`LIMIT ${limit}`);
    }
    const values = ["q", 1, LITERAL_LIMITS + 1, "x"];
    expect(l.statement(text, values)).toEqual({ text, values });
    // A kept limit still has its text.
    expect(l.statement(text, ["q", 1, 1, "x"]).text).toContain("LIMIT 1");
  });

  it("runs a statement with no literal form as written", () => {
    const l = new LiteralLimits();
    const values = ["q", 1, 5];
    expect(l.statement(one.claimCappedAlone, values)).toEqual({ text: one.claimCappedAlone, values });
  });
});
