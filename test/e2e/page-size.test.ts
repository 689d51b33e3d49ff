/**
 * Answers that hold many jobs or schedules stay within what one answer can carry
 * (MAX_PAGE_CHARS): `limit` items of payloads at the queue's bound are past it, and an answer V8
 * cannot make was a 500 — for a lease, with its jobs left leased to no one. A page stops short
 * with a cursor that goes on from there; a lease gives back what it cannot carry.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import { claimSize } from "../../src/server/lease-claims.js";
import { MAX_PAGE_CHARS } from "../../src/server/page-size.js";
import { selectedBackends } from "../conformance/backend.js";
import { type Harness, serve, startServer } from "./harness.js";

/** Enough jobs of ~1 MB payloads to pass MAX_PAGE_CHARS by a few. */
const BIG = "x".repeat(1_000_000);
const COUNT = Math.ceil(MAX_PAGE_CHARS / BIG.length) + 3;
const [backend] = selectedBackends();

/** Every page of `path` (whose answer lists `key`), following nextCursor: the pages' lengths and all ids. */
async function allPages(h: Harness, path: string, key: string, id: string) {
  const sizes: number[] = [];
  const ids: string[] = [];
  for (let cursor: string | null = null; ; ) {
    const r = await h.http("GET", `${path}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body[key]).length).toBeLessThanOrEqual(MAX_PAGE_CHARS + 1024);
    sizes.push(r.body[key].length);
    ids.push(...r.body[key].map((item: Record<string, string>) => item[id]));
    cursor = r.body.nextCursor;
    if (cursor === null) return { sizes, ids };
  }
}

describe.runIf(backend)(`answers within ${MAX_PAGE_CHARS} characters on ${backend?.name}`, () => {
  it("pages jobs that would not fit in one answer, and the cursor leads on to every one of them", async () => {
    const h = await startServer(backend!);
    const payloads = Array.from({ length: COUNT }, (_, i) => ({ i, big: BIG }));
    await h.queue.enqueueMany("big", payloads);
    const { sizes, ids } = await allPages(h, "/v1/jobs?limit=1000", "jobs", "id");
    expect(sizes[0]).toBeLessThan(COUNT);
    expect(sizes[0]).toBeGreaterThan(1);
    expect(new Set(ids).size).toBe(COUNT);
    // The bound is measured on what is sent: the jobs' summaries, without their payloads, fit in one.
    const summary = await h.http("GET", "/v1/jobs?limit=1000&view=summary");
    expect(summary.status).toBe(200);
    expect(summary.body.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...ids].sort());
    expect(summary.body.nextCursor).toBeNull();
  }, 120_000);

  it("leases what one answer carries and gives the rest back at once, their attempts unspent", async () => {
    const h = await startServer(backend!);
    await h.queue.enqueueMany(
      "big",
      Array.from({ length: COUNT }, (_, i) => ({ i, big: BIG })),
    );
    const r = await h.http("POST", "/v1/lease", { body: { limit: 1000, leaseMs: 600_000 } });
    expect(r.status).toBe(200);
    const leased = r.body.jobs.length;
    expect(leased).toBeLessThan(COUNT);
    expect(leased).toBeGreaterThan(1);
    const stats = await h.queue.stats();
    expect({ active: stats.states.active, pending: stats.states.pending }).toEqual({
      active: leased,
      pending: COUNT - leased,
    });
    const back = await h.queue.list({ state: "pending", limit: 1000 });
    const fresh = await h.queue.enqueue("big", null, { delayMs: 3_600_000 });
    // Given back, not failed: no error, and as many attempts left as a job never leased has.
    for (const j of back.jobs) {
      expect(j.errors).toEqual([]);
      expect(j.maxAttempts - j.attempt).toBe(fresh.maxAttempts - fresh.attempt);
    }
  }, 120_000);

  it("claims a large lease in steps, none past the one that fills the answer", async () => {
    // At a 16 MiB payload bound a claim takes 4 jobs: the store is read 4 jobs at a time, not
    // all the lease's 1,000 before the answer is measured.
    const maxPayloadBytes = 16 * 1_048_576;
    const size = claimSize(maxPayloadBytes);
    expect(size).toBe(4);
    const bundle = await backend!.setup({ maxPayloadBytes });
    const h = { ...bundle, ...(await serve(bundle.queue)) };
    const total = COUNT + 20;
    await h.queue.enqueueMany(
      "big",
      Array.from({ length: total }, (_, i) => ({ i, big: BIG })),
    );
    const lease = h.queue.lease.bind(h.queue);
    const claims: number[] = [];
    h.queue.lease = async (...args: Parameters<typeof lease>): Promise<Job[]> => {
      const jobs = await lease(...args);
      claims.push(jobs.length);
      return jobs;
    };
    const r = await h.http("POST", "/v1/lease", { body: { limit: 1000, leaseMs: 600_000 } });
    expect(r.status).toBe(200);
    const leased = r.body.jobs.length;
    expect(leased).toBeGreaterThan(1);
    expect(claims.every((n) => n <= size)).toBe(true);
    const claimed = claims.reduce((a, b) => a + b, 0);
    expect(claimed).toBeGreaterThanOrEqual(leased);
    expect(claimed).toBeLessThanOrEqual(leased + size);
    expect(claimed).toBeLessThan(total);
    const stats = await h.queue.stats();
    expect({ active: stats.states.active, pending: stats.states.pending }).toEqual({
      active: leased,
      pending: total - leased,
    });
  }, 120_000);

  it("reads whole jobs a step at a time: no read of a page takes far more than the answer carries", async () => {
    // At a 16 MiB payload bound a whole job may be 48 MiB: a read takes 2 (page-size.ts).
    const bundle = await backend!.setup({ maxPayloadBytes: 16 * 1_048_576 });
    const h = { ...bundle, ...(await serve(bundle.queue)) };
    const total = COUNT + 20;
    const parent = await h.queue.enqueue("parent", null, { delayMs: 3_600_000 });
    await h.queue.enqueueMany(
      "big",
      Array.from({ length: total }, (_, i) => ({ i, big: BIG })),
      { dependsOn: [parent.id] },
    );
    // Whole jobs read: by a list or dependents page of them, or by id (a list page's jobs are
    // found by a summary read, then read whole by id).
    const reads: number[] = [];
    for (const name of ["list", "dependents"] as const) {
      const read = h.queue[name].bind(h.queue) as (...a: unknown[]) => Promise<{ jobs: Job[] }>;
      (h.queue as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
        const page = await read(...args);
        const summary = args.some((a) => (a as { view?: string } | undefined)?.view === "summary");
        if (!summary) reads.push(page.jobs.length);
        return page;
      };
    }
    const getMany = h.queue.store.getMany.bind(h.queue.store);
    h.queue.store.getMany = async (params) => {
      const found = await getMany(params);
      reads.push(found.length);
      return found;
    };
    for (const path of ["/v1/jobs?limit=1000&type=big", `/v1/jobs/${parent.id}/dependents?limit=1000`]) {
      reads.length = 0;
      const { sizes, ids } = await allPages(h, path, "jobs", "id");
      expect(sizes[0]).toBeGreaterThan(1);
      expect(sizes[0]).toBeLessThan(total);
      expect(new Set(ids).size).toBe(total);
      expect(Math.max(...reads)).toBeLessThanOrEqual(2);
    }
  }, 180_000);

  it("pages a job's dependents and the schedules the same way", async () => {
    const h = await startServer(backend!);
    const parent = await h.queue.enqueue("parent", null, { delayMs: 3_600_000 });
    await h.queue.enqueueMany(
      "child",
      Array.from({ length: COUNT }, (_, i) => ({ i, big: BIG })),
      { dependsOn: [parent.id] },
    );
    const dependents = await allPages(h, `/v1/jobs/${parent.id}/dependents?limit=1000`, "jobs", "id");
    expect(dependents.sizes[0]).toBeLessThan(COUNT);
    expect(new Set(dependents.ids).size).toBe(COUNT);

    for (let i = 0; i < COUNT; i++) {
      await h.queue.schedule(`s${String(i).padStart(3, "0")}`, {
        cron: "0 3 * * *",
        job: "nightly",
        payload: { big: BIG },
      });
    }
    const schedules = await allPages(h, "/v1/schedules?limit=1000", "schedules", "name");
    expect(schedules.sizes[0]).toBeLessThan(COUNT);
    expect(new Set(schedules.ids).size).toBe(COUNT);
  }, 180_000);
});
