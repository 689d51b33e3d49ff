import { describe, expect, it, vi } from "vitest";
import { Queue } from "../../src/queue.js";
import { JobTypeRegistry } from "../../src/server/job-types.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

describe("JobTypeRegistry's store reads", () => {
  it("apply in the order they were made: a list read before a change never undoes a later read of it", async () => {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store);
    const here = new JobTypeRegistry(queue);
    const elsewhere = new JobTypeRegistry(queue);
    await elsewhere.set({ type: "resize", maxAttempts: 2 });

    // The periodic refresh reads the list, then is slow to come back with it.
    const list = store.listJobTypes.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    vi.spyOn(store, "listJobTypes").mockImplementationOnce(async () => {
      const read = await list();
      await gate;
      return read;
    });
    const refreshed = here.refresh();
    await vi.waitFor(() => expect(store.listJobTypes).toHaveBeenCalled());
    // Meanwhile another server changes the type, and a GET here reads that one type.
    await elsewhere.set({ type: "resize", maxAttempts: 7 });
    const read = here.refreshType("resize");
    release();
    await Promise.all([refreshed, read]);
    expect(here.get("resize")?.maxAttempts).toBe(7);
    await queue.close();
  });
});
