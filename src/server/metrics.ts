import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Job } from "../job.js";
import type { Queue, QueueStats } from "../queue.js";

/**
 * Most distinct job types, and apart from them most distinct queues, that `/metrics` labels by
 * name. Names are the producers' to choose, and every name a metric is labelled with is a series
 * kept for the server's life: unbounded, a producer enqueuing under fresh names grows the
 * server's memory and every scrape without end (100,000 types: a 9.7 MB scrape). Past the bound,
 * names are counted together under {@link OTHER_LABEL}. The first names seen keep their series.
 */
export const MAX_METRIC_NAMES = 1_000;

/**
 * The label value of the names past {@link MAX_METRIC_NAMES}: not a valid type or queue name, so
 * no real name shares its series.
 */
export const OTHER_LABEL = "(other)";

/** The names a metric label shows, first seen first, up to a bound; the rest are {@link OTHER_LABEL}. */
class LabelBudget {
  readonly #shown = new Set<string>();

  constructor(private readonly max: number) {}

  /** `name` as a label value: itself while there is room or once shown, else OTHER_LABEL. */
  label(name: string): string {
    if (this.#shown.has(name)) return name;
    if (this.#shown.size >= this.max) return OTHER_LABEL;
    this.#shown.add(name);
    return name;
  }
}

/**
 * Sets `gauge` to `counts` (name -> state -> n) with each name through `budget`: names past it
 * are summed into OTHER_LABEL's series.
 */
function setByName(
  gauge: Gauge<string>,
  labelName: "type" | "queue",
  budget: LabelBudget,
  counts: Record<string, Record<string, number | undefined>>,
): void {
  const other = new Map<string, number>();
  for (const [name, states] of Object.entries(counts)) {
    const label = budget.label(name);
    for (const [state, n] of Object.entries(states)) {
      if (label === OTHER_LABEL) other.set(state, (other.get(state) ?? 0) + (n ?? 0));
      else gauge.set({ [labelName]: label, state }, n ?? 0);
    }
  }
  for (const [state, n] of other) gauge.set({ [labelName]: OTHER_LABEL, state }, n);
}

/**
 * The server's Prometheus metrics, on a registry of its own (so two servers in one process do not
 * collide). Job counts are read from the store at scrape time; counters follow the queue's events.
 */
export class ServerMetrics {
  /** Every metric below and the job-count gauges; `/metrics` serves it. */
  readonly registry = new Registry();
  /** `errand_jobs_enqueued_total`, by `type`: the queue's `enqueued` events. */
  readonly enqueued: Counter<"type">;
  /** `errand_jobs_completed_total`, by `type`: the queue's `completed` events. */
  readonly completed: Counter<"type">;
  /** `errand_jobs_failed_total`, by `type`: failed attempts, retried or dead. */
  readonly failed: Counter<"type">;
  /** `errand_jobs_retried_total`, by `type`: failed attempts scheduled to retry. */
  readonly retried: Counter<"type">;
  /** `errand_jobs_dead_total`, by `type`: jobs that went to `dead`. */
  readonly dead: Counter<"type">;
  /**
   * `errand_claim_duration_seconds`, by `outcome` (`jobs` or `empty`): how long each claim a
   * lease request makes takes in the store.
   */
  readonly claimSeconds: Histogram<"outcome">;
  /** `errand_job_duration_seconds`, by `type`: from a completed attempt's start to its completion. */
  readonly jobSeconds: Histogram<"type">;
  /** `errand_lease_wait_seconds`: how long a long-polling lease request waited before it answered. */
  readonly leaseWaitSeconds: Histogram;
  readonly #detach: () => void;

  /**
   * Registers the metrics and starts counting `queue`'s events, until {@link ServerMetrics.close}.
   * @param onStoreError - told of a scrape's failed read of the store's counts (once a scrape);
   *   the scrape still answers, with `errand_store_up` 0 and the last counts read.
   */
  constructor(queue: Queue, onStoreError: (error: unknown) => void = () => {}) {
    const registers = [this.registry];
    // One budget per label, shared by every metric labelled with it: a type shown in one is shown
    // in all.
    const types = new LabelBudget(MAX_METRIC_NAMES);
    const queues = new LabelBudget(MAX_METRIC_NAMES);
    const counter = (name: string, help: string) =>
      new Counter({ name, help, labelNames: ["type"] as const, registers });
    this.enqueued = counter("errand_jobs_enqueued_total", "Jobs enqueued");
    this.completed = counter("errand_jobs_completed_total", "Attempts completed");
    this.failed = counter("errand_jobs_failed_total", "Attempts failed (retried or dead)");
    this.retried = counter("errand_jobs_retried_total", "Failed attempts scheduled to retry");
    this.dead = counter("errand_jobs_dead_total", "Jobs that went to dead");
    this.claimSeconds = new Histogram({
      name: "errand_claim_duration_seconds",
      help: "Time one lease (claim) takes in the store",
      labelNames: ["outcome"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.jobSeconds = new Histogram({
      name: "errand_job_duration_seconds",
      help: "From an attempt's start to its completion",
      labelNames: ["type"] as const,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800],
      registers,
    });
    this.leaseWaitSeconds = new Histogram({
      name: "errand_lease_wait_seconds",
      help: "How long a long-polling lease request waited before it answered",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
      registers,
    });
    // One stats read per scrape: prom-client collects every gauge at once, so they share it. A
    // read that fails (the store is down) fails no scrape: the counters and histograms, kept in
    // memory, are what an operator wants most then; the store's counts keep their last values and
    // errand_store_up says they are stale.
    let reading: Promise<QueueStats | null> | null = null;
    const scrape = () =>
      (reading ??= queue
        .stats()
        .catch((error: unknown) => {
          onStoreError(error);
          return null;
        })
        .finally(() => {
          reading = null;
        }));
    new Gauge({
      name: "errand_store_up",
      help: "1 when this scrape read the store's job counts, 0 when it could not (the job-count gauges then keep their last values)",
      registers,
      async collect() {
        this.set((await scrape()) === null ? 0 : 1);
      },
    });
    new Gauge({
      name: "errand_jobs",
      help: "Jobs by queue and state",
      labelNames: ["queue", "state"] as const,
      registers,
      async collect() {
        const stats = await scrape();
        if (stats === null) return;
        this.reset();
        setByName(this, "queue", queues, stats.queues);
      },
    });
    new Gauge({
      name: "errand_jobs_by_type",
      help: "Jobs by type and state",
      labelNames: ["type", "state"] as const,
      registers,
      async collect() {
        const stats = await scrape();
        if (stats === null) return;
        this.reset();
        setByName(this, "type", types, stats.types);
      },
    });
    new Gauge({
      name: "errand_oldest_pending_age_seconds",
      help: "How long the oldest ready job has waited",
      registers,
      async collect() {
        const stats = await scrape();
        if (stats !== null) this.set(stats.oldestPendingAgeMs / 1000);
      },
    });
    new Gauge({
      name: "errand_jobs_held_back",
      help: "Ready jobs a claim now would not take, by type with rate limits or per-key rules and the rule that holds them (lower bounds past 1,000 ready jobs of a type)",
      labelNames: ["type", "rule"] as const,
      registers,
      async collect() {
        const stats = await scrape();
        if (stats === null) return;
        this.reset();
        for (const [type, { heldBack }] of Object.entries(stats.limits)) {
          // The types the server's settings give rules: bounded by them, not by producers.
          this.set({ type, rule: "rate_limit" }, heldBack.rateLimit);
          this.set({ type, rule: "key_concurrency" }, heldBack.keyConcurrency);
          this.set({ type, rule: "order" }, heldBack.order);
        }
      },
    });
    const onEnqueued = (job: Job) => this.enqueued.inc({ type: types.label(job.type) });
    const onCompleted = (job: Job) => {
      const type = types.label(job.type);
      this.completed.inc({ type });
      if (job.startedAt && job.finishedAt) {
        this.jobSeconds.observe({ type }, Math.max(0, +job.finishedAt - +job.startedAt) / 1000);
      }
    };
    const onFailed = (job: Job) => this.failed.inc({ type: types.label(job.type) });
    const onRetrying = (job: Job) => this.retried.inc({ type: types.label(job.type) });
    const onDead = (job: Job) => this.dead.inc({ type: types.label(job.type) });
    queue.on("enqueued", onEnqueued);
    queue.on("completed", onCompleted);
    queue.on("failed", onFailed);
    queue.on("retrying", onRetrying);
    queue.on("dead", onDead);
    this.#detach = () => {
      queue.off("enqueued", onEnqueued);
      queue.off("completed", onCompleted);
      queue.off("failed", onFailed);
      queue.off("retrying", onRetrying);
      queue.off("dead", onDead);
    };
  }

  /** Stops following the queue's events; what was counted stays in the registry. */
  close(): void {
    this.#detach();
  }
}
