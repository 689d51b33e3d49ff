/**
 * Flows: `enqueueFlow` stores a DAG of jobs, given by refs, in one write: every node or none. A
 * cycle, a duplicate ref or a ref to nothing is `INVALID_FLOW`; an `{ id }` naming no job is
 * `DEPENDENCY_NOT_FOUND`; nothing is stored then. Nodes with their own ids make a re-run a no-op
 * returning the same jobs (even once an `{ id }` they waited on was pruned: a stored job checks
 * none), and a node whose id or unique key is taken stands for the job that took it, so its
 * dependents wait on that job.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { drain } from "../../src/testing/index.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

const step = defineJob({
  type: "step",
  handler: async (p: { name: string }, ctx) => {
    const deps = await ctx.dependencies();
    return [p.name, ...deps.map((d) => d.result as string)].join("<");
  },
});

export function exerciseFlows(backend: Backend): void {
  describe("flows", () => {
    it("stores a diamond in one write and runs it in dependency order", async () => {
      const { queue } = await backend.setup();
      const flow = await queue.enqueueFlow([
        { ref: "join", job: step, payload: { name: "join" }, dependsOn: ["left", "right"] },
        { ref: "left", job: step, payload: { name: "left" }, dependsOn: ["root"] },
        {
          ref: "right",
          job: step,
          payload: { name: "right" },
          dependsOn: ["root"],
          options: { queue: "side" },
        },
        { ref: "root", job: step, payload: { name: "root" } },
      ]);
      expect(Object.keys(flow.jobs).sort()).toEqual(["join", "left", "right", "root"]);
      expect(Object.getPrototypeOf(flow.jobs)).toBeNull();
      const { root, left, right, join } = flow.jobs as Record<string, (typeof flow.jobs)[string]>;
      expect(root).toMatchObject({ state: "pending", dependsOn: [] });
      expect(left).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [root!.id] });
      expect(right).toMatchObject({ state: "blocked", queue: "side", dependsOn: [root!.id] });
      expect(join).toMatchObject({ state: "blocked", blockedBy: 2, dependsOn: [left!.id, right!.id] });

      const result = await drain(queue, { jobs: [step], concurrency: 3, queues: ["default", "side"] });
      expect(result.completed).toBe(4);
      expect((await queue.get(join!.id))?.result).toBe("join<left<root<right<root");
      const order = result.jobs.map((j) => j.id);
      expect(order[0]).toBe(root!.id);
      expect(order[3]).toBe(join!.id);
    });

    it("stores a deep chain in one write, each node blocked on the one before", async () => {
      const { queue } = await backend.setup();
      const N = 2_000;
      const flow = await queue.enqueueFlow(
        Array.from({ length: N }, (_, i) => ({
          ref: `n${i}`,
          job: "link",
          payload: { i },
          ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}),
        })),
      );
      const chain = Array.from({ length: N }, (_, i) => flow.jobs[`n${i}`]!);
      expect(chain[0]).toMatchObject({ state: "pending", dependsOn: [] });
      chain.slice(1).forEach((job, k) => {
        expect(job).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [chain[k]!.id] });
      });
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: N - 1 });
      // Each completion unblocks the next link, and only it.
      for (const i of [0, 1]) {
        const [job] = await queue.lease({ types: ["link"] });
        expect(job?.id).toBe(chain[i]!.id);
        expect(await queue.complete(job!, null)).toBe(true);
      }
      expect((await queue.get(chain[2]!.id))?.state).toBe("pending");
      expect(await queue.get(chain[3]!.id)).toMatchObject({ state: "blocked", blockedBy: 1 });
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: N - 3, completed: 2 });
    });

    it('cancels, in its one write, the nodes a failed job cancels down the flow; nodes under "run" count them finished', async () => {
      const { queue } = await backend.setup();
      await queue.enqueue("broken", {});
      const [leased] = await queue.lease({ types: ["broken"] });
      expect(await queue.fail(leased!, new Error("broken"), { retryable: false })).toBe(true);
      const run = { onDependencyFailure: "run" } as const;
      const flow = await queue.enqueueFlow([
        { ref: "c1", job: "x", payload: {}, dependsOn: [{ id: leased!.id }] },
        { ref: "c2", job: "x", payload: {}, dependsOn: ["c1"] },
        { ref: "r3", job: "x", payload: {}, dependsOn: ["c2"], options: run },
        { ref: "r4", job: "x", payload: {}, dependsOn: ["r3", "c2"], options: run },
        { ref: "c5", job: "x", payload: {}, dependsOn: ["r3", "c2"] },
        { ref: "c6", job: "x", payload: {}, dependsOn: ["r4", "c5"] },
      ]);
      const { c1, c2, r3, r4, c5, c6 } = flow.jobs as Record<string, (typeof flow.jobs)[string]>;
      expect(c1).toMatchObject({ state: "cancelled" });
      expect(c1!.errors.at(-1)).toMatchObject({ kind: "dependency_failed", dependency: leased!.id });
      expect(c1!.errors.at(-1)?.message).toContain("dead");
      expect(c2).toMatchObject({ state: "cancelled" });
      expect(c2!.errors.at(-1)).toMatchObject({ kind: "dependency_failed", dependency: c1!.id });
      expect(c2!.errors.at(-1)?.message).toContain("cancelled");
      expect(r3).toMatchObject({ state: "pending", blockedBy: 0, dependsOn: [c2!.id] });
      expect(r4).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [r3!.id, c2!.id] });
      // The first of its dependencies that failed is named: c2 (r3 is unfinished).
      expect(c5).toMatchObject({ state: "cancelled" });
      expect(c5!.errors.at(-1)).toMatchObject({ kind: "dependency_failed", dependency: c2!.id });
      expect(c6).toMatchObject({ state: "cancelled" });
      expect(c6!.errors.at(-1)).toMatchObject({ kind: "dependency_failed", dependency: c5!.id });
      expect(await queue.get(c6!.id)).toMatchObject({ state: "cancelled" });
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: 1, cancelled: 4, dead: 1 });
      // r3's completion unblocks r4.
      const [job] = await queue.lease({ types: ["x"] });
      expect(job?.id).toBe(r3!.id);
      expect(await queue.complete(job!, null)).toBe(true);
      expect(await queue.get(r4!.id)).toMatchObject({ state: "pending", blockedBy: 0 });
    });

    it("names stored jobs as { id } beside refs", async () => {
      const { queue } = await backend.setup();
      const existing = await queue.enqueue(step, { name: "existing" });
      const flow = await queue.enqueueFlow([
        { ref: "x", job: "other", payload: {} },
        { ref: "y", job: "other", payload: {}, dependsOn: ["x", { id: existing.id }] },
      ]);
      expect(flow.jobs.y).toMatchObject({
        state: "blocked",
        blockedBy: 2,
        dependsOn: [flow.jobs.x!.id, existing.id],
      });
      expect((await queue.dependents(existing.id)).jobs.map((j) => j.id)).toEqual([flow.jobs.y!.id]);
    });

    it("refuses a cycle, a duplicate ref and a ref to nothing with INVALID_FLOW, storing nothing", async () => {
      const { queue } = await backend.setup();
      await refused(
        () =>
          queue.enqueueFlow([
            { ref: "ok", job: step, payload: { name: "ok" } },
            { ref: "a", job: step, payload: { name: "a" }, dependsOn: ["c"] },
            { ref: "b", job: step, payload: { name: "b" }, dependsOn: ["a"] },
            { ref: "c", job: step, payload: { name: "c" }, dependsOn: ["b"] },
          ]),
        "INVALID_FLOW",
      );
      await refused(
        () => queue.enqueueFlow([{ ref: "self", job: step, payload: { name: "s" }, dependsOn: ["self"] }]),
        "INVALID_FLOW",
      );
      await refused(
        () =>
          queue.enqueueFlow([
            { ref: "a", job: step, payload: { name: "a" } },
            { ref: "a", job: step, payload: { name: "a2" } },
          ]),
        "INVALID_FLOW",
      );
      await refused(
        () => queue.enqueueFlow([{ ref: "a", job: step, payload: { name: "a" }, dependsOn: ["nowhere"] }]),
        "INVALID_FLOW",
      );
      await refused(
        () => queue.enqueueFlow([{ ref: "__proto__", job: step, payload: { name: "a" } }]),
        "INVALID_FLOW",
      );
      await refused(() => queue.enqueueFlow("nodes" as never), "INVALID_FLOW");
      // A node is one job that others may wait for; debounce decides which job it is.
      const debounced = await refused(
        () =>
          queue.enqueueFlow([
            { ref: "a", job: step, payload: { name: "a" } },
            {
              ref: "b",
              job: step,
              payload: { name: "b" },
              options: { debounce: { key: "k", delayMs: 1 } } as never,
            },
          ]),
        "INVALID_FLOW",
      );
      expect(debounced.message).toMatch(/nodes\[1\] \("b"\): debounce is not for a flow's nodes/);
      // Named in the flow's terms, not as an id the enqueue made ("a job cannot depend on itself").
      const sameId = await refused(
        () =>
          queue.enqueueFlow([
            { ref: "a", job: step, payload: { name: "a" }, options: { id: "same" } },
            { ref: "b", job: step, payload: { name: "b" }, options: { id: "same" } },
          ]),
        "INVALID_FLOW",
      );
      expect(sameId.message).toMatch(/nodes\[0\] and nodes\[1\] give the same id "same"/);
      const twice = await refused(
        () =>
          queue.enqueueFlow([
            { ref: "a", job: step, payload: { name: "a" } },
            { ref: "b", job: step, payload: { name: "b" }, dependsOn: ["a", "a"] },
          ]),
        "INVALID_FLOW",
      );
      expect(twice.message).toMatch(/nodes\[1\] \("b"\) names the dependency ref "a" twice/);
      await refused(
        () =>
          queue.enqueueFlow([
            { ref: "b", job: step, payload: { name: "b" }, dependsOn: [{ id: "x" }, { id: "x" }] },
          ]),
        "INVALID_FLOW",
      );
      const states = (await queue.stats()).states;
      expect(Object.values(states).reduce((a, b) => a + b, 0)).toBe(0);
    });

    it("refuses an { id } that names no job with DEPENDENCY_NOT_FOUND, storing nothing", async () => {
      const { queue } = await backend.setup();
      await refused(
        () =>
          queue.enqueueFlow([
            { ref: "a", job: step, payload: { name: "a" }, options: { id: "flow-a" } },
            { ref: "b", job: step, payload: { name: "b" }, dependsOn: ["a", { id: "ghost" }] },
          ]),
        "DEPENDENCY_NOT_FOUND",
      );
      expect(await queue.get("flow-a")).toBeNull();
    });

    it("is a no-op returning the same jobs when re-run with the same node ids", async () => {
      const { queue } = await backend.setup();
      const nodes = [
        { ref: "a", job: step, payload: { name: "a" }, options: { id: "run-1:a" } },
        { ref: "b", job: step, payload: { name: "b" }, dependsOn: ["a"], options: { id: "run-1:b" } },
      ];
      const first = await queue.enqueueFlow(nodes);
      expect(first.jobs.a).toMatchObject({ id: "run-1:a", duplicate: false });
      expect(first.jobs.b).toMatchObject({ id: "run-1:b", duplicate: false, state: "blocked" });
      const again = await queue.enqueueFlow(nodes);
      expect(again.jobs.a).toMatchObject({ id: "run-1:a", duplicate: true, state: "pending" });
      expect(again.jobs.b).toMatchObject({ id: "run-1:b", duplicate: true, state: "blocked", blockedBy: 1 });
      expect((await queue.stats()).states).toMatchObject({ pending: 1, blocked: 1 });
    });

    it("stays a no-op on a re-run after an outside dependency is gone: a job whose id is taken checks none", async () => {
      const { queue, clock } = await backend.setup();
      const outside = await queue.enqueue(step, { name: "outside" }, { id: "outside-1" });
      const nodes = [
        {
          ref: "a",
          job: step,
          payload: { name: "a" },
          dependsOn: [{ id: outside.id }],
          options: { id: "run-2:a" },
        },
      ];
      const first = await queue.enqueueFlow(nodes);
      expect(first.jobs.a).toMatchObject({ id: "run-2:a", duplicate: false, state: "blocked" });
      // The outside job gone (pruned, say): the re-run finds its job stored and takes it as it is.
      // The outside job finished long before the flow's own, and retention let it go first.
      for (const id of [outside.id, "run-2:a"]) {
        const [leased] = await queue.lease({ types: [step.type] });
        expect(leased?.id).toBe(id);
        await queue.complete(leased!, "done");
        await clock.advance(10_000);
      }
      await queue.prune({ retention: { completed: 15_000 } });
      expect(await queue.get(outside.id)).toBeNull();
      expect(await queue.get("run-2:a")).not.toBeNull();
      const again = await queue.enqueueFlow(nodes);
      expect(again.jobs.a).toMatchObject({ id: "run-2:a", duplicate: true });
      // So does a single enqueue naming the gone job, with the taken id.
      const one = await queue.enqueue(step, { name: "a" }, { id: "run-2:a", dependsOn: [outside.id] });
      expect(one).toMatchObject({ id: "run-2:a", duplicate: true });
      // A new id naming it is still refused.
      await refused(
        () => queue.enqueue(step, { name: "b" }, { id: "run-2:b", dependsOn: [outside.id] }),
        "DEPENDENCY_NOT_FOUND",
      );
    });

    it("points a node's dependents at the job that holds its unique key", async () => {
      const { queue } = await backend.setup();
      const holder = await queue.enqueue(step, { name: "holder" }, { uniqueKey: "fetch:1" });
      const flow = await queue.enqueueFlow([
        { ref: "fetch", job: step, payload: { name: "fetch" }, options: { uniqueKey: "fetch:1" } },
        { ref: "use", job: step, payload: { name: "use" }, dependsOn: ["fetch"] },
      ]);
      expect(flow.jobs.fetch).toMatchObject({ id: holder.id, duplicate: true });
      expect(flow.jobs.use).toMatchObject({ state: "blocked", dependsOn: [holder.id] });
      const [job] = await queue.lease();
      expect(job?.id).toBe(holder.id);
      await queue.complete(job!, "held");
      expect((await queue.get(flow.jobs.use!.id))?.state).toBe("pending");
    });
  });
}
