import { describe, expect, it } from "vitest";
import { fireDueSchedules } from "../../src/maintenance/cron-firing.js";
import type { StoreDoor } from "../../src/store/instrument.js";
import type { ScheduleRecord } from "../../src/store/store.js";

/** Due schedules as a store would answer them, oldest first: `count` of them, each gone once fired. */
function door(count: number): { door: StoreDoor; reads: () => number } {
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
    fireSchedule: async ({ name }: { name: string }) => {
      due = due.filter((s) => s.name !== name);
      return true;
    },
  };
  return { door: fake as unknown as StoreDoor, reads: () => reads };
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
