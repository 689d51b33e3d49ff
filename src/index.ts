/**
 * errand: a durable job queue for TypeScript. One API over SQLite (the embedded default),
 * PostgreSQL and Redis.
 *
 * ```ts
 * import { openQueue, defineJob, Worker } from "errand";
 * const sendEmail = defineJob({ type: "send-email", handler: async (p: { to: string }) => ({ sent: true }) });
 * const queue = await openQueue("sqlite:./errand.db");
 * await queue.enqueue(sendEmail, { to: "a@b.c" }, { delayMs: "2h" });
 * const worker = new Worker(queue, { jobs: [sendEmail], concurrency: 50 });
 * await worker.start();
 * ```
 * @packageDocumentation
 */
export { type BackoffFunction, type BackoffOptions, DEFAULT_BACKOFF } from "./backoff.js";
export { type Clock, ManualClock, systemClock } from "./clock.js";
export {
  type AnyJobDefinition,
  defineJob,
  type JobContext,
  type JobDefaults,
  type JobDefinition,
  type JobDefinitionOptions,
  type JobHandler,
  type PayloadOf,
  type Rate,
  type RateLimit,
  type ResultOf,
  type StandardSchemaV1,
} from "./define-job.js";
export { type Duration, type DurationUnit, MAX_DURATION_MS, MAX_TIMER_MS } from "./duration.js";
export type { BatchItem } from "./enqueue-plan.js";
export {
  ErrandError,
  type ErrandErrorCode,
  isNonRetryable,
  JobTimeoutError,
  NonRetryableError,
} from "./errors.js";
export type { FlowNode } from "./flow-plan.js";
export {
  type Delivery,
  type DependencyFailurePolicy,
  FINISHED_STATES,
  type FinishedState,
  JOB_STATES,
  type Job,
  type JobDependency,
  type JobErrorEntry,
  type JobState,
  type JobSummary,
  type StoredBackoff,
} from "./job.js";
export {
  DEFAULT_RETENTION,
  type EnqueuedJob,
  type EnqueueOptions,
  type FailOptions,
  type FlowResult,
  type JobPage,
  type JobSummaryPage,
  type LeaseOptions,
  type ListOptions,
  type ListViewOptions,
  type OpenQueueOptions,
  openQueue,
  openStore,
  Queue,
  type QueueEvents,
  type QueueStats,
  type RetentionOptions,
  type Schedule,
  type ScheduleOptions,
  type SchedulePage,
  type SchedulePageOptions,
  type SweepResult,
  type TypePageOptions,
} from "./queue.js";
export { Snooze } from "./snooze.js";
export type { HeldBack, KeyLoad, TypeLimitStats } from "./store/held-back.js";
export { LIST_SCAN, type Store, type StoreCapabilities } from "./store/store.js";
export {
  MAX_ATTEMPT,
  MAX_COUNT,
  MAX_CRON_LENGTH,
  MAX_DATE_MS,
  MAX_DEPENDENCIES,
  MAX_ERROR_HISTORY,
  MAX_ERROR_NAME_LENGTH,
  MAX_ERROR_STACK_LENGTH,
  MAX_ERROR_TEXT_LENGTH,
  MAX_KEY_LENGTH,
  MAX_LIMIT,
  MAX_LIST_CURSOR_LENGTH,
  MAX_PAYLOAD_BYTES,
  MAX_PRIORITY,
  MAX_TIMEZONE_LENGTH,
  MIN_DATE_MS,
  MIN_PRIORITY,
  NAME_PATTERN,
  RESERVED_NAMES,
} from "./validation.js";
export { type CloseOptions, Worker, type WorkerEvents, type WorkerOptions } from "./worker/worker.js";
