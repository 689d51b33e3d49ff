import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defineJob } from "../../src/define-job.js";
import { openQueue, type Queue } from "../../src/queue.js";

// A server's job types are laid over the code's definitions, whichever is registered first
// (a server and an in-process worker share one Queue).
describe("Queue.setTypeSettings", () => {
  let queue: Queue;
  let dir: string;
  afterEach(async () => {
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = async () => {
    dir = mkdtempSync(join(tmpdir(), "errand-settings-"));
    queue = await openQueue(`sqlite:${join(dir, "q.db")}`);
    return queue;
  };
  const handler = async () => "sent";
  const code = defineJob({ type: "send", queue: "mail", timeoutMs: 5000, handler });

  it("lets the settings win where they say something, and keeps the rest and the handler from the code", async () => {
    const q = await open();
    q.setTypeSettings("send", { maxAttempts: 4, backoff: { type: "fixed", delayMs: 500 } });
    q.register(code); // after the settings, as a worker started beside a server does
    const def = q.definition("send")!;
    expect(def).toMatchObject({
      maxAttempts: 4,
      backoff: { type: "fixed", delayMs: 500 },
      queue: "mail",
      timeoutMs: 5000,
    });
    expect(def.handler).toBe(handler);
    expect(await q.enqueue("send", {})).toMatchObject({ maxAttempts: 4, queue: "mail", timeoutMs: 5000 });

    q.register(code); // registering again changes nothing
    expect(q.definition("send")!.maxAttempts).toBe(4);
    q.setTypeSettings("send", null);
    expect(q.definition("send")).toBe(code);
  });

  it("keeps the code's onDependencyFailure under settings that do not name it, and lets settings set it", async () => {
    const q = await open();
    q.register(defineJob({ type: "merge", onDependencyFailure: "run", handler }));
    q.setTypeSettings("merge", { maxAttempts: 2 });
    expect(q.definition("merge")).toMatchObject({ maxAttempts: 2, onDependencyFailure: "run" });
    q.setTypeSettings("merge", { onDependencyFailure: "cancel" });
    expect(q.definition("merge")!.onDependencyFailure).toBe("cancel");
    q.setTypeSettings("strict", { onDependencyFailure: "run" });
    await q.enqueue("x", {}, { id: "dep" });
    expect(await q.enqueue("strict", {}, { dependsOn: ["dep"] })).toMatchObject({
      state: "blocked",
      onDependencyFailure: "run",
    });
  });

  it("gives a type with settings and no code a handler that refuses to run here", async () => {
    const q = await open();
    q.setTypeSettings("remote", { concurrency: 3 });
    expect(q.definition("remote")!.concurrency).toBe(3);
    expect(() => q.definition("remote")!.handler(null as never, null as never)).toThrow(
      expect.objectContaining({ code: "UNKNOWN_JOB_TYPE" }),
    );
    q.setTypeSettings("remote", null);
    expect(q.definition("remote")).toBeUndefined();
  });

  it("refuses invalid settings and keeps what was there", async () => {
    const q = await open();
    q.register(code);
    expect(() => q.setTypeSettings("send", { maxAttempts: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_OPTION" }),
    );
    expect(q.definition("send")).toBe(code);
  });
});
