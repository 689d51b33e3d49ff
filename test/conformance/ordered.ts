/**
 * Order: jobs of an `ordered` type with the same key start one at a time, in enqueue order. A
 * later one never starts before an earlier one has finished, whatever their priorities; a retrying
 * job holds its key until it completes or ends dead; a dead, cancelled or expired job releases it;
 * jobs without a key are not ordered; other keys are not held up.
 */
import { describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import type { LeaseOptions } from "../../src/queue-options.js";
import type { Backend } from "./backend.js";

const ledger = defineJob({ type: "post-ledger-entry", ordered: true, handler: async () => null });

export function exerciseOrdered(backend: Backend): void {
  // Leases of every type, and leases naming the one type (on PostgreSQL, a claim of one keyed
  // type from one queue is one statement: claim.ts claimKeyedAlone).
  for (const named of [false, true]) {
    const lease = (q: Queue, o: LeaseOptions = {}) => q.lease(named ? { ...o, types: [ledger.type] } : o);
    describe(named ? "ordered, claims naming the type" : "ordered", () => {
      it("starts one job per key at a time, in enqueue order, whatever the priorities", async () => {
        const { queue, clock } = await backend.setup();
        queue.register(ledger);
        const a1 = await queue.enqueue(ledger, { n: "a1" }, { key: "acct-a" });
        await clock.advance(1);
        const b1 = await queue.enqueue(ledger, { n: "b1" }, { key: "acct-b" });
        const a2 = await queue.enqueue(ledger, { n: "a2" }, { key: "acct-a", priority: 100 });
        await clock.advance(1);
        const a3 = await queue.enqueue(ledger, { n: "a3" }, { key: "acct-a" });
        const free1 = await queue.enqueue(ledger, { n: "free1" });
        const free2 = await queue.enqueue(ledger, { n: "free2" });

        const first = await lease(queue, { limit: 100 });
        expect(first.map((j) => j.id).sort()).toEqual([a1.id, b1.id, free1.id, free2.id].sort());
        expect(await lease(queue, { limit: 100 })).toEqual([]);
        for (const j of first.filter((j) => j.id !== a1.id)) await queue.complete(j, null);
        expect(await lease(queue, { limit: 100 })).toEqual([]);
        await queue.complete(first.find((j) => j.id === a1.id)!, null);
        expect((await lease(queue, { limit: 100 })).map((j) => j.id)).toEqual([a2.id]);
        expect(a3.state).toBe("pending");
      });

      it("holds the key while a job retries, and releases it when the job ends dead", async () => {
        const { queue, clock } = await backend.setup();
        queue.register(ledger);
        const options = { key: "k", maxAttempts: 2, backoff: { type: "fixed" as const, delayMs: 1_000 } };
        const first = await queue.enqueue(ledger, { n: 1 }, options);
        const second = await queue.enqueue(ledger, { n: 2 }, options);
        const [a] = await lease(queue);
        expect(a?.id).toBe(first.id);
        expect(await queue.fail(a!, new Error("retry me"))).toBe(true);
        // Pending again, waiting out its backoff: it still holds the key.
        expect(await lease(queue, { limit: 10 })).toEqual([]);
        await clock.advance(1_000);
        const [b] = await lease(queue, { limit: 10 });
        expect(b?.id).toBe(first.id);
        expect(await queue.fail(b!, new Error("dead now"))).toBe(true);
        expect((await queue.get(first.id))?.state).toBe("dead");
        expect((await lease(queue, { limit: 10 })).map((j) => j.id)).toEqual([second.id]);
      });

      it("releases the key when the earlier job is cancelled or expires", async () => {
        const { queue, clock } = await backend.setup();
        queue.register(ledger);
        const doomed = await queue.enqueue(ledger, { n: 1 }, { key: "k", delayMs: 10_000 });
        const expiring = await queue.enqueue(
          ledger,
          { n: 2 },
          { key: "k", delayMs: 10_000, expiresInMs: 5_000 },
        );
        const last = await queue.enqueue(ledger, { n: 3 }, { key: "k" });
        // Due now, but two earlier jobs of the key are still waiting for their runAt.
        expect(await lease(queue, { limit: 10 })).toEqual([]);
        await queue.cancel(doomed.id);
        expect(await lease(queue, { limit: 10 })).toEqual([]);
        await clock.advance(5_001);
        await queue.sweep();
        expect((await queue.get(expiring.id))?.state).toBe("expired");
        expect((await lease(queue, { limit: 10 })).map((j) => j.id)).toEqual([last.id]);
      });

      it("starts a dead or cancelled job retried by hand only once the key's running job has finished", async () => {
        for (const end of ["dead", "cancelled"] as const) {
          const { queue } = await backend.setup();
          queue.register(ledger);
          const a1 = await queue.enqueue(ledger, { n: 1 }, { key: "k", maxAttempts: 1 });
          const a2 = await queue.enqueue(ledger, { n: 2 }, { key: "k" });
          const a3 = await queue.enqueue(ledger, { n: 3 }, { key: "k" });
          if (end === "dead") {
            const [first] = await lease(queue);
            expect(first?.id).toBe(a1.id);
            await queue.fail(first!, new Error("for good"));
          } else await queue.cancel(a1.id);
          const [second] = await lease(queue, { limit: 10 });
          expect(second?.id, end).toBe(a2.id);
          // The earliest of its key again, but a later job of the key is running: it waits.
          expect((await queue.retry(a1.id)).state, end).toBe("pending");
          // stats() says so too: both ready jobs of the key are held by order.
          expect((await queue.stats()).limits[ledger.type]?.heldBack.order, end).toBe(2);
          expect(await lease(queue, { limit: 10 }), end).toEqual([]);
          await queue.complete(second!, null);
          expect(
            (await lease(queue, { limit: 10 })).map((j) => j.id),
            end,
          ).toEqual([a1.id]);
          expect((await queue.get(a3.id))?.state, end).toBe("pending");
        }
      });

      it("runs a flow's jobs of one key in dependency order, whatever the order of its nodes", async () => {
        const { queue } = await backend.setup();
        queue.register(ledger);
        // The dependent is listed first; its generated id must not sort before its dependency's,
        // or it would hold the key against the job it waits for, for ever.
        const flow = await queue.enqueueFlow([
          { ref: "report", job: ledger, payload: {}, dependsOn: ["import"], options: { key: "acct" } },
          { ref: "import", job: ledger, payload: {}, options: { key: "acct" } },
        ]);
        const [first] = await lease(queue, { limit: 10 });
        expect(first?.id).toBe(flow.jobs.import!.id);
        await queue.complete(first!, null);
        expect((await lease(queue, { limit: 10 })).map((j) => j.id)).toEqual([flow.jobs.report!.id]);
      });

      it("keeps order across connections: two claimers never run a key's jobs at once", async () => {
        const { queue, connect } = await backend.setup();
        const other = await connect();
        queue.register(ledger);
        other.register(ledger);
        for (let i = 0; i < 6; i++) await queue.enqueue(ledger, { i }, { key: "k" });
        const [x, y] = await Promise.all([lease(queue, { limit: 10 }), lease(other, { limit: 10 })]);
        const taken = [...x, ...y];
        expect(taken).toHaveLength(1);
        expect(taken[0]?.payload).toEqual({ i: 0 });
      });
    });
  }
}
