import { describe, expect, it } from "vitest";
import { SlotMap } from "../../src/slot-map.js";

describe("SlotMap", () => {
  it("gets, replaces and deletes by key, and lists values in insertion order", () => {
    const m = new SlotMap<string, { n: number }>();
    const a = { n: 1 };
    const b = { n: 2 };
    m.set("a", a);
    m.set("b", b);
    expect(m.size).toBe(2);
    expect(m.get("a")).toBe(a);
    expect(m.values()).toEqual([a, b]);

    const a2 = { n: 3 };
    m.set("a", a2);
    expect(m.get("a")).toBe(a2);
    expect(m.values()).toEqual([a2, b]);
    expect(m.size).toBe(2);

    m.delete("a");
    m.delete("missing");
    expect(m.get("a")).toBeUndefined();
    expect(m.size).toBe(1);
    expect(m.values()).toEqual([b]);
  });

  it("keeps working through the churn that makes a Map rehash", () => {
    const m = new SlotMap<number, string>();
    for (let i = 0; i < 10_000; i++) {
      m.set(i, `v${i}`);
      if (i >= 50) m.delete(i - 50);
    }
    expect(m.size).toBe(50);
    expect(m.get(9_950)).toBe("v9950");
    expect(m.get(9_949)).toBeUndefined();
    expect(m.values()).toEqual(Array.from({ length: 50 }, (_, k) => `v${9_950 + k}`));
  });

  it("clear() empties it", () => {
    const m = new SlotMap<string, number>();
    m.set("x", 1);
    m.set("y", 2);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.get("x")).toBeUndefined();
    expect(m.values()).toEqual([]);
  });
});
