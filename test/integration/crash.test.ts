/**
 * Worker processes SIGKILLed mid-job, again and again, and replaced: every at-least-once job still
 * ends `completed`, none is lost; no at-most-once job ever starts twice, and those killed mid-run
 * end `dead`. Runs on the real clock across processes, with short leases so recovery is quick, on
 * each store that several processes may share.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { type Job, openQueue, type Queue } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { killAll, untilNone, type WorkerInit, WorkerProcess } from "./child-process.js";

const ALO = 1_500;
const AMO = 500;
const ALIVE = 3;
const KILLS = 8;
const POISON_LEASES = 3;

/** The workers' start logs. */
let dir: string;
let queue: Queue;
const children: WorkerProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "errand-crash-"));
});

afterEach(async () => {
  await killAll(children);
  await queue?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function allJobs(type: string): Promise<Job[]> {
  const out: Job[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list({ type, limit: 1000, cursor });
    out.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(backend.name, () => {
    test("SIGKILLed workers: at-least-once jobs all complete, at-most-once jobs never run twice", {
      timeout: 90_000,
    }, async () => {
      // A fresh store (its own file, schema or key prefix), removed after the test.
      const { url } = await backend.setup();
      queue = await openQueue(url);
      // Interleaved, so both kinds are running whenever a worker dies. More is added while the
      // kills go on (below), so a slow machine, where replacements take long to start, does not
      // run out of work before enough workers have died.
      let aloTotal = 0;
      let amoTotal = 0;
      const addWork = async (chunks: number) => {
        for (let chunk = 0; chunk < chunks; chunk++) {
          await queue.enqueueMany(
            "crash-alo",
            Array.from({ length: ALO / 10 }, (_, i) => ({ n: aloTotal + i })),
            { maxAttempts: 25, backoff: { type: "fixed", delayMs: 10 } },
          );
          aloTotal += ALO / 10;
          await queue.enqueueMany(
            "crash-amo",
            Array.from({ length: AMO / 10 }, (_, i) => ({ n: amoTotal + i })),
            { delivery: "at_most_once" },
          );
          amoTotal += AMO / 10;
        }
      };
      await addWork(10);

      // What each worker process has started and not (as far as we heard) finished.
      const inFlight = new Map<WorkerProcess, Set<string>>();
      /** How many times each job was running in a worker we killed. */
      const hits = new Map<string, number>();
      let spawned = 0;
      const listeners = new Set<() => void>();
      const notify = () => {
        for (const fn of listeners) fn();
      };
      const spawn = (): WorkerProcess => {
        const init: WorkerInit = {
          url,
          concurrency: 5,
          leaseMs: 1_000,
          sweepIntervalMs: 200,
          pollIntervalMs: 100,
          workMs: [10, 30],
          reportStarts: true,
          startLog: join(dir, `starts-${spawned++}.log`),
        };
        const child = new WorkerProcess(init);
        const running = new Set<string>();
        inFlight.set(child, running);
        child.on("started", (m) => running.add(m.id as string));
        child.on("completed", (m) => {
          for (const id of m.ids as string[]) running.delete(id);
        });
        for (const type of ["completed", "idle"]) child.on(type, () => notify());
        child.on("error", (m) => {
          failures.push(String(m.message));
          notify();
        });
        children.push(child);
        return child;
      };
      const failures: string[] = [];

      const live = () => children.filter((c) => c.alive);
      for (let i = 0; i < ALIVE; i++) spawn();
      await Promise.all(children.map((c) => c.next("ready")));

      // Kill a random worker just after it starts a job (alternately at-least-once and at-most-once),
      // while the job runs; start a replacement and wait for it before the next kill.
      let kills = 0;
      for (let round = 0; round < KILLS * 2 && kills < KILLS; round++) {
        const { states } = await queue.stats();
        if (states.pending < (ALO + AMO) / 4 && aloTotal < ALO * 4) await addWork(5);
        const pool = live();
        const victim = pool[Math.floor(Math.random() * pool.length)]!;
        const wanted = kills % 2 === 0 ? "crash-alo" : "crash-amo";
        const outOfWork = await new Promise<boolean>((resolve) => {
          const offs = [
            victim.on("started", (m) => {
              if (m.jobType !== wanted) return;
              for (const off of offs) off();
              resolve(false);
            }),
            victim.on("idle", () => {
              for (const off of offs) off();
              resolve(true);
            }),
          ];
        });
        if (outOfWork) break;
        await new Promise((r) => setTimeout(r, Math.random() * 4)); // handlers take ≥ 10 ms
        const running = inFlight.get(victim)!;
        // Three lost leases make a job a poison pill (dead by design): never hit one a third time.
        if ([...running].some((id) => (hits.get(id) ?? 0) >= POISON_LEASES - 1)) continue;
        await victim.kill();
        for (const id of running) hits.set(id, (hits.get(id) ?? 0) + 1);
        kills++;
        await spawn().next("ready");
      }
      expect(kills).toBeGreaterThanOrEqual(4);

      // Wait, on each word from a worker, until the store holds no pending or active job.
      await new Promise<void>((resolve, reject) => {
        let checking = false;
        const check = async () => {
          if (checking) return;
          checking = true;
          try {
            if (failures.length > 0) throw new Error(`a worker failed: ${failures[0]}`);
            const { states } = await queue.stats();
            if (states.pending === 0 && states.active === 0) {
              listeners.delete(check);
              resolve();
            }
          } catch (error) {
            reject(error);
          } finally {
            checking = false;
          }
        };
        listeners.add(check);
        void check();
      });
      await Promise.all(live().map((c) => c.close()));
      expect(failures).toEqual([]);

      // Every start, durably recorded by the workers before any work: id → attempts started.
      const starts = new Map<string, number[]>();
      for (let i = 0; i < spawned; i++) {
        // A replacement spawned near the end may never start a job, and so never write its log.
        const file = join(dir, `starts-${i}.log`);
        const text = existsSync(file) ? readFileSync(file, "utf8") : "";
        for (const line of text.split("\n")) {
          if (!line) continue;
          const [id, attempt] = line.split(" ") as [string, string];
          starts.set(id, [...(starts.get(id) ?? []), Number(attempt)]);
        }
      }
      // No attempt of any job ever started twice (fencing).
      for (const [id, attempts] of starts) expect(new Set(attempts).size, id).toBe(attempts.length);

      // At-least-once: all completed, none lost; some ran again after their worker died.
      const alo = await allJobs("crash-alo");
      expect(alo.length).toBe(aloTotal);
      expect(alo.filter((j) => j.state !== "completed").map((j) => [j.id, j.state, j.errors])).toEqual([]);
      for (const j of alo) expect(starts.get(j.id), j.id).toContain(j.attempt);
      expect(alo.filter((j) => j.attempt > 1).length).toBeGreaterThan(0);

      // At-most-once: never started twice; those that were killed mid-run are dead, not run again.
      const amo = await allJobs("crash-amo");
      expect(amo.length).toBe(amoTotal);
      const twice = amo.filter((j) => (starts.get(j.id)?.length ?? 0) > 1);
      expect(twice.map((j) => [j.id, starts.get(j.id)])).toEqual([]);
      for (const j of amo) {
        expect(["completed", "dead"]).toContain(j.state);
        expect(j.attempt).toBe(1);
        if (j.state === "completed") expect(starts.get(j.id)).toEqual([1]);
        else expect(j.errors.at(-1)?.kind).toBe("lease_expired");
      }
      expect(amo.filter((j) => j.state === "dead").length).toBeGreaterThan(0);
    });

    test("a SIGKILLed worker's prefetched jobs are recovered and each runs once, never by it", {
      timeout: 30_000,
    }, async () => {
      const { url } = await backend.setup();
      queue = await openQueue(url);
      const jobs = await queue.enqueueMany(
        "crash-alo",
        Array.from({ length: 30 }, (_, n) => ({ n })),
        { maxAttempts: 5, backoff: { type: "fixed", delayMs: 10 } },
      );
      const common = { url, leaseMs: 1_000, sweepIntervalMs: 200, pollIntervalMs: 100 };
      // Two slots and twenty ahead: its handlers outlast the test, so two run and twenty wait.
      // Only this type: the child's rate-limited types would keep it from claiming ahead at all.
      const doomed = new WorkerProcess({
        ...common,
        only: ["crash-alo"],
        concurrency: 2,
        prefetch: 20,
        workMs: [60_000, 60_000],
        reportStarts: true,
        startLog: join(dir, "starts-doomed.log"),
      });
      children.push(doomed);
      const startedThere: string[] = [];
      doomed.on("started", (m) => startedThere.push(m.id as string));
      await doomed.next("ready");
      const held = (await allJobs("crash-alo")).filter((j) => j.state === "active");
      expect(held).toHaveLength(22);
      await vi.waitFor(() => expect(startedThere).toHaveLength(2), { interval: 10 });
      const buffered = held.map((j) => j.id).filter((id) => !startedThere.includes(id));
      expect(buffered).toHaveLength(20);
      await doomed.kill();

      const survivor = new WorkerProcess({
        ...common,
        concurrency: 5,
        startLog: join(dir, "starts-survivor.log"),
      });
      children.push(survivor);
      await survivor.next("ready");
      await untilNone(queue, [survivor]);
      await survivor.close();

      const log = (name: string) =>
        readFileSync(join(dir, `starts-${name}.log`), "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => line.split(" ") as [string, string]);
      const there = log("doomed");
      // The killed worker started only its two running jobs; the ones it held ahead never started.
      expect(there.map(([id]) => id).sort()).toEqual([...startedThere].sort());
      const here = log("survivor");
      expect(new Set(here.map(([id, attempt]) => `${id}:${attempt}`)).size).toBe(here.length);
      const byId = new Map((await allJobs("crash-alo")).map((j) => [j.id, j]));
      for (const { id } of jobs) {
        const job = byId.get(id)!;
        expect(job.state, id).toBe("completed");
        // Held by the killed worker (running or waiting): its lease ran out, once; else run at once.
        const wasHeld = held.some((h) => h.id === id);
        expect(job.attempt, id).toBe(wasHeld ? 2 : 1);
        expect(
          job.errors.map((e) => e.kind),
          id,
        ).toEqual(wasHeld ? ["lease_expired"] : []);
        expect(
          here.filter(([hid]) => hid === id),
          id,
        ).toEqual([[id, String(job.attempt)]]);
      }
    });
  });
}
