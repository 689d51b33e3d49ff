import { randomFillSync } from "node:crypto";
import { hostname } from "node:os";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const POOL = Buffer.allocUnsafe(16 * 256);
let poolOffset = POOL.length;
/** The random bits of the last id: fresh for each new millisecond, counted up within one. */
const last = Buffer.alloc(10);
let lastMs = -1;
let prefix = "";
/** The last id but its final two hex digits, for ids counted up in the same millisecond. */
let head = "";

/**
 * A UUIDv7 (RFC 9562): 48 bits of milliseconds, then random bits. Ids sort by creation time,
 * which keeps B-tree inserts at the right edge and makes `id` a useful tie-break in claim order.
 * Within one millisecond a process's ids count up from a random start (RFC 9562 §6.2, method 2),
 * so the jobs of one `enqueueMany` (all made in the same millisecond) sort, and run, in the order
 * given; their rows and index entries are appended rather than scattered, which makes both bulk
 * inserts and batch claims cheaper. Random bytes come from a pooled buffer.
 */
export function uuidv7(now: number): string {
  const ms = Math.max(0, Math.trunc(now));
  if (ms !== lastMs) {
    if (poolOffset + 10 > POOL.length) {
      randomFillSync(POOL);
      poolOffset = 0;
    }
    POOL.copy(last, 0, poolOffset, poolOffset + 10);
    poolOffset += 10;
    // Byte 2 carries the variant (10xxxxxx) and starts the 62-bit counter in its lower half, so
    // counting up never reaches the variant bits.
    last[2] = 0x80 | (last[2]! & 0x1f);
    lastMs = ms;
    const hi = Math.floor(ms / 0x1000000);
    const lo = ms % 0x1000000;
    // Within a millisecond only the counter changes: format the rest once.
    prefix = `${HEX[(hi >>> 16) & 0xff]}${HEX[(hi >>> 8) & 0xff]}${HEX[hi & 0xff]}${HEX[(lo >>> 16) & 0xff]}-${HEX[(lo >>> 8) & 0xff]}${HEX[lo & 0xff]}-${HEX[0x70 | (last[0]! & 0x0f)]}${HEX[last[1]!]}-`;
    head = headOf();
  } else if (last[9] === 0xff) {
    let i = 9;
    while (i > 2 && last[i] === 0xff) last[i--] = 0;
    last[i] = last[i]! + 1;
    head = headOf();
  } else {
    // Only the last byte changes, 255 times in 256: the rest of the id is `head` already.
    last[9] = last[9]! + 1;
  }
  return head + HEX[last[9]!]!;
}

/** The id but its last byte (two hex digits): the time, the version and the counter's bytes 2 to 8. */
function headOf(): string {
  return `${prefix}${HEX[last[2]!]}${HEX[last[3]!]}-${HEX[last[4]!]}${HEX[last[5]!]}${HEX[last[6]!]}${HEX[last[7]!]}${HEX[last[8]!]}`;
}

let processWorkerId: string | undefined;
/** `host:pid:random`, so `job.workerId` says where a job runs. */
export function defaultWorkerId(): string {
  processWorkerId ??= `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  return processWorkerId;
}
