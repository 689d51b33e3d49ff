/**
 * How big an answer holding many jobs (or schedules) may grow: a page, a lease.
 * @module
 */

/**
 * The most characters of JSON a page of jobs or schedules, or a lease's jobs, is answered with:
 * 32 MiB. `limit` bounds their number, but each can carry up to the queue's `maxPayloadBytes` in
 * its payload, result and checkpoint, and an error history besides: 1,000 jobs of 1 MB payloads
 * are a gigabyte of text, past what V8 can hold as one string. Such an answer could never be
 * sent, so it was a 500, and a lease's jobs stayed leased to no one until their leases ran out.
 * An answer stops before the item that would take it past this (keeping at least one), and says
 * where to go on: a page's `nextCursor`; the jobs a lease took beyond it go back unspent. Pages
 * and leases are read in steps ({@link READ_CHARS}), so none reads far past it first.
 */
export const MAX_PAGE_CHARS = 32 * 1024 * 1024;

/**
 * The most characters one read of a page, or one claim of a lease, may bring into memory with every
 * item at its bounds: four answers' worth. The store reads an item whole (parsed) before the answer
 * is measured, so a read of `limit` items as large as their bounds allow (1,000 jobs of 1 MB
 * payloads and results: gigabytes) would run the server out of heap to answer 32 MiB of it.
 */
export const READ_CHARS = 4 * MAX_PAGE_CHARS;

/** How many items one read takes when each may be `itemChars` long at its bounds, at least 1. */
export function itemsPerRead(itemChars: number): number {
  return Math.max(1, Math.floor(READ_CHARS / itemChars));
}

/**
 * How many of `items`, from the first, fit in `budget` characters of JSON, at least one (an item
 * alone is as big as its own bounds let it be). Each item is serialised to be measured: a few
 * microseconds for a usual job, against the tens an HTTP answer costs it anyway.
 */
export function itemsWithin(items: readonly unknown[], budget = MAX_PAGE_CHARS): number {
  let chars = 0;
  for (let i = 0; i < items.length; i++) {
    chars += JSON.stringify(items[i])?.length ?? 0;
    if (chars > budget && i > 0) return i;
  }
  return items.length;
}

/** A page of items, and where the next goes on from (null: none). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A page of up to `limit` items read in steps of at most `step` (`itemsPerRead` of an item's size
 * at its bounds), each from the last one's `nextCursor`, until `limit`, the end, a step that came
 * back short (a filtered list reads a bounded stretch: it goes on in the next page), or
 * MAX_PAGE_CHARS. A step that would take the page past that is read again, shorter, so that the
 * page's `nextCursor` is always the store's own for where it stops (a list's cursor is not an
 * item's id); each such read is shorter, so it ends. The page holds at least one item when there
 * is one.
 */
export async function readInSteps<T>(
  limit: number,
  step: number,
  read: (limit: number, cursor: string | undefined) => Promise<Page<T>>,
  cursor?: string,
): Promise<Page<T>> {
  const items: T[] = [];
  let chars = 0;
  /** How many of `page`, from the first, fit in what the page has left, and their characters. */
  const fitting = (page: Page<T>) => {
    let n = 0;
    let size = 0;
    for (const item of page.items) {
      const next = size + (JSON.stringify(item)?.length ?? 0);
      if (chars + next > MAX_PAGE_CHARS && (n > 0 || items.length > 0)) break;
      size = next;
      n++;
    }
    return { n, size };
  };
  for (;;) {
    const ask = Math.min(step, limit - items.length);
    // Never more than asked, whatever a store answers: each read again is then shorter, so it ends.
    const cut = (p: Page<T>, n: number) => (p.items.length > n ? { ...p, items: p.items.slice(0, n) } : p);
    let page = cut(await read(ask, cursor), ask);
    let fits = fitting(page);
    while (fits.n < page.items.length) {
      // Nothing more fits: the page ends where this step began.
      if (fits.n === 0) return { items, nextCursor: cursor ?? null };
      page = cut(await read(fits.n, cursor), fits.n);
      fits = fitting(page);
    }
    items.push(...page.items);
    chars += fits.size;
    if (page.nextCursor === null || items.length >= limit || page.items.length < ask) {
      return { items, nextCursor: page.nextCursor };
    }
    cursor = page.nextCursor;
  }
}

/**
 * `serialize()`'s text, or null when it is longer than `budget` characters or too long for V8 to
 * make at all (a RangeError).
 */
export function serialized(serialize: () => string, budget = MAX_PAGE_CHARS): string | null {
  try {
    const text = serialize();
    return text.length <= budget ? text : null;
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}
