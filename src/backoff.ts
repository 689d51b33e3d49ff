import { type Duration, toMs } from "./duration.js";
import { ErrandError } from "./errors.js";
import type { StoredBackoff } from "./job.js";
import { describe } from "./validation.js";

/**
 * How long to wait before retrying a failed attempt.
 *
 * - `{ type: "fixed", delayMs }`: the same wait every time.
 * - `{ type: "exponential", baseMs, maxMs, factor, jitter }`: `baseMs × factor^(attempt-1)`, capped
 *   at `maxMs`; with `jitter` (the default) the wait is drawn from its upper half, so a burst of
 *   failures does not retry in lockstep.
 * - a function `(error, attempt) => delayMs | false`: your own rule; `false` means do not retry.
 *   Functions cannot be stored, so a process that recovers the job without your definition (a
 *   sweeper elsewhere) uses the default exponential policy.
 * @since 0.1.0
 */
export type BackoffOptions =
  | {
      /** The same wait before every retry. */
      type: "fixed";
      /** The wait before each retry. */
      delayMs: Duration;
    }
  | {
      /** A wait that grows with each failed attempt. */
      type: "exponential";
      /** The wait after the first failed attempt. @defaultValue 1000 (1 s) */
      baseMs?: Duration;
      /** The longest wait, however many attempts have failed. @defaultValue 3_600_000 (1 h) */
      maxMs?: Duration;
      /** What each further failed attempt multiplies the wait by; at least 1. @defaultValue 2 */
      factor?: number;
      /**
       * Draw each wait from the upper half of its value, so jobs that failed together do not
       * retry together.
       * @defaultValue true
       */
      jitter?: boolean;
    }
  | BackoffFunction;

/** A custom retry rule: the delay in ms before the next attempt, or `false` to stop retrying. */
export type BackoffFunction = (error: unknown, attempt: number) => number | false;

/** 1 s, doubling, capped at 1 h, jittered. */
export const DEFAULT_BACKOFF: Extract<StoredBackoff, { type: "exponential" }> = {
  type: "exponential",
  baseMs: 1000,
  maxMs: 3_600_000,
  factor: 2,
  jitter: true,
};

/**
 * Validates a backoff option and gives its stored form.
 * @throws ErrandError `INVALID_OPTION` / `INVALID_DURATION`
 */
export function toStoredBackoff(options: BackoffOptions | undefined): StoredBackoff {
  if (options === undefined) return DEFAULT_BACKOFF;
  if (typeof options === "function") return { type: "custom", fallback: DEFAULT_BACKOFF };
  if (typeof options !== "object" || options === null) {
    throw new ErrandError(
      "INVALID_OPTION",
      `backoff must be an object or a function, got ${describe(options)}`,
    );
  }
  if (options.type === "fixed") return { type: "fixed", delayMs: toMs("backoff.delayMs", options.delayMs) };
  if (options.type === "exponential") {
    const factor = options.factor ?? DEFAULT_BACKOFF.factor;
    if (typeof factor !== "number" || !Number.isFinite(factor) || factor < 1) {
      throw new ErrandError("INVALID_OPTION", `backoff.factor must be a number ≥ 1, got ${describe(factor)}`);
    }
    return {
      type: "exponential",
      baseMs: options.baseMs === undefined ? DEFAULT_BACKOFF.baseMs : toMs("backoff.baseMs", options.baseMs),
      maxMs: options.maxMs === undefined ? DEFAULT_BACKOFF.maxMs : toMs("backoff.maxMs", options.maxMs),
      factor,
      jitter: options.jitter ?? DEFAULT_BACKOFF.jitter,
    };
  }
  throw new ErrandError(
    "INVALID_OPTION",
    `backoff.type must be "fixed" or "exponential" (or pass a function), got ${describe((options as { type?: unknown }).type)}`,
  );
}

/**
 * The wait before the attempt after `attempt` (1-based) failed with `error`, or `false` to stop.
 * @param random - in [0, 1); injectable so tests are exact.
 */
export function backoffDelay(
  policy: StoredBackoff,
  fn: BackoffFunction | undefined,
  error: unknown,
  attempt: number,
  random: () => number = Math.random,
): number | false {
  if (policy.type === "custom" && fn) {
    let delay: number | false | undefined;
    try {
      delay = fn(error, attempt);
    } catch {
      // A bug in the policy must not leave the job stuck active (or stop a sweep): use the fallback.
      delay = undefined;
    }
    if (delay === false) return false;
    if (delay !== undefined) {
      if (typeof delay !== "number" || !Number.isFinite(delay) || delay < 0) return DEFAULT_BACKOFF.baseMs;
      return Math.round(delay);
    }
  }
  const p = policy.type === "custom" ? policy.fallback : policy;
  if (p.type === "fixed") return p.delayMs;
  // 0 × factor^n is 0 however large the power: without the test, 0 × Infinity is NaN once the
  // power overflows (attempt 1,026 at factor 2), and a NaN retry time wedged the job in every store.
  const raw = p.baseMs === 0 ? 0 : Math.min(p.maxMs, p.baseMs * p.factor ** Math.max(0, attempt - 1));
  return Math.round(p.jitter ? raw / 2 + (random() * raw) / 2 : raw);
}
