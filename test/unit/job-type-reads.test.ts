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

  it("reports a stored type it cannot read again when it comes back after a deletion", async () => {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store);
    const registry = new JobTypeRegistry(queue);
    const errors: unknown[] = [];
    queue.on("error", (e) => errors.push(e));
    const unreadable = {
      name: "from-newer",
      config: '{"type":"from-newer","futureOption":1}',
      createdAt: 1,
      updatedAt: 1,
    };
    await store.putJobType(unreadable);
    await registry.refresh();
    expect(errors).toHaveLength(1);
    // Read again unchanged: reported once, not at every refresh.
    await registry.refresh();
    expect(errors).toHaveLength(1);
    // Deleted elsewhere, then written again as it was: a new record, reported again.
    await store.deleteJobType({ name: "from-newer" });
    await registry.refresh();
    await store.putJobType(unreadable);
    await registry.refresh();
    expect(errors).toHaveLength(2);
    expect(errors[1]).toMatchObject({ code: "STORE_ERROR" });
    await queue.close();
  });
});
