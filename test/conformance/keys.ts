/**
 * Keys: a job's `key` (a tenant, a customer, an account) is stored with it, shown by get and list,
 * kept through retries and into history, and `list` filters by it. A bad key is refused.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

export function exerciseKeys(backend: Backend): void {
  describe("keys", () => {
    it("stores a job's key, shows it and lists by it, in every state", async () => {
      const { queue } = await backend.setup();
      const a = await queue.enqueue("sync", { n: 1 }, { key: "tenant-7" });
      const b = await queue.enqueue("sync", { n: 2 }, { key: "tenant-8" });
      const c = await queue.enqueue("sync", { n: 3 }, { key: "tenant-7" });
      const none = await queue.enqueue("sync", { n: 4 });
      expect(a.key).toBe("tenant-7");
      expect(none.key).toBeNull();
      expect((await queue.get(a.id))?.key).toBe("tenant-7");
      expect((await queue.list({ key: "tenant-7" })).jobs.map((j) => j.id)).toEqual([c.id, a.id]);

      const jobs = await queue.lease({ limit: 10 });
      for (const j of jobs) {
        if (j.id === b.id) await queue.complete(j, null);
        else if (j.id === a.id) await queue.fail(j, new Error("x"), { retryable: false });
      }
      expect((await queue.get(b.id))?.key).toBe("tenant-8");
      expect((await queue.get(a.id))?.key).toBe("tenant-7");
      expect((await queue.list({ key: "tenant-7", state: "dead" })).jobs.map((j) => j.id)).toEqual([a.id]);
      expect((await queue.list({ key: "tenant-8" })).jobs.map((j) => [j.id, j.state])).toEqual([
        [b.id, "completed"],
      ]);
      expect((await queue.retry(a.id)).key).toBe("tenant-7");
    });

    it("refuses a key that is not a name with INVALID_KEY", async () => {
      const { queue } = await backend.setup();
      await refused(() => queue.enqueue("t", {}, { key: "" }), "INVALID_KEY");
      await refused(() => queue.enqueue("t", {}, { key: "__proto__" }), "INVALID_KEY");
      await refused(() => queue.enqueue("t", {}, { key: "a b" }), "INVALID_KEY");
      await refused(() => queue.enqueue("t", {}, { key: "x".repeat(129) }), "INVALID_KEY");
      await refused(() => queue.enqueue("t", {}, { key: 7 as never }), "INVALID_KEY");
      await refused(() => queue.list({ key: "a b" }), "INVALID_KEY");
      expect((await queue.stats()).states.pending).toBe(0);
    });
  });
}
