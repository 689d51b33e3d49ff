import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import { openQueue } from "../../src/queue.js";
import { drain, expectEnqueued, ManualClock, runJob } from "../../src/testing/index.js";
import { Worker } from "../../src/worker/worker.js";

const greet = defineJob({
  type: "greet",
  schema: z.object({ name: z.string(), at: z.string() }),
  handler: async (p: { name: string; at: string }, ctx) => {
    await ctx.checkpoint({ half: true });
    return { hello: p.name, at: p.at, attempt: ctx.attempt, resumed: ctx.job.checkpoint };
  },
});

describe("runJob", () => {
  it("round-trips the payload and result through JSON and passes checkpoints out", async () => {
    const checkpoints: unknown[] = [];
    const result = await runJob(
      greet,
      { name: "Ada", at: "2026-01-01" },
      { attempt: 2, checkpoint: { half: true }, onCheckpoint: (c) => checkpoints.push(c) },
    );
    expect(result).toEqual({ hello: "Ada", at: "2026-01-01", attempt: 2, resumed: { half: true } });
    expect(checkpoints).toEqual([{ half: true }]);
  });

  it("refuses a payload the schema rejects", async () => {
    await expect(runJob(greet, { name: 5 } as never)).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
  });

  it("refuses a result that is not JSON", async () => {
    const bad = defineJob({ type: "bad-result", handler: async () => ({ n: 10n }) });
    const error = await runJob(bad, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ErrandError);
    expect((error as ErrandError).code).toBe("INVALID_PAYLOAD");
  });
});

describe("drain and expectEnqueued", () => {
  it("runs what is due, leaves what is not, and finds enqueued jobs by payload", async () => {
    const clock = new ManualClock();
    const queue = await openQueue({ store: "sqlite::memory:", clock });
    try {
      await queue.enqueue(greet, { name: "now", at: "x" });
      await queue.enqueue(greet, { name: "later", at: "y" }, { delayMs: "1h" });
      const found = await expectEnqueued(queue, { type: greet, payload: { name: "later", at: "y" } });
      expect(found.runAt.getTime()).toBe(clock.now() + 3_600_000);
      await expect(
        expectEnqueued(queue, { type: "greet", payload: { name: "nobody", at: "" } }),
      ).rejects.toMatchObject({
        code: "JOB_NOT_FOUND",
      });

      const first = await drain(queue, { jobs: [greet] });
      expect(first.completed).toBe(1);
      expect(first.jobs.map((j) => (j.payload as { name: string }).name)).toEqual(["now"]);

      await clock.advance(3_600_000);
      const second = await drain(queue, { jobs: [greet] });
      expect(second.completed).toBe(1);
      expect((await queue.stats()).states.completed).toBe(2);
    } finally {
      await queue.close();
    }
  });

  it("runs retries that come due at once until the job is dead", async () => {
    const queue = await openQueue({ store: "sqlite::memory:", clock: new ManualClock() });
    try {
      const flaky = defineJob({
        type: "flaky",
        maxAttempts: 3,
        backoff: { type: "fixed", delayMs: 0 },
        handler: async () => {
          throw new Error("nope");
        },
      });
      const job = await queue.enqueue(flaky, {});
      const result = await drain(queue, { jobs: [flaky] });
      expect(result).toMatchObject({ completed: 0, failed: 3, retried: 2, dead: 1 });
      const dead = await queue.get(job.id);
      expect(dead?.state).toBe("dead");
      expect(dead?.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    } finally {
      await queue.close();
    }
  });
});

describe("the testing kit's own input", () => {
  /** The code of what `action` threw, or a description of a throw that was no ErrandError. */
  async function codeOf(action: () => unknown): Promise<string> {
    try {
      await action();
      return "accepted";
    } catch (error) {
      return error instanceof ErrandError
        ? error.code
        : `${(error as Error).name}: ${(error as Error).message}`;
    }
  }

  it("refuses what no worker would hand a handler, in errand's words", async () => {
    const lookAlike = { type: "greet", handler: async () => null };
    const payload = { name: "Ada", at: "2026-01-01" };
    // Each was a TypeError, or reached the handler as something no worker gives it (attempt -1).
    const cases: Array<[string, () => unknown, string]> = [
      ["no definition", () => runJob(null as never, payload), "INVALID_OPTION"],
      ["a look-alike", () => runJob(lookAlike as never, payload), "INVALID_OPTION"],
      ["options null", () => runJob(greet, payload, null as never), "INVALID_OPTION"],
      ["an unknown option", () => runJob(greet, payload, { atempt: 2 } as never), "INVALID_OPTION"],
      ["attempt -1", () => runJob(greet, payload, { attempt: -1 }), "INVALID_ATTEMPT"],
      ["attempt as text", () => runJob(greet, payload, { attempt: "2" as never }), "INVALID_ATTEMPT"],
      ["a key that is no key", () => runJob(greet, payload, { key: 5 as never }), "INVALID_KEY"],
      [
        "dependencies no list",
        () => runJob(greet, payload, { dependencies: "a" as never }),
        "INVALID_OPTION",
      ],
      [
        "a dependency of null",
        () => runJob(greet, payload, { dependencies: [null] as never }),
        "INVALID_OPTION",
      ],
      ["a signal that is none", () => runJob(greet, payload, { signal: "stop" as never }), "INVALID_OPTION"],
      [
        "onCheckpoint no function",
        () => runJob(greet, payload, { onCheckpoint: 1 as never }),
        "INVALID_OPTION",
      ],
    ];
    const queue = await openQueue({ store: "sqlite::memory:", clock: new ManualClock() });
    cases.push(
      ["drain without a queue", () => drain(null as never, { jobs: [greet] }), "INVALID_OPTION"],
      ["a Worker without a queue", () => new Worker({} as never, { jobs: [greet] }), "INVALID_OPTION"],
      ["drain without options", () => drain(queue, null as never), "INVALID_OPTION"],
      [
        "expectEnqueued without a queue",
        () => expectEnqueued(null as never, { type: "greet" }),
        "INVALID_OPTION",
      ],
      ["expectEnqueued of nothing", () => expectEnqueued(queue, null as never), "INVALID_OPTION"],
      ["expectEnqueued of a number", () => expectEnqueued(queue, { type: 5 as never }), "INVALID_TYPE_NAME"],
      [
        "expectEnqueued of a look-alike",
        () => expectEnqueued(queue, { type: lookAlike as never }),
        "INVALID_OPTION",
      ],
    );
    try {
      for (const [what, action, code] of cases) expect(await codeOf(action), what).toBe(code);
    } finally {
      await queue.close();
    }
  });
});
