/**
 * Semantic 11, recurring: a cron schedule (with timezone) enqueues exactly one job per tick, however
 * many schedulers run; missed ticks are not caught up.
 */
import { describe, expect, it } from "vitest";
import type { Clock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import type { Job } from "../../src/job.js";
import { Queue } from "../../src/queue.js";
import { MAX_DATE_MS } from "../../src/validation.js";
import { newJob, scheduleRecord } from "../helpers/new-job.js";
import type { Backend } from "./backend.js";

const MINUTE = 60_000;

const report = defineJob({ type: "report", handler: async () => null });

/** Every job of `type`, whatever its state, oldest id first. */
async function jobsOf(queue: Queue, type: string): Promise<Job[]> {
  const out: Job[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({ type, limit: 1000, cursor });
    out.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function exerciseSchedules(backend: Backend): void {
  describe("schedules", () => {
    it("enqueues exactly one job per tick with two schedulers on two connections sweeping every tick", async () => {
      const { queue, clock, connect } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const other = await connect();
      const start = clock.now();
      const created = await queue.schedule("digest", {
        cron: "*/5 * * * *",
        timezone: "UTC",
        job: report,
        payload: { kind: "digest" },
      });
      expect(created.nextRunAt.getTime()).toBe(start + 5 * MINUTE);

      const ticks: number[] = [];
      for (let i = 1; i <= 12; i++) {
        await clock.advance(5 * MINUTE);
        ticks.push(start + i * 5 * MINUTE);
        const [a, b] = await Promise.all([queue.sweep(), other.sweep()]);
        expect(a.fired + b.fired).toBe(1);
        // A second pass on either connection finds nothing more to fire.
        expect((await other.sweep()).fired + (await queue.sweep()).fired).toBe(0);
      }
      const jobs = await jobsOf(queue, "report");
      expect(jobs).toHaveLength(12);
      expect(jobs.map((j) => j.id).sort()).toEqual(ticks.map((t) => `schedule:digest:${t}`).sort());
      for (const job of jobs) expect(job).toMatchObject({ payload: { kind: "digest" }, state: "pending" });
      const [stored] = await other.schedules();
      expect(stored?.nextRunAt.getTime()).toBe(start + 13 * 5 * MINUTE);
    });

    it("reads one schedule by name: as listed, null for none, a bad name refused", async () => {
      const { queue } = await backend.setup();
      const made = await queue.schedule("digest", {
        cron: "0 3 * * *",
        timezone: "UTC",
        job: report,
        payload: 1,
      });
      await queue.schedule("other", { cron: "*/5 * * * *", job: report, payload: 2 });
      expect(await queue.getSchedule("digest")).toEqual(made);
      expect(await queue.getSchedule("digest")).toEqual((await queue.schedules())[0]);
      expect(await queue.getSchedule("nothing")).toBeNull();
      await expect(queue.getSchedule("a b")).rejects.toMatchObject({ code: "INVALID_SCHEDULE_NAME" });
      await queue.unschedule("digest");
      expect(await queue.getSchedule("digest")).toBeNull();
    });

    it("fires more due schedules than one chunk in one sweep", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      // More than a sweep's chunk (500), all due at the same tick.
      for (let i = 0; i < 501; i++) {
        await queue.schedule(`s${i}`, { cron: "*/5 * * * *", timezone: "UTC", job: report, payload: i });
      }
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(501);
      expect(await jobsOf(queue, "report")).toHaveLength(501);
      expect((await queue.sweep()).fired).toBe(0);
    });

    it("fires a timezone schedule at 03:00 Berlin time, through the DST change", async () => {
      const { queue, clock } = await backend.setup({ start: Date.parse("2026-03-27T12:00:00Z") });
      const s = await queue.schedule("nightly", {
        cron: "0 3 * * *",
        timezone: "Europe/Berlin",
        job: report,
        payload: {},
      });
      expect(s.timezone).toBe("Europe/Berlin");
      // 03:00 CET (UTC+1) is 02:00 UTC.
      expect(s.nextRunAt.toISOString()).toBe("2026-03-28T02:00:00.000Z");

      await clock.set(Date.parse("2026-03-28T01:59:59.999Z"));
      expect((await queue.sweep()).fired).toBe(0);
      await clock.advance(1);
      expect((await queue.sweep()).fired).toBe(1);
      // Clocks go forward on 29 March: 03:00 CEST (UTC+2) is 01:00 UTC.
      expect((await queue.schedules())[0]?.nextRunAt.toISOString()).toBe("2026-03-29T01:00:00.000Z");
      await clock.set(Date.parse("2026-03-29T01:00:00Z"));
      expect((await queue.sweep()).fired).toBe(1);
      expect((await queue.schedules())[0]?.nextRunAt.toISOString()).toBe("2026-03-30T01:00:00.000Z");

      const ids = (await jobsOf(queue, "report")).map((j) => j.id).sort();
      expect(ids).toEqual([
        `schedule:nightly:${Date.parse("2026-03-28T02:00:00Z")}`,
        `schedule:nightly:${Date.parse("2026-03-29T01:00:00Z")}`,
      ]);
    });

    it("runs an every-15-minutes schedule through both passes of the hour clocks go back, and a fixed-time one once, the first time", async () => {
      // New York, 1 November 2026: 01:00–02:00 happens twice, EDT (05:00–06:00 UTC), then EST.
      const { queue, clock } = await backend.setup({ start: Date.parse("2026-11-01T04:50:00Z") });
      await queue.schedule("quarter", {
        cron: "*/15 * * * *",
        timezone: "America/New_York",
        job: report,
        payload: {},
      });
      await queue.schedule("nightly", {
        cron: "30 1 * * *",
        timezone: "America/New_York",
        job: report,
        payload: {},
      });
      for (let t = Date.parse("2026-11-01T05:00:00Z"); t <= Date.parse("2026-11-01T07:00:00Z"); t += MINUTE) {
        await clock.set(t);
        await queue.sweep();
      }
      const fired = (await jobsOf(queue, "report")).map((j) => j.id);
      const quarters = fired
        .filter((id) => id.startsWith("schedule:quarter:"))
        .map((id) => Number(id.split(":")[2]));
      // Every real quarter hour: before, the EST pass (06:00–06:45 UTC) was skipped, 75 minutes without a run.
      expect(quarters.sort((a, b) => a - b).map((t) => new Date(t).toISOString())).toEqual(
        Array.from({ length: 9 }, (_, i) =>
          new Date(Date.parse("2026-11-01T05:00:00Z") + i * 15 * MINUTE).toISOString(),
        ),
      );
      // 01:30 once, at its first pass (EDT), as Vixie cron runs it.
      expect(fired.filter((id) => id.startsWith("schedule:nightly:"))).toEqual([
        `schedule:nightly:${Date.parse("2026-11-01T05:30:00Z")}`,
      ]);
    });

    it("keeps a due tick when the schedule is saved again with another spelling of its zone", async () => {
      const { queue, clock } = await backend.setup({ start: Date.parse("2026-06-01T09:59:00Z") });
      const first = await queue.schedule("d", {
        cron: "0 11 * * *",
        timezone: "Europe/London",
        job: report,
        payload: {},
      });
      expect(first.nextRunAt.toISOString()).toBe("2026-06-01T10:00:00.000Z"); // 11:00 BST
      await clock.set(Date.parse("2026-06-01T10:00:30Z")); // due, not swept yet
      // A redeploy that spells the zone another way is the same schedule: before, the due tick was dropped.
      const again = await queue.schedule("d", {
        cron: "0 11 * * *",
        timezone: "europe/london",
        job: report,
        payload: {},
      });
      expect(again.nextRunAt.toISOString()).toBe("2026-06-01T10:00:00.000Z");
      expect((await queue.sweep()).fired).toBe(1);
    });

    it("saved again after the clock was set back, takes the cron's next tick from now rather than one stored hours ahead", async () => {
      const bundle = await backend.setup();
      // A host clock that an NTP step can move back (a ManualClock only moves forward).
      let at = Date.parse("2026-06-01T10:00:00Z");
      const clock: Clock = { now: () => at, setTimer: () => () => {} };
      const queue = new Queue(bundle.store, { clock });
      await queue.schedule("h", { cron: "0 * * * *", job: report, payload: {} });
      at = Date.parse("2026-06-01T15:00:00Z"); // five hours ahead for a while: a sweep moves the schedule on
      expect((await queue.sweep()).fired).toBe(1);
      expect((await queue.getSchedule("h"))?.nextRunAt.toISOString()).toBe("2026-06-01T16:00:00.000Z");
      at = Date.parse("2026-06-01T10:20:00Z"); // set right
      // Redeploying the same schedule: before, it kept 16:00 and stayed silent for six hours.
      const again = await queue.schedule("h", { cron: "0 * * * *", job: report, payload: {} });
      expect(again.nextRunAt.toISOString()).toBe("2026-06-01T11:00:00.000Z");
    });

    it("fires once, not once per missed tick, after downtime spanning many ticks", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      await queue.schedule("digest", { cron: "*/5 * * * *", job: report, payload: {} });

      // Nobody sweeps for an hour and two minutes: twelve ticks go by.
      await clock.advance(62 * MINUTE);
      const first = await queue.sweep();
      expect(first.fired).toBe(1);
      expect((await queue.sweep()).fired).toBe(0);
      expect(await jobsOf(queue, "report")).toHaveLength(1);
      // The schedule moves on to the next tick in the future.
      expect((await queue.schedules())[0]?.nextRunAt.getTime()).toBe(start + 65 * MINUTE);

      await clock.advance(3 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
      const ids = (await jobsOf(queue, "report")).map((j) => j.id);
      expect(ids).toHaveLength(2);
      expect(ids).toContain(`schedule:digest:${start + 65 * MINUTE}`);
    });

    it("stops firing once unscheduled; jobs it already enqueued stay", async () => {
      const { queue, clock, connect } = await backend.setup();
      const other = await connect();
      await queue.schedule("digest", { cron: "*/5 * * * *", job: report, payload: {} });
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);

      expect(await other.unschedule("digest")).toBe(true);
      expect(await queue.schedules()).toEqual([]);
      for (let i = 0; i < 3; i++) {
        await clock.advance(5 * MINUTE);
        expect((await queue.sweep()).fired).toBe(0);
        expect((await other.sweep()).fired).toBe(0);
      }
      expect(await jobsOf(queue, "report")).toHaveLength(1);
      expect(await queue.unschedule("digest")).toBe(false);
    });

    it("passes a tick whose job's unique key is held: nothing enqueued, no event, the schedule moves on", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      const enqueued: Job[] = [];
      queue.on("enqueued", (job) => enqueued.push(job));
      await queue.schedule("sync", {
        cron: "*/5 * * * *",
        job: report,
        payload: {},
        options: { uniqueKey: "sync" },
      });

      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
      const first = `schedule:sync:${start + 5 * MINUTE}`;
      expect(enqueued.map((j) => j.id)).toEqual([first]);

      // The first tick's job still waits, holding the key: the second tick enqueues nothing.
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(0);
      expect(await queue.get(`schedule:sync:${start + 10 * MINUTE}`)).toBeNull();
      expect(enqueued).toHaveLength(1);
      expect((await jobsOf(queue, "report")).map((j) => j.id)).toEqual([first]);
      expect((await queue.schedules())[0]?.nextRunAt.getTime()).toBe(start + 15 * MINUTE);

      // Once the holder is gone the key is free, and the next tick enqueues again.
      expect((await queue.cancel(first)).state).toBe("cancelled");
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
      const third = `schedule:sync:${start + 15 * MINUTE}`;
      expect(enqueued.map((j) => j.id)).toEqual([first, third]);
      expect((await queue.get(third))?.uniqueKey).toBe("sync");
    });

    it("folds a debounced tick into the job still waiting from the last: no new job, no event", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      const enqueued: Job[] = [];
      queue.on("enqueued", (job) => enqueued.push(job));
      await queue.schedule("reindex", {
        cron: "*/5 * * * *",
        job: report,
        payload: { n: 1 },
        options: { debounce: { key: "reindex", delayMs: "10m" } },
      });
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
      const first = `schedule:reindex:${start + 5 * MINUTE}`;
      expect(enqueued.map((j) => j.id)).toEqual([first]);
      expect((await queue.get(first))?.runAt.getTime()).toBe(start + 15 * MINUTE);

      // The first tick's job has not started: the second tick pushes it back instead of adding one.
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(0);
      expect(enqueued).toHaveLength(1);
      expect((await jobsOf(queue, "report")).map((j) => j.id)).toEqual([first]);
      expect((await queue.get(first))?.runAt.getTime()).toBe(start + 20 * MINUTE);
      expect((await queue.schedules())[0]?.nextRunAt.getTime()).toBe(start + 15 * MINUTE);
    });

    it("announces a tick's job as stored: blocked, for a schedule saved with dependsOn before it was refused", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      const gate = await queue.enqueue(report, { n: 0 });
      // queue.schedule() refuses dependsOn now; an older errand stored such schedules as this.
      await queue.store.putSchedule(
        scheduleRecord({
          name: "after",
          options: JSON.stringify({ dependsOn: [gate.id] }),
          createdAt: start,
        }),
      );
      const enqueued: Job[] = [];
      queue.on("enqueued", (job) => enqueued.push(job));
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
      expect(enqueued).toHaveLength(1);
      expect(enqueued[0]).toMatchObject({ state: "blocked", blockedBy: 1, dependsOn: [gate.id] });
      expect((await queue.get(enqueued[0]!.id))?.state).toBe("blocked");
    });

    it("refuses options that take the first tick's job past the latest date, storing nothing", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      // Fine at the PUT, but not at its first tick a minute on.
      const past = { expiresInMs: MAX_DATE_MS - clock.now() - 30_000 };
      await expect(
        queue.schedule("far", {
          cron: "* * * * *",
          timezone: "UTC",
          job: report,
          payload: {},
          options: past,
        }),
      ).rejects.toMatchObject({ code: "INVALID_DURATION" });
      expect(await queue.getSchedule("far")).toBeNull();
    });

    it("skips a tick whose stored options make no job: reported, the schedule moves on, the others fire", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      // Stored by hand, as by an older errand or by hand in the store: options no plan accepts.
      await queue.store.putSchedule(
        scheduleRecord({ name: "broken", options: JSON.stringify({ priority: "high" }), createdAt: start }),
      );
      await queue.schedule("fine", { cron: "*/5 * * * *", timezone: "UTC", job: report, payload: {} });
      const errors: unknown[] = [];
      queue.on("error", (e) => errors.push(e));
      for (let i = 1; i <= 2; i++) {
        await clock.advance(5 * MINUTE);
        expect((await queue.sweep()).fired).toBe(1);
        expect(await queue.getSchedule("broken")).toMatchObject({
          nextRunAt: new Date(start + (i + 1) * 5 * MINUTE),
        });
      }
      expect(errors).toHaveLength(2);
      expect(errors[0]).toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringMatching(/schedule "broken": its tick at 2026-01-01T00:05:00.000Z was skipped/),
        details: { schedule: "broken", tick: start + 5 * MINUTE },
      });
      expect((await jobsOf(queue, "report")).map((j) => j.id)).toEqual([
        `schedule:fine:${start + 5 * MINUTE}`,
        `schedule:fine:${start + 10 * MINUTE}`,
      ]);
      // The store's own form: a tick fired with no job moves the schedule on and stores nothing.
      const record = (await queue.store.getSchedule({ name: "fine" }))!;
      const moved = await queue.store.fireSchedule({
        name: "fine",
        now: clock.now(),
        expectedRunAt: record.nextRunAt,
        nextRunAt: record.nextRunAt + 5 * MINUTE,
        job: null,
      });
      expect(moved).toBeNull();
      expect((await queue.store.getSchedule({ name: "fine" }))?.nextRunAt).toBe(
        record.nextRunAt + 5 * MINUTE,
      );
      expect(await jobsOf(queue, "report")).toHaveLength(2);
    });

    it("fires a tick whose unique or debounce key a job past its expiresAt holds, expiring that job", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1), maintenance: false });
      await queue.schedule("sync", {
        cron: "*/5 * * * *",
        job: report,
        payload: {},
        options: { uniqueKey: "sync" },
      });
      await queue.schedule("tidy", {
        cron: "*/5 * * * *",
        job: report,
        payload: {},
        options: { debounce: { key: "tidy", delayMs: 0 } },
      });
      const unique = await queue.enqueue(
        "other",
        {},
        { uniqueKey: "sync", expiresInMs: 1_000, delayMs: MINUTE },
      );
      const debounced = await queue.enqueue(
        "other",
        {},
        { debounce: { key: "tidy", delayMs: MINUTE }, expiresInMs: 1_000 },
      );
      await clock.advance(5 * MINUTE);
      // The store's own form, so no sweep expires the holders first.
      for (const [name, holder, keys] of [
        ["sync", unique, { uniqueKey: "sync" }],
        ["tidy", debounced, { debounceKey: "tidy" }],
      ] as const) {
        const record = (await queue.store.getSchedule({ name }))!;
        const id = `schedule:${name}:${record.nextRunAt}`;
        const fired = await queue.store.fireSchedule({
          name,
          now: clock.now(),
          expectedRunAt: record.nextRunAt,
          nextRunAt: record.nextRunAt + 5 * MINUTE,
          job: newJob({ id, runAt: clock.now(), type: "report", ...keys }),
        });
        expect(fired).toMatchObject({ inserted: true, expired: [{ id: holder.id, state: "expired" }] });
        expect(await queue.get(id)).toMatchObject({ state: "pending", type: "report" });
        expect(await queue.get(holder.id)).toMatchObject({ state: "expired" });
      }
    });

    it("skips a tick whose debounce key a waiting job of another type holds, and fires the next", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      const start = clock.now();
      const debounce = { key: "nightly", delayMs: 0 };
      await queue.schedule("tick", {
        cron: "*/5 * * * *",
        timezone: "UTC",
        job: report,
        payload: {},
        options: { debounce },
      });
      const other = await queue.enqueue("other", {}, { debounce: { key: "nightly", delayMs: 20 * MINUTE } });
      const errors: unknown[] = [];
      queue.on("error", (e) => errors.push(e));
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(0);
      expect(errors).toEqual([
        expect.objectContaining({
          code: "INVALID_KEY",
          details: { schedule: "tick", tick: start + 5 * MINUTE },
        }),
      ]);
      expect((await queue.getSchedule("tick"))?.nextRunAt.getTime()).toBe(start + 10 * MINUTE);
      expect(await jobsOf(queue, "report")).toEqual([]);
      expect((await queue.get(other.id))?.payload).toEqual({});
      await queue.cancel(other.id);
      await clock.advance(5 * MINUTE);
      expect((await queue.sweep()).fired).toBe(1);
    });

    it("pages schedules by name in byte order: each page at most its limit, nextCursor null on the last", async () => {
      const { queue } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      // Byte order, as the stores compare names: digits, upper case, "_", lower case, and a name
      // before the longer names it starts.
      const names = ["z", "a", "B", "_x", "a-1", "a:b", "9"];
      for (const name of names) await queue.schedule(name, { cron: "0 * * * *", job: report, payload: null });
      const byBytes = ["9", "B", "_x", "a", "a-1", "a:b", "z"];

      const seen: string[][] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await queue.schedulePage({ limit: 4, ...(cursor === undefined ? {} : { cursor }) });
        seen.push(page.schedules.map((s) => s.name));
        if (page.nextCursor === null) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual([byBytes.slice(0, 4), byBytes.slice(4)]);
      expect((await queue.schedules()).map((s) => s.name)).toEqual(byBytes);
      // A full last page says so on the next call, with nothing in it.
      const full = await queue.schedulePage({ limit: 3, cursor: byBytes[2]! });
      expect(full.schedules.map((s) => s.name)).toEqual(byBytes.slice(3, 6));
      expect(full.nextCursor).toBe(byBytes[5]);
      const last = await queue.schedulePage({ limit: 1, cursor: full.nextCursor! });
      expect(last.schedules.map((s) => s.name)).toEqual(["z"]);
      expect(last.nextCursor).toBe("z");
      expect(await queue.schedulePage({ cursor: last.nextCursor! })).toEqual({
        schedules: [],
        nextCursor: null,
      });
      // A cursor need not name a schedule that exists: the page starts after it.
      expect((await queue.schedulePage({ cursor: "a-0", limit: 1 })).schedules.map((s) => s.name)).toEqual([
        "a-1",
      ]);
    });

    it("refuses a bad page of schedules: limit out of 1..1000, a cursor that is not a name", async () => {
      const { queue } = await backend.setup();
      for (const limit of [0, 1001, 1.5, Number.NaN]) {
        await expect(queue.schedulePage({ limit })).rejects.toMatchObject({ code: "INVALID_OPTION" });
      }
      await expect(queue.schedulePage({ cursor: "" })).rejects.toMatchObject({
        code: "INVALID_SCHEDULE_NAME",
      });
      await expect(queue.schedulePage({ cursor: "x".repeat(300) })).rejects.toMatchObject({
        code: "INVALID_SCHEDULE_NAME",
      });
    });

    it("lists schedules by name with their cron, zone, type, payload, options and next run", async () => {
      const { queue, clock } = await backend.setup({ start: Date.UTC(2026, 0, 1) });
      expect(await queue.schedules()).toEqual([]);
      await queue.schedule("weekly", {
        cron: "0 9 * * 1",
        timezone: "America/New_York",
        job: "send-summary",
        payload: { to: "team" },
        options: { priority: 5, queue: "reports" },
      });
      await queue.schedule("digest", { cron: "*/5 * * * *", job: report, payload: { n: 1 } });
      const list = await queue.schedules();
      expect(list.map((s) => s.name)).toEqual(["digest", "weekly"]);
      expect(list[0]).toMatchObject({
        cron: "*/5 * * * *",
        timezone: "UTC",
        type: "report",
        payload: { n: 1 },
        options: {},
      });
      expect(list[0]?.nextRunAt.getTime()).toBe(clock.now() + 5 * MINUTE);
      expect(list[1]).toMatchObject({
        cron: "0 9 * * 1",
        timezone: "America/New_York",
        type: "send-summary",
        payload: { to: "team" },
        options: { priority: 5, queue: "reports" },
      });
      // Monday 5 January 2026, 09:00 EST (UTC-5).
      expect(list[1]?.nextRunAt.toISOString()).toBe("2026-01-05T14:00:00.000Z");

      // Scheduling a name again replaces it.
      await queue.schedule("digest", { cron: "0 * * * *", job: report, payload: { n: 2 } });
      const again = await queue.schedules();
      expect(again).toHaveLength(2);
      expect(again[0]).toMatchObject({ name: "digest", cron: "0 * * * *", payload: { n: 2 } });
      expect(again[0]?.nextRunAt.getTime()).toBe(clock.now() + 60 * MINUTE);

      // A fired job carries the schedule's options.
      await clock.set(Date.parse("2026-01-05T14:00:00Z"));
      await queue.sweep();
      const [summary] = await jobsOf(queue, "send-summary");
      expect(summary).toMatchObject({
        id: `schedule:weekly:${Date.parse("2026-01-05T14:00:00Z")}`,
        queue: "reports",
        priority: 5,
        payload: { to: "team" },
      });
    });
  });
}
