import { describe, expect, it } from "vitest";
import { uuidv7 } from "../../src/id.js";

describe("uuidv7", () => {
  it("is a version-7, variant-1 UUID carrying the millisecond timestamp", () => {
    const now = Date.UTC(2026, 10, 22, 12, 0, 0, 123);
    const id = uuidv7(now);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(now);
  });

  it("sorts by time across milliseconds and does not repeat", () => {
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(1_700_000_000_000 + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 10; i < ids.length; i += 10) expect(ids[i - 10]! < ids[i]!).toBe(true);
  });

  it("counts up within one millisecond, so one batch's ids sort in the order they were made", () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7(1_800_000_000_000));
    for (let i = 1; i < ids.length; i++) expect(ids[i - 1]! < ids[i]!).toBe(true);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("carries the count across bytes, every id as the whole counter formats it", () => {
    const ids = Array.from({ length: 70_000 }, () => uuidv7(1_900_000_000_000));
    for (let i = 1; i < ids.length; i++) expect(ids[i - 1]! < ids[i]!).toBe(true);
    // Consecutive ids differ by one in the 62-bit counter (its last 16 hex digits but the dash).
    const counter = (id: string) => BigInt(`0x${id.slice(19).replace("-", "")}`);
    for (let i = 1; i < ids.length; i++) expect(counter(ids[i]!) - counter(ids[i - 1]!)).toBe(1n);
  });
});
