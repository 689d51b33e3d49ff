import { once } from "node:events";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob, ErrandError, type Job, NonRetryableError } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { ALL_TOKENS, startServer, TOKENS } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`client on ${backend.name}`, () => {
    it("has the Queue's methods over HTTP", async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const client = new ErrandClient({ url: h.base, token: TOKENS.admin });
      const job = await client.enqueue("send", { to: "a" }, { delayMs: "1m", priority: 2 });
      expect(job.runAt).toBeInstanceOf(Date);
      expect(+job.runAt).toBe(h.clock.now() + 60_000);
      const same = await client.enqueue("send", { to: "b" }, { id: "fixed" });
      expect((await client.enqueue("send", { to: "c" }, { id: "fixed" })).duplicate).toBe(true);
      expect(same.duplicate).toBe(false);
      const many = await client.enqueueMany("bulk", [1, 2, 3]);
      expect(many).toHaveLength(3);
      const ids = await client.enqueueManyIds("bulk", [4, 5]);
      expect(await Promise.all(ids.map(async (id) => (await client.get(id))?.payload))).toEqual([4, 5]);
      expect(await client.enqueueManyIds("send", [{ to: "x" }], { id: "fixed" })).toEqual(["fixed"]);
      expect((await client.get("fixed"))?.payload).toEqual({ to: "b" });
      const mixed = await client.enqueueBatchIds([
        { job: "bulk", payload: 6 },
        { job: "send", payload: { to: "y" }, options: { id: "fixed" } },
      ]);
      expect(mixed[1]).toBe("fixed");
      expect((await client.get(mixed[0]!))?.payload).toBe(6);
      await expect(client.enqueueBatchIds("x" as never)).rejects.toMatchObject({ code: "INVALID_OPTION" });
      expect(await client.get("missing")).toBeNull();
      expect((await client.list({ type: "bulk" })).jobs).toHaveLength(6);
      expect((await client.stats()).states.pending).toBe(8);
      expect((await client.queues()).map((q) => q.name)).toEqual(["default"]);
      await expect(client.retry("fixed")).rejects.toMatchObject({ code: "INVALID_STATE" });
      expect((await client.cancel("fixed")).state).toBe("cancelled");
      expect((await client.retry("fixed")).state).toBe("pending");
      expect((await client.reschedule("fixed", { priority: 7 })).priority).toBe(7);
      await client.cancel("fixed");
      expect((await client.replay("fixed")).id).not.toBe("fixed");

      await client.setType({ type: "send", maxAttempts: 2 });
      expect((await client.getType("send"))?.maxAttempts).toBe(2);
      expect(await client.types()).toHaveLength(1);
      expect(await client.deleteType("send")).toBe(true);
      expect(await client.deleteType("send")).toBe(false);
      expect(await client.getType("send")).toBeNull();
      // Refused before a request, with the Queue's codes: once TypeErrors, a URIError, or a "."
      // that fetch resolved to another route.
      await expect(client.get("\ud800")).rejects.toMatchObject({ code: "INVALID_JOB_ID" });
      await expect(client.getType(".")).rejects.toMatchObject({ code: "INVALID_TYPE_NAME" });
      await expect(client.enqueue(null as never, 1)).rejects.toMatchObject({ code: "INVALID_OPTION" });
      await expect(client.enqueueMany("bulk", null as never)).rejects.toMatchObject({
        code: "INVALID_OPTION",
      });
      await expect(client.enqueueFlow([null] as never)).rejects.toMatchObject({ code: "INVALID_FLOW" });
      await expect(client.complete(null as never)).rejects.toMatchObject({ code: "INVALID_OPTION" });
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await expect(client.enqueue("bulk", cyclic)).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
      await expect(client.enqueueManyIds("bulk", "x" as never)).rejects.toMatchObject({
        code: "INVALID_OPTION",
      });
      expect((await client.stats()).states.pending, "nothing stored by the refused calls").toBe(8);
      const s = await client.schedule("every-minute", { cron: "* * * * *", job: "send", payload: {} });
      expect(s.nextRunAt).toBeInstanceOf(Date);
      expect(await client.schedules()).toHaveLength(1);
      expect(await client.unschedule("every-minute")).toBe(true);
      expect(await client.unschedule("every-minute")).toBe(false);
      expect(await client.prune()).toBe(0);

      const [leased] = await client.lease({ types: ["bulk"] });
      expect(await client.heartbeat(leased!)).toBe(true);
      expect(await client.checkpoint(leased!, { at: 1 })).toBe(true);
      expect(await client.complete(leased!, "ok")).toBe(true);
      expect(await client.complete(leased!, "ok")).toBe(true); // the same completion again
      expect(await client.complete({ id: leased!.id, attempt: 5 }, "ok")).toBe(false);
      // A report on a job that is gone (pruned while a slow worker ran it) is stale, as on a Queue.
      const gone = { id: "no-such-job", attempt: 1 };
      for (const report of [
        () => client.complete(gone, "ok"),
        () => client.fail(gone, new Error("x")),
        () => client.heartbeat(gone),
        () => client.checkpoint(gone, { at: 1 }),
        () => client.release(gone),
        () => client.snooze(gone, 1_000),
        () => h.queue.complete(gone, "ok"),
        () => h.queue.heartbeat(gone),
      ]) {
        expect(await report()).toBe(false);
      }
      expect(await client.failWithState(gone, new Error("x"))).toBeNull();
      const [other] = await client.lease({ types: ["bulk"] });
      expect(await client.fail(other!, new NonRetryableError("no"))).toBe(true);
      expect((await client.get(other!.id))?.state).toBe("dead");
      // failWithState reads a NonRetryableError as fail does.
      const [another] = await client.lease({ types: ["bulk"] });
      expect(await client.failWithState(another!, new NonRetryableError("no"))).toBe("dead");
      const [third] = await client.lease({ types: ["bulk"] });
      expect(await client.report([{ ...third!, outcome: "complete", result: 3 }])).toEqual([
        { id: third!.id, ok: true },
      ]);
      // More outcomes than the server takes in one request (1,000): as many requests as needed.
      const stale = Array.from({ length: 2001 }, (_, i) => ({
        id: third!.id,
        attempt: i + 2,
        outcome: "complete" as const,
      }));
      const answers = await client.report([...stale, { ...third!, outcome: "complete", result: 3 }]);
      expect(answers).toHaveLength(2002);
      expect(answers.slice(0, 2001).every((a) => a.id === third!.id && !a.ok)).toBe(true);
      expect(answers[2001]).toMatchObject({ id: third!.id, ok: true }); // the same completion again

      const viewer = new ErrandClient({ url: h.base, token: TOKENS.viewer });
      const refused = await viewer.enqueue("send", {}).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ErrandError);
      expect(refused).toMatchObject({ code: "FORBIDDEN" });
      const down = new ErrandClient({ url: "http://127.0.0.1:1" });
      await expect(down.stats()).rejects.toMatchObject({ code: "UNAVAILABLE" });
    });

    it("fails only the RemoteWorker's jobs whose result is not JSON, not the turn's other completions", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const results: Record<string, unknown> = {
        good1: "fine",
        big: 10n,
        good2: { ok: true },
        nan: Number.NaN,
      };
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const job = defineJob({
        type: "mixed",
        handler: async (p: { name: string }) => {
          await gate;
          return results[p.name];
        },
      });
      const worker = new RemoteWorker(client, {
        jobs: [job],
        concurrency: 10,
        waitMs: 60_000,
        clock: h.clock,
      });
      worker.on("error", () => {});
      const ended: string[] = [];
      const all = new Promise<void>((resolve) => {
        const note = (j: Job) => {
          ended.push(j.id);
          if (ended.length === 4) resolve();
        };
        worker.on("completed", note);
        worker.on("dead", note);
      });
      for (const name of Object.keys(results)) await client.enqueue(job, { name }, { id: name });
      await worker.start();
      onTestFinished(() => worker.close());
      await vi.waitFor(async () => expect((await h.queue.stats()).states.active).toBe(4), { interval: 5 });
      open(); // the four return in one turn: their completions go in one report
      await all;
      const state = async (id: string) => (await h.queue.get(id))?.state;
      expect(await state("good1")).toBe("completed");
      expect(await state("good2")).toBe("completed");
      expect(await state("big")).toBe("dead");
      expect(await state("nan")).toBe("dead");
      expect((await h.queue.get("nan"))?.errors[0]?.message).toMatch(/not JSON-serialisable/);
    });

    it("takes a completion of a job pruned while it ran as stale, not an error, in a batched report", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const job = defineJob({ type: "pruned-meanwhile", handler: async () => gate.then(() => "late") });
      const worker = new RemoteWorker(client, { jobs: [job], waitMs: 60_000, clock: h.clock });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      const report = vi.spyOn(client, "report");
      await client.enqueue(job, null, { id: "gone" });
      await worker.start();
      onTestFinished(() => {
        open();
        return worker.close();
      });
      await vi.waitFor(async () => expect((await h.queue.stats()).states.active).toBe(1), { interval: 5 });
      // Cancelled and pruned while its handler runs (the clock stands still: no heartbeat tells it).
      await h.queue.cancel("gone");
      await h.clock.advance(1);
      expect(await h.queue.prune({ retention: { cancelled: 0 } })).toBe(1);
      open();
      await vi.waitFor(() => expect(report).toHaveBeenCalledTimes(1), { interval: 5 });
      await report.mock.results[0]!.value;
      await worker.close();
      expect(await h.queue.get("gone")).toBeNull();
      expect(errors).toEqual([]);
    });

    it("runs a RemoteWorker with the Worker's API and events", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const seen: string[] = [];
      const add = defineJob({
        type: "add",
        handler: async (p: { a: number; b: number }, ctx) => {
          await ctx.checkpoint({ started: true });
          await ctx.heartbeat();
          return p.a + p.b;
        },
      });
      const flaky = defineJob({
        type: "flaky",
        maxAttempts: 2,
        handler: async (_p: null, ctx) => {
          if (ctx.attempt === 1) throw new Error("first try fails");
          return "second";
        },
      });
      const doomed = defineJob({
        type: "doomed",
        handler: async () => {
          throw new NonRetryableError("never");
        },
      });
      const worker = new RemoteWorker(client, {
        jobs: [add, flaky, doomed],
        concurrency: 4,
        waitMs: 60_000,
        clock: h.clock,
      });
      worker.on("completed", (job, result) => seen.push(`completed ${job.type} ${JSON.stringify(result)}`));
      worker.on("retrying", (job) => seen.push(`retrying ${job.type}`));
      worker.on("dead", (job) => seen.push(`dead ${job.type}`));
      await worker.start();

      const done = new Promise<void>((resolve) => {
        worker.on("completed", () => {
          if (seen.filter((s) => s.startsWith("completed")).length === 2) resolve();
        });
      });
      await client.enqueue(add, { a: 2, b: 3 });
      await client.enqueue(doomed, null);
      const f = await client.enqueue(flaky, null, { backoff: { type: "fixed", delayMs: 0 } });
      await vi.waitFor(() => expect(seen).toContain("retrying flaky"), { interval: 5 });
      h.queue.store.wake(); // the retry is due at once (no backoff): make sure a waiting lease looks
      expect(f.id).toBeTruthy();
      await done;
      await vi.waitFor(() => expect(seen).toContain("dead doomed"), { interval: 5 });
      expect(seen).toEqual(
        expect.arrayContaining(["completed add 5", "retrying flaky", 'completed flaky "second"']),
      );
      await worker.close();
      const stats = await h.queue.stats();
      expect(stats.states).toMatchObject({ completed: 2, dead: 1, active: 0 });
    });

    it("aborts a cancelled job at its next heartbeat, and releases running jobs on close", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const started: Job[] = [];
      const signals: AbortSignal[] = [];
      const slow = defineJob({
        type: "slow",
        handler: (_p: null, ctx) =>
          new Promise((_resolve, reject) => {
            started.push(ctx.job);
            signals.push(ctx.signal);
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
      });
      const worker = new RemoteWorker(client, {
        jobs: [slow],
        concurrency: 2,
        leaseMs: 30_000,
        heartbeatMs: 1000,
        waitMs: 60_000,
        clock: h.clock,
      });
      await worker.start();
      const cancelled = once(worker, "cancelled");
      await client.enqueue(slow, null, { id: "s1" });
      await client.enqueue(slow, null, { id: "s2" });
      await vi.waitFor(() => expect(started).toHaveLength(2), { interval: 5 });
      await client.cancel("s1");
      await h.clock.advance(1000); // the heartbeat finds out
      const [job] = await cancelled;
      expect((job as Job).id).toBe("s1");
      expect(signals[0]!.aborted).toBe(true);

      // A duration string, as Worker.close takes; a bad one is refused before anything stops.
      expect(() => worker.close({ graceMs: "soon" })).toThrow(
        expect.objectContaining({ code: "INVALID_DURATION" }),
      );
      const closing = worker.close({ graceMs: "5s" });
      await h.clock.advance(5000);
      await closing;
      expect(signals[1]!.aborted).toBe(true);
      expect(await h.queue.get("s2")).toMatchObject({ state: "pending", attempt: 1 });
    });

    it("leases ahead with prefetch: runs within concurrency in lease order, gives the buffer back on close", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const started: number[] = [];
      const gates = new Map<number, () => void>();
      const step = defineJob({
        type: "step",
        handler: (p: { n: number }) =>
          new Promise<number>((resolve) => {
            started.push(p.n);
            gates.set(p.n, () => resolve(p.n));
          }),
      });
      const jobs = await h.queue.enqueueMany(
        step,
        Array.from({ length: 5 }, (_, n) => ({ n })),
      );
      const worker = new RemoteWorker(client, {
        jobs: [step],
        concurrency: 1,
        prefetch: 2,
        waitMs: 60_000,
        clock: h.clock,
      });
      await worker.start();
      // One lease of three: one runs, two wait here, all three leased on the server.
      await vi.waitFor(() => expect(started).toEqual([0]), { interval: 5 });
      await vi.waitFor(async () => expect((await h.queue.stats()).states.active).toBe(3), { interval: 5 });
      const second = once(worker, "active");
      gates.get(0)!();
      expect(((await second) as [Job])[0].payload).toEqual({ n: 1 });
      expect(started).toEqual([0, 1]);
      expect(worker.running).toBe(1);

      const closing = worker.close({ graceMs: "1m" });
      // The buffered jobs go back at once, while job 1 runs within its grace period.
      await vi.waitFor(async () => expect((await h.queue.stats()).states.active).toBe(1), { interval: 5 });
      gates.get(1)!();
      await closing;
      expect(started).toEqual([0, 1]);
      const states = await Promise.all(jobs.map(async (j) => (await h.queue.get(j.id))!.state));
      expect(states).toEqual(["completed", "completed", "pending", "pending", "pending"]);
      for (const j of jobs.slice(2)) expect((await h.queue.get(j.id))!.workerId).toBeNull();
    });

    it("heartbeats every held job in one request, and gives back a paused queue's jobs leased ahead", async () => {
      const h = await startServer(backend);
      const paths: string[] = [];
      const client = new ErrandClient({
        url: h.base,
        fetch: (input, init) => {
          paths.push(new URL(String(input)).pathname);
          return fetch(input, init);
        },
      });
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const started: number[] = [];
      const step = defineJob({
        type: "step",
        handler: async (p: { n: number }) => {
          started.push(p.n);
          await gate;
        },
      });
      const jobs = await h.queue.enqueueMany(
        step,
        Array.from({ length: 5 }, (_, n) => ({ n })),
      );
      const worker = new RemoteWorker(client, {
        jobs: [step],
        concurrency: 2,
        prefetch: 3,
        leaseMs: 30_000,
        heartbeatMs: 1000,
        waitMs: 60_000,
        clock: h.clock,
      });
      await worker.start();
      await vi.waitFor(() => expect(worker.prefetched).toBe(3), { interval: 5 });
      expect(started).toEqual([0, 1]);

      // One heartbeat of the five jobs held, in one request.
      const before = paths.length;
      await h.clock.advance(1000);
      await vi.waitFor(() => expect(paths.slice(before)).toContain("/v1/heartbeats"), { interval: 5 });
      expect(paths.slice(before).filter((p) => p.includes("heartbeat"))).toEqual(["/v1/heartbeats"]);
      await vi.waitFor(
        async () => {
          for (const j of jobs) {
            expect((await h.queue.get(j.id))!.leaseExpiresAt!.getTime()).toBe(h.clock.now() + 30_000);
          }
        },
        { interval: 5 },
      );

      // Paused on the server: the next heartbeat's answer names the queue, and the three go back.
      await client.pauseQueue(jobs[0]!.queue);
      await h.clock.advance(1000);
      await vi.waitFor(async () => expect((await h.queue.stats()).states.pending).toBe(3), { interval: 5 });
      expect(worker.prefetched).toBe(0);
      open();
      await worker.close();
      expect(started).toEqual([0, 1]);
      const states = await Promise.all(jobs.map(async (j) => (await h.queue.get(j.id))!.state));
      expect(states).toEqual(["completed", "completed", "pending", "pending", "pending"]);
    });

    it("gives back, unstarted, a job leased ahead whose lease no heartbeat could extend", async () => {
      const h = await startServer(backend);
      let heartbeatsFail = false;
      const paths: string[] = [];
      const client = new ErrandClient({
        url: h.base,
        fetch: (input, init) => {
          const path = new URL(String(input)).pathname;
          paths.push(path);
          if (heartbeatsFail && path === "/v1/heartbeats") return Promise.reject(new Error("unreachable"));
          return fetch(input, init);
        },
      });
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const started: Array<[number, number]> = [];
      const step = defineJob({
        type: "step",
        handler: async (p: { n: number }, ctx) => {
          started.push([p.n, ctx.attempt]);
          if (p.n === 0) await gate;
        },
      });
      const [, second] = await h.queue.enqueueMany(step, [{ n: 0 }, { n: 1 }]);
      const worker = new RemoteWorker(client, {
        jobs: [step],
        concurrency: 1,
        prefetch: 1,
        leaseMs: 3000,
        heartbeatMs: 1000,
        waitMs: 60_000,
        clock: h.clock,
        logger: pino({ level: "silent" }),
      });
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await worker.start();
      await vi.waitFor(() => expect(worker.prefetched).toBe(1), { interval: 5 });
      heartbeatsFail = true;
      for (let i = 0; i < 3; i++) await h.clock.advance(1000);
      const done = new Promise<void>((resolve) =>
        worker.on("completed", (j) => j.id === second!.id && resolve()),
      );
      open();
      await done;
      // Given back (released) rather than started on attempt 1, then leased afresh.
      expect(started).toEqual([
        [0, 1],
        [1, 2],
      ]);
      expect(paths).toContain(`/v1/jobs/${second!.id}/release`);
      expect(await h.queue.get(second!.id)).toMatchObject({ state: "completed", attempt: 2, errors: [] });
    });

    it("answers POST /v1/heartbeats per attempt, with the paused queues", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const [a, b] = await h.queue.enqueueMany("task", [{ n: 1 }, { n: 2 }]);
      const leased = await client.lease({ limit: 2, leaseMs: 5000 });
      expect(leased.map((j) => j.id).sort()).toEqual([a!.id, b!.id].sort());
      await client.cancel(b!.id);
      await client.pauseQueue("other");
      const res = await fetch(`${h.base}/v1/heartbeats`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jobs: [
            { id: a!.id, attempt: 1 },
            { id: b!.id, attempt: 1 },
            { id: a!.id, attempt: 7 },
            { id: "no-such-job", attempt: 1 },
          ],
          leaseMs: 60_000,
        }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        results: [
          { id: a!.id, ok: true },
          { id: b!.id, ok: false },
          { id: a!.id, ok: false },
          { id: "no-such-job", ok: false },
        ],
        pausedQueues: ["other"],
      });
      expect((await h.queue.get(a!.id))!.leaseExpiresAt!.getTime()).toBe(h.clock.now() + 60_000);
      for (const bad of [
        { jobs: [] },
        { jobs: Array.from({ length: 1001 }, () => ({ id: a!.id, attempt: 1 })) },
        { jobs: [{ id: a!.id }] },
        { jobs: [{ id: a!.id, attempt: 1 }], leaseMs: 5 },
      ]) {
        const r = await fetch(`${h.base}/v1/heartbeats`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(bad),
        });
        expect(r.status, JSON.stringify(bad).slice(0, 60)).toBe(400);
      }
    });

    it('lists jobs as summaries with view: "summary", filtered and paged as whole ones', async () => {
      const h = await startServer(backend, { auth: { tokens: ALL_TOKENS } });
      const client = new ErrandClient({ url: h.base, token: TOKENS.viewer });
      const big = "x".repeat(50_000);
      const parent = await h.queue.enqueue("big", { big }, { key: "acme" });
      await h.queue.enqueueMany("big", [{ big }, { big }], { key: "acme", dependsOn: [parent.id] });
      await h.queue.enqueue("small", 1, { key: "other" });
      const [leased] = await h.queue.lease({ types: ["big"], limit: 1 });
      await h.queue.checkpoint(leased!, { big });
      await h.queue.complete(leased!, { big });

      const full = await client.list({ key: "acme", limit: 2 });
      const summary = await client.list({ key: "acme", limit: 2, view: "summary" });
      expect(summary.nextCursor).toBe(full.nextCursor);
      expect(summary.jobs.map((j) => j.id)).toEqual(full.jobs.map((j) => j.id));
      for (const [i, s] of summary.jobs.entries()) {
        const { payload, checkpoint, result, errors, dependsOn, ...rest } = full.jobs[i]!;
        expect(s).toStrictEqual(rest);
        expect(s.runAt).toBeInstanceOf(Date);
      }
      const next = await client.list({ key: "acme", limit: 2, view: "summary", cursor: summary.nextCursor! });
      expect(next.jobs.map((j) => j.id)).toEqual(
        (await client.list({ key: "acme", limit: 2, cursor: full.nextCursor! })).jobs.map((j) => j.id),
      );
      const done = (await client.list({ state: "completed", view: "summary" })).jobs;
      expect(done).toHaveLength(1);
      expect(done[0]).toMatchObject({ id: parent.id, state: "completed" });
      expect(done[0]!.finishedAt).toBeInstanceOf(Date);
      expect(done[0]).not.toHaveProperty("result");
      // The default, and view: "full", are whole jobs.
      expect((await client.list({ state: "completed", view: "full" })).jobs[0]!.result).toEqual({ big });
      expect((await client.list({ state: "completed" })).jobs[0]!.result).toEqual({ big });
    });
  });
}

