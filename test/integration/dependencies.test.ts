/**
 * Dependencies across processes, on each store that several processes may share: four worker
 * processes complete the dependencies of the same jobs at the same moments, and each waiting job
 * is unblocked and run exactly once, after all of its dependencies; a worker SIGKILLed while it
 * runs and completes dependencies leaves nothing blocked for good.
 */
import { afterEach, describe, expect, test } from "vitest";
import { type Job, openQueue, type Queue } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { killAll, type Message, untilNone, type WorkerInit, WorkerProcess } from "./child-process.js";

const JOINS = 20;
const PARTS = 50;

let queue: Queue | undefined;
const children: WorkerProcess[] = [];

afterEach(async () => {
  await killAll(children);
  await queue?.close();
  queue = undefined;
});

/**
 * Enqueues JOINS flows, each a join waiting on its own PARTS parts (one flow each, so the join is
 * stored blocked on all of them at once); returns each join's id with its parts' ids.
 */
async function enqueueJoins(q: Queue): Promise<Map<string, string[]>> {
  const joins = new Map<string, string[]>();
  const partOptions = { maxAttempts: 25, backoff: { type: "fixed" as const, delayMs: 10 } };
  for (let j = 0; j < JOINS; j++) {
    const refs = Array.from({ length: PARTS }, (_, i) => `part-${i}`);
    const flow = await q.enqueueFlow([
      ...refs.map((ref, i) => ({ ref, job: "mp-noop", payload: { join: j, part: i }, options: partOptions })),
      { ref: "join", job: "mp-join", payload: { join: j }, dependsOn: refs },
    ]);
    const join = flow.jobs.join!;
    expect(join).toMatchObject({ state: "blocked", blockedBy: PARTS });
    joins.set(
      join.id,
      refs.map((ref) => flow.jobs[ref]!.id),
    );
  }
  return joins;
}

/**
 * Records every id the watched children report completed (watch them before enqueueing: a job
 * may complete before its enqueue returns); `all(ids)` resolves once each of `ids` is in.
 */
function completions(): { watch(c: WorkerProcess): void; all(ids: Iterable<string>): Promise<void> } {
  const seen = new Set<string>();
  const waiters = new Set<() => void>();
  return {
    watch: (c) => {
      c.on("completed", (m) => {
        for (const id of m.ids as string[]) seen.add(id);
        for (const w of waiters) w();
      });
    },
    all: (ids) => {
      const wanted = [...ids];
      return new Promise<void>((resolve) => {
        const check = () => {
          if (wanted.every((id) => seen.has(id))) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Each join ran after every part of it had completed, and everything is finished. */
async function expectJoinsAfterParts(q: Queue, joins: Map<string, string[]>): Promise<void> {
  for (const [joinId, parts] of joins) {
    expect(parts.length).toBe(PARTS);
    const join = (await q.get(joinId)) as Job;
    expect(join.state).toBe("completed");
    // Not compared by timestamps: each process stamps with its own clock, read before it waits
    // for the write lock. The guarantee is transactional: a join is claimable only once the
    // completion of its last part has committed (and it started once, on attempt 1).
    expect((await q.dependencies(joinId)).map((d) => [d.id, d.state])).toEqual(
      parts.map((id) => [id, "completed"]),
    );
  }
  expect((await q.stats()).states).toMatchObject({ blocked: 0, pending: 0, active: 0 });
}

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(backend.name, () => {
    test("4 processes completing one job's dependencies at once unblock it exactly once", {
      timeout: 45_000,
    }, async () => {
      const { url } = await backend.setup();
      queue = await openQueue(url);
      const completed = completions();
      for (let i = 0; i < 4; i++) children.push(new WorkerProcess({ url, concurrency: 25 }));
      for (const c of children) completed.watch(c);
      await Promise.all(children.map((c) => c.next("ready")));
      const joins = await enqueueJoins(queue);
      await completed.all(joins.keys());
      const closed = await Promise.all(
        children.map((c) => c.close<Message & { started: [string, number][] }>()),
      );

      // Every join started exactly once, in one process, on its first attempt.
      const joinStarts = closed.flatMap(({ started }) => started.filter(([id]) => joins.has(id)));
      expect(joinStarts.map(([id]) => id).sort()).toEqual([...joins.keys()].sort());
      expect(joinStarts.every(([, attempt]) => attempt === 1)).toBe(true);
      await expectJoinsAfterParts(queue, joins);
    });

    test("a worker SIGKILLed while completing dependencies leaves nothing stuck", {
      timeout: 45_000,
    }, async () => {
      const { url } = await backend.setup();
      queue = await openQueue(url);
      const init: WorkerInit = {
        url,
        concurrency: 10,
        leaseMs: 1_000,
        sweepIntervalMs: 200,
        pollIntervalMs: 100,
        workMs: [2, 10],
        reportStarts: true,
      };
      // The work is in the store before any worker starts, so the kills land while it runs.
      const joins = await enqueueJoins(queue);
      for (let i = 0; i < 3; i++) children.push(new WorkerProcess(init));
      await Promise.all(children.map((c) => c.next("ready")));

      // Kill a worker just after it starts a job, twice, each time starting a replacement; stop
      // early if the victim runs out of work first (a fast machine).
      for (let kill = 0; kill < 2; kill++) {
        const victim = children.find((c) => c.alive)!;
        const outOfWork = await Promise.race([
          victim.next("started").then(() => false),
          victim.next("idle").then(() => true),
        ]);
        if (outOfWork) break;
        await victim.kill();
        const replacement = new WorkerProcess(init);
        children.push(replacement);
        await replacement.next("ready");
      }
      // A job completed by a worker killed before it could report it is reported by no one: ask
      // the store whenever a live worker reports progress or goes idle.
      // Done when nothing is left to run; whether it all completed is asserted below, so a job
      // that went another way fails the test with the states rather than hanging it.
      await untilNone(
        queue,
        children.filter((c) => c.alive),
        ["pending", "active", "blocked"],
      );
      await expectJoinsAfterParts(queue, joins);
    });
  });
}
