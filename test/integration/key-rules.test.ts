/**
 * Per-key rules across processes, on each store that several processes may share: four worker
 * processes never run more than `keyConcurrency` jobs of one key at once, and never two jobs of an
 * `ordered` key at once, which start in enqueue order. Checked from the handlers' wall-clock spans
 * (every process reads the same clock; a handler ends before its completion commits, and the next
 * job of the key is claimed only after that commit).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { defineJob, openQueue, type Queue } from "../../src/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { killAll, untilNone, type WorkerInit, WorkerProcess } from "./child-process.js";

const KEYS = 6;
const PER_KEY = 12;

let dir: string;
let queue: Queue | undefined;
const children: WorkerProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "errand-keys-"));
});

afterEach(async () => {
  await killAll(children);
  await queue?.close();
  queue = undefined;
  rmSync(dir, { recursive: true, force: true });
});

interface Span {
  id: string;
  begin: number;
  end: number;
}

/**
 * Runs four workers over `type`'s jobs (PER_KEY for each of KEYS keys), returns each key's spans.
 * A fair type is registered with the enqueuing queue too, so its jobs get their turns.
 */
async function runKeyed(
  url: string,
  type: string,
  fair = false,
): Promise<{ spans: Map<string, Span[]>; order: Map<string, string[]> }> {
  queue = await openQueue(url);
  if (fair) queue.register(defineJob({ type, fair: true, handler: () => {} }));
  const order = new Map<string, string[]>();
  // Each key's jobs together, so that without the rule one claim would take many of one key.
  for (let k = 0; k < KEYS; k++) {
    const key = `k${k}`;
    for (let i = 0; i < PER_KEY; i++) {
      const job = await queue.enqueue(type, { i }, { key });
      order.set(key, [...(order.get(key) ?? []), job.id]);
    }
  }
  const spanLog = join(dir, `${type}.spans`);
  // Workers of this one type: a claim of one fair keyed type is PostgreSQL's one-statement claim.
  const init: WorkerInit = {
    url,
    concurrency: 8,
    workMs: [5, 15],
    spanLog,
    pollIntervalMs: 100,
    only: [type],
  };
  // Paused until all four are ready, so that one child starting early cannot run the keys alone.
  await queue.pauseQueue("default");
  for (let i = 0; i < 4; i++) children.push(new WorkerProcess(init));
  await Promise.all(children.map((c) => c.next("ready")));
  await queue.resumeQueue("default");
  await untilNone(queue, children);
  await Promise.all(children.map((c) => c.close()));
  const keyOf = new Map<string, string>();
  for (const [key, ids] of order) for (const id of ids) keyOf.set(id, key);
  const spans = new Map<string, Span[]>();
  for (const line of readFileSync(spanLog, "utf8").trim().split("\n")) {
    const [id, begin, end] = line.split(" ");
    const key = keyOf.get(id!)!;
    spans.set(key, [...(spans.get(key) ?? []), { id: id!, begin: Number(begin), end: Number(end) }]);
  }
  expect((await queue.stats()).states.completed).toBe(KEYS * PER_KEY);
  return { spans, order };
}

/** The most spans of `list` open at one moment. */
function maxOverlap(list: readonly Span[]): number {
  const events = list.flatMap((s) => [
    [s.begin, 1],
    [s.end, -1],
  ]) as Array<[number, number]>;
  // An end and a begin at the same millisecond: the end first (the next claim follows the commit).
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of events) max = Math.max(max, (open += d));
  return max;
}

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(backend.name, () => {
    test.each([
      ["", "mp-keycap", false],
      [" (fair)", "mp-keycap-fair", true],
    ] as const)(
      "4 processes never run more than keyConcurrency jobs of one key at once%s",
      {
        timeout: 60_000,
      },
      async (_name, type, fair) => {
        const { url } = await backend.setup();
        const { spans } = await runKeyed(url, type, fair);
        expect(spans.size).toBe(KEYS);
        for (const [key, list] of spans) {
          expect(list, key).toHaveLength(PER_KEY);
          expect(maxOverlap(list), key).toBeLessThanOrEqual(2);
        }
        // The processes really ran side by side, or the cap was never tested.
        const all = [...spans.values()].flat();
        expect(maxOverlap(all)).toBeGreaterThan(2);
      },
    );

    test.each([
      ["", "mp-ordered", false],
      [" (fair)", "mp-ordered-fair", true],
    ] as const)(
      "4 processes run an ordered key's jobs one at a time, in enqueue order%s",
      {
        timeout: 60_000,
      },
      async (_name, type, fair) => {
        const { url } = await backend.setup();
        const { spans, order } = await runKeyed(url, type, fair);
        for (const [key, list] of spans) {
          expect(maxOverlap(list), key).toBe(1);
          const byStart = [...list].sort((a, b) => a.begin - b.begin || a.end - b.end).map((s) => s.id);
          expect(byStart, key).toEqual(order.get(key));
        }
        expect(maxOverlap([...spans.values()].flat())).toBeGreaterThan(1);
      },
    );
  });
}
