import type { Job } from "./job.js";

/**
 * Events a {@link Queue} emits for every change of a job's state made through it: by the Queue's
 * own methods, by local {@link Worker}s, and by the server's lease protocol, push delivery and
 * remote completions, which all pass through the same door (`src/store/instrument.ts`).
 *
 * Each event is emitted after the change is written, and each listener is called on its own: a
 * listener that throws, or returns a promise that rejects, does not fail the call that made the
 * change (an `enqueue()` resolves for the job it stored), does not keep the listeners after it
 * from hearing the event, and does not disturb a worker running the job. Its fault is emitted as
 * `error`: listen to `error` to see it, since a Queue keeps a listener of its own there that
 * ignores every fault (with every `error` listener removed, the fault is thrown on the next tick
 * as an uncaught exception).
 * @since 0.1.0
 */
export interface QueueEvents {
  /**
   * A job was stored: enqueued, fired by a schedule, or a replay's copy. Not for an enqueue that
   * met an existing job by id or unique key.
   */
  enqueued: [job: Job];
  /** A job was claimed and its attempt began. */
  active: [job: Job];
  /** An attempt succeeded; the job as completed, with what its handler returned. */
  completed: [job: Job, result: unknown];
  /** An attempt failed (a lost lease too); `retrying` or `dead` follows with the same arguments. */
  failed: [job: Job, error: unknown];
  /** After `failed`: the job is pending again at `job.runAt`, after its backoff. */
  retrying: [job: Job, error: unknown];
  /** After `failed`: the job is `dead` and will not run again. */
  dead: [job: Job, error: unknown];
  /** A job's `expiresAt` passed before it started (or a replay copied an expired job). */
  expired: [job: Job];
  /** A job was cancelled; a local worker running it aborts its signal. */
  cancelled: [job: Job];
  /** `pauseQueue(name)` was called on this Queue (whether or not the queue was paused already). */
  paused: [queue: string];
  /** A handler snoozed its job (`ctx.snooze`): pending again at `job.runAt`, no attempt spent. */
  snoozed: [job: Job];
  /**
   * A fault in the Queue's background work that no caller is awaiting: a maintenance pass that
   * {@link Queue.lease} ran, a due schedule that could not fire, a server's push delivery; and
   * the fault of a listener of any other event. A listener of `error` that throws is not caught
   * here: its throw reaches whoever emitted, as with any `EventEmitter`.
   */
  error: [error: unknown];
}

/** The part of an emitter the door needs: emit, and whether anyone listens (to skip building a Job). */
export interface EventSink {
  emit<K extends keyof QueueEvents>(event: K, ...args: QueueEvents[K]): boolean;
  listenerCount(event: keyof QueueEvents): number;
}
