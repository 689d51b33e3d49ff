/** What one chunk of a maintenance unit did, and whether a next chunk may find more. */
export interface Chunk {
  done: number;
  more: boolean;
}

/**
 * Runs a maintenance unit chunk after chunk, each a store call of `limit` items at most (one short
 * write), until a chunk says there is no more to find or `chunks` have run: a backlog is cleared in
 * one pass, and no call holds the store long. Returns the sum of what the chunks did.
 */
export async function inChunks(
  chunk: () => Promise<Chunk>,
  chunks = Number.POSITIVE_INFINITY,
): Promise<number> {
  let total = 0;
  for (let n = 1; ; n++) {
    const { done, more } = await chunk();
    total += done;
    if (!more || n >= chunks) return total;
  }
}
