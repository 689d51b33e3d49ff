import { describe, expect, it, vi } from "vitest";
import { Queue } from "../../src/queue.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

describe("Queue.ping (the server's /readyz)", () => {
  it("asks the store one cheap read, never a count of every job, and fails once the store is closed", async () => {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store);
    // stats() counts the whole history: ~0.2-1 s a million jobs, past a readiness probe's second.
    const stats = vi.spyOn(store, "stats");
    const paused = vi.spyOn(store, "pausedQueues");
    await queue.ping();
    expect(stats).not.toHaveBeenCalled();
    expect(paused).toHaveBeenCalledTimes(1);
    await store.close();
    await expect(queue.ping()).rejects.toMatchObject({ code: "CLOSED" });
  });
});
