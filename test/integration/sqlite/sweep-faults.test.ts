import { afterEach, describe, expect, it } from "vitest";
import { openQueue, type Queue } from "../../../src/index.js";
import { ManualClock } from "../../../src/testing/index.js";

// One step of a maintenance pass that the store cannot do (here: lease recovery) used to end the
// pass there, so no job expired and no schedule fired anywhere while that fault lasted.
describe("a sweep whose lease recovery fails", () => {
  let queue: Queue | undefined;
  afterEach(async () => {
    await queue?.close();
  });

  it("still expires jobs and fires due schedules, then reports the fault", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    queue = await openQueue({ store: "sqlite::memory:", clock });
    const stale = await queue.enqueue("report", {}, { expiresInMs: 1_000 });
    await queue.schedule("tick", { cron: "* * * * *", job: "tick", payload: {} });
    await clock.advance(61_000);
    const fault = new Error("cannot read leases");
    queue.store.expiredLeases = () => Promise.reject(fault);

    await expect(queue.sweep()).rejects.toBe(fault);
    expect((await queue.get(stale.id))?.state).toBe("expired");
    expect((await queue.list({ type: "tick" })).jobs).toHaveLength(1);

    await expect(queue.sweepJobs()).rejects.toBe(fault);
  });

  it("throws the jobs' fault and reports the schedules' when both steps fail", async () => {
    queue = await openQueue({ store: "sqlite::memory:", clock: new ManualClock(Date.UTC(2026, 0, 1)) });
    const jobsFault = new Error("cannot read leases");
    const schedulesFault = new Error("cannot read schedules");
    queue.store.expiredLeases = () => Promise.reject(jobsFault);
    queue.store.dueSchedules = () => Promise.reject(schedulesFault);
    const reported: unknown[] = [];
    queue.on("error", (error) => reported.push(error));

    await expect(queue.sweep()).rejects.toBe(jobsFault);
    expect(reported).toEqual([schedulesFault]);
  });
});
