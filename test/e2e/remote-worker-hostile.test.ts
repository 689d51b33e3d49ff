/**
 * A RemoteWorker against a real errand server seen through a network that misbehaves: a lease
 * answer naming a job twice, a heartbeat answer with results for jobs it was not asked about, a
 * clock that disagrees with the server's, a turn's completions past the server's body limit, a
 * proxy throttling reports, and a report that never comes back while the worker closes.
 *
 * Time is a ManualClock (the server's; the worker's own where the clocks disagree); a `fetch`
 * wrapper stands in for the network. Nothing sleeps.
 */
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob, type Job, ManualClock } from "../../src/index.js";
import { someBackend } from "../conformance/backend.js";
import { advanceUntil, serve, startServer } from "./harness.js";

const silent = pino({ level: "silent" });
const pathOf = (input: Parameters<typeof fetch>[0]) => new URL(String(input)).pathname;

/** `r` with its JSON body changed by `change`. */
async function rewritten(r: Response, change: (body: Record<string, unknown>) => unknown): Promise<Response> {
  const body = change((await r.json()) as Record<string, unknown>);
  return new Response(JSON.stringify(body), {
    status: r.status,
    headers: { "content-type": "application/json" },
  });
}

/** A handler's run that ends when the test says so. */
function gated() {
  const gates = new Map<string, () => void>();
  const handler = (_p: unknown, ctx: { job: Job }) =>
    new Promise<string>((resolve) => gates.set(ctx.job.id, () => resolve(ctx.job.id)));
  return { gates, handler };
}

/**
 * A client whose lease answers, after the first with a job, all name that job again first
 * (`besideNewOnly`: only answers with jobs of their own).
 */
function namingFirstAgain(url: string, o: { besideNewOnly: boolean }): ErrandClient {
  let first: unknown = null;
  return new ErrandClient({
    url,
    fetch: async (input, init) => {
      const r = await fetch(input, init);
      if (pathOf(input) !== "/v1/lease") return r;
      return rewritten(r, (b) => {
        const jobs = b.jobs as unknown[];
        if (first === null && jobs.length > 0) first = jobs[0];
        else if (first !== null && (jobs.length > 0 || !o.besideNewOnly))
          return { ...b, jobs: [first, ...jobs] };
        return b;
      });
    },
  });
}

const backend = someBackend();

