/**
 * The worker protocol remembers each attempt it hands out (the job, payload and all) until the
 * attempt is reported. Attempts that end some other way (cancelled while active, recovered by a
 * sweep, reported to another server) used to stay until 100,000 had piled up; and a lease wait
 * measured across a clock stepped back was observed as negative.
 */
import type { FastifyInstance } from "fastify";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { type Clock, ManualClock, systemClock } from "../../src/clock.js";
import { Queue } from "../../src/queue.js";
import { createServer } from "../../src/server/index.js";
import { LeasedJobs, leasedJobsOf } from "../../src/server/routes/worker-protocol.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { selectedBackends, someBackend } from "../conformance/backend.js";
import { serve, startServer } from "./harness.js";

/** A queue on an in-memory SQLite store (on `clock`, if given), closed when the test ends. */
async function memoryQueue(clock?: Clock): Promise<Queue> {
  const store = await SqliteStore.open({ filename: ":memory:" });
  onTestFinished(() => store.close());
  return new Queue(store, clock ? { clock } : {});
}

function leased(app: FastifyInstance): LeasedJobs {
  const jobs = leasedJobsOf(app);
  if (!jobs) throw new Error("no worker protocol registered on this app");
  return jobs;
}

for (const backend of selectedBackends()) {
  describe(`attempts leased over HTTP on ${backend.name}`, () => {
    it("forgets an attempt cancelled while active, and one reported through the server", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", { blob: "x" }, { id: "a" });
      await h.queue.enqueue("t", { blob: "y" }, { id: "b" });
      const lease = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2 } });
      expect(lease.body.jobs).toHaveLength(2);
      expect(leased(h.app).size).toBe(2);
      expect(await h.queue.cancel("a")).toMatchObject({ id: "a", state: "cancelled" });
      expect(leased(h.app).size).toBe(1);
      expect(leased(h.app).get("a", 1)).toBeUndefined();
      const done = await h.http("POST", "/v1/jobs/b/complete", { body: { attempt: 1, result: 1 } });
      expect(done.status).toBe(200);
      expect(leased(h.app).size).toBe(0);
    });

    it("forgets an attempt whose lease a sweep through the queue recovered", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", null, { id: "j" });
      await h.http("POST", "/v1/lease", { body: { types: ["t"], leaseMs: 1000 } });
      expect(leased(h.app).size).toBe(1);
      await h.clock.advance(2000);
      expect((await h.queue.sweep()).recovered).toBe(1);
      expect(leased(h.app).size).toBe(0);
    });

    it("forgets attempts whose lease ran out at the next lease call, but not one a heartbeat extended", async () => {
      const h = await startServer(backend);
      // Reported to another server: this one hears nothing of their end.
      const other = await serve(h.queue);
      await h.queue.enqueue("t", null, { id: "gone" });
      await h.queue.enqueue("t", null, { id: "kept" });
      const lease = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2, leaseMs: 1000 } });
      expect(lease.body.jobs).toHaveLength(2);
      const beat = await h.http("POST", "/v1/heartbeats", {
        body: { jobs: [{ id: "kept", attempt: 1 }], leaseMs: 10_000 },
      });
      expect(beat.body.results).toEqual([{ id: "kept", ok: true }]);
      await other.http("POST", "/v1/jobs/gone/complete", { body: { attempt: 1, result: 1 } });
      expect(leased(h.app).size).toBe(2);
      await h.clock.advance(1500);
      // Any lease call, with jobs or none, lets the run-out leases go.
      expect((await h.http("POST", "/v1/lease", { body: { types: ["none"] } })).body.jobs).toEqual([]);
      expect(leased(h.app).size).toBe(1);
      expect(leased(h.app).get("kept", 1)).toMatchObject({ id: "kept", attempt: 1 });
    });

    it("lets go of the queue when the server closes", async () => {
      const b = await backend.setup();
      const before = [b.queue.listenerCount("cancelled"), b.queue.listenerCount("failed")];
      const app = await createServer({ queue: b.queue, maintenance: false });
      await b.queue.enqueue("t", null, { id: "j" });
      await app.inject({ method: "POST", url: "/v1/lease", payload: { types: ["t"] } });
      expect(leased(app).size).toBe(1);
      expect(b.queue.listenerCount("cancelled")).toBe(before[0]! + 1);
      await app.close();
      expect([b.queue.listenerCount("cancelled"), b.queue.listenerCount("failed")]).toEqual(before);
      expect(leased(app).size).toBe(0);
    });
  });
}

describe("LeasedJobs", () => {
  it("keeps at most its bound, forgetting the attempts leased first", async () => {
    const queue = await memoryQueue();
    for (const id of ["a", "b", "c"]) await queue.enqueue("t", null, { id });
    const jobs = await queue.lease({ types: ["t"], limit: 3 });
    const memory = new LeasedJobs(queue, 2);
    memory.add(jobs, 30_000, 0);
    expect(memory.size).toBe(2);
    expect(["a", "b", "c"].map((id) => memory.get(id, 1)?.id)).toEqual([undefined, "b", "c"]);
    memory.close();
    memory.close();
    expect(queue.listenerCount("cancelled")).toBe(0);
  });
});

