import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openQueue } from "../../../src/index.js";
import { mergedClaimSql } from "../../../src/store/sqlite/claim-walk.js";
import { PENDING_FIELDS_SQL, PENDING_REST } from "../../../src/store/sqlite/pending-row.js";
import { prepareEvery, prepareStatements, SQL } from "../../../src/store/sqlite/statements.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-stmts-");

/** A second connection to a file errand has opened (and so migrated). */
async function migrated(): Promise<Database.Database> {
  const file = tempFile();
  const queue = await openQueue(`sqlite:${file}`);
  await queue.close();
  return new Database(file);
}

describe("the SQLite store's statements", () => {
  it("all prepare against the migrated schema, record statements yielding JobRecord's keys", async () => {
    const db = await migrated();
    try {
      expect(() => prepareEvery(db)).not.toThrow();
    } finally {
      db.close();
    }
  });

  it("are prepared on first use, not at open", () => {
    // A connection without errand's tables: every statement would fail to prepare, so making
    // the set must prepare none of them, and the first use of one prepares it (and fails here).
    const db = new Database(tempFile());
    try {
      const q = prepareStatements(db);
      expect(() => q.getHot).toThrow(/no such table: errand_job/);
      expect(() => prepareEvery(db)).toThrow(/no such table/);
    } finally {
      db.close();
    }
  });

  it("prepare each statement once per connection", async () => {
    const db = await migrated();
    try {
      const q = prepareStatements(db);
      expect(q.getHot).toBe(q.getHot);
      expect(q.getHot).not.toBe(prepareStatements(db).getHot);
    } finally {
      db.close();
    }
  });
});

describe("the SQLite claim's packed row (pending-row.ts)", () => {
  it("reads a new job's every other field as a NULL rest, and a changed one's as JSON", async () => {
    const file = tempFile();
    const queue = await openQueue(`sqlite:${file}`);
    const fresh = await queue.enqueue("t", { n: 1 });
    const changed = await queue.enqueue("t", { n: 2 }, { key: "k", timeoutMs: 5000 });
    // The key is a column of its own: a keyed job with every other field as new packs nothing.
    const keyed = await queue.enqueue("t", { n: 3 }, { key: "k2" });
    await queue.close();
    const db = new Database(file, { readonly: true });
    try {
      const rows = db
        .prepare(`SELECT id, key, rest FROM (SELECT ${PENDING_FIELDS_SQL} FROM errand_job) ORDER BY id`)
        .raw(true)
        .all() as Array<[string, string | null, string | null]>;
      expect(rows).toEqual([
        [fresh.id, null, null],
        [changed.id, "k", expect.any(String)],
        [keyed.id, "k2", null],
      ]);
      expect(PENDING_REST.some((f) => f.name === "key")).toBe(false);
      const packed = JSON.parse(rows[1]![2]!) as unknown[];
      expect(packed).toHaveLength(PENDING_REST.length);
      expect(packed[PENDING_REST.findIndex((f) => f.name === "timeoutMs")]).toBe(5000);
    } finally {
      db.close();
    }
  });

  it("page lists and dependents by walking the primary keys from the cursor, never sorting a table", async () => {
    const db = await migrated();
    try {
      const plan = (name: keyof typeof SQL, params: Record<string, unknown>) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${SQL[name]}`).all(params) as Array<{ detail: string }>).map(
          (r) => r.detail,
        );
      const filters = {
        state: null,
        queue: null,
        type: null,
        key: null,
        cursor: null,
        floor: null,
        limit: 26,
      };
      // Every page of jobs: listAll, listHot and listDone, each with its …ByOwner form, and each
      // of those with its twin for summaries (…Summary, whose placeholders keep the arms' affinity).
      const lists = (Object.keys(SQL) as Array<keyof typeof SQL>).filter((n) =>
        /^list(All|Hot|Done)/.test(n),
      );
      expect(lists).toHaveLength(12);
      for (const name of lists) {
        const owned = name.includes("ByOwner");
        const steps = plan(name, owned ? { ...filters, owner: "o" } : filters);
        // A sort of every row would be a temporary B-tree: a page beside a large history read it whole.
        expect(steps, name).not.toContain("USE TEMP B-TREE FOR ORDER BY");
        if (!owned) {
          // The cursor and a filtered page's floor are a range of the primary key (the whole key
          // without them), not filters.
          expect(
            steps.filter((d) => d.startsWith("SEARCH") && d.includes("(id>? AND id<?)")).length,
            name,
          ).toBe(name.startsWith("listAll") ? 2 : 1);
        } else {
          expect(
            steps.filter((d) => d.startsWith("SEARCH") && d.includes("(owner=? AND id>? AND id<?)")).length,
            name,
          ).toBe(name.startsWith("listAll") ? 2 : 1);
        }
      }
      // A floor is found along the keys alone: no row is read.
      for (const name of [
        "listFloorHot",
        "listFloorDone",
        "listFloorHotByOwner",
        "listFloorDoneByOwner",
      ] as const) {
        const steps = plan(name, {
          cursor: null,
          scan: 9_999,
          ...(name.endsWith("ByOwner") ? { owner: "o" } : {}),
        });
        expect(steps, name).toHaveLength(1);
        expect(steps[0], name).toMatch(
          /^SEARCH errand_job(_done)? USING COVERING INDEX \w+ \((owner=\? AND )?id<\?\)$/,
        );
      }
      // Both tables, merged in id order: the arms' columns agree in affinity (statements.ts nullOf).
      expect(plan("listAll", filters)).toContain("MERGE (UNION ALL)");
      expect(plan("dependentsPage", { id: "a", cursor: null, limit: 26 }).join("\n")).toMatch(
        /SEARCH errand_dependency USING PRIMARY KEY \(dep_id=\? AND job_id>\?\)/,
      );
    } finally {
      db.close();
    }
  });
});

describe("the SQLite claim's parked jobs (migration 0010)", () => {
  it("are found by ranges of an index, a key's earliest and its unparked jobs never by a scan or a sort", async () => {
    const db = await migrated();
    try {
      const plan = (name: keyof typeof SQL, params: Record<string, unknown>) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${SQL[name]}`).all(params) as Array<{ detail: string }>)
          .map((r) => r.detail)
          .join("\n");
      const earliest = plan("claimKeyEarliest", { type: "t", key: "k" });
      // Three searches of the key's ranges (not parked, parked by keyConcurrency, by order), each
      // in index order; only their three rows are sorted.
      expect(
        earliest.match(/SEARCH errand_job USING INDEX errand_job_key_order \(type=\? AND key=\? AND parked/g),
      ).toHaveLength(3);
      expect(earliest).not.toMatch(/SCAN errand_job\b/);
      const park = plan("claimPark", { type: "t", key: "k", now: 0, mark: 1, keep: "" });
      expect(park).toMatch(
        /SEARCH errand_job USING INDEX errand_job_key_order \(type=\? AND key=\? AND parked=\?\)/,
      );
      expect(park).not.toMatch(/SCAN errand_job\b/);
      const sample = plan("statsHeldParked", { queue: "q", type: "t", now: 0, limit: 10 });
      expect(sample).toMatch(/SEARCH errand_job USING INDEX errand_job_parked \(queue=\? AND type=\?\)/);
      expect(sample).not.toMatch(/TEMP B-TREE/);
    } finally {
      db.close();
    }
  });
});

