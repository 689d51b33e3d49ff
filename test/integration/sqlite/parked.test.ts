/**
 * Parked jobs on SQLite (migrations 0010 and 0011), what the conformance suite cannot see: a claim
 * that closes a key by keyConcurrency, order or its rate limit takes the key's ready jobs out of the
 * claim index (`parked`), and the triggers (or the window's wake) put them back as room opens; later claims do not read them, and
 * nothing is left parked once the work is done.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { defineJob, ManualClock, openQueue } from "../../../src/index.js";
import { enqueueRateBacklog } from "../../helpers/rate-backlog.js";
import { sqliteFiles } from "../../helpers/sqlite-file.js";

const tempFile = sqliteFiles("errand-parked-");

describe("SQLite store: parked jobs", () => {
  for (const rule of [{ keyConcurrency: 1 }, { ordered: true }] as const) {
    const name = "keyConcurrency" in rule ? "keyConcurrency" : "ordered";
    it(`${name}: parks a closed key's ready jobs, puts them back one by one, leaves none parked`, async () => {
      const file = tempFile();
      const queue = await openQueue(`sqlite:${file}`);
      const db = new Database(file, { readonly: true });
      try {
        const tenant = defineJob({ type: "tenant", ...rule, handler: async () => null });
        queue.register(tenant);
        const busy = await queue.enqueueMany(
          tenant,
          Array.from({ length: 500 }, (_, i) => ({ i })),
          { key: "busy" },
        );
        const quiet = await queue.enqueue(tenant, { quiet: true }, { key: "quiet" });
        const parked = () =>
          db.prepare("SELECT parked, count(*) AS n FROM errand_job GROUP BY parked ORDER BY parked").all();
        const inClaimIndex = () =>
          db
            .prepare(
              "SELECT count(*) FROM errand_job INDEXED BY errand_job_claim WHERE queue = 'default' AND type = 'tenant' AND state = 'pending' AND parked IS NULL",
            )
            .pluck()
            .get();

        const first = await queue.lease({ limit: 10 });
        expect(first.map((j) => j.id)).toEqual([busy[0]!.id, quiet.id]);
        const mark = name === "keyConcurrency" ? 1 : 2;
        expect(parked()).toEqual([
          { parked: null, n: 2 },
          { parked: mark, n: 499 },
        ]);
        expect(inClaimIndex()).toBe(0);
        // Still pending, listed and counted as ever.
        expect((await queue.get(busy[1]!.id))?.state).toBe("pending");
        expect((await queue.stats()).states.pending).toBe(499);

        // The running job ends: the key's next job is back in the claim index, and starts.
        expect(await queue.complete(first[0]!, null)).toBe(true);
        expect(inClaimIndex()).toBe(1);
        let jobs = await queue.lease({ limit: 10 });
        expect(jobs.map((j) => j.id)).toEqual([busy[1]!.id]);

        // A parked job cancelled, another rescheduled: out of the parked jobs either way (the
        // rescheduled one back in the claim index, its key's rules looked at by the next claim).
        const parkedOf = (id: string) =>
          db.prepare("SELECT parked FROM errand_job WHERE id = ?").pluck().get(id);
        expect((await queue.cancel(busy[499]!.id))?.state).toBe("cancelled");
        expect(parkedOf(busy[499]!.id)).toBeUndefined();
        await queue.reschedule(busy[498]!.id, { priority: 1 });
        expect(parkedOf(busy[498]!.id)).toBeNull();

        for (let n = 0; jobs.length > 0 && n < 600; n++) {
          expect(jobs).toHaveLength(1);
          expect(await queue.complete(jobs[0]!, null)).toBe(true);
          jobs = await queue.lease({ limit: 10 });
        }
        expect(await queue.complete(first[1]!, null)).toBe(true);
        expect((await queue.stats()).states).toMatchObject({ pending: 0, active: 0, completed: 500 });
        expect(parked()).toEqual([]);
      } finally {
        db.close();
        await queue.close();
      }
    });
  }

  it("keyRateLimit: parks a full window's key, puts back as many as the window holds when it opens", async () => {
    const file = tempFile();
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const queue = await openQueue({ store: `sqlite:${file}`, clock });
    const db = new Database(file, { readonly: true });
    try {
      const { busy, quiet } = await enqueueRateBacklog(queue);
      const parked = () =>
        db.prepare("SELECT parked, count(*) AS n FROM errand_job GROUP BY parked ORDER BY parked").all();
      const wakes = () => db.prepare("SELECT key, at, n FROM errand_park_wake").all();
      const ready = () =>
        db
          .prepare("SELECT count(*) FROM errand_job WHERE state = 'pending' AND parked IS NULL")
          .pluck()
          .get();

      const first = await queue.lease({ limit: 10 });
      expect(first.map((j) => j.id)).toEqual([busy[0]!.id, busy[1]!.id, quiet.id]);
      expect(parked()).toEqual([
        { parked: null, n: 3 },
        { parked: 3, n: 298 },
      ]);
      expect(wakes()).toEqual([{ key: "busy", at: clock.now() + 1_000, n: 2 }]);
      expect(await queue.lease({ limit: 10 })).toEqual([]);

      // The window opens: its limit's worth come back, in claim order, and start; the wake is set
      // again for the rest.
      clock.advance(1_000);
      const next = await queue.lease({ limit: 10 });
      expect(next.map((j) => j.id)).toEqual([busy[2]!.id, busy[3]!.id]);
      expect(wakes()).toEqual([{ key: "busy", at: clock.now() + 1_000, n: 2 }]);
      expect(await queue.lease({ limit: 10 })).toEqual([]);

      // A window that opened with no claim of the type to see it: the expiry sweep puts them back.
      clock.advance(1_000);
      await queue.store.expirePending({ now: clock.now(), limit: 100 });
      expect(ready()).toBe(2);
      expect(wakes()).toEqual([]);
    } finally {
      db.close();
      await queue.close();
    }
  });
});
