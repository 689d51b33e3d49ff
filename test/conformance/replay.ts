/**
 * Semantics 4 and 9 together, replay by hand and expiry: a replay keeps the original's expiry
 * rule. A copy has as long to start as the original had (`now + expiresAt − createdAt`), and the
 * copy of a job that ended `expired` is stored `expired` at once and never runs (as in Rickover).
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import { MAX_DATE_MS } from "../../src/validation.js";
import type { Backend } from "./backend.js";

export function exerciseReplay(backend: Backend): void {
  describe("replay and expiry", () => {
    it("stores the replay of an expired job as expired at once: never handed out, holding no unique key", async () => {
      const { queue, clock, connect } = await backend.setup();
      const original = await queue.enqueue(
        "report",
        { day: 1 },
        { expiresInMs: 1000, delayMs: 500, uniqueKey: "daily", owner: "ops", priority: 3 },
      );
      await clock.advance(1000);
      await queue.sweep();
      const before = await queue.get(original.id);
      expect(before).toMatchObject({ state: "expired" });

      await clock.advance(60_000);
      const events: Array<[string, Job]> = [];
      queue.on("expired", (j) => events.push(["expired", j]));
      queue.on("enqueued", (j) => events.push(["enqueued", j]));
      const copy = await queue.replay(original.id);
      const now = clock.now();
      expect(copy.id).not.toBe(original.id);
      expect(copy).toMatchObject({
        state: "expired",
        type: "report",
        payload: { day: 1 },
        priority: 3,
        owner: "ops",
        uniqueKey: "daily",
        attempt: 0,
        errors: [],
        startedAt: null,
      });
      expect(copy.finishedAt?.getTime()).toBe(now);
      expect(copy.expiresAt?.getTime()).toBe(now);
      expect(events.map(([e, j]) => [e, j.id])).toEqual([["expired", copy.id]]);

      // Never handed out, also not to another process; the original is as it was.
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      const other = await connect();
      expect(await other.lease({ limit: 10 })).toEqual([]);
      expect(await other.get(copy.id)).toMatchObject({ id: copy.id, state: "expired", attempt: 0 });
      expect(await queue.get(original.id)).toEqual(before);
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ pending: 0, active: 0, expired: 2 });
      expect((await queue.list({ state: "expired" })).jobs.map((j) => j.id).sort()).toEqual(
        [original.id, copy.id].sort(),
      );

      // It holds no unique key: a new job may take it.
      const fresh = await queue.enqueue("report", { day: 2 }, { uniqueKey: "daily" });
      expect(fresh.duplicate).toBe(false);
      // To run it anyway, retry it: a retry drops the expiry.
      await queue.cancel(fresh.id);
      expect(await queue.retry(copy.id)).toMatchObject({ id: copy.id, state: "pending", expiresAt: null });
      expect(await queue.lease()).toMatchObject([{ id: copy.id, attempt: 1 }]);
    });

    it("gives the replay of a job with an expiry as long to start as the original had", async () => {
      const { queue, clock } = await backend.setup();
      const original = await queue.enqueue("report", { day: 1 }, { expiresInMs: 60_000 });
      const [leased] = await queue.lease();
      expect(await queue.complete(leased!, "done")).toBe(true);

      await clock.advance(3_600_000);
      const copy = await queue.replay(original.id);
      expect(copy).toMatchObject({ state: "pending", attempt: 0 });
      expect(copy.expiresAt?.getTime()).toBe(clock.now() + 60_000);
      expect((await queue.get(copy.id))?.expiresAt?.getTime()).toBe(clock.now() + 60_000);

      // Handed out until the moment before its own expiresAt…
      await clock.advance(59_999);
      expect(await queue.lease()).toMatchObject([{ id: copy.id, attempt: 1 }]);

      // …and a second copy, never leased in time, ends expired like the original would have.
      const second = await queue.replay(original.id);
      await clock.advance(60_000);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      expect(await queue.get(second.id)).toMatchObject({ state: "expired", attempt: 0 });
    });

    it("holds the replay's expiresAt to the latest date errand stores", async () => {
      const { queue, clock } = await backend.setup();
      // As long to start as the original had would fall a day past MAX_DATE_MS: held to it, as
      // backoff and snooze are, so the copy is a job the API can carry.
      const original = await queue.enqueue("report", {}, { expiresAt: MAX_DATE_MS });
      const [leased] = await queue.lease();
      expect(await queue.complete(leased!, "done")).toBe(true);
      await clock.advance(86_400_000);
      const copy = await queue.replay(original.id);
      expect(copy).toMatchObject({ state: "pending" });
      expect(copy.expiresAt?.getTime()).toBe(MAX_DATE_MS);
      expect((await queue.get(copy.id))?.expiresAt?.getTime()).toBe(MAX_DATE_MS);
      expect(await queue.lease()).toMatchObject([{ id: copy.id, attempt: 1 }]);
    });

    it("gives the replay of a job without an expiry none", async () => {
      const { queue } = await backend.setup();
      const original = await queue.enqueue("report", {});
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("no"), { retryable: false });
      const copy = await queue.replay(original.id);
      expect(copy).toMatchObject({ state: "pending", expiresAt: null });
    });
  });
}
