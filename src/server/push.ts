import { createHmac } from "node:crypto";
import { MAX_TIMER_MS } from "../duration.js";
import { ErrandError } from "../errors.js";
import type { Job } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import type { Queue } from "../queue.js";
import { checkObject } from "../queue-checks.js";
import { checkInt, describe, MAX_COUNT } from "../validation.js";
import type { JobTypeConfig, JobTypeRegistry } from "./job-types.js";

/** Tuning for push delivery. Durations are milliseconds, at most {@link MAX_TIMER_MS}. */
export interface PushOptions {
  /**
   * Deliveries in flight per type when the type sets no `concurrency`.
   * @defaultValue 10
   */
  concurrency?: number;
  /** Also look for due jobs this often (enqueues wake delivery at once). @defaultValue 1000 */
  pollIntervalMs?: number;
  /**
   * How long a delivery's lease lasts. A server that dies mid-delivery holds its jobs this long
   * before another delivers them again; keep it above the targets' `timeoutMs`.
   * @defaultValue the target's `timeoutMs` + 30_000
   */
  leaseMs?: number;
  /** The `fetch` to deliver with; injectable for tests. @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
}

const PUSH_KEYS: ReadonlySet<string> = new Set(["concurrency", "pollIntervalMs", "leaseMs", "fetch"]);

/**
 * Signs a push body: `x-errand-signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, with
 * the timestamp (epoch ms) in `x-errand-timestamp`. A receiver recomputes it with the shared
 * secret, compares in constant time, and refuses old timestamps.
 * @since 0.1.0
 */
export function signPush(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * Push delivery: for each type with a push target, leases its jobs (within the type's
 * concurrency) and POSTs `{ id, type, payload, attempt, checkpoint }` to the target.
 *
 * - 2xx (but 202): done; the response's JSON is the job's result.
 * - 202: accepted; the receiver reports later with `POST /v1/jobs/{id}/complete|fail` and the
 *   attempt (and heartbeats if it needs longer than the lease).
 * - 4xx whose JSON body says `retryable: false`: a permanent failure, the job goes to `dead`.
 * - anything else (other 4xx, 5xx, refused connection, timeout, an answer cut off mid-body): the
 *   attempt fails and the job retries with its type's backoff.
 *
 * A server that dies mid-delivery loses nothing: its leases run out and the job is delivered again.
 */
export class PushDelivery {
  readonly #queue: Queue;
  readonly #types: JobTypeRegistry;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #leaseMs: number | undefined;
  readonly #fetch: typeof fetch;
  readonly #running = new Map<string, number>();
  readonly #inflight = new Set<Promise<void>>();
  /** The fills under way (one per type at most): {@link stop} waits for them too. */
  readonly #fills = new Set<Promise<void>>();
  #filling = new Set<string>();
  #again = new Set<string>();
  #started = false;
  #unsubscribe: (() => void) | null = null;
  #cancelTimer: () => void = () => {};
  /** Per type held back by a rate limit: when its window has room again, and the timer for it. */
  readonly #held = new Map<string, { at: number; cancel: () => void }>();

  /** @param maintenance `false`: its leases run no maintenance pass (the server's option). */
  constructor(
    queue: Queue,
    types: JobTypeRegistry,
    options: PushOptions = {},
    readonly maintenance = true,
  ) {
    checkObject("createServer", "push", options);
    checkKnownKeys("createServer: push", options, PUSH_KEYS);
    if (options.fetch !== undefined && typeof options.fetch !== "function") {
      throw new ErrandError(
        "INVALID_OPTION",
        `createServer: push.fetch must be a fetch function, got ${describe(options.fetch)}`,
      );
    }
    this.#queue = queue;
    this.#types = types;
    this.#concurrency = checkInt("push.concurrency", options.concurrency ?? 10, 1, MAX_COUNT);
    this.#pollMs = checkInt("push.pollIntervalMs", options.pollIntervalMs ?? 1000, 1, MAX_TIMER_MS);
    this.#leaseMs =
      options.leaseMs === undefined ? undefined : checkInt("push.leaseMs", options.leaseMs, 1, MAX_TIMER_MS);
    this.#fetch = options.fetch ?? globalThis.fetch;
    types.onChange((config, type) => {
      if (config?.push) this.#fill(config);
      // Its window's wake-up is for deliveries there will be none of: kept, each type deleted
      // while held back (made and deleted over a server's life) stayed until its window opened.
      else this.#dropHeld(type);
    });
  }

  /**
   * Starts leasing and delivering the jobs of every type with a push target: now, on each of the
   * store's wake-ups, and every `pollIntervalMs`. Double start is harmless.
   */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#unsubscribe = this.#queue.onWake(() => this.#fillAll());
    const arm = () => {
      this.#cancelTimer = this.#queue.clock.setTimer(this.#pollMs, () => {
        if (!this.#started) return;
        this.#fillAll();
        arm();
      });
    };
    arm();
    this.#fillAll();
  }

