import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { defineJob } from "../../src/define-job.js";
import { Queue } from "../../src/queue.js";
import { MAX_METRIC_NAMES, OTHER_LABEL, ServerMetrics } from "../../src/server/metrics.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

/** The samples of `metric` in a scrape, by their label set as written. */
function samples(scrape: string, metric: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of scrape.split("\n")) {
    const m = /^(\w+)(\{.*\}) (\S+)$/.exec(line);
    if (m && m[1] === metric) out.set(m[2]!, Number(m[3]));
  }
  return out;
}

describe("ServerMetrics", () => {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0)) await close();
  });

  async function setup() {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
    const metrics = new ServerMetrics(queue);
    open.push(async () => {
      metrics.close();
      await queue.close();
    });
    return { queue, metrics };
  }

  it("labels at most MAX_METRIC_NAMES types and queues by name; the rest are counted under OTHER_LABEL", async () => {
    const { queue, metrics } = await setup();
    const extra = 5;
    const types = Array.from({ length: MAX_METRIC_NAMES + extra }, (_, i) => `t${i}`);
    // A producer's fresh names: one job of each type, each in a queue of its own.
    await queue.enqueueBatch(
      types.map((type, i) => ({ job: type, payload: null, options: { queue: `q${i}` } })),
    );
    // A type seen before the bound keeps its own series afterwards.
    await queue.enqueue("t0", null, { queue: "q0" });

    const scrape = await metrics.registry.metrics();
    const enqueued = samples(scrape, "errand_jobs_enqueued_total");
    expect(enqueued.size).toBe(MAX_METRIC_NAMES + 1);
    expect(enqueued.get('{type="t0"}')).toBe(2);
    expect(enqueued.get(`{type="t${MAX_METRIC_NAMES - 1}"}`)).toBe(1);
    expect(enqueued.has(`{type="t${MAX_METRIC_NAMES}"}`)).toBe(false);
    expect(enqueued.get(`{type="${OTHER_LABEL}"}`)).toBe(extra);
    // The store's counts by type show the same names, and sum the rest.
    const byType = samples(scrape, "errand_jobs_by_type");
    const pendingByType = [...byType].filter(([labels]) => labels.includes('state="pending"'));
    expect(pendingByType).toHaveLength(MAX_METRIC_NAMES + 1);
    expect(byType.get(`{type="${OTHER_LABEL}",state="pending"}`)).toBe(extra);
    expect(byType.get('{type="t0",state="pending"}')).toBe(2);
    const byQueue = samples(scrape, "errand_jobs");
    const pendingByQueue = [...byQueue].filter(([labels]) => labels.includes('state="pending"'));
    expect(pendingByQueue).toHaveLength(MAX_METRIC_NAMES + 1);
    const otherQueues = byQueue.get(`{queue="${OTHER_LABEL}",state="pending"}`);
    expect(otherQueues).toBe(extra);
    // Every job is still counted once in each metric.
    const sum = (rows: Array<[string, number]>) => rows.reduce((s, [, n]) => s + n, 0);
    expect(sum([...enqueued])).toBe(types.length + 1);
    expect(sum(pendingByType)).toBe(types.length + 1);
    expect(sum(pendingByQueue)).toBe(types.length + 1);
  });

  it("counts a completion of a type past the bound under OTHER_LABEL, in the counter and the duration histogram", async () => {
    const { queue, metrics } = await setup();
    await queue.enqueueBatch(
      Array.from({ length: MAX_METRIC_NAMES }, (_, i) => ({ job: `t${i}`, payload: null })),
    );
    const late = defineJob({ type: "late", handler: async () => "done" });
    await queue.enqueue(late, null);
    const [job] = await queue.lease({ types: ["late"], limit: 1, leaseMs: 60_000, workerId: "w" });
    await queue.attempts.complete(job!, "done");
    const scrape = await metrics.registry.metrics();
    expect(samples(scrape, "errand_jobs_completed_total").get(`{type="${OTHER_LABEL}"}`)).toBe(1);
    expect(samples(scrape, "errand_job_duration_seconds_count").get(`{type="${OTHER_LABEL}"}`)).toBe(1);
    expect(scrape).not.toContain('type="late"');
  });

  it("answers a scrape while the store cannot be read: errand_store_up 0, counters kept, counts as last read", async () => {
    const store = await SqliteStore.open({ filename: ":memory:" });
    const queue = new Queue(store, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
    const faults: unknown[] = [];
    const metrics = new ServerMetrics(queue, (error) => faults.push(error));
    open.push(async () => {
      metrics.close();
      await queue.close();
    });
    await queue.enqueue("t", null);
    const up = (scrape: string) => /^errand_store_up (\S+)$/m.exec(scrape)?.[1];
    expect(up(await metrics.registry.metrics())).toBe("1");

    const fault = new Error("store down");
    const stats = store.stats;
    store.stats = () => Promise.reject(fault);
    const scrape = await metrics.registry.metrics();
    expect(up(scrape)).toBe("0");
    expect(faults).toEqual([fault]); // once for the scrape, not once per gauge
    expect(samples(scrape, "errand_jobs_enqueued_total").get('{type="t"}')).toBe(1);
    expect(samples(scrape, "errand_jobs_by_type").get('{type="t",state="pending"}')).toBe(1);

    store.stats = stats;
    expect(up(await metrics.registry.metrics())).toBe("1");
  });
});
