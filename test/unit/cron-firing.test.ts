import { describe, expect, it } from "vitest";
import { ErrandError } from "../../src/errors.js";
import { fireDueSchedules } from "../../src/maintenance/cron-firing.js";
import type { StoreDoor } from "../../src/store/instrument.js";
import type { ScheduleRecord } from "../../src/store/store.js";

/** Due schedules as a store would answer them, oldest first: `count` of them, each gone once fired. */
function door(count: number): { door: StoreDoor; reads: () => number; skipped: string[] } {
  const skipped: string[] = [];
  let due = Array.from(
    { length: count },
    (_, i): ScheduleRecord => ({
      name: `s${String(i).padStart(4, "0")}`,
      cron: "*/5 * * * *",
      timezone: "UTC",
      type: "t",
      payload: "null",
      options: "{}",
      nextRunAt: 0,
      createdAt: 0,
      updatedAt: 0,
    }),
  );
  let reads = 0;
  const fake = {
    dueSchedules: async ({ limit }: { limit: number }) => {
      reads++;
      return due.slice(0, limit);
    },
    fireSchedule: async ({ name, job }: { name: string; job: unknown }) => {
      due = due.filter((s) => s.name !== name);
      if (job === null) skipped.push(name);
      return job !== null;
    },
  };
  return { door: fake as unknown as StoreDoor, reads: () => reads, skipped };
}

describe("fireDueSchedules", () => {
  it("fires chunk after chunk until one comes back short", async () => {
    const d = door(25);
    const fired = await fireDueSchedules(
      d.door,
      () => ({}) as never,
      1,
      10,
      () => {},
    );
    expect(fired).toBe(25);
    expect(d.reads()).toBe(3);
  });

  it("moves a schedule whose tick makes no job on without one, reports it and goes on", async () => {
    const d = door(25);
    const errors: unknown[] = [];
    const fired = await fireDueSchedules(
      d.door,
      (s) => {
        if (s.name === "s0003") throw new ErrandError("INVALID_DURATION", "past the latest date");
        return {} as never;
      },
      1,
      10,
      (e) => errors.push(e),
    );
    expect(fired).toBe(24);
    expect(d.skipped).toEqual(["s0003"]);
    expect(errors).toEqual([
      expect.objectContaining({ code: "INVALID_DURATION", message: expect.stringMatching(/"s0003"/) }),
    ]);
    expect(d.reads()).toBe(3);
  });

  it("ends the pass after a chunk in which a schedule could not fire, which would head every chunk", async () => {
    const d = door(25);
    const errors: unknown[] = [];
    const fired = await fireDueSchedules(
      d.door,
      (s) => {
        if (s.name === "s0000") throw new Error("its options no longer plan");
        return {} as never;
      },
      1,
      10,
      (e) => errors.push(e),
    );
    expect(fired).toBe(9);
    expect(errors).toHaveLength(1);
    expect(d.reads()).toBe(1);
  });
});
