/**
 * Capabilities and wake-ups: what a store says it can do is what it does. `capabilities` is read
 * from the store (tests gate on it before opening one), and a store that `listen`s tells a
 * listener on another connection when jobs may have become ready: on enqueue, on release, on
 * retry, and when `wake()` is called (a cap freed room), also when the store that sent it closes
 * at once; an unsubscribed listener hears nothing more, and a closed store calls no listener.
 * Polling covers a lost wake-up, never a lost job.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "./backend.js";

/** Resolves on the next wake-up `queue`'s store hears. */
function nextWake(store: { onWake(listener: () => void): () => void }): Promise<void> {
  return new Promise((resolve) => {
    const off = store.onWake(() => {
      off();
      resolve();
    });
  });
}

export function exerciseWakeups(backend: Backend): void {
  describe("capabilities and wake-ups", () => {
    it("has the capabilities its backend declares, read from the store", async () => {
      const { store } = await backend.setup();
      expect(store.capabilities).toEqual(backend.capabilities);
    });

    it.runIf(backend.capabilities.listen)(
      "tells a listener on another connection of an enqueue, a release, a retry and a wake()",
      async () => {
        const { queue, connect } = await backend.setup();
        const other = await connect();
        let heard = nextWake(other.store);
        await queue.enqueue("t", {});
        await heard;

        const [job] = await queue.lease({ types: ["t"] });
        heard = nextWake(other.store);
        expect(await queue.release(job!)).toBe(true);
        await heard;

        const [again] = await queue.lease({ types: ["t"] });
        expect(await queue.fail(again!, new Error("no"), { retryable: false })).toBe(true);
        heard = nextWake(other.store);
        expect((await queue.retry(again!.id)).state).toBe("pending");
        await heard;

        heard = nextWake(other.store);
        queue.wake();
        await heard;
      },
    );

    it.runIf(backend.capabilities.listen)(
      "calls this process's listeners on wake(), and no longer one that unsubscribed",
      async () => {
        const { store } = await backend.setup();
        let unsubscribedCalls = 0;
        const unsubscribe = store.onWake(() => unsubscribedCalls++);
        unsubscribe();
        const woke = new Promise<void>((resolve) => store.onWake(resolve));
        store.wake();
        await woke;
        expect(unsubscribedCalls).toBe(0);
      },
    );

    it.runIf(backend.capabilities.listen)(
      "delivers a wake-up sent just before its store closes to a listener on another connection",
      async () => {
        // A process that resumes a queue (or retries a job) and exits at once, as a CLI does:
        // closing must not drop the wake-up it has just sent, or workers elsewhere wait for a poll.
        const { queue, connect } = await backend.setup();
        const other = await connect();
        await other.pauseQueue("default");
        const heard = nextWake(queue.store);
        await other.resumeQueue("default");
        await other.store.close();
        await heard;
      },
    );

    it.runIf(backend.capabilities.listen)(
      "calls no listener once the store is closed, and wake() after close is harmless",
      async () => {
        const { connect } = await backend.setup();
        const { store } = await connect();
        let calls = 0;
        store.onWake(() => calls++);
        await store.close();
        expect(() => store.wake()).not.toThrow();
        expect(calls).toBe(0);
      },
    );
  });
}
