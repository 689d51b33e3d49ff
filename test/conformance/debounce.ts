/**
 * Debounce: while a job with a debounce key is pending and not yet started, an enqueue with the
 * key replaces its payload, pushes its runAt to now + delayMs and gives it its own expiry (or
 * none), returning the same job; once it has started (or finished), the key is free and the
 * enqueue makes a new job. Items of one call with the same key are all answered with the job as
 * the call left it.
 */
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import type { Backend } from "./backend.js";
import { refused } from "./refused.js";

export function exerciseDebounce(backend: Backend): void {
  describe("debounce", () => {
    it("collapses a burst into one job with the last payload, due delayMs after the last enqueue", async () => {
      const { queue, clock } = await backend.setup();
      const first = await queue.enqueue(
        "reindex",
        { doc: 9, n: 1 },
        { debounce: { key: "reindex:9", delayMs: "5s" } },
      );
      expect(first).toMatchObject({ state: "pending", debounceKey: "reindex:9", duplicate: false });
      expect(first.runAt.getTime()).toBe(clock.now() + 5_000);
      await clock.advance(3_000);
      const second = await queue.enqueue(
        "reindex",
        { doc: 9, n: 2 },
        { debounce: { key: "reindex:9", delayMs: "5s" } },
      );
      expect(second).toMatchObject({ id: first.id, duplicate: true, payload: { doc: 9, n: 2 } });
      expect(second.runAt.getTime()).toBe(clock.now() + 5_000);
      const other = await queue.enqueue(
        "reindex",
        { doc: 10 },
        { debounce: { key: "reindex:10", delayMs: "5s" } },
      );
      expect(other.id).not.toBe(first.id);

      await clock.advance(4_999);
      expect(await queue.lease({ limit: 10 })).toEqual([]);
      await clock.advance(1);
      const leased = await queue.lease({ limit: 10 });
      expect(leased.map((j) => j.id).sort()).toEqual([first.id, other.id].sort());
      expect(leased.find((j) => j.id === first.id)?.payload).toEqual({ doc: 9, n: 2 });
      expect((await queue.stats()).states.pending).toBe(0);
    });

    it("makes a new job once the debounced one has started", async () => {
      const { queue, clock } = await backend.setup();
      const first = await queue.enqueue("reindex", { n: 1 }, { debounce: { key: "k", delayMs: 1_000 } });
      await clock.advance(1_000);
      const [running] = await queue.lease();
      expect(running?.id).toBe(first.id);
      const next = await queue.enqueue("reindex", { n: 2 }, { debounce: { key: "k", delayMs: 1_000 } });
      expect(next).toMatchObject({ duplicate: false, state: "pending", payload: { n: 2 } });
      expect(next.id).not.toBe(first.id);
      // The running job failing and retrying does not take the key back.
      expect(await queue.fail(running!, new Error("flaky"))).toBe(true);
      const third = await queue.enqueue("reindex", { n: 3 }, { debounce: { key: "k", delayMs: 1_000 } });
      expect(third).toMatchObject({ id: next.id, duplicate: true, payload: { n: 3 } });
    });

    it("makes a new job when the debounced one passed its expiresAt unswept, of any type", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const d = { key: "k", delayMs: 5_000 };
      const first = await queue.enqueue("reindex", { n: 1 }, { debounce: d, expiresInMs: 2_000 });
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await clock.advance(2_000);
      // Debouncing onto it would give a job no claim can take the new payload: it is expired
      // instead, and the enqueue makes a job of its own.
      const next = await queue.enqueue("reindex", { n: 2 }, { debounce: d });
      expect(next).toMatchObject({ duplicate: false, state: "pending", payload: { n: 2 } });
      expect(next.id).not.toBe(first.id);
      expect(await queue.get(first.id)).toMatchObject({ state: "expired", payload: { n: 1 } });
      expect(expired.map((j) => j.id)).toEqual([first.id]);
      expect(await queue.enqueue("reindex", { n: 3 }, { debounce: d })).toMatchObject({
        id: next.id,
        duplicate: true,
        payload: { n: 3 },
      });

      // A holder of another type past its expiresAt does not refuse the key either.
      const other = await queue.enqueue(
        "a",
        { n: 1 },
        { debounce: { key: "shared", delayMs: 1_000 }, expiresInMs: 500 },
      );
      await clock.advance(500);
      const b = await queue.enqueue("b", 2, { debounce: { key: "shared", delayMs: 1_000 } });
      expect(b).toMatchObject({ type: "b", duplicate: false });
      expect(await queue.get(other.id)).toMatchObject({ state: "expired" });
      expect(expired.map((j) => j.id)).toEqual([first.id, other.id]);
    });

    it("takes the latest enqueue's expiry with its runAt: the burst's last edit runs, not expires", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const start = clock.now();
      const d = { debounce: { key: "reindex:9", delayMs: 5_000 }, expiresInMs: 6_000 };
      const first = await queue.enqueue("reindex", { edit: 1 }, d);
      expect(first.expiresAt?.getTime()).toBe(start + 6_000);
      await clock.advance(4_000);
      // Due at +9 s: the holder's own expiresAt (+6 s) would leave it a job that never runs.
      const second = await queue.enqueue("reindex", { edit: 2 }, d);
      expect(second).toMatchObject({ id: first.id, duplicate: true, payload: { edit: 2 } });
      expect(second.runAt.getTime()).toBe(start + 9_000);
      expect(second.expiresAt?.getTime()).toBe(start + 10_000);
      expect((await queue.get(first.id))?.expiresAt?.getTime()).toBe(start + 10_000);
      await clock.advance(5_000);
      await queue.sweep();
      expect(await queue.lease({ limit: 5 })).toMatchObject([{ id: first.id, payload: { edit: 2 } }]);

      // A later enqueue that sets no expiry leaves the holder none, alone or in a batch of distinct
      // keys; one that sets an earlier expiry gives it that one.
      const lone = await queue.enqueue(
        "reindex",
        { edit: 1 },
        { ...d, debounce: { key: "a", delayMs: 5_000 } },
      );
      const late = await queue.enqueue("reindex", { edit: 1 }, { debounce: { key: "b", delayMs: 5_000 } });
      const early = await queue.enqueue(
        "reindex",
        { edit: 1 },
        { ...d, debounce: { key: "c", delayMs: 5_000 } },
      );
      await clock.advance(1_000);
      const now = clock.now();
      const plain = await queue.enqueue("reindex", { edit: 2 }, { debounce: { key: "a", delayMs: 5_000 } });
      expect(plain).toMatchObject({ id: lone.id, duplicate: true, expiresAt: null });
      const batch = await queue.enqueueBatch([
        {
          job: "reindex",
          payload: { edit: 2 },
          options: { debounce: { key: "b", delayMs: 5_000 }, expiresInMs: 7_000 },
        },
        { job: "reindex", payload: { edit: 2 }, options: { debounce: { key: "c", delayMs: 5_000 } } },
      ]);
      expect(batch).toMatchObject([
        { id: late.id, duplicate: true },
        { id: early.id, duplicate: true, expiresAt: null },
      ]);
      expect(batch[0]?.expiresAt?.getTime()).toBe(now + 7_000);
      expect((await queue.get(lone.id))?.expiresAt).toBeNull();
      expect((await queue.get(late.id))?.expiresAt?.getTime()).toBe(now + 7_000);
      expect((await queue.get(early.id))?.expiresAt).toBeNull();
      await clock.advance(3_600_000);
      await queue.sweep();
      expect((await queue.lease({ limit: 5 })).map((j) => j.id).sort()).toEqual([lone.id, early.id].sort());
      expect(await queue.get(late.id)).toMatchObject({ state: "expired", payload: { edit: 2 } });
    });

    it("answers every item of one call that debounced onto a job with the job as the call left it", async () => {
      const { queue } = await backend.setup({ maintenance: false });
      const d = { debounce: { key: "k", delayMs: 1_000 } };
      const items = (ns: number[]) => ns.map((n) => ({ job: "t", payload: { n }, options: d }));
      // The first inserts the job (answered as enqueued); the later two debounce onto it, both
      // answered as stored once the call returns, not as each one left it.
      const fresh = await queue.enqueueBatch(items([1, 2, 3]));
      expect(new Set(fresh.map((j) => j.id)).size).toBe(1);
      expect(fresh.map((j) => [j.duplicate, j.payload])).toEqual([
        [false, { n: 1 }],
        [true, { n: 3 }],
        [true, { n: 3 }],
      ]);
      const again = await queue.enqueueBatch([
        ...items([4, 5]),
        { job: "t", payload: { n: 0 }, options: { debounce: { key: "other", delayMs: 1_000 } } },
        ...items([6]),
      ]);
      expect(again.map((j) => [j.id === fresh[0]!.id, j.duplicate, j.payload])).toEqual([
        [true, true, { n: 6 }],
        [true, true, { n: 6 }],
        [false, false, { n: 0 }],
        [true, true, { n: 6 }],
      ]);
      expect(await queue.get(fresh[0]!.id)).toMatchObject({ payload: { n: 6 } });
    });

    it("debounces a batch of distinct keys in one call: onto waiting holders, past expired ones, new jobs for free keys", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const d = (key: string) => ({ debounce: { key, delayMs: 1_000 } });
      const waiting = await queue.enqueue("reindex", { n: 0 }, d("held"));
      const stale = await queue.enqueue("reindex", { n: 0 }, { ...d("stale"), expiresInMs: 500 });
      const other = await queue.enqueue("other", { n: 0 }, d("theirs"));
      await clock.advance(500);
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));

      // A key a waiting job of another type holds refuses the whole batch before any write.
      const batch = (keys: string[]) =>
        queue.enqueueBatch(keys.map((k, n) => ({ job: "reindex", payload: { n: n + 1, k }, options: d(k) })));
      await refused(() => batch(["held", "stale", "free-1", "theirs"]), "INVALID_KEY");
      expect(await queue.get(waiting.id)).toMatchObject({ payload: { n: 0 } });
      expect(await queue.get(stale.id)).toMatchObject({ state: "pending" });
      expect(expired).toEqual([]);
      expect((await queue.stats()).states).toMatchObject({ pending: 3, expired: 0 });

      const keys = ["held", "stale", ...Array.from({ length: 300 }, (_, i) => `free-${i}`)];
      const jobs = await batch(keys);
      expect(jobs[0]).toMatchObject({ id: waiting.id, duplicate: true, payload: { n: 1, k: "held" } });
      expect(jobs[0]?.runAt.getTime()).toBe(clock.now() + 1_000);
      expect(jobs[1]).toMatchObject({
        duplicate: false,
        payload: { n: 2, k: "stale" },
        debounceKey: "stale",
      });
      expect(jobs[1]?.id).not.toBe(stale.id);
      expect(jobs.slice(2).every((j) => !j.duplicate)).toBe(true);
      expect(new Set(jobs.map((j) => j.id)).size).toBe(keys.length);
      expect(expired.map((j) => j.id)).toEqual([stale.id]);
      expect(await queue.get(other.id)).toMatchObject({ state: "pending", payload: { n: 0 } });
      expect((await queue.stats()).states).toMatchObject({ pending: 1 + keys.length, expired: 1 });

      // The same batch again debounces onto every job it made.
      const again = await batch(keys);
      expect(again.map((j) => j.id)).toEqual(jobs.map((j) => j.id));
      expect(again.every((j) => j.duplicate)).toBe(true);
    });

    it("refuses a debounce key a waiting job of another type holds, storing and changing nothing", async () => {
      const { queue, clock } = await backend.setup();
      // Free text: a line break and a tab too.
      const d = { key: "shared\n\tkey é", delayMs: 1_000 };
      const held = await queue.enqueue("a", { n: 1 }, { debounce: d });
      const e = await refused(() => queue.enqueue("b", "not a's payload", { debounce: d }), "INVALID_KEY");
      expect(e.details).toEqual({ debounceKey: d.key, holderType: "a", type: "b" });
      // In a batch, the one refusal stores none of it; a key taken earlier in the batch counts too.
      await refused(
        () =>
          queue.enqueueBatch([
            { job: "c", payload: 1, options: { id: "c-1" } },
            { job: "a", payload: { n: 2 }, options: { debounce: { key: "fresh", delayMs: 1_000 } } },
            { job: "b", payload: 3, options: { debounce: { key: "fresh", delayMs: 1_000 } } },
          ]),
        "INVALID_KEY",
      );
      expect(await queue.get("c-1")).toBeNull();
      expect(await queue.get(held.id)).toMatchObject({ type: "a", payload: { n: 1 } });
      expect((await queue.stats()).states.pending).toBe(1);
      // The same type still debounces onto it; once it has started, the key is anyone's.
      expect(await queue.enqueue("a", { n: 3 }, { debounce: d })).toMatchObject({
        id: held.id,
        duplicate: true,
      });
      await clock.advance(1_000);
      expect(await queue.lease({ types: ["a"] })).toMatchObject([{ id: held.id }]);
      expect(await queue.enqueue("b", 4, { debounce: d })).toMatchObject({ type: "b", duplicate: false });
    });

    it("refuses a debounce key a waiting job of another owner holds, naming neither, changing nothing", async () => {
      const { queue } = await backend.setup();
      const d = { key: "shared", delayMs: 1_000 };
      const held = await queue.enqueue("a", { secret: "alice" }, { debounce: d, owner: "alice" });
      for (const enqueue of [
        () => queue.enqueue("a", { evil: "bob" }, { debounce: d, owner: "bob" }),
        () => queue.enqueue("a", { evil: "nobody" }, { debounce: d }),
        () =>
          queue.enqueueBatch([
            { job: "a", payload: { evil: "bob" }, options: { debounce: d, owner: "bob" } },
          ]),
        () =>
          queue.enqueueBatch([
            { job: "a", payload: 1, options: { debounce: { key: "other", delayMs: 1_000 }, owner: "bob" } },
            { job: "a", payload: 2, options: { debounce: d, owner: "bob" } },
          ]),
      ]) {
        const e = await refused(enqueue, "INVALID_KEY");
        expect(e.message).not.toMatch(/alice/);
        expect(e.details).toEqual({ debounceKey: "shared" });
      }
      expect(await queue.get(held.id)).toMatchObject({ payload: { secret: "alice" }, owner: "alice" });
      expect((await queue.stats()).states.pending).toBe(1);
      // The same owner still debounces onto it.
      expect(await queue.enqueue("a", { secret: "again" }, { debounce: d, owner: "alice" })).toMatchObject({
        id: held.id,
        duplicate: true,
      });
    });

    it("refuses a batch whose keys repeat and another type holds a later one: nothing stored or expired", async () => {
      const { queue, clock } = await backend.setup({ maintenance: false });
      const d = (key: string) => ({ debounce: { key, delayMs: 1_000 } });
      // No ids given: the call is not made a transaction for ids, so the store must itself check
      // every key before it writes (a repeated key goes one job at a time).
      const stale = await queue.enqueue("a", { n: 0 }, { ...d("A"), expiresInMs: 500 });
      const theirs = await queue.enqueue("c", { n: 0 }, { debounce: { key: "B", delayMs: 60_000 } });
      await clock.advance(500);
      const expired: Job[] = [];
      queue.on("expired", (j) => expired.push(j));
      await refused(
        () =>
          queue.enqueueBatch([
            { job: "plain", payload: { n: 1 } },
            { job: "a", payload: { n: 2 }, options: d("A") },
            { job: "a", payload: { n: 3 }, options: d("A") },
            { job: "b", payload: { n: 4 }, options: d("B") },
          ]),
        "INVALID_KEY",
      );
      expect(await queue.get(stale.id)).toMatchObject({ state: "pending", payload: { n: 0 } });
      expect(await queue.get(theirs.id)).toMatchObject({ state: "pending", payload: { n: 0 } });
      expect(expired).toEqual([]);
      expect((await queue.stats()).states).toMatchObject({ pending: 2, expired: 0 });
    });

    it("frees an expired holder a job of the same batch waits for: the dependent settled, and answered as stored", async () => {
      for (const [order, rule, settled] of [
        ["dependent first", "cancel", "cancelled"],
        ["debounce first", "cancel", "cancelled"],
        ["dependent first", "run", "pending"],
        ["debounce first", "run", "pending"],
      ] as const) {
        const { queue, clock } = await backend.setup({ maintenance: false });
        const holder = await queue.enqueue(
          "t",
          { n: 1 },
          { debounce: { key: "D", delayMs: 5_000 }, expiresInMs: 1_000 },
        );
        await clock.advance(1_000);
        const dependent = {
          job: "task",
          payload: { n: 0 },
          options: { dependsOn: [holder.id], onDependencyFailure: rule },
        };
        // A second debounced job on a key of its own, so the batch of distinct keys is taken too.
        const debounced = [
          { job: "t", payload: { n: 2 }, options: { debounce: { key: "D", delayMs: 1_000 } } },
          { job: "t", payload: { n: 3 }, options: { debounce: { key: "E", delayMs: 1_000 } } },
        ];
        const items = order === "dependent first" ? [dependent, ...debounced] : [...debounced, dependent];
        const jobs = await queue.enqueueBatch(items);
        const answered = jobs[order === "dependent first" ? 0 : 2]!;
        expect(await queue.get(holder.id), `${order}, ${rule}`).toMatchObject({ state: "expired" });
        expect(await queue.get(answered.id), `${order}, ${rule}`).toMatchObject({ state: settled });
        expect(answered.state, `${order}, ${rule}: the answer`).toBe(settled);
        expect((await queue.stats()).states.blocked, `${order}, ${rule}`).toBe(0);
      }
    });

    it("debounces one key from many connections at once: every enqueue answered, one job waits", async () => {
      const { queue, clock, connect } = await backend.setup({ maintenance: false });
      const queues = [queue, ...(await Promise.all([connect(), connect(), connect()]))];
      for (let round = 0; round < 10; round++) {
        const key = `k${round}`;
        // Every other round the key starts held by a job past its expiresAt.
        if (round % 2 === 1)
          await queue.enqueue("t", { n: -1 }, { debounce: { key, delayMs: 5_000 }, expiresInMs: 1_000 });
        await clock.advance(1_000);
        const jobs = await Promise.all(
          queues.flatMap((q, n) =>
            [0, 1].map((m) => q.enqueue("t", { n, m }, { debounce: { key, delayMs: 1_000 } })),
          ),
        );
        expect(new Set(jobs.map((j) => j.id)).size, `round ${round}`).toBe(1);
        expect(
          jobs.filter((j) => !j.duplicate),
          `round ${round}`,
        ).toHaveLength(1);
      }
    });

    it("refuses debounce with id, runAt, delayMs, uniqueKey or dependsOn, and a bad key or delay", async () => {
      const { queue } = await backend.setup();
      const d = { key: "k", delayMs: 1_000 };
      await refused(() => queue.enqueue("t", {}, { debounce: d, delayMs: 5 }), "INVALID_OPTION");
      await refused(() => queue.enqueue("t", {}, { debounce: d, runAt: new Date() }), "INVALID_OPTION");
      await refused(() => queue.enqueue("t", {}, { debounce: d, uniqueKey: "u" }), "INVALID_OPTION");
      // A debounced enqueue may answer with the job already waiting, under its own id: a given id
      // would then name no job.
      await refused(() => queue.enqueue("t", {}, { debounce: d, id: "mine" }), "INVALID_OPTION");
      await refused(() => queue.enqueue("t", {}, { debounce: d, dependsOn: ["x"] }), "INVALID_OPTION");
      await refused(() => queue.enqueue("t", {}, { debounce: { key: "", delayMs: 1 } }), "INVALID_KEY");
      await refused(
        () => queue.enqueue("t", {}, { debounce: { key: "k", delayMs: -1 } }),
        "INVALID_DURATION",
      );
      await refused(() => queue.enqueue("t", {}, { debounce: "k" as never }), "INVALID_OPTION");
      await refused(
        () => queue.enqueue("t", {}, { debounce: { key: "k", delayMs: 1, extra: 1 } as never }),
        "INVALID_OPTION",
      );
      const states = (await queue.stats()).states;
      expect(Object.values(states).reduce((a, b) => a + b, 0)).toBe(0);
    });
  });
}
