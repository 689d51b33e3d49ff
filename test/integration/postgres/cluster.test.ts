/**
 * Issue 3: the cluster-wide per-type cap and the cron scheduler hold across processes on
 * PostgreSQL. Worker processes are real (`pg-child.ts`); waits are on their messages.
 */
import { fileURLToPath } from "node:url";
import { afterEach, expect, onTestFinished, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { openQueue, type Queue } from "../../../src/index.js";
import { dropSchema, freshSchema, PG_URL, pgUrl, withPg } from "../../helpers/postgres.js";
import { killAll, type Message, WorkerProcess } from "../child-process.js";

const SCRIPT = fileURLToPath(new URL("./pg-child.ts", import.meta.url));
const children: WorkerProcess[] = [];
const queues: Queue[] = [];

afterEach(async () => {
  await killAll(children);
  for (const q of queues.splice(0)) await q.close();
});

/** A fresh schema, migrated, dropped after the test. */
async function freshStore(
  prefix: string,
  clock?: ManualClock,
): Promise<{ schema: string; url: string; queue: Queue }> {
  const schema = freshSchema(prefix);
  onTestFinished(() => dropSchema(schema));
  const url = pgUrl(schema);
  const queue = await openQueue(clock ? { store: url, clock } : url);
  queues.push(queue);
  return { schema, url, queue };
}

test("4 processes × concurrency 20 under a cluster-wide cap of 5: never more than 5 run at once", async () => {
  const JOBS = 300;
  const { schema, url, queue } = await freshStore("errand_cap");
  await withPg((c) =>
    c.query(`CREATE TABLE "${schema}".gauge (running integer NOT NULL, peak integer NOT NULL);
             INSERT INTO "${schema}".gauge VALUES (0, 0)`),
  );
  for (let i = 0; i < 4; i++) {
    children.push(
      new WorkerProcess(
        { mode: "capped", url, concurrency: 20, cap: 5, holdMs: [5, 15], schema, pgUrl: PG_URL },
        SCRIPT,
      ),
    );
  }
  await Promise.all(children.map((c) => c.next("ready")));

  const done = new Set<string>();
  const allDone = new Promise<void>((resolve, reject) => {
    for (const c of children) {
      c.on("completed", (m) => {
        for (const id of m.ids as string[]) done.add(id);
        if (done.size === JOBS) resolve();
      });
      c.on("error", (m) => reject(new Error(String(m.message))));
      c.on("exit", () => reject(new Error("a worker process exited early")));
    }
  });
  await queue.enqueueMany(
    "capped",
    Array.from({ length: JOBS }, (_, i) => ({ i })),
  );
  await allDone;
  await Promise.all(children.map((c) => c.close()));

  const { rows } = await withPg((c) => c.query(`SELECT running, peak FROM "${schema}".gauge`));
  // Never above the cap, and the cap was used: 80 slots of concurrency were kept to 5.
  expect(rows[0]).toEqual({ running: 0, peak: 5 });
  const stats = await queue.stats();
  expect(stats.types.capped).toEqual({ completed: JOBS });
  // Each process ran some of them.
  const byPid = new Map<number, number>();
  for (let cursor: string | undefined, more = true; more; ) {
    const page = await queue.list({ type: "capped", limit: 1000, cursor });
    for (const j of page.jobs) {
      const pid = (j.result as { pid: number }).pid;
      byPid.set(pid, (byPid.get(pid) ?? 0) + 1);
    }
    cursor = page.nextCursor ?? undefined;
    more = cursor !== undefined;
  }
  expect([...byPid.values()].reduce((a, b) => a + b, 0)).toBe(JOBS);
  expect(byPid.size).toBeGreaterThan(1);
});

test("two scheduler processes sweeping every tick enqueue exactly one job per tick", async () => {
  const TICKS = 40;
  const MINUTE = 60_000;
  const start = Date.UTC(2026, 0, 1);
  const clock = new ManualClock(start);
  const { url, queue } = await freshStore("errand_cron", clock);
  await queue.schedule("every-minute", { cron: "* * * * *", job: "tick", payload: { ok: true } });
  for (let i = 0; i < 2; i++) children.push(new WorkerProcess({ mode: "scheduler", url }, SCRIPT));
  await Promise.all(children.map((c) => c.next("ready")));

  for (let k = 1; k <= TICKS; k++) {
    const at = start + k * MINUTE;
    // Both sweep the same tick at once, each on its own connections, as two hosts would.
    const swept = children.map((c) => c.next<Message & { fired: number }>("swept"));
    for (const c of children) c.proc.send({ type: "sweep", at });
    const fired = (await Promise.all(swept)).map((m) => m.fired);
    expect(
      fired.reduce((a, b) => a + b, 0),
      `tick ${k}: ${fired}`,
    ).toBe(1);
  }
  await Promise.all(children.map((c) => c.close()));

  const { jobs } = await queue.list({ type: "tick", limit: 1000 });
  expect(jobs.map((j) => j.id).sort()).toEqual(
    Array.from({ length: TICKS }, (_, k) => `schedule:every-minute:${start + (k + 1) * MINUTE}`).sort(),
  );
  const [schedule] = await queue.schedules();
  expect(schedule!.nextRunAt.getTime()).toBe(start + (TICKS + 1) * MINUTE);
});