  /**
   * Stops leasing and waits for deliveries in flight, and for a lease under way: the jobs it
   * takes once stop began are given back (`release`, the attempt unspent), never delivered. So
   * once it resolves nothing more is POSTed, and the queue may be closed. Double stop is harmless.
   */
  async stop(): Promise<void> {
    this.#started = false;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#cancelTimer();
    for (const { cancel } of this.#held.values()) cancel();
    this.#held.clear();
    // The fills first: one may have started deliveries before it saw the stop.
    while (this.#fills.size > 0 || this.#inflight.size > 0) {
      await Promise.all([...this.#fills, ...this.#inflight]);
    }
  }

  #fillAll(): void {
    for (const t of this.#types.list()) if (t.push) this.#fill(t);
  }

  #fill(config: JobTypeConfig): void {
    if (!this.#started) return;
    const type = config.type;
    if (this.#filling.has(type)) {
      this.#again.add(type);
      return;
    }
    this.#filling.add(type);
    const fill = (async () => {
      try {
        for (let more = true; more; ) {
          this.#again.delete(type);
          const current = this.#types.get(type);
          if (!current?.push || !this.#started) break;
          const free = (current.concurrency ?? this.#concurrency) - (this.#running.get(type) ?? 0);
          if (free <= 0) break;
          const timeoutMs = current.push.timeoutMs ?? 30_000;
          const queues = [current.queue ?? "default", ...(current.retryQueue ? [current.retryQueue] : [])];
          const held = { until: null as number | null };
          const jobs = await this.#queue.lease(
            {
              types: [type],
              queues: [...new Set(queues)],
              limit: free,
              leaseMs: this.#leaseMs ?? timeoutMs + 30_000,
              workerId: `push:${type}`,
              ...(this.maintenance ? {} : { maintenance: false }),
            },
            held,
          );
          if (!this.#started) {
            // Stopped while the lease ran: what it took goes back unsent, as a closing Worker's
            // unstarted jobs do, rather than be POSTed after stop() (and close()) resolved.
            await this.#giveBack(jobs);
            break;
          }
          // Not for a type deleted (or no longer pushed) while the lease ran: nothing would drop it.
          if (held.until !== null && this.#types.get(type)?.push) this.#wakeAt(type, held.until);
          for (const job of jobs) this.#deliver(current, job);
          more = jobs.length > 0;
        }
      } catch (error) {
        this.#queue.emit("error", error);
      } finally {
        this.#filling.delete(type);
        if (this.#again.has(type)) this.#fill(config);
      }
    })();
    this.#fills.add(fill);
    void fill.finally(() => this.#fills.delete(fill));
  }

  /** Releases jobs leased but not to be delivered; a failure is told (their leases recover them). */
  async #giveBack(jobs: Job[]): Promise<void> {
    const outcomes = await Promise.allSettled(jobs.map((job) => this.#queue.release(job)));
    for (const o of outcomes) if (o.status === "rejected") this.#queue.emit("error", o.reason);
  }

  /** Forgets `type`'s held-back wake-up, if it has one. */
  #dropHeld(type: string): void {
    this.#held.get(type)?.cancel();
    this.#held.delete(type);
  }

  /** Leases `type` again at `at`, when its rate limit has room (no store event says so). */
  #wakeAt(type: string, at: number): void {
    const current = this.#held.get(type);
    if (current && current.at <= at) return;
    current?.cancel();
    const clock = this.#queue.clock;
    const cancel = clock.setTimer(Math.max(1, at - clock.now()), () => {
      this.#held.delete(type);
      const config = this.#types.get(type);
      if (config?.push) this.#fill(config);
    });
    this.#held.set(type, { at, cancel });
  }

  #deliver(config: JobTypeConfig, job: Job): void {
    this.#running.set(job.type, (this.#running.get(job.type) ?? 0) + 1);
    const p: Promise<void> = this.#post(config, job)
      .catch((error) => {
        this.#queue.emit("error", error);
      })
      .finally(() => {
        this.#inflight.delete(p);
        // Gone at 0: a type's entry would otherwise outlive the type (deleted, or renamed).
        const left = (this.#running.get(job.type) ?? 1) - 1;
        if (left > 0) this.#running.set(job.type, left);
        else this.#running.delete(job.type);
        this.#fill(this.#types.get(job.type) ?? config);
      });
    this.#inflight.add(p);
  }

  /**
   * The push types held back by a rate limit now, each with a wake-up set for when its window
   * opens: at most the push types there are. @internal for tests
   */
  get heldTypes(): number {
    return this.#held.size;
  }

  /** The push types with deliveries under way now, and how many each has. */
  deliveriesUnderWay(): ReadonlyMap<string, number> {
    return new Map(this.#running);
  }

  async #post(config: JobTypeConfig, job: Job): Promise<void> {
    const push = config.push!;
    const body = JSON.stringify({
      id: job.id,
      type: job.type,
      payload: job.payload,
      attempt: job.attempt,
      checkpoint: job.checkpoint,
    });
    const timestamp = this.#queue.clock.now();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-errand-job-id": job.id,
      "x-errand-attempt": String(job.attempt),
      "x-errand-timestamp": String(timestamp),
    };
    if (push.secret) headers["x-errand-signature"] = signPush(push.secret, timestamp, body);
    let response: Response;
    try {
      response = await this.#fetch(push.url, {
        method: "POST",
        headers,
        body,
        // A redirect is not followed: fetch would turn the POST into a GET (303, and 301/302 by
        // custom), whose success would complete a job the receiver never got. A 3xx fails the
        // attempt, to be retried, saying what it answered.
        redirect: "manual",
        signal: AbortSignal.timeout(push.timeoutMs ?? 30_000),
      });
    } catch (cause) {
      const why =
        (cause as Error).name === "TimeoutError" ? "timed out" : `failed: ${(cause as Error).message}`;
      await this.#queue.attempts.failMany([
        { job, error: new Error(`push to ${push.url} ${why}`), kind: "push" },
      ]);
      return;
    }
    // Twice the stored bound: room for an answer's whitespace, which its stored JSON drops.
    const limit = 2 * this.#queue.maxPayloadBytes;
    let text: string | null;
    try {
      text = await boundedText(response, limit);
    } catch (cause) {
      if (response.status === 202) return; // accepted: the body was never the answer, as below
      // An answer cut off mid-body is no answer, as a dropped connection is none: a success's
      // result is lost with it, so the attempt fails and is retried, as a timeout's is.
      await this.#queue.attempts.failMany([
        {
          job,
          error: new Error(
            `push to ${push.url} answered ${response.status}, then failed mid-body: ${(cause as Error).message}`,
          ),
          kind: "push",
        },
      ]);
      return;
    }
    if (response.status === 202) return; // the receiver reports later: its body is never the answer
    if (text === null) {
      const error = new Error(
        `push to ${push.url} answered ${response.status} with more than ${limit} bytes`,
      );
      // An answer of success that cannot be kept is final, as below; a failure's retries as usual.
      await this.#queue.attempts.failMany([
        { job, error, ...(response.ok ? { retryable: false } : {}), kind: "push" },
      ]);
      return;
    }
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    if (response.ok) {
      let result: string;
      try {
        result = this.#queue.attempts.resultText(parsed);
      } catch (cause) {
        // The receiver did the work; its answer is what cannot be kept. Another attempt would do
        // the work again for the same answer: the job goes dead, saying why.
        const error = new Error(
          `push to ${push.url} answered ${response.status}: ${(cause as Error).message}`,
        );
        await this.#queue.attempts.failMany([{ job, error, retryable: false, kind: "push" }]);
        return;
      }
      await this.#queue.attempts.completeMany([
        { id: job.id, attempt: job.attempt, result, value: parsed, job },
      ]);
      return;
    }
    const retryable = !(
      response.status >= 400 &&
      response.status < 500 &&
      (parsed as { retryable?: unknown } | null)?.retryable === false
    );
    const message =
      (parsed as { message?: unknown } | null)?.message ??
      (typeof parsed === "string" && parsed ? parsed : "");
    const error = new Error(
      `push to ${push.url} answered ${response.status}${message ? `: ${String(message)}` : ""}`,
    );
    await this.#queue.attempts.failMany([{ job, error, retryable, kind: "push" }]);
  }
}

/**
 * A response's body as text, or null past `limit` bytes (read no further): a receiver may not make
 * the server hold an answer of any size.
 */
async function boundedText(response: Response, limit: number): Promise<string | null> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks).toString("utf8");
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
}
