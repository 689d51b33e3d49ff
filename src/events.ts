import type { Job } from "./job.js";

/**
 * Events a {@link Queue} emits for every change of a job's state made through it: by the Queue's
 * own methods, by local {@link Worker}s, and by the server's lease protocol, push delivery and
 * remote completions, which all pass through the same door (`src/store/instrument.ts`).
 * @since 0.1.0
 */
export interface QueueEvents {
  enqueued: [job: Job];
  active: [job: Job];
  completed: [job: Job, result: unknown];
  failed: [job: Job, error: unknown];
  retrying: [job: Job, error: unknown];
  dead: [job: Job, error: unknown];
  expired: [job: Job];
  cancelled: [job: Job];
  /** `pauseQueue(name)` was called on this Queue (whether or not the queue was paused already). */
  paused: [queue: string];
  /** A handler snoozed its job (`ctx.snooze`): pending again at `job.runAt`, no attempt spent. */
  snoozed: [job: Job];
  error: [error: unknown];
}

/** The part of an emitter the door needs: emit, and whether anyone listens (to skip building a Job). */
export interface EventSink {
  emit<K extends keyof QueueEvents>(event: K, ...args: QueueEvents[K]): boolean;
  listenerCount(event: keyof QueueEvents): number;
}
