/**
 * Semantic 6, idempotent enqueue: the same id gives the existing job, whatever its state; the same
 * uniqueKey gives the existing job while it is pending or active; bulk enqueue is all or nothing,
 * in one round trip.
 */
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { newJob } from "../helpers/new-job.js";
import type { Backend } from "./backend.js";

const task = defineJob({ type: "task", handler: async () => null });

export function exerciseIdempotency(backend: Backend): void {
  describe("idempotency", () => {
    it("stores one job for an id enqueued twice; the second call says duplicate and returns the first job", async () => {
      const { queue, clock } = await backend.setup();
      const first = await queue.enqueue(task, { v: 1 }, { id: "order-42", priority: 3 });
      expect(first).toMatchObject({ id: "order-42", duplicate: false, payload: { v: 1 }, priority: 3 });

      await clock.advance(5000);
      const second = await queue.enqueue(task, { v: 2 }, { id: "order-42", priority: 9, delayMs: 60_000 });
      expect(second).toMatchObject({
        id: "order-42",
        duplicate: true,
        state: "pending",
        payload: { v: 1 },
        priority: 3,
      });
      expect(second.createdAt.getTime()).toBe(first.createdAt.getTime());
      expect(second.runAt.getTime()).toBe(first.runAt.getTime());
      expect((await queue.stats()).states.pending).toBe(1);
      expect(await queue.get("order-42")).toMatchObject({ payload: { v: 1 }, priority: 3 });
    });

    it("returns the existing job for a known id even after it completed, and does not run it again", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue(task, { v: 1 }, { id: "once" });
      const [leased] = await queue.lease();
      await queue.complete(leased!, { done: 1 });

      const again = await queue.enqueue(task, { v: 2 }, { id: "once" });
      expect(again).toMatchObject({
        id: "once",
        duplicate: true,
        state: "completed",
        payload: { v: 1 },
        result: { done: 1 },
        attempt: 1,
      });
      expect(await queue.lease()).toEqual([]);
      expect((await queue.stats()).states).toMatchObject({ pending: 0, completed: 1 });
    });

    it("returns the existing job for a known id when it is dead or cancelled", async () => {
      const { queue } = await backend.setup();
      await queue.enqueue(task, {}, { id: "doomed", maxAttempts: 1 });
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("boom"));
      await queue.enqueue(task, {}, { id: "dropped", delayMs: 60_000 });
      await queue.cancel("dropped");

      expect(await queue.enqueue(task, {}, { id: "doomed" })).toMatchObject({
        duplicate: true,
        state: "dead",
      });
      expect(await queue.enqueue(task, {}, { id: "dropped" })).toMatchObject({
        duplicate: true,
        state: "cancelled",
      });
      expect((await queue.stats()).states.pending).toBe(0);
    });

    it("stores one job when many connections enqueue the same id at once", async () => {
      const { queue, connect } = await backend.setup();
      const queues = [queue, ...(await Promise.all([connect(), connect(), connect()]))];
      const results = await Promise.all(
        queues.flatMap((q, i) => [
          q.enqueue(task, { by: i, call: 0 }, { id: "contended" }),
          q.enqueue(task, { by: i, call: 1 }, { id: "contended" }),
        ]),
      );
      const inserted = results.filter((r) => !r.duplicate);
      expect(inserted).toHaveLength(1);
      // Every caller sees the one stored job's payload.
      const stored = await queue.get("contended");
      for (const r of results) expect(r.payload).toEqual(stored!.payload);
      expect((await queue.stats()).states.pending).toBe(1);
    });

    it("returns the pending job holding a uniqueKey instead of enqueueing another", async () => {
      const { queue } = await backend.setup();
      const first = await queue.enqueue(task, { v: 1 }, { uniqueKey: "sync:user-1" });
      const second = await queue.enqueue(task, { v: 2 }, { uniqueKey: "sync:user-1" });
      expect(first.duplicate).toBe(false);
      expect(second).toMatchObject({ id: first.id, duplicate: true, state: "pending", payload: { v: 1 } });
      // A different key is a different job.
      const other = await queue.enqueue(task, { v: 3 }, { uniqueKey: "sync:user-2" });
      expect(other.duplicate).toBe(false);
      expect((await queue.stats()).states.pending).toBe(2);
    });

    it("returns the active job holding a uniqueKey instead of enqueueing another", async () => {
      const { queue } = await backend.setup();
      const first = await queue.enqueue(task, { v: 1 }, { uniqueKey: "report" });
      await queue.lease();
      const second = await queue.enqueue(task, { v: 2 }, { uniqueKey: "report" });
      expect(second).toMatchObject({ id: first.id, duplicate: true, state: "active", attempt: 1 });
      expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 1 });
    });

    it("holds a uniqueKey while a job waits for its retry", async () => {
      const { queue } = await backend.setup();
      const first = await queue.enqueue(
        task,
        {},
        { uniqueKey: "k", backoff: { type: "fixed", delayMs: 60_000 } },
      );
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("boom"));
      const second = await queue.enqueue(task, {}, { uniqueKey: "k" });
      expect(second).toMatchObject({ id: first.id, duplicate: true, state: "pending", attempt: 1 });
    });

    it("frees a uniqueKey when its job completes, so the key enqueues a new job", async () => {
      const { queue } = await backend.setup();
      const first = await queue.enqueue(task, { v: 1 }, { uniqueKey: "nightly" });
      const [leased] = await queue.lease();
      await queue.complete(leased!, null);

      const next = await queue.enqueue(task, { v: 2 }, { uniqueKey: "nightly" });
      expect(next.duplicate).toBe(false);
      expect(next.id).not.toBe(first.id);
      expect(next).toMatchObject({ state: "pending", payload: { v: 2 }, uniqueKey: "nightly" });
      expect(await queue.get(first.id)).toMatchObject({ state: "completed" });
      // And the new one holds the key in turn.
      expect(await queue.enqueue(task, { v: 3 }, { uniqueKey: "nightly" })).toMatchObject({
        id: next.id,
        duplicate: true,
      });
    });

    it("frees a uniqueKey whose holder passed its expiresAt unswept: the holder ends expired, the enqueue makes a new job", async () => {
      // No sweep runs: the enqueue alone must see that the holder can never be handed out.
      const { queue, clock } = await backend.setup({ maintenance: false });
      const first = await queue.enqueue(
        task,
        { v: 1 },
        { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 },
      );
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(999);
      expect(await queue.enqueue(task, { v: 2 }, { uniqueKey: "k" })).toMatchObject({
        id: first.id,
        duplicate: true,
      });

      await clock.advance(1);
      const second = await queue.enqueue(task, { v: 3 }, { uniqueKey: "k" });
      expect(second).toMatchObject({ duplicate: false, state: "pending", payload: { v: 3 }, uniqueKey: "k" });
      expect(second.id).not.toBe(first.id);
      expect(expired.map((j) => [j.id, j.state])).toEqual([[first.id, "expired"]]);
      const stored = await queue.get(first.id);
      expect(stored).toMatchObject({ state: "expired", attempt: 0, payload: { v: 1 } });
      expect(stored?.finishedAt?.getTime()).toBe(clock.now());
      expect((await queue.stats()).states).toMatchObject({ pending: 1, expired: 1 });
      // The new job holds the key in turn, and a sweep finds nothing left to expire.
      expect(await queue.enqueue(task, {}, { uniqueKey: "k" })).toMatchObject({
        id: second.id,
        duplicate: true,
      });
      expect((await queue.sweep()).expired).toBe(0);
      expect(expired).toHaveLength(1);
    });

    it("frees a uniqueKey whose holder passed its expiresAt unswept for a retry: the holder ends expired, its dependents settled", async () => {
      // No sweep runs: the retry alone must see that the holder can never be handed out.
      const { queue, clock } = await backend.setup({ maintenance: false });
      const dead = await queue.enqueue(task, { v: 1 }, { uniqueKey: "k", maxAttempts: 1 });
      const [leased] = await queue.lease();
      await queue.fail(leased!, new Error("boom"));
      const holder = await queue.enqueue(
        task,
        { v: 2 },
        { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 },
      );
      const dependent = await queue.enqueue(task, {}, { dependsOn: [holder.id] });
      const runs = await queue.enqueue(task, {}, { dependsOn: [holder.id], onDependencyFailure: "run" });
      const events: string[] = [];
      queue.on("expired", (j) => events.push(`expired ${j.id}`));
      queue.on("cancelled", (j) => events.push(`cancelled ${j.id}`));

      // A holder a claim could still take holds the key: refused, and nothing changes.
      await clock.advance(999);
      await expect(queue.retry(dead.id)).rejects.toMatchObject({
        code: "INVALID_STATE",
        message: expect.stringContaining("unique key"),
      });
      expect(await queue.get(dead.id)).toMatchObject({ state: "dead" });
      expect(await queue.get(holder.id)).toMatchObject({ state: "pending" });
      expect(events).toEqual([]);

      await clock.advance(1);
      const retried = await queue.retry(dead.id);
      expect(retried).toMatchObject({ id: dead.id, state: "pending", uniqueKey: "k", payload: { v: 1 } });
      const stored = await queue.get(holder.id);
      expect(stored).toMatchObject({ state: "expired", attempt: 0, payload: { v: 2 } });
      expect(stored?.finishedAt?.getTime()).toBe(clock.now());
      expect(await queue.get(dependent.id)).toMatchObject({ state: "cancelled" });
      expect(await queue.get(runs.id)).toMatchObject({ state: "pending" });
      expect(events).toEqual([`expired ${holder.id}`, `cancelled ${dependent.id}`]);
      expect((await queue.stats()).states).toMatchObject({ pending: 2, expired: 1, cancelled: 1, dead: 0 });
      // The retried job holds the key now, and a sweep finds nothing left to expire.
      expect(await queue.enqueue(task, {}, { uniqueKey: "k" })).toMatchObject({
        id: dead.id,
        duplicate: true,
      });
      expect((await queue.sweep()).expired).toBe(0);
      expect((await queue.lease({ limit: 10 })).map((j) => j.id).sort()).toEqual([dead.id, runs.id].sort());
    });

    it("frees a uniqueKey whose blocked holder passed its expiresAt unswept for a replay: the copy is stored, the holder ends expired", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const done = await queue.enqueue(task, { v: 1 }, { uniqueKey: "k" });
      const [leased] = await queue.lease();
      await queue.complete(leased!, null);
      const root = await queue.enqueue(task, {}, { delayMs: 60_000 });
      const holder = await queue.enqueue(
        task,
        { v: 2 },
        { uniqueKey: "k", expiresInMs: 1_000, dependsOn: [root.id] },
      );
      expect(holder.state).toBe("blocked");
      const dependent = await queue.enqueue(task, {}, { dependsOn: [holder.id] });
      const events: string[] = [];
      queue.on("expired", (j) => events.push(`expired ${j.id}`));
      queue.on("cancelled", (j) => events.push(`cancelled ${j.id}`));
      queue.on("enqueued", (j) => events.push(`enqueued ${j.id}`));

      await clock.advance(999);
      await expect(queue.replay(done.id)).rejects.toMatchObject({
        code: "INVALID_STATE",
        message: expect.stringContaining("unique key"),
      });
      expect(await queue.get(holder.id)).toMatchObject({ state: "blocked" });
      expect((await queue.stats()).states).toMatchObject({
        blocked: 2,
        pending: 1,
        completed: 1,
        expired: 0,
      });

      await clock.advance(1);
      const copy = await queue.replay(done.id);
      expect(copy).toMatchObject({ state: "pending", uniqueKey: "k", payload: { v: 1 }, attempt: 0 });
      expect(copy.id).not.toBe(done.id);
      expect(await queue.get(holder.id)).toMatchObject({ state: "expired" });
      expect(await queue.get(dependent.id)).toMatchObject({ state: "cancelled" });
      expect(events).toEqual([`expired ${holder.id}`, `cancelled ${dependent.id}`, `enqueued ${copy.id}`]);
      expect(await queue.enqueue(task, {}, { uniqueKey: "k" })).toMatchObject({
        id: copy.id,
        duplicate: true,
      });
      expect((await queue.sweep()).expired).toBe(0);
      expect((await queue.stats()).states).toMatchObject({
        blocked: 0,
        pending: 2,
        completed: 1,
        expired: 1,
        cancelled: 1,
      });
    });

    it("frees an expired holder's uniqueKey in a bulk enqueue once, and settles the holder's dependents", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const root = await queue.enqueue(task, { root: true }, { delayMs: 60_000 });
      // A blocked holder past its expiresAt: expiry ends it, and its dependent is cancelled.
      const holder = await queue.enqueue(
        task,
        {},
        { uniqueKey: "k", expiresInMs: 1_000, dependsOn: [root.id] },
      );
      const dependent = await queue.enqueue(task, {}, { dependsOn: [holder.id] });
      expect(holder.state).toBe("blocked");
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(1_000);

      const jobs = await queue.enqueueMany(task, [{ n: 1 }, { n: 2 }], { uniqueKey: "k" });
      expect(jobs.map((j) => j.duplicate)).toEqual([false, true]);
      expect(jobs[1]?.id).toBe(jobs[0]?.id);
      expect(jobs[0]?.id).not.toBe(holder.id);
      expect(expired.map((j) => j.id)).toEqual([holder.id]);
      expect(await queue.get(holder.id)).toMatchObject({ state: "expired" });
      expect(await queue.get(dependent.id)).toMatchObject({ state: "cancelled" });
      // enqueueManyIds frees a key the same way.
      await clock.advance(0);
      const again = await queue.enqueue(task, {}, { uniqueKey: "j", expiresInMs: 1_000 });
      await clock.advance(1_000);
      const [id] = await queue.enqueueManyIds(task, [{}], { uniqueKey: "j" });
      expect(id).not.toBe(again.id);
      expect(await queue.get(again.id)).toMatchObject({ state: "expired" });
      expect(expired.map((j) => j.id)).toEqual([holder.id, again.id]);
    });

    it("reads a holder it expires to free a uniqueKey as expired for the new job's own dependsOn", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const holder = await queue.enqueue(task, {}, { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 });
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(1_000);
      // It waits for the very job whose key it takes: that job can never run, so it is cancelled.
      const job = await queue.enqueue(task, {}, { uniqueKey: "k", dependsOn: [holder.id] });
      expect(job).toMatchObject({ duplicate: false, state: "cancelled" });
      expect(job.errors.at(-1)).toMatchObject({ kind: "dependency_failed" });
      expect(expired.map((j) => j.id)).toEqual([holder.id]);
      const run = await queue.enqueue(task, {}, { uniqueKey: "k2", expiresInMs: 1_000, delayMs: 5_000 });
      await clock.advance(1_000);
      const runs = await queue.enqueue(
        task,
        {},
        { uniqueKey: "k2", dependsOn: [run.id], onDependencyFailure: "run" },
      );
      expect(runs).toMatchObject({ duplicate: false, state: "pending" });
    });

    it("answers a job that waits for a holder a later job of its batch expires as stored: settled", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const holder = await queue.enqueue(task, {}, { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 });
      await clock.advance(1_000);
      const jobs = await queue.enqueueBatch([
        { job: task, payload: { n: 0 }, options: { dependsOn: [holder.id] } },
        { job: task, payload: { n: 1 }, options: { dependsOn: [holder.id], onDependencyFailure: "run" } },
        { job: task, payload: { n: 2 }, options: { uniqueKey: "k" } },
      ]);
      expect(jobs[2]).toMatchObject({ duplicate: false, state: "pending" });
      expect(jobs.slice(0, 2).map((j) => j.state)).toEqual(["cancelled", "pending"]);
      for (const job of jobs) expect((await queue.get(job.id))?.state).toBe(job.state);
    });

    it("answers a job of the call that a later job with its key expired as stored: expired, as each job came", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      // Each job is past its expiresAt as it arrives, so the next one with the key finds a holder
      // no claim can take, and expires it.
      const past = new Date(clock.now() - 1);
      const jobs = await queue.enqueueMany(task, [{ n: 0 }, { n: 1 }, { n: 2 }], {
        uniqueKey: "k",
        expiresAt: past,
      });
      expect(jobs.map((j) => [j.state, j.duplicate])).toEqual([
        ["expired", false],
        ["expired", false],
        ["pending", false],
      ]);
      for (const job of jobs) expect((await queue.get(job.id))?.state).toBe(job.state);
      expect(expired.map((j) => j.id)).toEqual([jobs[0]!.id, jobs[1]!.id]);
      const debounced = await queue.enqueueBatch(
        [0, 1].map((n) => ({
          job: task,
          payload: { n },
          options: { debounce: { key: "d", delayMs: 0 }, expiresAt: past },
        })),
      );
      expect(debounced.map((j) => j.state)).toEqual(["expired", "pending"]);
      for (const job of debounced) expect((await queue.get(job.id))?.state).toBe(job.state);
    });

    it("leaves a job holding a stored job's uniqueKey alone when that job is enqueued again, even past its expiresAt", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const root = await queue.enqueue("root", {});
      const options = { id: "x", uniqueKey: "k", dependsOn: [root.id], onDependencyFailure: "run" as const };
      await queue.enqueue(task, {}, options);
      await queue.cancel("x");
      // "x" is finished, so k is free; another job takes it, and waits past its expiresAt.
      const holder = await queue.enqueue(task, {}, { uniqueKey: "k", expiresInMs: 1_000, delayMs: 5_000 });
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(1_000);
      // Enqueuing "x" again is a no-op: it inserts nothing, so it frees no key.
      expect(await queue.enqueue(task, {}, options)).toMatchObject({
        id: "x",
        duplicate: true,
        state: "cancelled",
      });
      expect(await queue.get(holder.id)).toMatchObject({ state: "pending" });
      expect(expired).toEqual([]);
    });

    it("stores one job when many connections enqueue the same uniqueKey at once", async () => {
      const { queue, connect } = await backend.setup();
      const queues = [queue, ...(await Promise.all([connect(), connect(), connect()]))];
      const results = await Promise.all(
        queues.flatMap((q, i) => [
          q.enqueue(task, { by: i }, { uniqueKey: "singleton" }),
          q.enqueue(task, { by: i }, { uniqueKey: "singleton" }),
        ]),
      );
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      expect((await queue.stats()).states.pending).toBe(1);
    });

    it("stores 1000 jobs from one enqueueMany, in one store call, with distinct ids", async () => {
      const { queue, store } = await backend.setup();
      const spy = vi.spyOn(store, "enqueueMany");
      const payloads = Array.from({ length: 1000 }, (_, i) => ({ i }));
      const jobs = await queue.enqueueMany(task, payloads);
      expect(spy).toHaveBeenCalledTimes(1);
      spy.mockRestore();

      expect(jobs).toHaveLength(1000);
      expect(new Set(jobs.map((j) => j.id)).size).toBe(1000);
      expect(jobs.every((j) => !j.duplicate && j.state === "pending")).toBe(true);
      expect(jobs.map((j) => (j.payload as { i: number }).i)).toEqual(payloads.map((p) => p.i));
      const stats = await queue.stats();
      expect(stats.states.pending).toBe(1000);
      expect(stats.types.task).toEqual({ pending: 1000 });
      // Every returned job is stored under its id.
      for (const j of [jobs[0]!, jobs[499]!, jobs[999]!]) {
        expect(await queue.get(j.id)).toMatchObject({ id: j.id, payload: j.payload });
      }
    });

    it("stores nothing from an enqueueMany with one invalid payload in the middle", async () => {
      const { queue } = await backend.setup();
      const typed = defineJob({
        type: "typed",
        schema: z.object({ email: z.string().email(), n: z.number().int() }),
        handler: async () => null,
      });
      const payloads = [
        { email: "a@example.com", n: 1 },
        { email: "b@example.com", n: 2 },
        { email: "not-an-email", n: 3 },
        { email: "d@example.com", n: 4 },
      ];
      await expect(queue.enqueueMany(typed, payloads)).rejects.toMatchObject({
        name: "ErrandError",
        code: "INVALID_PAYLOAD",
      });
      const stats = await queue.stats();
      expect(stats.states.pending).toBe(0);
      expect(stats.types).toEqual({});
      expect((await queue.list()).jobs).toEqual([]);

      // The same batch without the bad one goes in whole.
      const good = await queue.enqueueMany(typed, [payloads[0]!, payloads[1]!, payloads[3]!]);
      expect(good).toHaveLength(3);
      expect((await queue.stats()).states.pending).toBe(3);
    });

    it("stores one job when one enqueueMany gives every payload the same uniqueKey", async () => {
      const { queue } = await backend.setup();
      const jobs = await queue.enqueueMany(task, [{ n: 1 }, { n: 2 }, { n: 3 }], { uniqueKey: "batch" });
      expect(jobs.map((j) => j.duplicate)).toEqual([false, true, true]);
      expect(new Set(jobs.map((j) => j.id)).size).toBe(1);
      expect(jobs.map((j) => j.payload)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]);
      expect((await queue.stats()).states.pending).toBe(1);
    });

    it("stores one job when a large enqueueMany (past any bulk chunk) shares one uniqueKey", async () => {
      const { queue } = await backend.setup();
      const payloads = Array.from({ length: 300 }, (_, n) => ({ n }));
      const jobs = await queue.enqueueMany(task, payloads, { uniqueKey: "big-batch" });
      expect(jobs.filter((j) => !j.duplicate)).toHaveLength(1);
      expect(new Set(jobs.map((j) => j.id)).size).toBe(1);
      expect((await queue.stats()).states.pending).toBe(1);
    });

    it("reports a live id as existing even when the caller says its ids are freshly generated", async () => {
      // The bulk fast path trusts idsGenerated only to skip the finished-id lookup; a conflict
      // with a live job must still be found, in any chunk position.
      const { queue, store, clock } = await backend.setup();
      const [existing] = await queue.enqueueMany(task, [{ original: true }]);
      const base = newJob({
        id: "",
        type: "task",
        runAt: clock.now(),
        backoff: JSON.stringify(existing!.backoff),
      });
      const fresh = Array.from({ length: 200 }, (_, i) => ({
        ...base,
        id: `fresh-${String(i).padStart(3, "0")}`,
      }));
      fresh[70] = { ...base, id: existing!.id };
      const results = await store.enqueueMany({ jobs: fresh, now: clock.now(), idsGenerated: true });
      expect(results.filter((r) => r.inserted)).toHaveLength(199);
      const dup = results[70]!;
      expect(dup.inserted).toBe(false);
      if (!dup.inserted) expect(JSON.parse(dup.existing.payload)).toEqual({ original: true });
      expect((await queue.stats()).states.pending).toBe(200);
    });

    it("stores a bulk insert sent twice once, the second time reporting every job as existing", async () => {
      // What a store's retry sends when the first try committed but its reply was lost: the very
      // same fresh ids (a store may insert them without looking first, and must then still find them).
      const { queue, store, clock } = await backend.setup();
      const base = newJob({ id: "", type: "task", runAt: clock.now() });
      const jobs = Array.from({ length: 150 }, (_, i) => ({
        ...base,
        id: `resent-${String(i).padStart(3, "0")}`,
        payload: JSON.stringify({ i }),
      }));
      const first = await store.enqueueMany({ jobs, now: clock.now(), idsGenerated: true });
      expect(first.every((r) => r.inserted)).toBe(true);
      const again = await store.enqueueMany({ jobs, now: clock.now(), idsGenerated: true });
      expect(again.map((r) => (r.inserted ? null : r.existing.id))).toEqual(jobs.map((j) => j.id));
      expect((await queue.stats()).states.pending).toBe(150);
      const [one] = await store.enqueueMany({ jobs: [jobs[7]!], now: clock.now(), idsGenerated: true });
      expect(one!.inserted).toBe(false);
      expect((await queue.stats()).states.pending).toBe(150);
    });

    // The shared form (SharedJobs: ids and payloads beside one shared NewJob) is what an
    // enqueueMany of one type sends; a store must treat it exactly as the same jobs one NewJob each.
    it("stores jobs given in the shared form as it stores the same jobs given one NewJob each", async () => {
      const { queue, store, clock } = await backend.setup();
      const shared = newJob({
        id: "",
        type: "task",
        queue: "bulk",
        runAt: clock.now() + 60_000,
        priority: 3,
        weight: 2,
        maxAttempts: 7,
        timeoutMs: 1_500,
        owner: "team-a",
        key: "k1",
      });
      const count = 150;
      const ids = Array.from({ length: count }, (_, i) => `shared-${String(i).padStart(3, "0")}`);
      const payloads = ids.map((_, i) => JSON.stringify({ i }));
      const now = clock.now();
      const results = await store.enqueueMany({ jobs: { shared, ids, payloads }, now, idsGenerated: true });
      expect(results).toHaveLength(count);
      expect(results.every((r) => r.inserted && r.record === undefined)).toBe(true);
      const [one] = await store.enqueueMany({
        jobs: [{ ...shared, id: "one-by-one", payload: payloads[5]! }],
        now,
        idsGenerated: true,
      });
      expect(one!.inserted).toBe(true);
      const { id: _a, payload: _b, ...reference } = (await store.get({ id: "one-by-one" }))!;
      for (const i of [0, 5, 63, 64, 127, 128, count - 1]) {
        const { id, payload, ...rest } = (await store.get({ id: ids[i]! }))!;
        expect(id).toBe(ids[i]);
        expect(JSON.parse(payload)).toEqual({ i });
        expect(rest).toEqual(reference);
      }
      expect((await queue.stats()).states.pending).toBe(count + 1);
    });

    it("reports a live id in the shared form as existing, in any chunk position, and inserts the rest", async () => {
      const { queue, store, clock } = await backend.setup();
      const [existing] = await queue.enqueueMany(task, [{ original: true }]);
      const shared = newJob({ id: "", type: "task", runAt: clock.now() });
      const ids = Array.from({ length: 200 }, (_, i) => `fresh-${String(i).padStart(3, "0")}`);
      ids[70] = existing!.id;
      const payloads = ids.map((_, i) => JSON.stringify({ i }));
      const results = await store.enqueueMany({
        jobs: { shared, ids, payloads },
        now: clock.now(),
        idsGenerated: true,
      });
      expect(results.filter((r) => r.inserted)).toHaveLength(199);
      const dup = results[70]!;
      expect(dup.inserted).toBe(false);
      if (!dup.inserted) expect(JSON.parse(dup.existing.payload)).toEqual({ original: true });
      expect(JSON.parse((await store.get({ id: ids[71]! }))!.payload)).toEqual({ i: 71 });
      expect((await queue.stats()).states.pending).toBe(200);
    });

    it("stores a shared-form insert sent twice once, the second time reporting every job as existing", async () => {
      const { queue, store, clock } = await backend.setup();
      const shared = newJob({ id: "", type: "task", runAt: clock.now() });
      const ids = Array.from({ length: 150 }, (_, i) => `resent-${String(i).padStart(3, "0")}`);
      const jobs = { shared, ids, payloads: ids.map((_, i) => JSON.stringify({ i })) };
      const first = await store.enqueueMany({ jobs, now: clock.now(), idsGenerated: true });
      expect(first.every((r) => r.inserted)).toBe(true);
      const again = await store.enqueueMany({ jobs, now: clock.now(), idsGenerated: true });
      expect(again.map((r) => (r.inserted ? null : r.existing.id))).toEqual(ids);
      expect((await queue.stats()).states.pending).toBe(150);
    });
  });
}
