/**
 * The one door: every change of a job's state emits the same Queue events, whoever makes it — a
 * local Worker in the server's process, a remote worker over HTTP (single reports, batched
 * reports), or a lease taken without the Worker.
 */
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { ErrandClient, RemoteWorker } from "../../src/client/index.js";
import { defineJob, type Job, NonRetryableError, Worker } from "../../src/index.js";
import type { QueueEvents } from "../../src/queue.js";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "./harness.js";

type Seen = Array<[event: keyof QueueEvents, type: string, state: string, detail: unknown]>;

/** Records the queue's job events as [event, job type, job state, result or error message]. */
function record(queue: import("../../src/queue.js").Queue): Seen {
  const seen: Seen = [];
  for (const event of ["active", "completed", "failed", "retrying", "dead"] as const) {
    queue.on(event, (job: Job, detail?: unknown) =>
      seen.push([event, job.type, job.state, detail instanceof Error ? detail.message : detail]),
    );
  }
  return seen;
}

const ok = (type: string) =>
  defineJob({ type, maxAttempts: 1, handler: async (p: { n: number }) => p.n * 2 });
const bad = (type: string) =>
  defineJob({
    type,
    maxAttempts: 1,
    handler: async () => {
      throw new NonRetryableError("no");
    },
  });

for (const backend of selectedBackends()) {
  describe(`one door on ${backend.name}`, () => {
    it("emits the same Queue events for a local Worker's and a remote worker's outcomes", async () => {
      const h = await startServer(backend);
      const seen = record(h.queue);

      await h.queue.enqueue("local-ok", { n: 2 });
      await h.queue.enqueue("local-bad", { n: 2 });
      const local = new Worker(h.queue, { jobs: [ok("local-ok"), bad("local-bad")], maintenance: false });
      const localDone = Promise.all([once(local, "completed"), once(local, "dead")]);
      await local.start();
      await localDone;
      await local.close();

      await h.queue.enqueue("remote-ok", { n: 2 });
      await h.queue.enqueue("remote-bad", { n: 2 });
      const remote = new RemoteWorker(new ErrandClient({ url: h.base }), {
        jobs: [ok("remote-ok"), bad("remote-bad")],
        waitMs: 0,
      });
      const remoteDone = Promise.all([once(h.queue, "completed"), once(h.queue, "dead")]);
      await remote.start();
      await remoteDone;
      await remote.close();

      const of = (prefix: string) =>
        seen
          .filter(([, type]) => type.startsWith(prefix))
          .map(([event, type, state, detail]) => [event, type.slice(prefix.length), state, detail])
          .sort((a, b) => String(a).localeCompare(String(b)));
      expect(of("remote-")).toEqual(of("local-"));
      expect(of("local-")).toEqual(
        [
          ["active", "ok", "active", undefined],
          ["completed", "ok", "completed", 4],
          ["active", "bad", "active", undefined],
          ["failed", "bad", "dead", "no"],
          ["dead", "bad", "dead", "no"],
        ].sort((a, b) => String(a).localeCompare(String(b))),
      );
    });

    it("emits completed for a batched HTTP report and for one whose job the server did not hand out", async () => {
      const h = await startServer(backend);
      const seen = record(h.queue);
      const [a, b] = await h.queue.enqueueMany("t", [{ n: 1 }, { n: 2 }]);
      // Leased through the library, so the server never saw these attempts (as after a restart).
      const leased = await h.queue.lease({ types: ["t"], limit: 2 });
      expect(leased.map((j) => j.id).sort()).toEqual([a!.id, b!.id].sort());
      const r = await h.http("POST", "/v1/report", {
        body: {
          reports: [
            { id: leased[0]!.id, attempt: 1, outcome: "complete", result: "x" },
            { id: leased[1]!.id, attempt: 1, outcome: "complete", result: "y" },
          ],
        },
      });
      expect(r.status).toBe(200);
      const completed = seen.filter(([event]) => event === "completed");
      expect(completed.map(([, , state, result]) => [state, result]).sort()).toEqual([
        ["completed", "x"],
        ["completed", "y"],
      ]);
    });
  });
}
