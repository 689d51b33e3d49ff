/**
 * The SQLite store's WriteBatcher: the writes of one event-loop turn share a transaction, and one
 * write's error rolls back that write alone and reaches its caller alone, wherever it stands in
 * the batch.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { WriteBatcher } from "../../src/store/sqlite/write-batcher.js";

function setup() {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
  let commits = 0;
  const batcher = new WriteBatcher(db, () => commits++);
  const insert = db.prepare("INSERT INTO t (k) VALUES (?)");
  const rows = () => (db.prepare("SELECT k FROM t ORDER BY k").pluck().all() as string[]).join(",");
  /** A write that inserts `k`, then throws when told to: its insert must not survive. */
  const write = (k: string, fail = false) =>
    batcher.write(() => {
      insert.run(k);
      if (fail) throw new Error(`write ${k} failed`);
      return k;
    });
  return { db, batcher, write, rows, commits: () => commits };
}

describe("WriteBatcher", () => {
  it("writes one turn's writes in one transaction", async () => {
    const { write, rows, commits } = setup();
    await expect(Promise.all([write("a"), write("b"), write("c")])).resolves.toEqual(["a", "b", "c"]);
    expect(rows()).toBe("a,b,c");
    expect(commits()).toBe(1);
  });

  it.each([
    ["first", 0],
    ["middle", 1],
    ["last", 2],
  ])("rolls back the %s write alone when it fails, and reports it to its caller alone", async (_, at) => {
    const { write, rows } = setup();
    const keys = ["a", "b", "c"];
    const outcomes = await Promise.allSettled(keys.map((k, i) => write(k, i === at)));
    expect(outcomes.map((o) => o.status)).toEqual(keys.map((_, i) => (i === at ? "rejected" : "fulfilled")));
    expect((outcomes[at] as PromiseRejectedResult).reason).toMatchObject({
      message: `write ${keys[at]} failed`,
    });
    expect(rows()).toBe(keys.filter((_, i) => i !== at).join(","));
  });

  it("rolls back a lone write that fails", async () => {
    const { write, rows } = setup();
    await expect(write("a", true)).rejects.toThrow("write a failed");
    expect(rows()).toBe("");
    await expect(write("b")).resolves.toBe("b");
    expect(rows()).toBe("b");
  });

  it("rejects a failed first write once, and writes the others once, in order", async () => {
    const { db, batcher, rows } = setup();
    const log: string[] = [];
    const insert = db.prepare("INSERT INTO t (k) VALUES (?)");
    const first = batcher.write(() => {
      log.push("first");
      insert.run("x");
      throw new Error("no");
    });
    const second = batcher.write(() => {
      log.push("second");
      insert.run("y");
      return "y";
    });
    const third = batcher.write(() => {
      log.push("third");
      return insert.run("z").changes;
    });
    await expect(first).rejects.toThrow("no");
    await expect(second).resolves.toBe("y");
    await expect(third).resolves.toBe(1);
    expect(log).toEqual(["first", "second", "third"]);
    expect(rows()).toBe("y,z");
  });
});
