import type { BackoffOptions } from "../backoff.js";
import { defineJob } from "../define-job.js";
import type { Duration } from "../duration.js";
import { ErrandError } from "../errors.js";
import type { Delivery } from "../job.js";
import type { Queue } from "../queue.js";
import { checkTypeName } from "../validation.js";

/** Where and how the server pushes a type's jobs (push delivery). */
export interface PushTarget {
  /** The receiver: the server POSTs `{ id, type, payload, attempt }` here. */
  url: string;
  /** Key of the `x-errand-signature` HMAC-SHA256 header; unsigned without it. */
  secret?: string;
  /** How long a delivery may take before it counts as failed. @defaultValue 30_000 */
  timeoutMs?: number;
}

/**
 * A job type's settings on the server: defaults for every job of the type enqueued through it,
 * a cluster-wide `concurrency` cap applied at lease, and an optional push target.
 * @since 0.1.0
 */
export interface JobTypeConfig {
  type: string;
  queue?: string;
  priority?: number;
  weight?: number;
  maxAttempts?: number;
  backoff?: Exclude<BackoffOptions, (...args: never[]) => unknown>;
  retryQueue?: string;
  timeoutMs?: Duration;
  delivery?: Delivery;
  concurrency?: number;
  push?: PushTarget;
}

/**
 * The job types a server knows. Kept in memory: give them to {@link createServer} (or
 * `errand serve --types file.json`) at start, or PUT them after. Each is registered with the
 * queue as a definition without a handler, which is how its defaults and cap take effect.
 */
export class JobTypeRegistry {
  readonly #queue: Queue;
  readonly #types = new Map<string, JobTypeConfig>();
  #onChange: (config: JobTypeConfig | null, type: string) => void = () => {};

  constructor(queue: Queue) {
    this.#queue = queue;
  }

  /** Called after each change (push delivery follows it). */
  onChange(fn: (config: JobTypeConfig | null, type: string) => void): void {
    this.#onChange = fn;
  }

  /**
   * Creates or replaces a type. Returns whether it was new.
   * @throws ErrandError with the offending field named.
   */
  set(config: JobTypeConfig): boolean {
    const type = checkTypeName(config.type);
    const { push, type: _type, ...defaults } = config;
    if (push !== undefined) checkPush(push);
    // defineJob validates every field and names the one that is wrong.
    const def = defineJob({
      ...defaults,
      type,
      handler: () => {
        throw new ErrandError("UNKNOWN_JOB_TYPE", `job type "${type}" is run by remote workers`);
      },
    });
    const existed = this.#types.has(type);
    const stored = { ...config, type };
    this.#types.set(type, stored);
    this.#queue.register(def);
    this.#onChange(stored, type);
    return !existed;
  }

  get(type: string): JobTypeConfig | undefined {
    return this.#types.get(type);
  }

  /** Forgets a type's settings; its jobs get the built-in defaults from now on. */
  delete(type: string): boolean {
    if (!this.#types.delete(type)) return false;
    this.#queue.register(defineJob({ type, handler: () => null }));
    this.#onChange(null, type);
    return true;
  }

  list(): JobTypeConfig[] {
    return [...this.#types.values()].sort((a, b) => a.type.localeCompare(b.type));
  }

  /** True when some type caps its concurrency: a finished job may let a held-back lease go on. */
  get hasCaps(): boolean {
    for (const t of this.#types.values()) if (t.concurrency !== undefined) return true;
    return false;
  }
}

function checkPush(push: PushTarget): void {
  let url: URL;
  try {
    url = new URL(push.url);
  } catch {
    throw new ErrandError("INVALID_OPTION", `push.url must be an absolute http(s) URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ErrandError("INVALID_OPTION", `push.url must be http: or https:, got ${url.protocol}`);
  }
}

/** A type as shown over HTTP: the push secret is never echoed. */
export function publicType(config: JobTypeConfig): JobTypeConfig {
  if (!config.push?.secret) return config;
  const { secret: _secret, ...push } = config.push;
  return { ...config, push };
}
