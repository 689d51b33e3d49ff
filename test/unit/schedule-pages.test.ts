/**
 * Queue.schedules() reads every schedule a store page at a time (1,000 a call), so no one call
 * returns an unbounded list; Queue.schedulePage() is one page. The paging itself, on every store,
 * is in the conformance suite (schedules.ts).
 */
import { expect, test, vi } from "vitest";
import { openQueue } from "../../src/queue.js";

test("schedules() reads 1,001 schedules in two store pages, in name order", async () => {
  const queue = await openQueue("sqlite::memory:");
  const names = Array.from({ length: 1001 }, (_, i) => `s${String(i).padStart(4, "0")}`);
  for (const name of [...names].reverse())
    await queue.schedule(name, { cron: "0 * * * *", job: "t", payload: null });
  const listed = vi.spyOn(queue.store, "listSchedules");
  expect((await queue.schedules()).map((s) => s.name)).toEqual(names);
  expect(listed.mock.calls.map(([p]) => p)).toEqual([
    { after: null, limit: 1000 },
    { after: "s0999", limit: 1000 },
  ]);
  const page = await queue.schedulePage({ limit: 1000, cursor: "s0999" });
  expect(page).toMatchObject({ nextCursor: null });
  expect(page.schedules.map((s) => s.name)).toEqual(["s1000"]);
  await queue.close();
});
