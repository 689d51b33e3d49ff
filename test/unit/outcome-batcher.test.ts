import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import type { Queue } from "../../src/queue.js";
import type { Completion } from "../../src/store/instrument.js";
import { OutcomeBatcher } from "../../src/worker/outcome-batcher.js";
import { FULL_BATCH } from "../../src/worker/turn-batch.js";

/** The next turn of the event loop: the batcher gathers a turn's outcomes before it writes. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A Queue whose completion writes are recorded and held until the test lets each one finish. */
function heldWrites() {
  const writes: { ids: string[]; finish: () => void }[] = [];
  const queue = {
    listenerCount: () => 0,
    attempts: {
      resultText: (result: unknown) => JSON.stringify(result ?? null),
      completeMany: (items: readonly Completion[]) =>
        new Promise<boolean[]>((resolve) => {
          writes.push({ ids: items.map((i) => i.id), finish: () => resolve(items.map(() => true)) });
        }),
      failMany: async () => [],
    },
  } as unknown as Queue;
  return { writes, batcher: new OutcomeBatcher(queue, 30_000, () => {}) };
}

const job = (id: string) => ({ id, attempt: 1, type: "t" }) as Job;

describe("OutcomeBatcher", () => {
  it("writes one turn's completions in one write", async () => {
    const { writes, batcher } = heldWrites();
    const done = [batcher.complete(job("a"), 1), batcher.complete(job("b"), 2)];
    await nextTurn();
    expect(writes.map((w) => w.ids)).toEqual([["a", "b"]]);
    writes[0]!.finish();
    expect(await Promise.all(done)).toEqual([true, true]);
  });

  it("holds what arrives during a write for one write after it (group commit)", async () => {
    const { writes, batcher } = heldWrites();
    const first = batcher.complete(job("a"), 1);
    await nextTurn();
    expect(writes).toHaveLength(1);

    // Three more turns' completions while the first write is under way: none is sent yet.
    const later: Promise<boolean>[] = [];
    for (const id of ["b", "c", "d"]) {
      later.push(batcher.complete(job(id), id));
      await nextTurn();
    }
    expect(writes).toHaveLength(1);

    writes[0]!.finish();
    expect(await first).toBe(true);
    while (writes.length < 2) await nextTurn();
    expect(writes.map((w) => w.ids)).toEqual([["a"], ["b", "c", "d"]]);
    writes[1]!.finish();
    expect(await Promise.all(later)).toEqual([true, true, true]);
  });

  it("sends a full batch beside the write under way rather than holding it", async () => {
    const { writes, batcher } = heldWrites();
    void batcher.complete(job("a"), 1);
    await nextTurn();
    const ids = Array.from({ length: FULL_BATCH - 1 }, (_, i) => `b${i}`);
    for (const id of ids) void batcher.complete(job(id), id);
    await nextTurn();
    expect(writes).toHaveLength(1); // one short of a full batch: it waits
    const last = batcher.complete(job("z"), 0);
    await nextTurn();
    expect(writes.map((w) => w.ids)).toEqual([["a"], [...ids, "z"]]);
    writes[1]!.finish();
    expect(await last).toBe(true);
    let flushed = false;
    const flushing = batcher.flush().then(() => {
      flushed = true;
    });
    await nextTurn();
    expect(flushed).toBe(false); // the first write is still under way
    writes[0]!.finish();
    await flushing;
  });

  it("flush() waits for the write under way and then writes what waits behind it", async () => {
    const { writes, batcher } = heldWrites();
    void batcher.complete(job("a"), 1);
    await nextTurn();
    const b = batcher.complete(job("b"), 2);
    let flushed = false;
    const flushing = batcher.flush().then(() => {
      flushed = true;
    });
    await nextTurn();
    expect(flushed).toBe(false);
    writes[0]!.finish();
    while (writes.length < 2) await nextTurn();
    expect(writes[1]!.ids).toEqual(["b"]);
    expect(flushed).toBe(false);
    writes[1]!.finish();
    await flushing;
    expect(await b).toBe(true);
  });
});
