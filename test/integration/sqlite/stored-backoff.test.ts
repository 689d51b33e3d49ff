import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF } from "../../../src/backoff.js";
import { defineJob, openQueue } from "../../../src/index.js";
import { ManualClock } from "../../../src/testing/index.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-backoff-");

const standard = defineJob({ type: "standard", handler: async () => null });
const fixed = defineJob({
  type: "fixed",
  backoff: { type: "fixed", delayMs: 250 },
  handler: async () => null,
});

/** The backoff column of each job, as stored, by id. */
function storedBackoff(file: string): Map<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT id, backoff FROM errand_job UNION ALL SELECT id, backoff FROM errand_job_done")
      .all() as Array<{ id: string; backoff: string }>;
    return new Map(rows.map((r) => [r.id, r.backoff]));
  } finally {
    db.close();
  }
}

describe("the SQLite store's backoff column", () => {
  it("holds '' for the standard policy and the JSON of any other, and reads both back whole", async () => {
    const file = tempFile();
    const queue = await openQueue({ store: `sqlite:${file}`, clock: new ManualClock(1000) });
    try {
      // One of each through the row-by-row insert, and a uniform batch through the chunked one.
      const one = await queue.enqueue(standard, {});
      const other = await queue.enqueue(fixed, {});
      const many = await queue.enqueueMany(
        standard,
        Array.from({ length: 200 }, (_, i) => ({ i })),
      );
      const stored = storedBackoff(file);
      expect(stored.get(one.id)).toBe("");
      expect(stored.get(many[199]!.id)).toBe("");
      expect(JSON.parse(stored.get(other.id)!)).toEqual({ type: "fixed", delayMs: 250 });

      expect((await queue.get(one.id))!.backoff).toEqual(DEFAULT_BACKOFF);
      expect((await queue.get(other.id))!.backoff).toEqual({ type: "fixed", delayMs: 250 });
      const { jobs } = await queue.list({ type: "standard", limit: 5 });
      for (const j of jobs) expect(j.backoff).toEqual(DEFAULT_BACKOFF);

      // A claim reads it packed; a finished job keeps '' in history and reads it whole there too.
      const leased = await queue.lease({ limit: 300 });
      expect(leased).toHaveLength(202);
      for (const j of leased) {
        expect(j.backoff).toEqual(j.type === "fixed" ? { type: "fixed", delayMs: 250 } : DEFAULT_BACKOFF);
      }
      for (const j of leased) expect(await queue.complete(j, null)).toBe(true);
      expect(storedBackoff(file).get(one.id)).toBe("");
      expect((await queue.get(one.id))!.backoff).toEqual(DEFAULT_BACKOFF);
      expect((await queue.get(other.id))!.backoff).toEqual({ type: "fixed", delayMs: 250 });
      // A retried copy of a finished job keeps its policy.
      const again = await queue.replay(one.id);
      expect(storedBackoff(file).get(again.id)).toBe("");
      expect((await queue.get(again.id))!.backoff).toEqual(DEFAULT_BACKOFF);
    } finally {
      await queue.close();
    }
  });

  it("reads a row written before, which holds the standard policy's full text, the same", async () => {
    const file = tempFile();
    const clock = new ManualClock(1000);
    const queue = await openQueue({ store: `sqlite:${file}`, clock });
    try {
      const job = await queue.enqueue(standard, {});
      const db = new Database(file);
      db.prepare("UPDATE errand_job SET backoff = ? WHERE id = ?").run(
        JSON.stringify(DEFAULT_BACKOFF),
        job.id,
      );
      db.close();
      expect((await queue.get(job.id))!.backoff).toEqual(DEFAULT_BACKOFF);
      const [leased] = await queue.lease();
      expect(leased!.backoff).toEqual(DEFAULT_BACKOFF);
      // Its retry waits what the standard policy says for a first failure: 1 s, jittered in its
      // upper half.
      expect(await queue.fail(leased!, new Error("no"))).toBe(true);
      const failed = (await queue.get(job.id))!;
      expect(failed.state).toBe("pending");
      expect(failed.runAt.getTime() - clock.now()).toBeGreaterThanOrEqual(500);
      expect(failed.runAt.getTime() - clock.now()).toBeLessThanOrEqual(1000);
    } finally {
      await queue.close();
    }
  });
});
