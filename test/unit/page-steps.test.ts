/**
 * Pages read in steps (server/page-size.ts `readInSteps`): each step from the last one's cursor,
 * none past what one answer carries, and a step that would pass it read again, shorter, so the
 * page's cursor is always the store's own.
 */
import { describe, expect, it } from "vitest";
import { MAX_PAGE_CHARS, type Page, readInSteps } from "../../src/server/page-size.js";

/**
 * A store of `sizes.length` items (each a string of about its size), paged newest first by a
 * cursor the store makes (`@` and the index of the next item, as an opaque list cursor is): a
 * page is short only at the end, or at `stretch` items when a filtered list's scan ends early.
 */
function fakeList(sizes: number[], stretch = Number.POSITIVE_INFINITY) {
  const reads: Array<[number, string | undefined]> = [];
  const read = async (limit: number, cursor: string | undefined): Promise<Page<string>> => {
    reads.push([limit, cursor]);
    const from = cursor === undefined ? 0 : Number(cursor.slice(1));
    const to = Math.min(sizes.length, from + Math.min(limit, stretch));
    const items = sizes.slice(from, to).map((n, i) => `${from + i}:`.padEnd(n, "x"));
    return { items, nextCursor: to >= sizes.length ? null : `@${to}` };
  };
  return { reads, read };
}

const ids = (page: Page<string>) => page.items.map((s) => Number(s.split(":")[0]));

describe("readInSteps", () => {
  it("reads a page in steps, each from the last one's cursor", async () => {
    const s = fakeList(Array(20).fill(10));
    const page = await readInSteps(10, 4, s.read);
    expect(ids(page)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(page.nextCursor).toBe("@10");
    expect(s.reads).toEqual([
      [4, undefined],
      [4, "@4"],
      [2, "@8"],
    ]);
  });

  it("ends at the end, and goes on from a cursor given", async () => {
    const s = fakeList(Array(6).fill(10));
    const page = await readInSteps(50, 4, s.read, "@1");
    expect(ids(page)).toEqual([1, 2, 3, 4, 5]);
    expect(page.nextCursor).toBeNull();
  });

  it("stops at a step that came back short with a cursor: a filtered list's stretch ended", async () => {
    const s = fakeList(Array(20).fill(10), 3);
    const page = await readInSteps(10, 4, s.read);
    expect(ids(page)).toEqual([0, 1, 2]);
    expect(page.nextCursor).toBe("@3");
    expect(s.reads).toHaveLength(1);
  });

  it("reads a step that would pass the answer's bound again, shorter, for the store's own cursor", async () => {
    // Three fit (each string is two quotes more in JSON), four do not.
    const s = fakeList(Array(10).fill(Math.floor(MAX_PAGE_CHARS / 3) - 2));
    const page = await readInSteps(10, 2, s.read);
    expect(ids(page)).toEqual([0, 1, 2]);
    expect(page.nextCursor).toBe("@3");
    expect(s.reads).toEqual([
      [2, undefined],
      [2, "@2"],
      [1, "@2"],
    ]);
  });

  it("ends where a step began when none of it fits", async () => {
    const s = fakeList(Array(10).fill(Math.floor(MAX_PAGE_CHARS / 2) - 2));
    const page = await readInSteps(10, 2, s.read);
    expect(ids(page)).toEqual([0, 1]);
    expect(page.nextCursor).toBe("@2");
    expect(s.reads).toEqual([
      [2, undefined],
      [2, "@2"],
    ]);
  });

  it("ends against a store that answers more than asked", async () => {
    const big = "x".repeat(Math.floor(MAX_PAGE_CHARS / 3));
    const reads: number[] = [];
    const greedy = async (limit: number): Promise<Page<string>> => {
      reads.push(limit);
      return { items: Array(10).fill(big), nextCursor: "@10" };
    };
    const page = await readInSteps(10, 10, greedy);
    expect(page.items.length).toBeLessThanOrEqual(3);
    expect(reads.length).toBeLessThanOrEqual(3);
  });

  it("answers an item larger than the bound alone rather than nothing", async () => {
    const s = fakeList([2 * MAX_PAGE_CHARS, 10, 10]);
    const page = await readInSteps(10, 4, s.read);
    expect(ids(page)).toEqual([0]);
    expect(page.nextCursor).toBe("@1");
  });
});
