/**
 * Issue 12, item 8, over HTTP: the lease API recovers expired leases itself, unless the server was
 * told to run no maintenance (`maintenance: false`), which then holds for its lease requests too.
 */
import { describe, expect, it } from "vitest";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`lease maintenance over HTTP on ${backend.name}`, () => {
    it("runs none in a server with maintenance: false: an expired lease stays until someone sweeps", async () => {
      const h = await startServer(backend, { maintenance: false });
      await h.queue.enqueue("t", null, { id: "j", backoff: { type: "fixed", delayMs: 0 } });
      const lease = () => h.http("POST", "/v1/lease", { body: { types: ["t"], leaseMs: 1000 } });
      expect((await lease()).body.jobs).toMatchObject([{ id: "j", attempt: 1 }]);
      await h.clock.advance(60_000);
      expect((await lease()).body.jobs).toEqual([]);
      expect(await h.queue.get("j")).toMatchObject({ state: "active", attempt: 1 });
      await h.queue.sweep();
      expect((await lease()).body.jobs).toMatchObject([{ id: "j", attempt: 2 }]);
    });

    it("hands an expired lease out again in a server that runs maintenance", async () => {
      const h = await startServer(backend, { maintenance: true, sweepIntervalMs: 3_600_000 });
      await h.queue.enqueue("t", null, { id: "j", backoff: { type: "fixed", delayMs: 0 } });
      const lease = () => h.http("POST", "/v1/lease", { body: { types: ["t"], leaseMs: 1000 } });
      expect((await lease()).body.jobs).toMatchObject([{ id: "j", attempt: 1 }]);
      // The server's own sweep is an hour away: the lease request recovers the job itself.
      await h.clock.advance(1000);
      const again = (await lease()).body.jobs;
      expect(again).toMatchObject([{ id: "j", attempt: 2 }]);
      expect(again[0].errors.map((e: { kind: string }) => e.kind)).toEqual(["lease_expired"]);
    });
  });
}
