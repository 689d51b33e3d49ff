import { describe, expect, it } from "vitest";
import { type ClosedRates, MAX_CLOSED_RATES, recordClosed } from "../../src/store/sqlite/key-gate.js";

const RULE = { limit: 1, periodMs: 60_000 };

describe("SQLite's closed rate-limited types (ClosedRates)", () => {
  it("holds at most MAX_CLOSED_RATES types: the ones already open go first, then the oldest", () => {
    const closed: ClosedRates = new Map();
    const now = 1_000_000;
    // Types closed and since deleted: never claimed again, so no claim finds their entry past.
    for (let i = 0; i < MAX_CLOSED_RATES; i++)
      recordClosed(closed, `gone-${i}`, RULE, i % 2 === 0 ? now - 1 : now + 1, now - 60_000);
    expect(closed.size).toBe(MAX_CLOSED_RATES);
    recordClosed(closed, "fresh", RULE, now + 60_000, now);
    // Every entry whose window had opened by now went; the rest stay, and the new one is in.
    expect(closed.size).toBe(MAX_CLOSED_RATES / 2 + 1);
    expect([...closed.values()].every((e) => e.until > now)).toBe(true);
    expect(closed.get("fresh")).toEqual({ ...RULE, until: now + 60_000 });

    // All still closed: the oldest goes, one for one.
    const full: ClosedRates = new Map();
    for (let i = 0; i < MAX_CLOSED_RATES; i++) recordClosed(full, `t-${i}`, RULE, now + 1_000, now);
    recordClosed(full, "newest", RULE, now + 1_000, now);
    expect(full.size).toBe(MAX_CLOSED_RATES);
    expect(full.has("t-0")).toBe(false);
    expect(full.has("t-1")).toBe(true);
    expect(full.has("newest")).toBe(true);
    // A type recorded again moves to the newest place rather than taking a second one.
    recordClosed(full, "t-1", RULE, now + 2_000, now);
    expect(full.size).toBe(MAX_CLOSED_RATES);
    expect([...full.keys()].at(-1)).toBe("t-1");
  });
});
