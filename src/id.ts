import { randomFillSync } from "node:crypto";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const POOL = Buffer.allocUnsafe(16 * 256);
let poolOffset = POOL.length;

/**
 * A UUIDv7 (RFC 9562): 48 bits of milliseconds, then random bits. Ids sort by creation time,
 * which keeps B-tree inserts at the right edge and makes `id` a useful tie-break in claim order.
 * Random bytes come from a pooled buffer: one `randomFillSync` per 256 ids.
 */
export function uuidv7(now: number): string {
  if (poolOffset + 10 > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const r = poolOffset;
  poolOffset += 10;
  const ms = Math.max(0, Math.trunc(now));
  const hi = Math.floor(ms / 0x1000000);
  const lo = ms % 0x1000000;
  return (
    HEX[(hi >>> 16) & 0xff]! +
    HEX[(hi >>> 8) & 0xff]! +
    HEX[hi & 0xff]! +
    HEX[(lo >>> 16) & 0xff]! +
    "-" +
    HEX[(lo >>> 8) & 0xff]! +
    HEX[lo & 0xff]! +
    "-" +
    HEX[0x70 | (POOL[r]! & 0x0f)]! +
    HEX[POOL[r + 1]!]! +
    "-" +
    HEX[0x80 | (POOL[r + 2]! & 0x3f)]! +
    HEX[POOL[r + 3]!]! +
    "-" +
    HEX[POOL[r + 4]!]! +
    HEX[POOL[r + 5]!]! +
    HEX[POOL[r + 6]!]! +
    HEX[POOL[r + 7]!]! +
    HEX[POOL[r + 8]!]! +
    HEX[POOL[r + 9]!]!
  );
}
