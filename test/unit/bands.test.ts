/**
 * The claim statements' priority bands (postgres/bands.ts), made from their text: every walk of
 * the hot table in claim order becomes three (the type's highest priority, its next, the rest),
 * each locking walk's arms lock, and what the literal-limit forms rewrite still reads as they expect.
 */
import { describe, expect, it } from "vitest";
import { statements } from "../../src/store/generated/postgres-queries.js";
import { banded } from "../../src/store/postgres/bands.js";
import { sqlFragments } from "../../src/store/postgres/columns.js";
import { fairStatements } from "../../src/store/postgres/fair.js";
import { literalLimitText } from "../../src/store/postgres/literal-limit.js";
import { oneTypeStatements } from "../../src/store/postgres/one-type.js";
import { renderStatements } from "../../src/store/sql-template.js";

const sql = renderStatements(statements, sqlFragments("errand_unit", "errand_unit_wake"));
const one = oneTypeStatements(sql);
const fair = fairStatements(sql);
const count = (text: string, what: string) => text.split(what).length - 1;
const WALK = "ORDER BY j.priority DESC, j.run_at, j.id\n";
const LOCK = "FOR UPDATE OF j SKIP LOCKED";

describe("banded", () => {
  // [text, its walks in claim order, its locking walks among them when not all of its locks are]
  const forms: Record<string, [string, number, number?]> = {
    claim: [sql.claim, 2],
    claimCapped: [sql.claimCapped, 2],
    claimKeyed: [sql.claimKeyed, 2],
    keyPeek: [sql.keyPeek, 1],
    "claim, one type": [one.claim, 1],
    "claimCapped, one type": [one.claimCapped, 1],
    "claimKeyed, one type": [one.claimKeyed, 1],
    "claimCappedAlone, one type": [one.claimCappedAlone, 1],
    fairSlots: [sql.fairSlots, 1],
    "rateHeld (a claim's rate-held report)": [sql.rateHeld, 1],
    "fairClaimKeyed (its slots; its walks of turned jobs go by turn)": [sql.fairClaimKeyed, 1, 0],
    "fairClaimKeyed in the usual order (a keyed type's claim alone)": [fair.keyedAlone, 2],
    "a fair claim's rest step": [fair.rest.claim, 2],
    "a fair claim's rest step, capped": [fair.rest.claimCapped, 2],
    "a fair claim's rest step, keyed": [fair.rest.claimKeyed, 2],
  };
  for (const [name, [text, walks, locking = count(text, LOCK)]] of Object.entries(forms)) {
    it(`gives each of ${name}'s ${walks} walk(s) its three bands`, () => {
      expect(count(text, WALK)).toBe(walks);
      const b = banded(text);
      expect(count(b, "AS band_a\n")).toBe(walks);
      expect(count(b, "AS band_b\n")).toBe(walks);
      expect(count(b, "AS band_c\n")).toBe(walks);
      // Two bands of one priority, walked in run_at order; the rest in the walk's own order.
      expect(b.match(/\n *AND j\.type = (?:(?!\(SELECT)[^\n])* AND j\.priority = \(SELECT/g)).toHaveLength(
        2 * walks,
      );
      expect(b.match(/\n *AND j\.type = (?:(?!\(SELECT)[^\n])* AND j\.priority < \(SELECT/g)).toHaveLength(
        walks,
      );
      expect(count(b, "ORDER BY j.run_at, j.id\n")).toBe(2 * walks);
      expect(count(b, WALK)).toBe(walks);
      // A locking walk's every band locks the rows it yields, and no other row.
      expect(count(b, LOCK)).toBe(count(text, LOCK) + 2 * locking);
      // Banded once is banded: no walk is left to split.
      expect(banded(b)).toBe(b);
    });
  }

  it("leaves the fair turn variants, which walk turned jobs in turn order, as they are", () => {
    for (const text of [fair.turn.claim, fair.turn.claimCapped, fair.turn.claimKeyed, fair.turn.keyPeek]) {
      expect(banded(text)).toBe(text);
    }
  });

  it("keeps every literal-limit form of a one-type claim whole", () => {
    for (const text of [one.claim, one.claimCapped, one.claimKeyed]) {
      const written = literalLimitText(banded(text), 50);
      expect(written).not.toBeNull();
      expect(written).not.toContain("LIMIT $");
      // Each walk's three bands and its own LIMIT are written with the claim's limit.
      expect(count(written!, "LIMIT 50\n")).toBe(4);
      // The band probes' values are out of the planner's sight, as the walk's are.
      expect(written).not.toContain("j.queue = $1 AND");
    }
  });
});
