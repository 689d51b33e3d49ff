/**
 * Job dependencies over HTTP: enqueue with `dependsOn` (one, bulk, PUT), `POST /v1/flows`, the
 * dependencies and dependents routes, the type setting, blocked jobs in stats and lists, the lease
 * never handing out a blocked job, a remote completion unblocking exactly as a local one, and the
 * client and RemoteWorker on top.
 */
import { describe, expect, it } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob, type JobDependency } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { ALL_TOKENS, type Harness, snapshot, startServer, TOKENS } from "./harness.js";

/** Leases the one ready job of `type` over HTTP and completes it there with `result`. */
async function completeOverHttp(h: Harness, type: string, result: unknown): Promise<string> {
  const leased = await h.http("POST", "/v1/lease", { body: { types: [type], limit: 1 } });
  expect(leased.body.jobs, `a ${type} job to lease`).toHaveLength(1);
  const job = leased.body.jobs[0];
  const done = await h.http("POST", `/v1/jobs/${job.id}/complete`, {
    body: { attempt: job.attempt, result },
  });
  expect(done.status).toBe(200);
  return job.id;
}

for (const backend of selectedBackends()) {
  describe(`dependencies over HTTP on ${backend.name}`, () => {
    it("enqueues with dependsOn (one, PUT, bulk): blocked until every dependency completes", async () => {
      const h = await startServer(backend);
      const a = await h.http("POST", "/v1/jobs", { body: { type: "fetch", payload: { url: "a" } } });
      const b = await h.http("PUT", "/v1/jobs/page-b", { body: { type: "fetch", payload: { url: "b" } } });
      expect(b.status).toBe(201);
      const c = await h.http("POST", "/v1/jobs", {
        body: { type: "merge", dependsOn: [a.body.id, "page-b"], onDependencyFailure: "run" },
      });
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({
        state: "blocked",
        blockedBy: 2,
        dependsOn: [a.body.id, "page-b"],
        onDependencyFailure: "run",
      });
      const d = await h.http("PUT", "/v1/jobs/report", { body: { type: "report", dependsOn: [c.body.id] } });
      expect(d.body).toMatchObject({ id: "report", state: "blocked", blockedBy: 1 });
      const bulk = await h.http("POST", "/v1/jobs", {
        body: { jobs: [{ type: "notify", dependsOn: ["report"] }, { type: "notify" }] },
      });
      expect(bulk.body.jobs.map((j: { state: string }) => j.state)).toEqual(["blocked", "pending"]);

      const stats = await h.http("GET", "/v1/stats");
      expect(stats.body.states).toMatchObject({ blocked: 3, pending: 3 });
      expect(stats.body.queues.default.blocked).toBe(3);
      expect(stats.body.types.merge).toEqual({ blocked: 1 });
      const blocked = await h.http("GET", "/v1/jobs?state=blocked");
      expect(blocked.body.jobs.map((j: { type: string }) => j.type).sort()).toEqual([
        "merge",
        "notify",
        "report",
      ]);

      await completeOverHttp(h, "fetch", "A");
      expect((await h.http("GET", `/v1/jobs/${c.body.id}`)).body).toMatchObject({
        state: "blocked",
        blockedBy: 1,
      });
      await completeOverHttp(h, "fetch", "B");
      expect((await h.http("GET", `/v1/jobs/${c.body.id}`)).body).toMatchObject({
        state: "pending",
        blockedBy: 0,
      });
      expect((await h.http("GET", "/v1/jobs/report")).body.state).toBe("blocked");
    });

    it("refuses an unknown dependency with 400 DEPENDENCY_NOT_FOUND and stores nothing of the request", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("fetch", {}, { id: "there" });
      const before = await snapshot(h);
      for (const [method, path, body] of [
        ["POST", "/v1/jobs", { type: "merge", dependsOn: ["there", "missing"] }],
        ["PUT", "/v1/jobs/new", { type: "merge", dependsOn: ["missing"] }],
        ["POST", "/v1/jobs", { jobs: [{ type: "a" }, { type: "merge", dependsOn: ["missing"] }] }],
        [
          "POST",
          "/v1/flows",
          {
            jobs: [
              { ref: "a", type: "a" },
              { ref: "m", type: "m", dependsOn: ["a", { id: "missing" }] },
            ],
          },
        ],
      ] as const) {
        const r = await h.http(method, path, { body });
        expect(r.status, `${method} ${path}`).toBe(400);
        expect(r.body).toMatchObject({ code: "DEPENDENCY_NOT_FOUND", details: { id: "missing" } });
      }
      // Refused by the schema or the planner: not a list of ids, a repeated id, itself.
      for (const [body, code] of [
        [{ type: "m", dependsOn: "there" }, "INVALID_REQUEST"],
        [{ type: "m", dependsOn: ["there", "there"] }, "INVALID_OPTION"],
        [{ type: "m", id: "self", dependsOn: ["self"] }, "INVALID_OPTION"],
        [{ type: "m", onDependencyFailure: "ignore" }, "INVALID_REQUEST"],
      ] as const) {
        const r = await h.http("POST", "/v1/jobs", { body });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.code, JSON.stringify(body)).toBe(code);
      }
      expect(await snapshot(h)).toEqual(before);
    });

    it("enqueues a flow by refs and ids in one request, answers every node by ref, and is a no-op when re-run", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("seed", {}, { id: "seed" });
      const body = {
        jobs: [
          {
            ref: "merge",
            type: "merge",
            payload: {},
            dependsOn: ["a", "b", { id: "seed" }],
            id: "flow-merge",
          },
          { ref: "a", type: "fetch", payload: { url: "a" }, id: "flow-a" },
          { ref: "b", type: "fetch", payload: { url: "b" }, queue: "slow", id: "flow-b" },
          { ref: "notify", type: "notify", dependsOn: ["merge"], id: "flow-notify" },
        ],
      };
      const first = await h.http("POST", "/v1/flows", { body });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(Object.keys(first.body.jobs).sort()).toEqual(["a", "b", "merge", "notify"]);
      expect(first.body.jobs.merge).toMatchObject({
        id: "flow-merge",
        state: "blocked",
        blockedBy: 3,
        dependsOn: ["flow-a", "flow-b", "seed"],
      });
      expect(first.body.jobs.b).toMatchObject({ state: "pending", queue: "slow" });
      expect(first.body.jobs.notify).toMatchObject({ id: "flow-notify", state: "blocked", blockedBy: 1 });

      const again = await h.http("POST", "/v1/flows", { body });
      expect(again.status).toBe(200);
      for (const ref of ["a", "b", "merge", "notify"]) {
        expect(again.body.jobs[ref]).toMatchObject({ id: first.body.jobs[ref].id, duplicate: true });
      }
      expect((await h.queue.stats()).states).toMatchObject({ blocked: 2, pending: 3 });

      const before = await snapshot(h);
      for (const bad of [
        {
          jobs: [
            { ref: "x", type: "t", dependsOn: ["y"] },
            { ref: "y", type: "t", dependsOn: ["x"] },
          ],
        },
        {
          jobs: [
            { ref: "x", type: "t" },
            { ref: "x", type: "t" },
          ],
        },
        { jobs: [{ ref: "x", type: "t", dependsOn: ["nobody"] }] },
      ]) {
        const r = await h.http("POST", "/v1/flows", { body: bad });
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(r.body.code, JSON.stringify(bad)).toBe("INVALID_FLOW");
      }
      expect(await snapshot(h)).toEqual(before);
    });

    it("lists a job's dependencies with states and results, and its dependents a page at a time", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("fetch", { url: "a" }, { id: "a" });
      await h.queue.enqueue("fetch", { url: "b" }, { id: "b" });
      const merge = await h.queue.enqueue(
        "merge",
        {},
        { id: "m", dependsOn: ["a", "b"], onDependencyFailure: "run" },
      );
      for (const n of [3, 1, 2])
        await h.queue.enqueue("after", { n }, { id: `after-${n}`, dependsOn: ["a"] });
      await completeOverHttp(h, "fetch", "page A");
      await h.queue.cancel("b");

      const deps = await h.http("GET", `/v1/jobs/${merge.id}/dependencies`);
      expect(deps.status).toBe(200);
      expect(deps.body.dependencies).toEqual([
        { id: "a", type: "fetch", state: "completed", result: "page A" },
        { id: "b", type: "fetch", state: "cancelled", result: null },
      ]);
      expect((await h.http("GET", "/v1/jobs/a/dependencies")).body.dependencies).toEqual([]);
      expect((await h.http("GET", "/v1/jobs/missing/dependencies")).body.code).toBe("JOB_NOT_FOUND");

      const page1 = await h.http("GET", "/v1/jobs/a/dependents?limit=2");
      expect(page1.body.jobs.map((j: { id: string }) => j.id)).toEqual(["after-1", "after-2"]);
      const page2 = await h.http("GET", `/v1/jobs/a/dependents?limit=2&cursor=${page1.body.nextCursor}`);
      expect(page2.body.jobs.map((j: { id: string }) => j.id)).toEqual(["after-3", "m"]);
      expect(page2.body.nextCursor).toBeNull();
      expect((await h.http("GET", "/v1/jobs/missing/dependents")).status).toBe(404);
      expect((await h.http("GET", "/v1/jobs/a/dependents?limit=0")).status).toBe(400);
    });

    it("never leases a blocked job, and a waiting lease gets the job a remote completion unblocks", async () => {
      const h = await startServer(backend);
      await h.queue.enqueue("fetch", {}, { id: "a" });
      await h.queue.enqueue("merge", {}, { id: "m", dependsOn: ["a"], priority: 100 });
      const none = await h.http("POST", "/v1/lease", { body: { types: ["merge"], limit: 10 } });
      expect(none.body.jobs).toEqual([]);
      const all = await h.http("POST", "/v1/lease", { body: { limit: 10 } });
      expect(all.body.jobs.map((j: { id: string }) => j.id)).toEqual(["a"]);

      // Held open until the completion below makes the merge pending.
      const waiting = h.http("POST", "/v1/lease", { body: { types: ["merge"], waitMs: 30_000 } });
      await h.http("POST", "/v1/jobs/a/complete", { body: { attempt: 1, result: 1 } });
      const got = await waiting;
      expect(got.body.jobs.map((j: { id: string; state: string }) => [j.id, j.state])).toEqual([
        ["m", "active"],
      ]);
    });

    it("unblocks, cascades and settles alike whether the completions and failures come locally or over HTTP", async () => {
      const h = await startServer(backend);
      /** One small graph per way, ids prefixed: c waits on a and b; d on c; e ("run") on b. */
      const build = async (p: string) => {
        await h.queue.enqueueFlow([
          { ref: "a", job: `${p}a`, payload: {}, options: { id: `${p}a` } },
          { ref: "b", job: `${p}b`, payload: {}, options: { id: `${p}b`, maxAttempts: 1 } },
          { ref: "c", job: `${p}c`, payload: {}, dependsOn: ["a", "b"], options: { id: `${p}c` } },
          { ref: "d", job: `${p}d`, payload: {}, dependsOn: ["c"], options: { id: `${p}d` } },
          {
            ref: "e",
            job: `${p}e`,
            payload: {},
            dependsOn: ["a", "b"],
            options: { id: `${p}e`, onDependencyFailure: "run" },
          },
        ]);
      };
      const states = async (p: string) =>
        Object.fromEntries(
          await Promise.all(
            ["a", "b", "c", "d", "e"].map(async (n) => {
              const j = (await h.queue.get(`${p}${n}`))!;
              return [
                n,
                {
                  state: j.state,
                  blockedBy: j.blockedBy,
                  errors: j.errors.map((e) => [e.kind, e.dependency?.slice(p.length)]),
                },
              ];
            }),
          ),
        );

      await build("local-");
      const [la] = await h.queue.lease({ types: ["local-a"] });
      await h.queue.complete(la!, "A");
      const afterLocalComplete = await states("local-");
      const [lb] = await h.queue.lease({ types: ["local-b"] });
      await h.queue.fail(lb!, new Error("no"), { retryable: false });

      await build("http-");
      await completeOverHttp(h, "http-a", "A");
      const afterRemoteComplete = await states("http-");
      const leased = await h.http("POST", "/v1/lease", { body: { types: ["http-b"] } });
      const failed = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            {
              id: "http-b",
              attempt: leased.body.jobs[0].attempt,
              outcome: "fail",
              error: "no",
              retryable: false,
            },
          ],
        },
      });
      expect(failed.body.results).toEqual([{ id: "http-b", ok: true, state: "dead" }]);

      expect(afterRemoteComplete).toEqual(afterLocalComplete);
      expect(afterLocalComplete.c).toMatchObject({ state: "blocked", blockedBy: 1 });
      const remote = await states("http-");
      expect(remote).toEqual(await states("local-"));
      expect(remote).toMatchObject({
        b: { state: "dead" },
        c: { state: "cancelled", errors: [["dependency_failed", "b"]] },
        d: { state: "cancelled", errors: [["dependency_failed", "c"]] },
        e: { state: "pending", blockedBy: 0 },
      });
    });

    it("takes onDependencyFailure as a job-type setting", async () => {
      const h = await startServer(backend);
      const put = await h.http("PUT", "/v1/types/lenient", { body: { onDependencyFailure: "run" } });
      expect(put.status).toBe(201);
      expect(put.body).toEqual({ type: "lenient", onDependencyFailure: "run" });
      expect((await h.http("PUT", "/v1/types/bad", { body: { onDependencyFailure: "maybe" } })).status).toBe(
        400,
      );
      await h.queue.enqueue("dep", {}, { id: "dep" });
      const j = await h.http("POST", "/v1/jobs", { body: { type: "lenient", dependsOn: ["dep"] } });
      expect(j.body.onDependencyFailure).toBe("run");
      const own = await h.http("POST", "/v1/jobs", {
        body: { type: "lenient", dependsOn: ["dep"], onDependencyFailure: "cancel" },
      });
      expect(own.body.onDependencyFailure).toBe("cancel");
      await h.queue.cancel("dep");
      expect((await h.queue.get(j.body.id))?.state).toBe("pending");
      expect((await h.queue.get(own.body.id))?.state).toBe("cancelled");
    });

    it("shows a producer only its own jobs among dependencies and dependents; a worker reads dependencies", async () => {
      const h = await startServer(backend, {
        auth: {
          tokens: [...ALL_TOKENS, { role: "producer", token: "other-producer-0123456789", name: "other" }],
        },
      });
      const mineDep = await h.http("POST", "/v1/jobs", { body: { type: "t" }, token: TOKENS.producer });
      const theirs = await h.http("POST", "/v1/jobs", {
        body: { type: "t" },
        token: "other-producer-0123456789",
      });
      // Only an admin may make one owner's job wait for another's (a producer learns nothing of
      // another owner's jobs: see the next test).
      const mine = await h.http("POST", "/v1/jobs", {
        body: { type: "m", dependsOn: [mineDep.body.id, theirs.body.id], owner: mineDep.body.owner },
        token: TOKENS.admin,
      });
      expect(mine.status).toBe(201);
      await h.http("POST", "/v1/jobs", {
        body: { type: "n", dependsOn: [theirs.body.id] },
        token: "other-producer-0123456789",
      });
      const seen = await h.http("GET", `/v1/jobs/${mine.body.id}/dependencies`, { token: TOKENS.producer });
      expect(seen.body.dependencies).toEqual([
        { id: mineDep.body.id, type: "t", state: "pending", result: null },
        { id: theirs.body.id, type: null, state: null, result: null },
      ]);
      const asWorker = await h.http("GET", `/v1/jobs/${mine.body.id}/dependencies`, { token: TOKENS.worker });
      expect(asWorker.body.dependencies.map((d: JobDependency) => d.state)).toEqual(["pending", "pending"]);
      expect(
        (await h.http("GET", `/v1/jobs/${theirs.body.id}/dependents`, { token: TOKENS.producer })).status,
      ).toBe(404);
      const dependents = await h.http("GET", `/v1/jobs/${theirs.body.id}/dependents`, {
        token: TOKENS.viewer,
      });
      expect(dependents.body.jobs.map((j: { type: string }) => j.type).sort()).toEqual(["m", "n"]);
      expect(
        (await h.http("GET", `/v1/jobs/${mine.body.id}/dependents`, { token: TOKENS.worker })).status,
      ).toBe(403);

      // A flow's jobs belong to whoever enqueues it; only an admin names another owner.
      const flow = await h.http("POST", "/v1/flows", {
        body: {
          jobs: [
            { ref: "x", type: "t" },
            { ref: "y", type: "t", dependsOn: ["x", { id: theirs.body.id }] },
          ],
        },
        token: "other-producer-0123456789",
      });
      expect(flow.status).toBe(201);
      expect([flow.body.jobs.x.owner, flow.body.jobs.y.owner]).toEqual(["other", "other"]);
      const before = await snapshot(h);
      const forged = await h.http("POST", "/v1/flows", {
        body: {
          jobs: [
            { ref: "x", type: "t" },
            { ref: "z", type: "t", owner: "someone-else" },
          ],
        },
        token: "other-producer-0123456789",
      });
      expect(forged).toMatchObject({ status: 403, body: { code: "FORBIDDEN" } });
      expect(await snapshot(h)).toEqual(before);
    });

    it("refuses a producer's dependency on another owner's job as one on no job, and pages its dependents without their ids", async () => {
      const other = "other-producer-0123456789";
      const h = await startServer(backend, {
        auth: { tokens: [...ALL_TOKENS, { role: "producer", token: other, name: "other" }] },
      });
      const theirs = await h.http("POST", "/v1/jobs", { body: { type: "t", id: "theirs-1" }, token: other });
      const mine = await h.http("POST", "/v1/jobs", {
        body: { type: "t", id: "mine-1" },
        token: TOKENS.producer,
      });
      const before = await snapshot(h);
      const refusals = {
        hidden: await h.http("POST", "/v1/jobs", {
          body: { type: "p", dependsOn: ["theirs-1"] },
          token: TOKENS.producer,
        }),
        missing: await h.http("POST", "/v1/jobs", {
          body: { type: "p", dependsOn: ["nobody-1"] },
          token: TOKENS.producer,
        }),
        put: await h.http("PUT", "/v1/jobs/p-1", {
          body: { type: "p", dependsOn: ["theirs-1"] },
          token: TOKENS.producer,
        }),
        batch: await h.http("POST", "/v1/jobs", {
          body: {
            jobs: [
              { type: "p", id: "b-1" },
              { type: "p", dependsOn: ["b-1", "theirs-1"] },
            ],
          },
          token: TOKENS.producer,
        }),
        // A job of the batch whose id is taken stands for the job holding it.
        taken: await h.http("POST", "/v1/jobs", {
          body: {
            jobs: [
              { type: "p", id: "theirs-1" },
              { type: "p", dependsOn: ["theirs-1"] },
            ],
          },
          token: TOKENS.producer,
        }),
        flowById: await h.http("POST", "/v1/flows", {
          body: { jobs: [{ ref: "a", type: "p", dependsOn: [{ id: "theirs-1" }] }] },
          token: TOKENS.producer,
        }),
        flowByRef: await h.http("POST", "/v1/flows", {
          body: {
            jobs: [
              { ref: "a", type: "p", id: "theirs-1" },
              { ref: "b", type: "p", dependsOn: ["a"] },
            ],
          },
          token: TOKENS.producer,
        }),
      };
      for (const [what, r] of Object.entries(refusals)) {
        expect(r.status, what).toBe(400);
        expect(r.body.code, what).toBe("DEPENDENCY_NOT_FOUND");
      }
      // The same words for a job it may not read as for none at all.
      expect(refusals.hidden.body.message).toBe(
        refusals.missing.body.message.replace("nobody-1", "theirs-1"),
      );
      expect(await snapshot(h)).toEqual(before);
      // Its own jobs, and a batch's earlier ones, it may wait for.
      const ok = await h.http("POST", "/v1/jobs", {
        body: {
          jobs: [
            { type: "p", id: "b-2" },
            { type: "p", id: "e-1", dependsOn: ["b-2", mine.body.id] },
          ],
        },
        token: TOKENS.producer,
      });
      expect(ok.status).toBe(201);

      // An admin's job waits for both owners'; a page of the producer's dependents holds only its
      // own, and its cursor is never another owner's id.
      const owner = mine.body.owner;
      for (const id of ["d-1", "d-2", "d-3", "d-4", "d-5"]) {
        const ownedBy = id === "d-2" || id === "d-4" ? owner : "other";
        await h.http("POST", "/v1/jobs", {
          body: { type: "d", id, owner: ownedBy, dependsOn: [mine.body.id, theirs.body.id] },
          token: TOKENS.admin,
        });
      }
      const page = async (query: string) =>
        (await h.http("GET", `/v1/jobs/${mine.body.id}/dependents?${query}`, { token: TOKENS.producer }))
          .body;
      const first = await page("limit=1");
      expect(first.jobs.map((j: { id: string }) => j.id)).toEqual(["d-2"]);
      expect(first.nextCursor).toBe("d-2");
      const second = await page("limit=1&cursor=d-2");
      expect(second).toMatchObject({ jobs: [{ id: "d-4" }], nextCursor: "d-4" });
      expect(await page("limit=2&cursor=d-4")).toMatchObject({ jobs: [{ id: "e-1" }], nextCursor: null });
      // Others page as the store does.
      const viewer = await h.http("GET", `/v1/jobs/${mine.body.id}/dependents?limit=2`, {
        token: TOKENS.viewer,
      });
      expect(viewer.body).toMatchObject({ jobs: [{ id: "d-1" }, { id: "d-2" }], nextCursor: "d-2" });
    });

    it("the client enqueues flows and reads dependencies; a RemoteWorker's ctx.dependencies() gets the results", async () => {
      const h = await startServer(backend);
      const client = new ErrandClient(h.base);
      const fetchPage = defineJob({
        type: "fetch-page",
        handler: async (p: { url: string }) => `<${p.url}>`,
      });
      const seen: JobDependency[][] = [];
      const merge = defineJob({
        type: "merge",
        handler: async (_p: unknown, ctx) => {
          const deps = await ctx.dependencies();
          seen.push(deps);
          return deps.map((d) => d.result).join("+");
        },
      });
      const flow = await client.enqueueFlow([
        { ref: "a", job: fetchPage, payload: { url: "a" } },
        { ref: "b", job: fetchPage, payload: { url: "b" } },
        { ref: "c", job: merge, payload: {}, dependsOn: ["a", "b"] },
      ]);
      expect(Object.getPrototypeOf(flow.jobs)).toBeNull();
      expect(flow.jobs.c!.state).toBe("blocked");
      expect(flow.jobs.c!.createdAt).toBeInstanceOf(Date);
      const later = await client.enqueue("audit", {}, { dependsOn: [flow.jobs.c!.id] });
      expect(later).toMatchObject({ state: "blocked", blockedBy: 1 });
      expect((await client.dependents(flow.jobs.a!.id)).jobs.map((j) => j.id)).toEqual([flow.jobs.c!.id]);
      expect((await client.dependencies(flow.jobs.c!.id)).map((d) => d.state)).toEqual([
        "pending",
        "pending",
      ]);
      await expect(client.enqueue("x", {}, { dependsOn: ["nope"] })).rejects.toMatchObject({
        code: "DEPENDENCY_NOT_FOUND",
      });
      await expect(
        client.enqueueFlow([{ ref: "a", job: "t", payload: {}, dependsOn: ["a"] }]),
      ).rejects.toMatchObject({ code: "INVALID_FLOW" });

      const worker = new RemoteWorker(client, { jobs: [fetchPage, merge], waitMs: 30_000, clock: h.clock });
      const merged = new Promise<unknown>((resolve) =>
        worker.on("completed", (job, result) => job.type === "merge" && resolve(result)),
      );
      await worker.start();
      expect(await merged).toBe("<a>+<b>");
      await worker.close();
      expect(seen).toEqual([
        [
          { id: flow.jobs.a!.id, type: "fetch-page", state: "completed", result: "<a>" },
          { id: flow.jobs.b!.id, type: "fetch-page", state: "completed", result: "<b>" },
        ],
      ]);
      expect((await client.get(later.id))?.state).toBe("pending");
    });
  });
}
