/**
 * `enqueueManyIds` and `enqueueBatchIds`: enqueueMany's and enqueueBatch's semantics (checks, one
 * transaction, idempotency, events), with each job's id as the answer, in the order given: the new
 * job's, or the id of the job that held what a duplicate asked for (its id, unique key or debounce
 * key).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import type { Job } from "../../src/job.js";
import type { Backend } from "./backend.js";

const task = defineJob({ type: "task", handler: async () => null });
const typed = defineJob({
  type: "typed",
  schema: z.object({ n: z.number().int() }),
  handler: async () => null,
});

async function refused(call: () => Promise<unknown>, code: string): Promise<void> {
  const error = await call().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ErrandError);
  expect((error as ErrandError).code).toBe(code);
}

export function exerciseEnqueueIds(backend: Backend): void {
  describe("enqueueManyIds", () => {
    it("stores every job, as enqueueMany would, and answers their ids in payload order", async () => {
      const { queue } = await backend.setup();
      // Past the stores' bulk chunk (64 rows on SQLite), so the shared form's path is taken.
      const payloads = Array.from({ length: 150 }, (_, n) => ({ n }));
      const ids = await queue.enqueueManyIds(task, payloads, { priority: 4, queue: "bulk" });
      expect(ids).toHaveLength(150);
      expect(new Set(ids).size).toBe(150);
      for (const [n, id] of ids.entries()) {
        expect(await queue.get(id)).toMatchObject({
          id,
          type: "task",
          queue: "bulk",
          state: "pending",
          priority: 4,
          payload: { n },
        });
      }
      expect((await queue.stats()).states.pending).toBe(150);
    });

    it("answers the holder's id for a duplicate id, unique key or debounce key, storing nothing new", async () => {
      const { queue } = await backend.setup();
      const byId = await queue.enqueue(task, { v: 1 }, { id: "order-7" });
      expect(await queue.enqueueManyIds(task, [{ v: 2 }], { id: "order-7" })).toEqual(["order-7"]);

      const held = await queue.enqueue(task, { v: 1 }, { uniqueKey: "u" });
      const again = await queue.enqueueManyIds(task, [{ v: 2 }, { v: 3 }], { uniqueKey: "u" });
      const other = await queue.enqueueManyIds(task, [{ v: 4 }], { uniqueKey: "w" });
      expect(again).toEqual([held.id, held.id]);
      expect(other).toHaveLength(1);
      expect(other[0]).not.toBe(held.id);

      const debounced = await queue.enqueue(task, { v: 1 }, { debounce: { key: "d", delayMs: 1_000 } });
      expect(
        await queue.enqueueManyIds(task, [{ v: 9 }], { debounce: { key: "d", delayMs: 1_000 } }),
      ).toEqual([debounced.id]);
      // The debounced job took the later payload, as enqueueMany's would.
      expect(await queue.get(debounced.id)).toMatchObject({ payload: { v: 9 } });
      expect(await queue.get(byId.id)).toMatchObject({ payload: { v: 1 } });
      expect((await queue.stats()).states.pending).toBe(4);
    });

    it("emits enqueued for each new job, as enqueueMany does", async () => {
      const { queue } = await backend.setup();
      const seen: Job[] = [];
      queue.on("enqueued", (job) => seen.push(job));
      const ids = await queue.enqueueManyIds(task, [{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect(seen.map((j) => [j.id, j.payload])).toEqual([
        [ids[0], { n: 1 }],
        [ids[1], { n: 2 }],
        [ids[2], { n: 3 }],
      ]);
    });

    it("refuses what enqueueMany refuses, storing none of the batch", async () => {
      const { queue } = await backend.setup();
      queue.register(typed);
      await refused(() => queue.enqueueManyIds(typed, [{ n: 1 }, { n: "2" } as never]), "INVALID_PAYLOAD");
      await refused(() => queue.enqueueManyIds(task, [{}, { big: 1n }]), "INVALID_PAYLOAD");
      await refused(() => queue.enqueueManyIds(task, "x" as never), "INVALID_OPTION");
      await refused(() => queue.enqueueManyIds(task, [{}, {}], { id: "one" }), "INVALID_OPTION");
      await refused(() => queue.enqueueManyIds(task, [{}], { priority: 1.5 }), "INVALID_OPTION");
      await refused(() => queue.enqueueManyIds({ type: "task" } as never, [{}]), "INVALID_OPTION");
      expect(await queue.enqueueManyIds(task, [])).toEqual([]);
      expect((await queue.stats()).states.pending).toBe(0);
    });
  });

  describe("enqueueBatchIds", () => {
    it("stores jobs of several types, each with its options, as enqueueBatch would, answering ids in order", async () => {
      const { queue } = await backend.setup();
      queue.register(typed);
      // Past the stores' bulk chunk (64 rows on SQLite), and in runs of one type and mixed.
      const items = Array.from({ length: 140 }, (_, n) =>
        n % 3 === 0
          ? { job: typed, payload: { n }, options: { priority: 2 } }
          : { job: "task", payload: { n }, options: { queue: "bulk" } },
      );
      const ids = await queue.enqueueBatchIds(items);
      expect(ids).toHaveLength(140);
      expect(new Set(ids).size).toBe(140);
      for (const [n, id] of ids.entries()) {
        expect(await queue.get(id)).toMatchObject(
          n % 3 === 0
            ? { id, type: "typed", queue: "default", priority: 2, payload: { n } }
            : { id, type: "task", queue: "bulk", priority: 0, payload: { n } },
        );
      }
      expect(await queue.enqueueBatchIds([])).toEqual([]);
    });

    it("answers the holder's id for a duplicate, emits enqueued for each new job, and refuses as enqueueBatch does", async () => {
      const { queue } = await backend.setup();
      queue.register(typed);
      const held = await queue.enqueue(task, { v: 1 }, { uniqueKey: "u" });
      const seen: string[] = [];
      queue.on("enqueued", (job) => seen.push(job.id));
      const ids = await queue.enqueueBatchIds([
        { job: task, payload: { v: 2 }, options: { uniqueKey: "u" } },
        { job: task, payload: { v: 3 }, options: { id: "fixed" } },
        { job: task, payload: { v: 4 }, options: { id: "fixed" } },
      ]);
      expect(ids).toEqual([held.id, "fixed", "fixed"]);
      expect(seen).toEqual(["fixed"]);
      expect(await queue.get("fixed")).toMatchObject({ payload: { v: 3 } });

      await refused(
        () =>
          queue.enqueueBatchIds([
            { job: task, payload: {} },
            { job: typed, payload: { n: "x" } },
          ]),
        "INVALID_PAYLOAD",
      );
      await refused(() => queue.enqueueBatchIds("x" as never), "INVALID_OPTION");
      await refused(
        () => queue.enqueueBatchIds([{ job: task, payload: {}, options: { weight: 0 } }]),
        "INVALID_OPTION",
      );
      expect((await queue.stats()).states.pending).toBe(2);
    });
  });
}
