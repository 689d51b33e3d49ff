/**
 * SQLite's own faults (a full disk, a damaged schema, a write lock another process holds past
 * `busyTimeoutMs`) reach callers as ErrandError `STORE_ERROR` with the SQLite error as `cause`,
 * as PostgreSQL's and Redis's do, so the server answers 503 rather than 500; and a lock held too
 * long fails the writes waiting for it, instead of leaving them (and close()) waiting for good.
 */
import { spawn } from "node:child_process";
import Database from "better-sqlite3";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { ErrandError } from "../../../src/errors.js";
import { Queue } from "../../../src/queue.js";
import { createServer } from "../../../src/server/index.js";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-driver-faults-");

/** Opens a store on `filename` and hands back its connection too, to break it on purpose. */
async function openWithConnection(
  filename: string,
  busyTimeoutMs?: number,
): Promise<{ store: SqliteStore; db: Database.Database }> {
  const pragma = vi.spyOn(Database.prototype, "pragma");
  let store: SqliteStore;
  let db: Database.Database;
  try {
    store = await SqliteStore.open({ filename, busyTimeoutMs });
    db = pragma.mock.contexts[0] as Database.Database;
  } finally {
    pragma.mockRestore();
  }
  onTestFinished(() => store.close());
  return { store, db };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

function expectStoreError(error: unknown, sqliteCode: string): void {
  expect(error).toBeInstanceOf(ErrandError);
  expect(error).toMatchObject({ code: "STORE_ERROR", cause: { code: sqliteCode } });
}

describe("SQLite driver faults", () => {
  it("rejects an enqueue on a full database with STORE_ERROR, and the server answers 503", async () => {
    const { store, db } = await openWithConnection(tempFile());
    const queue = new Queue(store);
    const app = await createServer({ queue, maintenance: false, logger: pino({ level: "silent" }) });
    onTestFinished(() => app.close());
    await app.ready();
    // The file may not grow by a page: any insert that needs one fails with SQLITE_FULL.
    await queue.enqueue("t", {});
    db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true })}`);
    const pad = "p".repeat(64 * 1024);

    expectStoreError(await rejection(queue.enqueue("t", { pad })), "SQLITE_FULL");
    const answer = await app.inject({
      method: "POST",
      url: "/v1/jobs",
      payload: { type: "t", payload: { pad } },
      headers: { "content-type": "application/json" },
    });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ code: "STORE_ERROR" });

    // Room again: writes go on, on the same connection.
    db.pragma("max_page_count = 1073741823");
    await expect(queue.enqueue("t", { pad })).resolves.toMatchObject({ type: "t" });
  });

  it("fails a whole batch whose transaction a fault rolled back, committing none of it", async () => {
    const { store, db } = await openWithConnection(tempFile());
    const queue = new Queue(store);
    await queue.enqueue("t", {});
    db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true }) as number}`);
    const pad = "p".repeat(64 * 1024);
    // Same event-loop turn: one transaction, each write in its own savepoint. SQLITE_FULL in the
    // second rolls back the transaction; the third must not then commit on its own.
    const settled = await Promise.allSettled([
      queue.enqueue("t", {}, { id: "small-1" }),
      queue.enqueue("t", { pad }, { id: "big" }),
      queue.enqueue("t", {}, { id: "small-2" }),
    ]);
    for (const result of settled) {
      expect(result.status).toBe("rejected");
      expectStoreError((result as PromiseRejectedResult).reason, "SQLITE_FULL");
    }
    for (const id of ["small-1", "big", "small-2"]) expect(await queue.get(id)).toBeNull();
  });

  it("rejects a read that meets a driver fault with STORE_ERROR", async () => {
    const { store, db } = await openWithConnection(tempFile());
    // A damaged schema: the statement cannot be prepared.
    db.exec("DROP TABLE errand_job_type");
    expectStoreError(await rejection(store.listJobTypes()), "SQLITE_ERROR");
  });

  it("keeps the store's own refusals as they are", async () => {
    const { store } = await openWithConnection(tempFile());
    const queue = new Queue(store);
    await expect(queue.cancel("no-such-job")).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
    await store.close();
    await expect(store.get({ id: "x" })).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("fails the writes waiting on a lock held past busyTimeoutMs, and close() does not wait for it", async () => {
    const filename = tempFile();
    const { store } = await openWithConnection(filename, 200);
    const queue = new Queue(store);
    await queue.enqueue("t", {});
    // Another process takes the write lock and keeps it until told to let go.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = new (require("better-sqlite3"))(${JSON.stringify(filename)});
         db.exec("BEGIN IMMEDIATE"); console.log("held");
         process.stdin.once("data", () => { db.exec("COMMIT"); process.exit(0); });`,
      ],
      { cwd: process.cwd(), stdio: ["pipe", "pipe", "inherit"] },
    );
    const exited = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
    onTestFinished(async () => {
      holder.stdin!.write("go\n");
      await exited;
    });
    await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));

    const error = await rejection(queue.enqueue("t", {}));
    expect(error).toBeInstanceOf(ErrandError);
    expect(error).toMatchObject({ code: "STORE_ERROR" });
    expect((error as Error).message).toMatch(/busyTimeoutMs \(200 ms\)/);
    // The lock is still held: close() gives up on its last write and closes the connection.
    await store.close();
    await expect(store.get({ id: "x" })).rejects.toMatchObject({ code: "CLOSED" });
  });
});
