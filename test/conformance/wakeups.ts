/**
 * Wake-ups (Store.onWake / Store.wake), as every store's notifier carries them: a wake() reaches
 * this process's listeners, an unsubscribed listener hears nothing more, and a closed store calls
 * no listener at all. Between processes each store has its own carrier (doorbell file, NOTIFY,
 * pub/sub), checked by the integration suites; polling covers a lost wake-up, never a lost job.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "./backend.js";

export function exerciseWakeups(backend: Backend): void {
  describe.runIf(backend.capabilities.listen)("wake-ups", () => {
    it("calls this process's listeners on wake(), and no longer one that unsubscribed", async () => {
      const { store } = await backend.setup();
      let unsubscribedCalls = 0;
      const unsubscribe = store.onWake(() => unsubscribedCalls++);
      unsubscribe();
      const woke = new Promise<void>((resolve) => store.onWake(resolve));
      store.wake();
      await woke;
      expect(unsubscribedCalls).toBe(0);
    });

    it("calls no listener once the store is closed, and wake() after close is harmless", async () => {
      const { connect } = await backend.setup();
      const { store } = await connect();
      let calls = 0;
      store.onWake(() => calls++);
      await store.close();
      expect(() => store.wake()).not.toThrow();
      expect(calls).toBe(0);
    });
  });
}