describe("LeasedJobs within its characters", () => {
  it("lets go of the oldest jobs past its bound, keeping their attempts until reported", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const queue = await memoryQueue(clock);
    for (const id of ["a", "b", "c", "d"]) await queue.enqueue("t", null, { id });
    const memory = new LeasedJobs(queue, 100, 250);
    // Two answers of 200 characters, two jobs each: 100 a job, so three fit.
    memory.add(await queue.lease({ types: ["t"], limit: 2 }), 30_000, 200);
    expect(memory.chars).toBe(200);
    memory.add(await queue.lease({ types: ["t"], limit: 2 }), 30_000, 200);
    expect(memory.size).toBe(4);
    expect(memory.chars).toBe(200);
    expect(["a", "b", "c", "d"].map((id) => memory.get(id, 1)?.id)).toEqual([undefined, undefined, "c", "d"]);
    // An extension moves its job to the back, the attempt let go of stays let go.
    memory.extend("a", 1, 60_000);
    memory.extend("c", 1, 60_000);
    expect(memory.get("a", 1)).toBeUndefined();
    expect(memory.get("c", 1)?.id).toBe("c");
    // The attempts without their job still count as outstanding for a drain.
    let settled = false;
    const drained = memory.settled().then(() => {
      settled = true;
    });
    for (const id of ["b", "c", "d"]) memory.delete(id);
    expect(memory.chars).toBe(0);
    await clock.advance(0);
    expect(settled).toBe(false);
    memory.delete("a");
    await drained;
    expect(memory.size).toBe(0);
    memory.close();
  });

  it("counts a lease answer's characters over HTTP, and nothing once its jobs are reported", async () => {
    const backend = someBackend();
    const h = await startServer(backend);
    const blob = "x".repeat(100_000);
    for (const id of ["a", "b"]) await h.queue.enqueue("t", { blob }, { id });
    const lease = await h.http("POST", "/v1/lease", { body: { types: ["t"], limit: 2 } });
    expect(lease.body.jobs).toHaveLength(2);
    // Each job's share of the answer: its payload and the rest of its fields.
    expect(leased(h.app).chars).toBeGreaterThan(2 * blob.length);
    expect(leased(h.app).chars).toBeLessThan(2 * blob.length + 10_000);
    for (const id of ["a", "b"]) {
      expect((await h.http("POST", `/v1/jobs/${id}/complete`, { body: { attempt: 1 } })).status).toBe(200);
    }
    expect(leased(h.app).chars).toBe(0);
  });
});

describe("LeasedJobs with leases of different lengths", () => {
  it("forgets a short lease at its end even when a longer one was granted before it", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const queue = await memoryQueue(clock);
    // Claimed in id order: the long lease first.
    for (const id of ["a-long", "b-short", "c-beat"]) await queue.enqueue("t", null, { id });
    const memory = new LeasedJobs(queue);
    memory.add(await queue.lease({ types: ["t"], limit: 1, leaseMs: 3_600_000 }), 3_600_000, 0);
    memory.add(await queue.lease({ types: ["t"], limit: 2, leaseMs: 1000 }), 1000, 0);
    expect(memory.size).toBe(3);
    // Extended past the short lease's end, then extended again for less: the last word counts.
    memory.extend("c-beat", 1, 60_000);
    memory.extend("c-beat", 1, 5_000);
    await clock.advance(2000);
    memory.add([], 1000, 0);
    expect(["a-long", "b-short", "c-beat"].map((id) => memory.get(id, 1)?.id)).toEqual([
      "a-long",
      undefined,
      "c-beat",
    ]);
    await clock.advance(4000);
    memory.add([], 1000, 0);
    expect(["a-long", "b-short", "c-beat"].map((id) => memory.get(id, 1)?.id)).toEqual([
      "a-long",
      undefined,
      undefined,
    ]);
    await clock.advance(3_600_000);
    memory.add([], 1000, 0);
    expect(memory.size).toBe(0);
    memory.close();
  });

  it("keeps an attempt leased again after its first lease's end was queued", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const queue = await memoryQueue(clock);
    await queue.enqueue("t", null, { id: "j" });
    const [first] = await queue.lease({ types: ["t"], leaseMs: 1000 });
    const memory = new LeasedJobs(queue);
    memory.add([first!], 1000, 0);
    // Remembered again for longer (the same attempt handed out once more, as a re-lease would).
    memory.add([{ ...first!, leaseExpiresAt: new Date(clock.now() + 10_000) }], 10_000, 0);
    await clock.advance(2000);
    memory.add([], 1000, 0);
    expect(memory.get("j", 1)?.id).toBe("j");
    memory.close();
  });
});

describe("errand_lease_wait_seconds", () => {
  it("observes no negative wait when the clock steps back during a long poll", async () => {
    // A wall clock stepped back by NTP: ManualClock never goes backwards.
    let offset = 0;
    const clock: Clock = { now: () => Date.UTC(2026, 0, 1) + offset, setTimer: systemClock.setTimer };
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store, { clock });
    const app = await createServer({ queue, maintenance: false });
    try {
      const lease = app.inject({
        method: "POST",
        url: "/v1/lease",
        payload: { types: ["t"], waitMs: 20_000 },
      });
      await vi.waitFor(() => expect(app.errand.leaseWaiters()).toBe(1), { interval: 2 });
      offset = -60_000;
      await queue.enqueue("t", null);
      expect((await lease).json().jobs).toHaveLength(1);
      const scrape = (await app.inject({ method: "GET", url: "/metrics" })).body;
      const sum = scrape.split("\n").find((l) => l.startsWith("errand_lease_wait_seconds_sum"));
      expect(Number(sum?.split(" ").at(-1))).toBeGreaterThanOrEqual(0);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