describe("RemoteWorker options", () => {
  it("refuses a prefetch that is not a whole number from 0 to 10,000 (INVALID_OPTION)", () => {
    const client = new ErrandClient({ url: "http://127.0.0.1:1" });
    const job = defineJob({ type: "t", handler: async () => null });
    for (const prefetch of [-1, 10_001, 2.5, Number.NaN, "3"]) {
      expect(
        () => new RemoteWorker(client, { jobs: [job], prefetch: prefetch as number }),
        String(prefetch),
      ).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    }
    for (const prefetch of [0, 10_000]) {
      expect(new RemoteWorker(client, { jobs: [job], prefetch }).prefetched).toBe(0);
    }
  });
});

/** A client whose requests are only recorded: what a check that refuses before sending must leave empty. */
function recordingClient(): { client: ErrandClient; sent: string[] } {
  const sent: string[] = [];
  const client = new ErrandClient({
    url: "http://127.0.0.1:1",
    fetch: async (input) => {
      sent.push(String(input));
      return new Response("{}", { status: 201 });
    },
  });
  return { client, sent };
}

describe("client options that cannot travel over HTTP", () => {
  it("are refused with INVALID_OPTION before any request is sent", async () => {
    const { client, sent } = recordingClient();
    const backoff = () => 1000;
    await expect(client.enqueue("send", {}, { backoff })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(client.enqueue("send", {}, { db: {} })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(client.enqueueMany("send", [1], { db: {} })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    await expect(
      client.schedule("nightly", { cron: "0 3 * * *", job: "send", payload: {}, options: { backoff } }),
    ).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect(sent).toEqual([]);
  });
});

describe("client arguments, checked as a Queue checks them", () => {
  it("refuses with the Queue's codes before any request: what JSON would drop or mangle, bad numbers, bad list options", async () => {
    const { client, sent } = recordingClient();
    // JSON.stringify would send no payload (stored as null) or null in place of these.
    for (const payload of [undefined, () => 1, 1n, Number.NaN, { nested: Number.POSITIVE_INFINITY }]) {
      await expect(client.enqueue("send", payload), String(payload)).rejects.toMatchObject({
        code: "INVALID_PAYLOAD",
      });
    }
    await expect(client.enqueueMany("send", [1, undefined])).rejects.toMatchObject({
      code: "INVALID_PAYLOAD",
    });
    await expect(client.enqueueFlow([{ ref: "a", job: "send", payload: undefined }])).rejects.toMatchObject({
      code: "INVALID_PAYLOAD",
    });
    await expect(
      client.schedule("nightly", { cron: "0 3 * * *", job: "send", payload: () => 1 }),
    ).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
    // A result or checkpoint JSON would mangle: a job completed with a result it never had, a
    // checkpoint lost (the Queue refuses them too).
    const ref = { id: "j1", attempt: 1 };
    for (const bad of [Number.NaN, { n: Number.POSITIVE_INFINITY }, () => 1, Symbol("s"), 1n]) {
      await expect(client.complete(ref, bad), String(bad)).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
      await expect(client.checkpoint(ref, bad), String(bad)).rejects.toMatchObject({
        code: "INVALID_PAYLOAD",
      });
      await expect(
        client.report([{ ...ref, outcome: "complete", result: bad }]),
        String(bad),
      ).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
    }
    await expect(client.checkpoint(ref, undefined)).rejects.toMatchObject({ code: "INVALID_PAYLOAD" });
    await expect(client.enqueue("send", 1, { priority: Number.NaN })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    await expect(client.enqueue("send", 1, { maxAttempts: 0 })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    await expect(client.enqueue("send", 1, { priorty: 1 } as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringMatching(/priority/),
    });
    await expect(client.list({ state: "nope" as never })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(client.list({ limit: 100_000 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(client.list({ view: "bogus" as never })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringMatching(/view/),
    });
    await expect(client.list({ view: "summary", viwe: 1 } as never)).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    expect(sent).toEqual([]);
    // A definition's schema runs first, as a Queue runs it: what it keeps is checked and sent.
    const { client: schemed, sent: sentBySchemed } = recordingClient();
    const report = defineJob({
      type: "report",
      schema: {
        "~standard": {
          version: 1,
          vendor: "test",
          validate: (v: unknown) =>
            typeof (v as { limit?: unknown } | undefined)?.limit === "number"
              ? { value: { limit: (v as { limit: number }).limit } }
              : v === undefined
                ? { value: { limit: 10 } }
                : { issues: [{ message: "expected { limit }" }] },
        },
      },
      handler: async () => null,
    });
    const bodies: unknown[] = [];
    const seeing = new ErrandClient({
      url: "http://127.0.0.1:1",
      fetch: async (_input, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        return new Response(JSON.stringify({ id: "x", jobs: [] }), { status: 201 });
      },
    });
    await seeing.enqueue(report, { limit: 3, log: () => {} } as never);
    await seeing.enqueue(report, undefined as never);
    await seeing.enqueueMany(report, [{ limit: 4, at: 1n } as never]);
    expect(bodies).toEqual([
      { type: "report", payload: { limit: 3 } },
      { type: "report", payload: { limit: 10 } },
      { jobs: [{ type: "report", payload: { limit: 4 } }] },
    ]);
    await expect(schemed.enqueue(report, { limit: "x" } as never)).rejects.toMatchObject({
      code: "INVALID_PAYLOAD",
    });
    expect(sentBySchemed).toEqual([]);
    // No nodes, no flow, as a Queue answers it: nothing to send.
    expect(Object.keys((await client.enqueueFlow([])).jobs)).toEqual([]);
    expect(sent).toEqual([]);
  });
});
