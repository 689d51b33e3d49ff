import type { BackoffOptions } from "./backoff.js";
import { type AnyJobDefinition, defineJob, type JobDefinitionOptions, type Rate } from "./define-job.js";
import { ErrandError } from "./errors.js";
import { nameRecord } from "./name-record.js";
import { BUSIEST_KEYS, HELD_SAMPLE_LIMIT, type LimitStatsParams } from "./store/held-back.js";
import type { ClaimParams, KeyRules } from "./store/store.js";

/** The rules of the known job types a claim keeps (see {@link TypeRegistry.claimRules}). */
export type ClaimRules = Pick<ClaimParams, "concurrencyLimits" | "keyRules" | "rateLimits">;

/** A type's settings from outside its code: {@link defineJob}'s options but the type and handler. */
export type TypeSettings = Omit<JobDefinitionOptions<unknown, unknown>, "type" | "handler" | "schema">;

/** `settings` over `code` (or over the defaults, with a handler that refuses to run in this process). */
function overlay(code: AnyJobDefinition | undefined, type: string, settings: TypeSettings): AnyJobDefinition {
  const base: TypeSettings = code
    ? {
        queue: code.queue,
        priority: code.priority,
        weight: code.weight,
        maxAttempts: code.maxAttempts,
        backoff: code.backoffFn ?? (code.backoff as BackoffOptions),
        ...(code.retryQueue !== null ? { retryQueue: code.retryQueue } : {}),
        ...(code.timeoutMs !== null ? { timeoutMs: code.timeoutMs } : {}),
        delivery: code.delivery,
        onDependencyFailure: code.onDependencyFailure,
        ...(code.concurrency !== null ? { concurrency: code.concurrency } : {}),
        ...(code.keyConcurrency !== null ? { keyConcurrency: code.keyConcurrency } : {}),
        ...(code.ordered ? { ordered: true } : {}),
        ...(code.fair ? { fair: true } : {}),
        ...(code.rateLimit !== null ? { rateLimit: code.rateLimit } : {}),
        ...(code.keyRateLimit !== null ? { keyRateLimit: code.keyRateLimit } : {}),
      }
    : {};
  return defineJob({
    ...base,
    ...settings,
    ...(code?.schema ? { schema: code.schema } : {}),
    type,
    handler:
      code?.handler ??
      (() => {
        throw new ErrandError("UNKNOWN_JOB_TYPE", `job type "${type}" is run by remote workers`);
      }),
  });
}

/**
 * The queues jobs of these types wait in: each one's queue, and its retry queue (where its retries
 * wait), each once.
 */
export function queuesOf(defs: Iterable<AnyJobDefinition>): string[] {
  const names = new Set<string>();
  for (const def of defs) {
    names.add(def.queue);
    if (def.retryQueue !== null) names.add(def.retryQueue);
  }
  return [...names];
}

/**
 * What the Queue knows of job types: definitions registered by code (workers, `jobs`), with their
 * handlers, and settings from outside the code (a server's `PUT /v1/types`) laid over them.
 * Every lookup reads the merged definition.
 * @internal
 */
export class TypeRegistry {
  /** What every lookup reads: each type's code definition with its settings laid over it. */
  readonly #definitions = new Map<string, AnyJobDefinition>();
  /** Definitions registered by code (workers, `jobs`), with their handlers. */
  readonly #code = new Map<string, AnyJobDefinition>();
  /** Settings from outside the code (a server's job types), by type. */
  readonly #settings = new Map<string, TypeSettings>();
  /** The types with a rate limit or a per-key rate limit: read per finished job by a prefetching Worker. */
  readonly #rateRuled = new Set<string>();

  register(def: AnyJobDefinition): void {
    this.#code.set(def.type, def);
    this.#define(def.type);
  }

  /** @throws ErrandError naming the field, when a setting is invalid; nothing changes then. */
  setSettings(type: string, settings: TypeSettings | null): void {
    if (settings) {
      overlay(this.#code.get(type), type, settings); // validates before anything changes
      this.#settings.set(type, settings);
    } else this.#settings.delete(type);
    this.#define(type);
  }

  #define(type: string): void {
    const code = this.#code.get(type);
    const settings = this.#settings.get(type);
    if (settings) this.#definitions.set(type, overlay(code, type, settings));
    else if (code) this.#definitions.set(type, code);
    else this.#definitions.delete(type);
    const def = this.#definitions.get(type);
    if (def && (def.rateLimit !== null || def.keyRateLimit !== null)) this.#rateRuled.add(type);
    else this.#rateRuled.delete(type);
  }

