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
 * where to go on: a page's `nextCursor`; the jobs a lease took beyond it go back unspent.
 */
export const MAX_PAGE_CHARS = 32 * 1024 * 1024;

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

/**
 * A page cut to what one answer can carry: `items` whole when they fit, else as many as fit with
 * `nextCursor` the cursor of the last kept (`cursorOf`: a page keyed by job id or by name).
 */
export function pageWithin<T>(
  items: T[],
  nextCursor: string | null,
  cursorOf: (item: T) => string,
): { items: T[]; nextCursor: string | null } {
  const fits = itemsWithin(items);
  if (fits === items.length) return { items, nextCursor };
  const kept = items.slice(0, fits);
  return { items: kept, nextCursor: cursorOf(kept[fits - 1]!) };
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
