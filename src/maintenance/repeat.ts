import type { Clock } from "../clock.js";

/** A task run again and again on a {@link Clock}; see {@link repeat}. */
export interface Repeating {
  /** Cancels the next run and resolves once every run under way has settled. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Runs `task` every `ms` on `clock`, on a fixed cadence: the next run is armed when one starts,
 * not when it settles, so a run that takes long (a store round trip under a manual clock's
 * `advance`) never pushes the next one later. Every task it runs is compare-and-set in the store
 * or idempotent, so an overlap is harmless. A task that throws or rejects is reported to
 * `onError` and the repetition goes on. Used by the Worker (polls, heartbeats), the server and
 * the {@link Maintainer}.
 */
export function repeat(
  clock: Clock,
  ms: number,
  task: () => unknown,
  onError: (error: unknown) => void,
): Repeating {
  let stopped = false;
  let cancel = () => {};
  const running = new Set<Promise<void>>();
  const arm = () => {
    cancel = clock.setTimer(ms, () => {
      if (stopped) return;
      arm();
      let result: unknown;
      try {
        result = task();
      } catch (error) {
        onError(error);
        return;
      }
      if (!(result instanceof Promise)) return;
      const settled = result.then(
        () => {},
        (error) => onError(error),
      );
      running.add(settled);
      void settled.then(() => running.delete(settled));
    });
  };
  arm();
  return {
    async stop() {
      stopped = true;
      cancel();
      while (running.size > 0) await Promise.all(running);
    },
  };
}