  get(type: string): AnyJobDefinition | undefined {
    return this.#definitions.get(type);
  }

  /**
   * Whether the type has a cluster-wide cap, per type or per key, or an order (its jobs' ends free
   * room no enqueue announces).
   */
  capped(type: string): boolean {
    const def = this.#definitions.get(type);
    return def !== undefined && (def.concurrency !== null || def.keyConcurrency !== null || def.ordered);
  }

  /**
   * `"default"` and the queues of the known types among `types` (all when undefined), their retry
   * queues too: what a lease that names no queues takes from (the server's settings-only types are
   * known here, laid over the defaults).
   */
  queues(types: readonly string[] | undefined): string[] {
    const defs = [...this.#definitions.values()].filter((def) => !types || types.includes(def.type));
    return [...new Set(["default", ...queuesOf(defs)])];
  }

  /** Cluster-wide caps of the known types among `types` (all when undefined); undefined when none. */
  limits(types: readonly string[] | undefined): Record<string, number> | undefined {
    let limits: Record<string, number> | undefined;
    for (const def of this.#definitions.values()) {
      if (def.concurrency === null || (types && !types.includes(def.type))) continue;
      // No prototype: a store that looks a type up in it must not find Object.prototype's members.
      (limits ??= nameRecord())[def.type] = def.concurrency;
    }
    return limits;
  }

  /**
   * Per-key rules (keyConcurrency, ordered, keyRateLimit, fair) of the known types among `types`;
   * undefined when none.
   */
  keyRules(types: readonly string[] | undefined): Record<string, KeyRules> | undefined {
    let rules: Record<string, KeyRules> | undefined;
    for (const def of this.#definitions.values()) {
      if (def.keyConcurrency === null && !def.ordered && def.keyRateLimit === null && !def.fair) continue;
      if (types && !types.includes(def.type)) continue;
      (rules ??= nameRecord())[def.type] = {
        ...(def.keyConcurrency !== null ? { keyConcurrency: def.keyConcurrency } : {}),
        ...(def.ordered ? { ordered: true } : {}),
        ...(def.fair ? { fair: true } : {}),
        ...(def.keyRateLimit !== null ? { keyRateLimit: def.keyRateLimit } : {}),
      };
    }
    return rules;
  }

  /** Whether the type is fair: its jobs take their turn among its keys' when enqueued. */
  fair(type: string): boolean {
    return this.#definitions.get(type)?.fair === true;
  }

  /**
   * Whether the type has a rate limit or a per-key rate limit. Such a type is never claimed ahead
   * of free capacity: its limit counts a start when the job is claimed, and a job held in a buffer
   * starts later, so buffered jobs claimed a window apart would start together.
   */
  rateRuledType(type: string): boolean {
    return this.#rateRuled.has(type);
  }

  /** {@link rateRuledType} for any of `types` (every known type when absent). */
  rateRuled(types: readonly string[] | undefined): boolean {
    if (this.#rateRuled.size === 0) return false;
    if (!types) return true;
    // The caller's few types against the set: a server may hold many rate-ruled types.
    for (const type of types) if (this.#rateRuled.has(type)) return true;
    return false;
  }

  /** Every rule a claim of `types` must keep: the caps, per-key rules and rate limits. */
  claimRules(types: readonly string[] | undefined): ClaimRules {
    return {
      concurrencyLimits: this.limits(types),
      keyRules: this.keyRules(types),
      rateLimits: this.rateLimits(types),
    };
  }

  /**
   * What `stats` looks into ({@link QueueStats.limits}): every known type with a rate limit or a
   * per-key rule, with those rules.
   */
  limitStats(): LimitStatsParams {
    const { keyRules, rateLimits } = this.claimRules(undefined);
    const types = new Set([...Object.keys(keyRules ?? {}), ...Object.keys(rateLimits ?? {})]);
    return {
      types: [...types].sort(),
      ...(keyRules ? { keyRules } : {}),
      ...(rateLimits ? { rateLimits } : {}),
      sampleLimit: HELD_SAMPLE_LIMIT,
      topKeys: BUSIEST_KEYS,
    };
  }

  /** Type-wide rate limits of the known types among `types`; undefined when none. */
  rateLimits(types: readonly string[] | undefined): Record<string, Rate> | undefined {
    let limits: Record<string, Rate> | undefined;
    for (const def of this.#definitions.values()) {
      if (def.rateLimit === null || (types && !types.includes(def.type))) continue;
      (limits ??= nameRecord())[def.type] = def.rateLimit;
    }
    return limits;
  }
}
