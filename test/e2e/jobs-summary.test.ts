/**
 * `GET /v1/jobs?view=summary`: each job without the fields its callers may make large (payload,
 * checkpoint, result, error history, dependency ids), for lists that show none of them (the
 * dashboard's). The rest of each job is as the full view has it, and filters and cursors work the
 * same; `view` is checked by the route's schema.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import { sharedSchemas } from "../../src/server/schemas.js";
import { type Backend, selectedBackends, someBackend } from "../conformance/backend.js";
import { type Harness, startServer } from "./harness.js";

/** What a summary leaves out. */
const HEAVY = ["payload", "checkpoint", "result", "errors", "dependsOn"];
const BIG = "x".repeat(100_000);
/** Heavy jobs each test makes: some completed, some dead. */
const COUNT = 6;

/** The JobSummary component's fields, as the OpenAPI document lists them. */
const SUMMARY_FIELDS = [...sharedSchemas.find((s) => s.$id === "JobSummary")!.required].sort();

/** A wire job (or summary) without the fields a summary leaves out. */
const withoutHeavy = (job: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(job).filter(([k]) => !HEAVY.includes(k)));

/** An Error as large as a failure is kept: a message at its bound, a long stack. */
function hugeError(): Error {
  const error = new Error("m".repeat(65_536));
  error.stack = `Error: boom\n${"    at somewhere (file.js:1:1)\n".repeat(400)}`;
  return error;
}

/** A heavy job's place in its batch. */
const order = (job: Job) => (job.payload as { i: number }).i;

/**
 * COUNT jobs with large payloads, checkpoints, two failures each at the error bound, then a large
 * result (the first half) or a third failure for good (the rest); a job depending on all of them
 * and one blocked on a pending job. Half are owned by "team-a", all have the key "acme".
 */
async function heavyJobs(h: Harness): Promise<{ heavy: Job[]; blocked: Job; gate: Job }> {
  const heavy = await h.queue.enqueueBatch(
    Array.from({ length: COUNT }, (_, i) => ({
      job: "heavy",
      payload: { i, big: BIG },
      options: {
        key: "acme",
        maxAttempts: 5,
        backoff: { type: "fixed" as const, delayMs: 0 },
        ...(i % 2 === 0 ? { owner: "team-a" } : {}),
      },
    })),
  );
  for (let round = 0; round < 3; round++) {
    const leased = await h.queue.lease({ types: ["heavy"], limit: COUNT });
    expect(leased).toHaveLength(COUNT);
    for (const [i, job] of leased.sort((a, b) => order(a) - order(b)).entries()) {
      await h.queue.checkpoint(job, { step: round, big: BIG });
      if (round < 2) await h.queue.fail(job, hugeError());
      else if (i < COUNT / 2) await h.queue.complete(job, { big: BIG });
      else await h.queue.fail(job, hugeError(), { retryable: false });
    }
  }
  await h.queue.enqueue("after", null, {
    dependsOn: heavy.slice(0, COUNT / 2).map((j) => j.id),
    onDependencyFailure: "run",
  });
  const gate = await h.queue.enqueue("gate", null, { delayMs: 3_600_000 });
  const blocked = await h.queue.enqueue("waiter", null, { dependsOn: [gate.id] });
  return { heavy, blocked, gate };
}

/** Every page of `query` in `view`, `limit` jobs at a time: each page's ids and nextCursor. */
async function pages(h: Harness, query: string, view: "full" | "summary", limit: number) {
  const out: Array<{ ids: string[]; nextCursor: string | null }> = [];
  for (let cursor: string | null = null; ; ) {
    const params = new URLSearchParams(query);
    params.set("limit", String(limit));
    params.set("view", view);
    if (cursor !== null) params.set("cursor", cursor);
    const r = await h.http("GET", `/v1/jobs?${params}`);
    expect(r.status, `${params}`).toBe(200);
    out.push({ ids: r.body.jobs.map((j: { id: string }) => j.id), nextCursor: r.body.nextCursor });
    cursor = r.body.nextCursor;
    if (cursor === null) return out;
  }
}

const selected = selectedBackends();
// Every store the run selects (a list's cursors are the store's own); SQLite when it selects only
// a store the conformance suite alone runs on.
const backends: Backend[] = selected.length > 0 ? selected : [someBackend()];

