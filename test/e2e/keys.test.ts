/**
 * Keys, snooze, debounce and the per-key type settings over HTTP (issue 15): enqueue with `key`
 * and `debounce` (one, bulk, flows; not PUT, which gives an id), `GET /v1/jobs?key=`, bad keys refused as INVALID_KEY
 * with nothing stored, `POST /v1/jobs/{id}/snooze` and the report's snooze outcome (fenced exactly
 * as a release is), a RemoteWorker's `ctx.snooze()`, and `keyConcurrency` / `ordered` set with
 * `PUT /v1/types/{type}` holding leases back.
 */
import { describe, expect, it } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { type Harness, snapshot, startServer } from "./harness.js";

/** Leases up to `limit` ready jobs of `type` over HTTP. */
async function lease(h: Harness, type: string, limit = 10): Promise<Array<{ id: string; attempt: number }>> {
  const r = await h.http("POST", "/v1/lease", { body: { types: [type], limit } });
  expect(r.status).toBe(200);
  return r.body.jobs;
}

for (const backend of selectedBackends()) {
  describe(`keys, snooze and debounce over HTTP on ${backend.name}`, () => {
    it("stores a key from every enqueue route and lists by it", async () => {
      const h = await startServer(backend);
      const one = await h.http("POST", "/v1/jobs", { body: { type: "sync", key: "tenant-7" } });
      expect(one.status).toBe(201);
      expect(one.body).toMatchObject({ key: "tenant-7", debounceKey: null, snoozes: 0 });
      const bulk = await h.http("POST", "/v1/jobs", {
        body: {
          jobs: [{ type: "sync", key: "tenant-7" }, { type: "sync", key: "tenant-8" }, { type: "sync" }],
        },
      });
      expect(bulk.body.jobs.map((j: { key: string | null }) => j.key)).toEqual([
        "tenant-7",
        "tenant-8",
        null,
      ]);
      const put = await h.http("PUT", "/v1/jobs/by-id", { body: { type: "sync", key: "tenant-7" } });
      expect(put).toMatchObject({ status: 201, body: { id: "by-id", key: "tenant-7" } });
      const flow = await h.http("POST", "/v1/flows", {
        body: { jobs: [{ ref: "a", type: "sync", key: "tenant-9" }] },
      });
      expect(flow.body.jobs.a.key).toBe("tenant-9");
      const schedule = await h.http("PUT", "/v1/schedules/nightly", {
        body: { cron: "0 3 * * *", type: "sync", options: { key: "tenant-9" } },
      });
      expect(schedule).toMatchObject({ status: 200, body: { options: { key: "tenant-9" } } });

      const listed = await h.http("GET", "/v1/jobs?key=tenant-7");
      expect(listed.status).toBe(200);
      expect(listed.body.jobs.map((j: { id: string }) => j.id).sort()).toEqual(
        [one.body.id, bulk.body.jobs[0].id, "by-id"].sort(),
      );
      const client = new ErrandClient(h.base);
      const page = await client.list({ key: "tenant-8" });
      expect(page.jobs.map((j) => [j.id, j.key])).toEqual([[bulk.body.jobs[1].id, "tenant-8"]]);
      const got = await client.get(one.body.id);
      expect(got).toMatchObject({ key: "tenant-7", debounceKey: null, snoozes: 0 });
      const sent = await client.enqueue("sync", {}, { key: "tenant-10" });
      expect(sent.key).toBe("tenant-10");
    });

    it("refuses a bad key as INVALID_KEY, and a clashing debounce, storing nothing", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("seed", 1);
      const before = await snapshot(h);
      const cases: Array<[string, string, unknown, string]> = [
        ["POST", "/v1/jobs", { type: "t", key: "two words" }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { type: "t", key: "__proto__" }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { type: "t", key: "x".repeat(129) }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { jobs: [{ type: "t" }, { type: "t", key: "" }] }, "INVALID_KEY"],
        ["PUT", "/v1/jobs/j1", { type: "t", key: "a/b" }, "INVALID_KEY"],
        ["POST", "/v1/flows", { jobs: [{ ref: "a", type: "t", key: "a b" }] }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { type: "t", debounce: { key: "", delayMs: 10 } }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { type: "t", debounce: { key: "x".repeat(256), delayMs: 10 } }, "INVALID_KEY"],
        ["POST", "/v1/jobs", { type: "t", debounce: { key: "k", delayMs: "soon" } }, "INVALID_DURATION"],
        ["POST", "/v1/jobs", { type: "t", debounce: { key: "k", delayMs: 1 }, delayMs: 5 }, "INVALID_OPTION"],
        ["POST", "/v1/jobs", { type: "t", debounce: { key: "k" } }, "INVALID_REQUEST"],
        // The id a PUT gives would name no job when the enqueue answers with the one waiting.
        ["PUT", "/v1/jobs/j2", { type: "t", debounce: { key: "k", delayMs: 1 } }, "INVALID_OPTION"],
        // A flow's node is one job that others may wait for; debounce decides which job it is.
        [
          "POST",
          "/v1/flows",
          { jobs: [{ ref: "a", type: "t", debounce: { key: "k", delayMs: 1 } }] },
          "INVALID_REQUEST",
        ],
        ["GET", "/v1/jobs?key=two%20words", undefined, "INVALID_KEY"],
        ["PUT", "/v1/schedules/s1", { cron: "0 3 * * *", type: "t", options: { key: "a b" } }, "INVALID_KEY"],
      ];
      for (const [method, path, body, code] of cases) {
        const r = await h.http(method, path, body === undefined ? {} : { body });
        expect({ method, path, body, status: r.status, code: r.body?.code }).toEqual({
          method,
          path,
          body,
          status: 400,
          code,
        });
      }
      expect(await snapshot(h)).toEqual(before);
    });

    it("debounces: a later enqueue with the key replaces the pending job's payload and runAt", async () => {
      const h = await startServer(backend);
      const first = await h.http("POST", "/v1/jobs", {
        body: { type: "reindex", payload: { doc: 9, v: 1 }, debounce: { key: "reindex:9", delayMs: "5s" } },
      });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ debounceKey: "reindex:9", state: "pending" });
      expect(Date.parse(first.body.runAt)).toBe(h.clock.now() + 5000);

      await h.clock.advance(3000);
      const second = await h.http("POST", "/v1/jobs", {
        body: { type: "reindex", payload: { doc: 9, v: 2 }, debounce: { key: "reindex:9", delayMs: 5000 } },
      });
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ id: first.body.id, duplicate: true, payload: { doc: 9, v: 2 } });
      expect(Date.parse(second.body.runAt)).toBe(h.clock.now() + 5000);
      // In a bulk request too, and through the client.
      const bulk = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "reindex", payload: { v: 3 }, debounce: { key: "reindex:9", delayMs: 0 } }] },
      });
      expect(bulk.body.jobs[0]).toMatchObject({ id: first.body.id, duplicate: true, payload: { v: 3 } });
      const client = new ErrandClient(h.base);
      const again = await client.enqueue(
        "reindex",
        { v: 4 },
        { debounce: { key: "reindex:9", delayMs: "1s" } },
      );
      expect(again).toMatchObject({ id: first.body.id, duplicate: true, payload: { v: 4 } });
      expect(again.runAt).toEqual(new Date(h.clock.now() + 1000));

      // Once it has started, the key makes a new job.
      await h.clock.advance(1000);
      expect((await lease(h, "reindex")).map((j) => j.id)).toEqual([first.body.id]);
      const fresh = await client.enqueue(
        "reindex",
        { v: 5 },
        { debounce: { key: "reindex:9", delayMs: 10 } },
      );
      expect(fresh.duplicate).toBe(false);
      expect(fresh.id).not.toBe(first.body.id);
      expect((await h.http("GET", "/v1/jobs?state=pending")).body.jobs).toHaveLength(1);
    });

    it("snoozes over /snooze and /report, fenced exactly as a release is", async () => {
      const h = await startServer(backend);
      const made = await h.http("POST", "/v1/jobs", { body: { type: "call-partner", maxAttempts: 3 } });
      const id: string = made.body.id;
      const [job] = await lease(h, "call-partner");
      expect(job).toMatchObject({ id, attempt: 1 });

      // The same refusal, word for word, for each way a report can be stale or misdirected.
      const sameAsRelease = async (target: string, attempt: number) => {
        const snooze = await h.http("POST", `/v1/jobs/${target}/snooze`, {
          body: { attempt, delayMs: 1000 },
        });
        const release = await h.http("POST", `/v1/jobs/${target}/release`, { body: { attempt } });
        expect(snooze.status).toBeGreaterThanOrEqual(400);
        expect({ status: snooze.status, body: snooze.body }).toEqual({
          status: release.status,
          body: release.body,
        });
        return snooze;
      };
      expect((await sameAsRelease(id, 2)).body.code).toBe("STALE_ATTEMPT");
      expect((await sameAsRelease("no-such-job", 1)).body.code).toBe("JOB_NOT_FOUND");
      const badDelay = await h.http("POST", `/v1/jobs/${id}/snooze`, {
        body: { attempt: 1, delayMs: "soon" },
      });
      expect(badDelay).toMatchObject({ status: 400, body: { code: "INVALID_DURATION" } });
      expect((await h.queue.get(id))?.state).toBe("active");

      const ok = await h.http("POST", `/v1/jobs/${id}/snooze`, { body: { attempt: 1, delayMs: "30s" } });
      expect(ok).toMatchObject({ status: 200, body: { ok: true } });
      const snoozed = (await h.http("GET", `/v1/jobs/${id}`)).body;
      expect(snoozed).toMatchObject({
        state: "pending",
        attempt: 1,
        maxAttempts: 4,
        snoozes: 1,
        errors: [],
        leaseExpiresAt: null,
        workerId: null,
      });
      expect(Date.parse(snoozed.runAt)).toBe(h.clock.now() + 30_000);
      // Now attempt 1 has ended: a repeat is stale, as a repeated release would be.
      expect((await sameAsRelease(id, 1)).body.code).toBe("STALE_ATTEMPT");
      expect(await lease(h, "call-partner")).toEqual([]);

      await h.clock.advance(30_000);
      const [next] = await lease(h, "call-partner");
      expect(next).toMatchObject({ id, attempt: 2 });
      const reported = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            { id, attempt: 2, outcome: "snooze", delayMs: 60_000 },
            { id, attempt: 1, outcome: "snooze", delayMs: 60_000 },
            { id: "no-such-job", attempt: 1, outcome: "snooze", delayMs: 1 },
            { id, attempt: 2, outcome: "snooze" },
          ],
        },
      });
      expect(reported.body.results).toEqual([
        { id, ok: true, state: "pending" },
        { id, ok: false, code: "STALE_ATTEMPT" },
        { id: "no-such-job", ok: false, code: "JOB_NOT_FOUND" },
        { id, ok: false, code: "INVALID_DURATION" },
      ]);
      expect(await h.queue.get(id)).toMatchObject({
        state: "pending",
        attempt: 2,
        maxAttempts: 5,
        snoozes: 2,
      });
    });

    it("a RemoteWorker's handler snoozes, then completes: the job ends completed with snoozes 1", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const partner = { up: false };
      const call = defineJob({
        type: "call-partner",
        maxAttempts: 1,
        handler: async (_p: null, ctx) => (partner.up ? "called" : ctx.snooze("30s")),
      });
      const worker = new RemoteWorker(client, { jobs: [call], waitMs: 60_000, clock: h.clock });
      const snoozed = new Promise<{ runAt: Date; snoozes: number }>((resolve) =>
        worker.on("snoozed", resolve),
      );
      const completed = new Promise<unknown>((resolve) =>
        worker.on("completed", (_job, result) => resolve(result)),
      );
      await worker.start();
      // The definition's maxAttempts stays with the handler; the enqueue says it to the server.
      const job = await client.enqueue(call, null, { maxAttempts: 1 });
      const seen = await snoozed;
      expect(seen.snoozes).toBe(1);
      expect(await client.get(job.id)).toMatchObject({ state: "pending", snoozes: 1, maxAttempts: 2 });
      expect(+seen.runAt).toBe(h.clock.now() + 30_000);

      partner.up = true;
      await h.clock.advance(30_000);
      // A look begun before the job was due may end after the last timer the advance fired.
      h.queue.store.wake();
      expect(await completed).toBe("called");
      await worker.close();
      // maxAttempts was 1: the snoozed attempt did not use it up.
      expect(await client.get(job.id)).toMatchObject({
        state: "completed",
        attempt: 2,
        snoozes: 1,
        errors: [],
        result: "called",
      });
    });

    it("takes keyConcurrency and ordered as type settings, and holds leases back by key", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/types/sync", { body: { keyConcurrency: 1 } });
      expect(put).toMatchObject({ status: 201, body: { type: "sync", keyConcurrency: 1 } });
      const ordered = await h.http("PUT", "/v1/types/ledger", { body: { ordered: true } });
      expect(ordered.body).toEqual({ type: "ledger", ordered: true });
      expect((await h.http("GET", "/v1/types/ledger")).body).toEqual({ type: "ledger", ordered: true });
      const bad = await h.http("PUT", "/v1/types/sync", { body: { keyConcurrency: 0 } });
      expect(bad).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
      const badOrdered = await h.http("PUT", "/v1/types/sync", { body: { ordered: "yes" } });
      expect(badOrdered).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
      const client = new ErrandClient(h.base);
      expect(await client.getType("sync")).toEqual({ type: "sync", keyConcurrency: 1 });

      const enqueued = await h.http("POST", "/v1/jobs", {
        body: {
          jobs: [
            { type: "sync", key: "a" },
            { type: "sync", key: "a" },
            { type: "sync", key: "b" },
            { type: "sync" },
            { type: "sync" },
          ],
        },
      });
      const [a1, a2, b1, n1, n2] = enqueued.body.jobs.map((j: { id: string }) => j.id);
      const first = await lease(h, "sync");
      // One of key a (the cap), key b's, and every job without a key.
      expect(first.map((j) => j.id).sort()).toEqual([a1, b1, n1, n2].sort());
      expect(await lease(h, "sync")).toEqual([]);
      const a = first.find((j) => j.id === a1)!;
      expect((await h.http("POST", `/v1/jobs/${a1}/complete`, { body: { attempt: a.attempt } })).status).toBe(
        200,
      );
      expect((await lease(h, "sync")).map((j) => j.id)).toEqual([a2]);

      // ordered: the key's jobs one at a time, in enqueue order.
      const l1 = await client.enqueue("ledger", { n: 1 }, { key: "account:1" });
      const l2 = await client.enqueue("ledger", { n: 2 }, { key: "account:1" });
      const [got] = await lease(h, "ledger");
      expect(got?.id).toBe(l1.id);
      expect(await lease(h, "ledger")).toEqual([]);
      await client.complete({ id: l1.id, attempt: got!.attempt }, null);
      expect((await lease(h, "ledger")).map((j) => j.id)).toEqual([l2.id]);
    });

    it("takes fair as a type setting: jobs enqueued over HTTP take turns across keys", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/types/tenant-sync", { body: { fair: true } });
      expect(put).toMatchObject({ status: 201, body: { type: "tenant-sync", fair: true } });
      const bad = await h.http("PUT", "/v1/types/tenant-sync", { body: { fair: "yes" } });
      expect(bad).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
      const client = new ErrandClient(h.base);
      expect(await client.getType("tenant-sync")).toEqual({ type: "tenant-sync", fair: true });
      const backlog = Array.from({ length: 6 }, () => ({ type: "tenant-sync", key: "a" }));
      await h.http("POST", "/v1/jobs", { body: { jobs: backlog } });
      const late = await client.enqueue("tenant-sync", { n: 1 }, { key: "b" });
      // b's turn is level with a's first: it comes in the first two, not after a's six.
      const firstTwo = [...(await lease(h, "tenant-sync", 1)), ...(await lease(h, "tenant-sync", 1))];
      expect(firstTwo.map((j) => j.id)).toContain(late.id);
    });
  });
}
