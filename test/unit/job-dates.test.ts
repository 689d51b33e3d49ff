import { describe, expect, it } from "vitest";
import { reviveJob } from "../../src/client/client.js";
import { defineJob } from "../../src/define-job.js";
import { type Job, jobDate, sharedJobDates } from "../../src/job.js";
import { openQueue } from "../../src/queue.js";
import { ManualClock } from "../../src/testing/index.js";

const SETTERS = Object.getOwnPropertyNames(Date.prototype).filter((name) => name.startsWith("set"));
const AT = Date.UTC(2026, 10, 26, 9, 30);

/** Calls every Date setter on `d`; each must throw and leave the instant as it was. */
function expectReadOnly(d: Date): void {
  const before = d.getTime();
  for (const name of SETTERS) {
    const setter = (d as unknown as Record<string, (...args: number[]) => number>)[name]!;
    expect(() => setter.call(d, 0), name).toThrow(TypeError);
  }
  expect(d.getTime()).toBe(before);
}

describe("a job's dates", () => {
  it("are Dates in every way but their setters, which throw", () => {
    expect(SETTERS).toContain("setTime");
    expect(SETTERS).toContain("setUTCFullYear");
    const d = jobDate(AT);
    expect(d).toBeInstanceOf(Date);
    expect(d.getTime()).toBe(AT);
    expect(d.toISOString()).toBe("2026-11-26T09:30:00.000Z");
    expect(JSON.parse(JSON.stringify({ d }))).toEqual({ d: "2026-11-26T09:30:00.000Z" });
    expect(new Date(d).getTime()).toBe(AT);
    expectReadOnly(d);
    // The class's methods cannot be swapped back for Date's.
    expect(() => Object.defineProperty(Object.getPrototypeOf(d), "setTime", { value: () => 0 })).toThrow(
      TypeError,
    );
  });

  it("are shared per instant within one call's jobs, not across calls", () => {
    const a = sharedJobDates();
    expect(a(AT)).toBe(a(AT));
    expect(a(AT + 1)).not.toBe(a(AT));
    expect(a(AT + 1).getTime()).toBe(AT + 1);
    expect(sharedJobDates()(AT)).not.toBe(a(AT));
  });

  it("of an enqueueMany's jobs are one read-only Date per instant, as stored", async () => {
    const clock = new ManualClock(AT);
    const queue = await openQueue({ store: "sqlite::memory:", clock });
    try {
      const noop = defineJob({ type: "noop", handler: async () => {} });
      const jobs = await queue.enqueueMany(noop, [{ n: 1 }, { n: 2 }, { n: 3 }], {
        delayMs: 5_000,
        expiresInMs: 60_000,
      });
      const [first, ...rest] = jobs;
      for (const job of rest) {
        expect(job.runAt).toBe(first!.runAt);
        expect(job.createdAt).toBe(first!.createdAt);
        expect(job.expiresAt).toBe(first!.expiresAt);
      }
      expect(first!.runAt.getTime()).toBe(AT + 5_000);
      expect(first!.createdAt.getTime()).toBe(AT);
      expect(first!.expiresAt!.getTime()).toBe(AT + 60_000);
      expectReadOnly(first!.runAt);
      expectReadOnly(first!.createdAt);
      // What the call returned is what the store holds, read back with Dates of its own.
      for (const job of jobs) {
        const stored = await queue.get(job.id);
        expect(stored!.runAt.getTime()).toBe(AT + 5_000);
        expect(stored!.createdAt).not.toBe(job.createdAt);
        expectReadOnly(stored!.createdAt);
      }
    } finally {
      await queue.close();
    }
  });

  it("are read-only on jobs revived from the HTTP API's JSON too", () => {
    const job = reviveJob<Job>({ id: "x", runAt: "2026-11-26T09:30:00.000Z", expiresAt: null });
    expect(job.runAt.getTime()).toBe(AT);
    expect(job.expiresAt).toBeNull();
    expectReadOnly(job.runAt);
  });
});
