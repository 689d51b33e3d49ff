import type { Clock } from "../clock.js";

/** A task run again and again on a {@link Clock}; see {@link repeat}. */
export interface Repeating {
  /** Cancels the next run and resolves once a run under way has settled. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Runs `task` every `ms` on `clock`, the next run armed only once the last has settled, so a
 * slow store never piles runs up. A task that throws or rejects is reported to `onError` and the
 * repetition goes on. Used by the Worker (polls, heartbeats) and the {@link Maintainer}.
 */
export function repeat(
  clock: Clock,
  ms: number,
  task: () => unknown,
  onError: (error: unknown) => void,
): Repeating {
  let stopped = false;
  let cancel = () => {};
  let running: Promise<void> | null = null;
  const arm = () => {
    cancel = clock.setTimer(ms, () => {
      if (stopped) return;
      let result: unknown;
      try {
        result = task();
      } catch (error) {
        onError(error);
        arm();
        return;
      }
      if (!(result instanceof Promise)) {
        arm();
        return;
      }
      running = result.then(
        () => {},
        (error) => onError(error),
      );
      void running.then(() => {
        running = null;
        if (!stopped) arm();
      });
    });
  };
  arm();
  return {
    async stop() {
      stopped = true;
      cancel();
      await running;
    },
  };
}