describe(`RemoteWorker against a misbehaving network (${backend.name})`, () => {
  it("runs a job a lease answer names twice once, not twice at once", async () => {
    const h = await startServer(backend);
    let leases = 0;
    const client = new ErrandClient({
      url: h.base,
      fetch: async (input, init) => {
        if (pathOf(input) === "/v1/lease") leases++;
        const r = await fetch(input, init);
        if (pathOf(input) !== "/v1/lease") return r;
        return rewritten(r, (b) => ({ ...b, jobs: [...(b.jobs as unknown[]), ...(b.jobs as unknown[])] }));
      },
    });
    const { gates, handler } = gated();
    let starts = 0;
    const task = defineJob({
      type: "twice",
      handler: (p: unknown, ctx) => {
        starts++;
        return handler(p, ctx);
      },
    });
    const worker = new RemoteWorker(client, { jobs: [task], concurrency: 2, clock: h.clock, logger: silent });
    const errors: unknown[] = [];
    worker.on("error", (e) => errors.push(e));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await h.queue.enqueue(task, {}, { id: "once" });
    await worker.start();
    // The answer was taken whole once the worker asks for more (a long poll: it never returns).
    await vi.waitFor(() => expect(leases).toBeGreaterThanOrEqual(2), { interval: 5 });
    expect(starts).toBe(1);
    expect(worker.running).toBe(1);
    gates.get("once")!();
    await vi.waitFor(async () => expect((await h.queue.get("once"))?.state).toBe("completed"), {
      interval: 5,
    });
    expect(errors).toEqual([]);
    await worker.close({ graceMs: 0 });
  });

  it("runs no attempt again that a lease answer names after it ran here", async () => {
    const h = await startServer(backend);
    // The first answer's job, named again beside every later job (a replayed answer).
    const client = namingFirstAgain(h.base, { besideNewOnly: true });
    const starts: string[] = [];
    const task = defineJob({
      type: "replayed",
      handler: (_p: unknown, ctx) => {
        starts.push(`${ctx.job.id}#${ctx.job.attempt}`);
      },
    });
    // Room for two: an answer of the replayed job and one new is within the lease's limit.
    const worker = new RemoteWorker(client, { jobs: [task], concurrency: 2, clock: h.clock, logger: silent });
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await worker.start();
    for (const id of ["one", "two", "three"]) {
      await h.queue.enqueue(task, {}, { id });
      await vi.waitFor(async () => expect((await h.queue.get(id))?.state).toBe("completed"), { interval: 5 });
    }
    // Each ran once ("one" first as attempt 1). A later job may run on attempt 2: an answer that
    // named the replayed job beside it past a lease of one had it given back (ErrandClient.leaseAhead).
    expect(starts[0]).toBe("one#1");
    expect(starts.map((s) => s.split("#")[0])).toEqual(["one", "two", "three"]);
    await worker.close({ graceMs: 0 });
  });

  it("runs a new job under the id of one it ran, once that one is gone (completed jobs not kept)", async () => {
    const bundle = await backend.setup({ retention: { completed: 0 } });
    const h = { ...bundle, ...(await serve(bundle.queue)) };
    const starts: string[] = [];
    const task = defineJob({
      type: "reused",
      handler: (_p: unknown, ctx) => {
        starts.push(`${ctx.job.id}#${ctx.job.attempt}`);
      },
    });
    const worker = new RemoteWorker(new ErrandClient(h.base), {
      jobs: [task],
      concurrency: 1,
      clock: h.clock,
      logger: silent,
    });
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await worker.start();
    for (let round = 0; round < 2; round++) {
      // Later in time: the new job's createdAt is not the first's.
      await h.clock.advance(1000);
      await h.queue.enqueue(task, { round }, { id: "nightly-report" });
      await vi.waitFor(async () => expect(starts).toHaveLength(round + 1), { interval: 5 });
      await vi.waitFor(async () => expect(await h.queue.get("nightly-report")).toBeNull(), { interval: 5 });
    }
    expect(starts).toEqual(["nightly-report#1", "nightly-report#1"]);
    await worker.close({ graceMs: 0 });
  });

  for (const settings of [{ concurrency: 3 }, { concurrency: 1, prefetch: 2 }]) {
    it(`runs an attempt two lease answers name once, while it runs or waits (${JSON.stringify(settings)})`, async () => {
      const h = await startServer(backend);
      // The first answer's job, named again in every answer after it.
      const client = namingFirstAgain(h.base, { besideNewOnly: false });
      const { gates, handler } = gated();
      const starts: string[] = [];
      const task = defineJob({
        type: "again",
        handler: (p: unknown, ctx) => {
          starts.push(ctx.job.id);
          return handler(p, ctx);
        },
      });
      const worker = new RemoteWorker(client, { jobs: [task], ...settings, clock: h.clock, logger: silent });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      onTestFinished(() => worker.close({ graceMs: 0 }));
      await h.queue.enqueue(task, { n: 1 }, { id: "repeated" });
      await worker.start();
      await vi.waitFor(() => expect(gates.has("repeated")).toBe(true), { interval: 5 });
      // A second job's lease answer names the first again, while it runs.
      await h.queue.enqueue(task, { n: 2 }, { id: "second" });
      if (settings.concurrency > 1) {
        await vi.waitFor(() => expect(gates.has("second")).toBe(true), { interval: 5 });
      } else {
        // No room: the second waits in the buffer, and the first's repeat is not beside it.
        await vi.waitFor(() => expect(worker.prefetched).toBe(1), { interval: 5 });
      }
      gates.get("repeated")!();
      await vi.waitFor(() => expect(gates.has("second")).toBe(true), { interval: 5 });
      gates.get("second")!();
      await vi.waitFor(
        async () => {
          expect((await h.queue.get("repeated"))?.state).toBe("completed");
          expect((await h.queue.get("second"))?.state).toBe("completed");
        },
        { interval: 5 },
      );
      expect(starts).toEqual(["repeated", "second"]);
      expect(errors).toEqual([]);
      await worker.close({ graceMs: 0 });
    });
  }

  it("emits an error, and does not crash, when a heartbeat answer has more results than jobs", async () => {
    const h = await startServer(backend);
    const client = new ErrandClient({
      url: h.base,
      fetch: async (input, init) => {
        const r = await fetch(input, init);
        if (pathOf(input) !== "/v1/heartbeats") return r;
        return rewritten(r, (b) => ({ ...b, results: [...(b.results as unknown[]), { ok: true }] }));
      },
    });
    const { gates, handler } = gated();
    const task = defineJob({ type: "beating", handler });
    const worker = new RemoteWorker(client, {
      jobs: [task],
      leaseMs: 3000,
      heartbeatMs: 1000,
      clock: h.clock,
      logger: silent,
    });
    const failed = new Promise<unknown>((resolve) => worker.once("error", resolve));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await h.queue.enqueue(task, {}, { id: "beat" });
    await worker.start();
    await vi.waitFor(() => expect(gates.size).toBe(1), { interval: 5 });
    await h.clock.advance(1000);
    expect(await failed).toMatchObject({
      name: "ErrandError",
      code: "UNAVAILABLE",
      message: expect.stringContaining("2 results for 1 items"),
    });
    gates.get("beat")!();
    await vi.waitFor(async () => expect((await h.queue.get("beat"))?.state).toBe("completed"), {
      interval: 5,
    });
    await worker.close({ graceMs: 0 });
  });

  it("starts a job leased ahead from a server whose clock is behind, not gives it back as expired", async () => {
    const h = await startServer(backend);
    // The worker's clock is an hour ahead: every lease the server grants ends in the worker's past.
    const clock = new ManualClock(h.clock.now() + 3_600_000);
    const client = new ErrandClient({ url: h.base });
    const { gates, handler } = gated();
    const task = defineJob({ type: "skewed-ahead", handler });
    const worker = new RemoteWorker(client, {
      jobs: [task],
      concurrency: 1,
      prefetch: 2,
      clock,
      logger: silent,
    });
    const active: string[] = [];
    worker.on("active", (job) => active.push(`${job.id}#${job.attempt}`));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    for (const id of ["a", "b", "c"]) await h.queue.enqueue(task, {}, { id });
    await worker.start();
    await vi.waitFor(() => expect(worker.prefetched).toBe(2), { interval: 5 });
    for (const id of ["a", "b", "c"]) {
      await vi.waitFor(() => expect(gates.has(id)).toBe(true), { interval: 5 });
      gates.get(id)!();
    }
    await vi.waitFor(async () => expect((await h.queue.get("c"))?.state).toBe("completed"), { interval: 5 });
    // Each started on the attempt it was first leased for: none was given back and leased again.
    expect(active).toEqual(["a#1", "b#1", "c#1"]);
    await worker.close({ graceMs: 0 });
  });

  it("does not start a job leased ahead once its lease ran out, when the server's clock is ahead", async () => {
    const h = await startServer(backend);
    // The worker's clock is an hour behind: the server's leases seem to end an hour later here.
    const clock = new ManualClock(h.clock.now() - 3_600_000);
    let heartbeatsDown = false;
    const client = new ErrandClient({
      url: h.base,
      fetch: async (input, init) => {
        if (heartbeatsDown && pathOf(input) === "/v1/heartbeats") {
          throw new TypeError("fetch failed", {
            cause: Object.assign(new Error("refused"), { code: "ECONNREFUSED" }),
          });
        }
        return fetch(input, init);
      },
    });
    const { gates, handler } = gated();
    const task = defineJob({ type: "skewed-behind", handler });
    const worker = new RemoteWorker(client, {
      jobs: [task],
      concurrency: 1,
      prefetch: 1,
      leaseMs: 3000,
      heartbeatMs: 1000,
      clock,
      logger: silent,
    });
    const active: string[] = [];
    worker.on("active", (job) => active.push(`${job.id}#${job.attempt}`));
    worker.on("error", () => {});
    onTestFinished(() => worker.close({ graceMs: 0 }));
    // Claimed in id order: "a-first" starts, "b-ahead" waits.
    await h.queue.enqueue(task, {}, { id: "a-first" });
    await h.queue.enqueue(task, {}, { id: "b-ahead" });
    await worker.start();
    await vi.waitFor(() => expect(worker.prefetched).toBe(1), { interval: 5 });
    // No heartbeat gets through for longer than the lease: "ahead"'s lease is over.
    heartbeatsDown = true;
    await clock.advance(4000);
    gates.get("a-first")!();
    // Given back unstarted, then leased again on a fresh lease: it first runs as attempt 2.
    await vi.waitFor(() => expect(active).toContain("b-ahead#2"), { interval: 5 });
    expect(active).toEqual(["a-first#1", "b-ahead#2"]);
    gates.get("b-ahead")!();
    await vi.waitFor(async () => expect((await h.queue.get("b-ahead"))?.state).toBe("completed"), {
      interval: 5,
    });
    await worker.close({ graceMs: 0 });
  });

  it("splits a turn's completions the server refuses as too large, and fails a result too large alone", async () => {
    const h = await startServer(backend, { bodyLimit: 4096 });
    const reports: number[] = [];
    const client = new ErrandClient({
      url: h.base,
      fetch: async (input, init) => {
        const r = await fetch(input, init);
        if (pathOf(input) === "/v1/report") reports.push(r.status);
        return r;
      },
    });
    const task = defineJob({
      type: "big-results",
      handler: async (p: { size: number }) => "x".repeat(p.size),
    });
    const worker = new RemoteWorker(client, { jobs: [task], concurrency: 4, clock: h.clock, logger: silent });
    const errors: unknown[] = [];
    const done: string[] = [];
    worker.on("error", (e) => errors.push(e));
    worker.on("completed", (job) => done.push(`completed ${job.id}`));
    worker.on("dead", (job, error) => done.push(`dead ${job.id} ${(error as { code?: string }).code}`));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    for (const [id, size] of [
      ["a", 1500],
      ["b", 1500],
      ["c", 1500],
      ["big", 5000],
    ] as const) {
      await h.queue.enqueue(task, { size }, { id });
    }
    await worker.start();
    await vi.waitFor(() => expect(done).toHaveLength(4), { interval: 5 });
    expect(done.sort()).toEqual(["completed a", "completed b", "completed c", "dead big INVALID_PAYLOAD"]);
    // The four together (in claim order: a, b, big, c), then halves, then the last half's halves.
    expect(reports).toEqual([413, 200, 413, 413, 200]);
    expect(errors).toMatchObject([{ code: "INVALID_PAYLOAD" }]);
    for (const id of ["a", "b", "c"]) {
      expect(await h.queue.get(id)).toMatchObject({ state: "completed", result: "x".repeat(1500) });
    }
    expect(await h.queue.get("big")).toMatchObject({ state: "dead", attempt: 1 });
    await worker.close({ graceMs: 0 });
  });

  /**
   * A server, a client whose requests to `path` the way refuses with `refusal()` while `way.left`
   * counts down (the server's clock time of each request in `way.sent`, the indexes of those
   * refused in `way.refused`), and a started RemoteWorker of one type with its error events.
   */
  async function refusedOnTheWay(path: string, left: number, refusal: () => Response, type: string) {
    const h = await startServer(backend);
    const way = { left, sent: [] as number[], refused: [] as number[] };
    const client = new ErrandClient({
      url: h.base,
      fetch: async (input, init) => {
        if (pathOf(input) !== path) return fetch(input, init);
        way.sent.push(h.clock.now());
        if (way.left === 0) return fetch(input, init);
        way.left--;
        way.refused.push(way.sent.length - 1);
        return refusal();
      },
    });
    const task = defineJob({ type, handler: async () => "ok" });
    const worker = new RemoteWorker(client, { jobs: [task], clock: h.clock, logger: silent, waitMs: 60_000 });
    const errors: unknown[] = [];
    worker.on("error", (e) => errors.push(e));
    onTestFinished(() => worker.close({ graceMs: 0 }));
    await h.queue.enqueue(task, {}, { id: type });
    await worker.start();
    const completed = (id: string) => async () => (await h.queue.get(id))?.state === "completed";
    return { h, way, task, worker, errors, completed };
  }

  const throttled = (retryAfter: number) => () =>
    new Response("<html>Too Many Requests</html>", {
      status: 429,
      headers: { "content-type": "text/html", "retry-after": String(retryAfter) },
    });

  it("backs off lease requests refused in a row (a revoked token), up to 30 s, and resets once one succeeds", async () => {
    const revoked = () =>
      new Response(JSON.stringify({ error: { code: "UNAUTHORIZED", message: "bad token" } }), {
        status: 401,
        headers: { "content-type": "application/json" },
      });
    const { h, way, task, worker, errors, completed } = await refusedOnTheWay(
      "/v1/lease",
      7,
      revoked,
      "revoked",
    );
    await advanceUntil(h.clock, completed("revoked"), 250);
    // Each wait is set once the refusal is read, which the clock's steps (250 ms) may pass first;
    // from the second, it is drawn between half and all of the doubled wait.
    const gaps = way.sent.slice(1, 8).map((t, i) => t - way.sent[i]!);
    const waits = [1000, 2000, 4000, 8000, 16000, 30000, 30000];
    for (const [i, wait] of waits.entries()) {
      expect(gaps[i], `wait ${i + 1}`).toBeGreaterThanOrEqual(i === 0 ? wait : wait / 2);
      expect(gaps[i], `wait ${i + 1}`).toBeLessThanOrEqual(wait + 500);
    }
    // Doubling, not a fixed wait: the last two together are past what seven fixed waits would be.
    expect(gaps[5]! + gaps[6]!).toBeGreaterThanOrEqual(30000);
    expect(errors).toHaveLength(7);
    expect(errors.every((e) => (e as { code?: string }).code === "UNAUTHORIZED")).toBe(true);

    // Refused again after a lease that succeeded: the wait starts over at retryDelayMs.
    way.left = 1;
    await h.queue.enqueue(task, {}, { id: "again" });
    await advanceUntil(h.clock, () => way.refused.length === 8 && way.sent.length > way.refused[7]! + 1, 250);
    expect(await h.queue.get("again")).toMatchObject({ state: "completed" });
    const last = way.refused[7]!;
    expect(way.sent[last + 1]! - way.sent[last]!).toBeGreaterThanOrEqual(1000);
    expect(way.sent[last + 1]! - way.sent[last]!).toBeLessThanOrEqual(1500);
    expect(errors).toHaveLength(8);
    await worker.close({ graceMs: 0 });
  });

  it("waits out a lease 429's Retry-After each time, without backing off further", async () => {
    const { h, way, worker, errors, completed } = await refusedOnTheWay(
      "/v1/lease",
      5,
      throttled(2),
      "throttled-lease",
    );
    await advanceUntil(h.clock, completed("throttled-lease"), 250);
    const gaps = way.sent.slice(1, 6).map((t, i) => t - way.sent[i]!);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(2000);
      expect(gap).toBeLessThanOrEqual(2500);
    }
    expect(errors).toHaveLength(5);
    await worker.close({ graceMs: 0 });
  });

  it("sends a report a proxy throttles again after its Retry-After, and keeps the outcome", async () => {
    const { h, way, worker, errors, completed } = await refusedOnTheWay(
      "/v1/report",
      1,
      throttled(5),
      "throttled",
    );
    await advanceUntil(h.clock, completed("throttled"), 500);
    expect(way.sent).toHaveLength(2);
    expect(way.sent[1]! - way.sent[0]!).toBeGreaterThanOrEqual(5000);
    expect(errors).toEqual([]);
    await worker.close({ graceMs: 0 });
  });

  it("closes within its grace plus the client's timeout when a report never comes back", async () => {
    const h = await startServer(backend);
    const client = new ErrandClient({
      url: h.base,
      timeoutMs: 100,
      // A fetch that drops the request and ignores its signal: only the client's own bound ends it.
      fetch: (input, init) =>
        pathOf(input) === "/v1/report" ? new Promise<Response>(() => {}) : fetch(input, init),
    });
    const task = defineJob({ type: "unanswered", handler: async () => "ok" });
    const worker = new RemoteWorker(client, { jobs: [task], clock: h.clock, logger: silent });
    const failed = new Promise<unknown>((resolve) => worker.once("error", resolve));
    await h.queue.enqueue(task, {}, { id: "unanswered" });
    const reported = new Promise<void>((resolve) => worker.once("active", () => setImmediate(resolve)));
    await worker.start();
    await reported;
    await worker.close({ graceMs: 0 });
    expect(await failed).toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("no answer within 100 ms"),
    });
    // Left to its lease, as after a crash.
    expect(await h.queue.get("unanswered")).toMatchObject({ state: "active", attempt: 1 });
  });
});