for (const backend of backends) {
  describe(`GET /v1/jobs?view=summary on ${backend.name}`, () => {
    it("answers each job without its heavy fields, the rest as the full view has it, in a small answer", async () => {
      const h = await startServer(backend);
      const { heavy, blocked } = await heavyJobs(h);
      const full = await h.http("GET", "/v1/jobs?limit=1000");
      const summary = await h.http("GET", "/v1/jobs?limit=1000&view=summary");
      expect(full.status).toBe(200);
      expect(summary.status).toBe(200);
      expect(summary.body.nextCursor).toBeNull();
      expect(summary.body.jobs.map((j: Job) => j.id)).toEqual(full.body.jobs.map((j: Job) => j.id));
      expect(summary.body.jobs).toHaveLength(COUNT + 3);

      // The full view carries what the jobs were given (so the summary has something to leave out).
      const fullById = new Map<string, Record<string, unknown>>(
        full.body.jobs.map((j: Record<string, unknown>) => [j.id, j]),
      );
      const done = fullById.get(heavy[0]!.id) as unknown as Job<{ big: string }, { big: string }>;
      expect(done.state).toBe("completed");
      expect(done.payload.big).toHaveLength(BIG.length);
      expect(done.result?.big).toHaveLength(BIG.length);
      expect(done.errors).toHaveLength(2);
      const dead = fullById.get(heavy[COUNT - 1]!.id) as unknown as Job;
      expect(dead.state).toBe("dead");
      expect(dead.errors).toHaveLength(3);
      expect((dead.checkpoint as { big: string }).big).toHaveLength(BIG.length);

      for (const s of summary.body.jobs as Record<string, unknown>[]) {
        for (const field of HEAVY) expect(s, `${s.id}.${field}`).not.toHaveProperty(field);
        // Every summary field, none padded in or stripped: exactly the full job's, less the heavy ones.
        expect(Object.keys(s).sort()).toEqual(SUMMARY_FIELDS);
        expect(s).toStrictEqual(withoutHeavy(fullById.get(s.id as string)!));
      }
      const waiting = summary.body.jobs.find((j: Job) => j.id === blocked.id);
      expect(waiting).toMatchObject({ state: "blocked", blockedBy: 1 });

      // Summaries are a few hundred characters whatever the jobs carry; whole, each is its fields.
      const fullChars = JSON.stringify(full.body).length;
      const summaryChars = JSON.stringify(summary.body).length;
      expect(fullChars).toBeGreaterThan(COUNT * 3 * BIG.length);
      expect(summaryChars).toBeLessThan(summary.body.jobs.length * 1_000);
    });

    it("filters and pages exactly as the full view does, with the same cursors", async () => {
      const h = await startServer(backend);
      await heavyJobs(h);
      for (const query of [
        "",
        "state=completed",
        "state=dead",
        "state=blocked",
        "type=heavy",
        "queue=default",
        "key=acme",
        "owner=team-a",
        "type=heavy&state=dead&key=acme",
      ]) {
        const full = await pages(h, query, "full", 2);
        const summary = await pages(h, query, "summary", 2);
        expect(summary, query).toEqual(full);
        expect(summary.flatMap((p) => p.ids).length, query).toBeGreaterThan(0);
      }
      // A cursor of one view leads on in the other.
      const [first] = await pages(h, "type=heavy", "summary", 2);
      const on = await h.http(
        "GET",
        `/v1/jobs?type=heavy&limit=2&cursor=${encodeURIComponent(first!.nextCursor!)}`,
      );
      const onSummary = await h.http(
        "GET",
        `/v1/jobs?type=heavy&limit=2&view=summary&cursor=${encodeURIComponent(first!.nextCursor!)}`,
      );
      expect(on.body.jobs.map((j: Job) => j.id)).toEqual(onSummary.body.jobs.map((j: Job) => j.id));
      expect(on.body.jobs).toHaveLength(2);
    });

    it("takes view=full as the default, and refuses any other view with 400 INVALID_REQUEST", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("t", { a: 1 }, { id: "one" });
      const plain = await h.http("GET", "/v1/jobs");
      expect(plain.body.jobs[0].payload).toEqual({ a: 1 });
      expect(await h.http("GET", "/v1/jobs?view=full")).toMatchObject({ status: 200, body: plain.body });
      for (const view of ["bogus", "", "SUMMARY", "summary&view=full"]) {
        const r = await h.http("GET", `/v1/jobs?view=${view}`);
        expect(r.status, view).toBe(400);
        expect(r.body.code, view).toBe("INVALID_REQUEST");
      }
    });
  });
}

describe("the OpenAPI document on GET /v1/jobs", () => {
  it("describes the summary as its own component, and a page as either shape", async () => {
    const h = await startServer(someBackend());
    const doc = (await h.http("GET", "/openapi.json")).body;
    const component = doc.components.schemas.JobSummary;
    expect(component.description).toContain("view=summary");
    expect(Object.keys(component.properties).sort()).toEqual(SUMMARY_FIELDS);
    expect(component.additionalProperties).toBe(false);
    const list = doc.paths["/v1/jobs"].get;
    const view = list.parameters.find((p: { name: string }) => p.name === "view");
    expect(view).toMatchObject({ in: "query", schema: { enum: ["full", "summary"], default: "full" } });
    const shapes = list.responses["200"].content["application/json"].schema.anyOf;
    expect(shapes.map((s: { properties: { jobs: { items: unknown } } }) => s.properties.jobs.items)).toEqual([
      { $ref: "#/components/schemas/Job" },
      { $ref: "#/components/schemas/JobSummary" },
    ]);
  });
});