describe("the SQLite claim's walks (claimArm, claimFair)", () => {
  it("leave out the jobs of every (type, key) in $xkeys, and only those", async () => {
    const file = tempFile();
    const queue = await openQueue(`sqlite:${file}`);
    const hot = await queue.enqueueManyIds("t", [1, 2, 3], { key: "hot" });
    const [cold] = await queue.enqueueManyIds("t", [4], { key: "cold" });
    const [none] = await queue.enqueueManyIds("t", [5]);
    await queue.close();
    const db = new Database(file);
    try {
      // Every claim walk's fair turn, so claimFair's index holds them too.
      db.prepare("UPDATE errand_job SET fair_turn = 1").run();
      const walk = (name: "claimArm" | "claimFair", xkeys: unknown) =>
        (
          db.prepare(SQL[name]).all({
            queue: "default",
            type: "t",
            now: Date.now() + 60_000,
            skip: null,
            xkeys: xkeys === null ? null : JSON.stringify(xkeys),
          }) as Array<{ id: string }>
        )
          .map((r) => r.id)
          .sort();
      for (const name of ["claimArm", "claimFair"] as const) {
        expect(walk(name, null), name).toEqual([...hot, cold, none].sort());
        // A closed key's jobs are not read again: the claim passed them over once, not once a walk.
        expect(walk(name, [["t", "hot"]]), name).toEqual([cold, none].sort());
        expect(
          walk(name, [
            ["t", "hot"],
            ["t", "cold"],
          ]),
          name,
        ).toEqual([none]);
        expect(walk(name, [["other", "hot"]]), name).toEqual([...hot, cold, none].sort());
      }
    } finally {
      db.close();
    }
  });
});

describe("the SQLite claim's merged walk (claim-walk.ts)", () => {
  it("walks each type by priority band, bounded by run_at within a priority, with no sort", async () => {
    const db = await migrated();
    try {
      const params: Record<string, unknown> = { queue: "q", now: 1, skip: null, xkeys: null, limit: 5 };
      for (let i = 0; i < 3; i++) params[`t${i}`] = `t${i}`;
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${mergedClaimSql(3)}`).all(params) as Array<{ detail: string }>
      )
        .map((r) => r.detail)
        .join("\n");
      const count = (re: RegExp) => (plan.match(re) ?? []).length;
      // Per type: its highest and next priority, each walked only up to $now, and the rest.
      expect(
        count(
          /SEARCH errand_job USING INDEX errand_job_claim \(queue=\? AND type=\? AND priority=\? AND run_at<\?\)/g,
        ),
      ).toBe(6);
      expect(
        count(/SEARCH errand_job USING INDEX errand_job_claim \(queue=\? AND type=\? AND priority<\?\)/g),
      ).toBe(3 + 3);
      expect(count(/MATERIALIZE band/g)).toBe(3);
      expect(plan).not.toMatch(/TEMP B-TREE|SCAN errand_job/);
    } finally {
      db.close();
    }
  });
});
