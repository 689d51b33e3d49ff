/**
 * Request examples for the OpenAPI document: what a caller in another language would send, named
 * and explained, for the routes that take a body. They go into each operation's request body as
 * OpenAPI `examples` (through `x-examples`, which @fastify/swagger moves onto the media type), and
 * test/e2e/openapi.test.ts sends every one of them to a server, which must take it as valid.
 * @module
 */

/** One named example of a request body. */
export interface BodyExample {
  summary: string;
  value: unknown;
}

const ATTEMPT = 1;

/** Examples of request bodies, by route key (`"METHOD /path"`). */
export const BODY_EXAMPLES: ReadonlyMap<string, Readonly<Record<string, BodyExample>>> = new Map<
  string,
  Readonly<Record<string, BodyExample>>
>([
  [
    "POST /v1/jobs",
    {
      one: {
        summary: "One job, due now",
        value: { type: "send-email", payload: { to: "ada@example.com", template: "welcome" } },
      },
      later: {
        summary: "Due in two hours, high priority, at most once per user and day",
        value: {
          type: "send-email",
          payload: { to: "ada@example.com", template: "reminder" },
          delayMs: "2h",
          priority: 10,
          uniqueKey: "reminder:ada:2026-12-03",
        },
      },
      retries: {
        summary: "Its own queue, five attempts with exponential backoff",
        value: {
          type: "resize-image",
          payload: { key: "uploads/42.png", width: 640 },
          queue: "media",
          maxAttempts: 5,
          backoff: { type: "exponential", baseMs: "1s", maxMs: "5m" },
        },
      },
      many: {
        summary: "Many jobs in one transaction (`?return=ids` answers only their ids)",
        value: {
          jobs: [
            { type: "webhook", payload: { url: "https://example.com/hook", event: "paid" }, key: "acct_1" },
            {
              type: "webhook",
              payload: { url: "https://example.com/hook", event: "shipped" },
              key: "acct_1",
            },
          ],
        },
      },
      debounced: {
        summary: "Collapse a burst: one reindex 30 s after the last change",
        value: { type: "reindex", payload: { doc: "d_7" }, debounce: { key: "reindex:d_7", delayMs: "30s" } },
      },
    },
  ],
  [
    "PUT /v1/jobs/:id",
    {
      one: {
        summary: "Enqueue under the caller's id: sent twice, stored once",
        value: { type: "charge", payload: { order: "o_981", cents: 4200 }, maxAttempts: 3 },
      },
    },
  ],
  [
    "POST /v1/flows",
    {
      fanIn: {
        summary: "Two resizes, then a job that waits for both",
        value: {
          jobs: [
            { ref: "small", type: "resize-image", payload: { key: "uploads/42.png", width: 320 } },
            { ref: "large", type: "resize-image", payload: { key: "uploads/42.png", width: 1280 } },
            {
              ref: "publish",
              type: "publish",
              payload: { key: "uploads/42.png" },
              dependsOn: ["small", "large"],
            },
          ],
        },
      },
    },
  ],
  [
    "POST /v1/jobs/:id/reschedule",
    {
      later: { summary: "Run it an hour from now instead", value: { delayMs: "1h" } },
      at: {
        summary: "Run it at a given instant, first",
        value: { runAt: "2026-12-24T18:00:00Z", priority: 100 },
      },
    },
  ],
  [
    "POST /v1/lease",
    {
      some: {
        summary: "Up to 10 jobs of two types, waiting up to 20 s when none is ready",
        value: {
          types: ["send-email", "webhook"],
          limit: 10,
          leaseMs: 60_000,
          waitMs: 20_000,
          workerId: "py-1",
        },
      },
      weighted: {
        summary: "From two queues, three to one, with 20 units of weight of room",
        value: { queues: { default: 3, media: 1 }, limit: 50, maxWeight: 20 },
      },
    },
  ],
  [
    "POST /v1/jobs/:id/complete",
    {
      result: {
        summary: "Done, with a result to keep",
        value: { attempt: ATTEMPT, result: { messageId: "m_1" } },
      },
      bare: { summary: "Done, no result", value: { attempt: ATTEMPT } },
    },
  ],
  [
    "POST /v1/jobs/:id/fail",
    {
      retry: {
        summary: "Failed: retried with its backoff while attempts remain",
        value: { attempt: ATTEMPT, error: { name: "TimeoutError", message: "SMTP server timed out" } },
      },
      dead: {
        summary: "Failed for good: straight to dead",
        value: { attempt: ATTEMPT, error: "mailbox does not exist", retryable: false },
      },
    },
  ],
  [
    "POST /v1/jobs/:id/heartbeat",
    { extend: { summary: "Still working: hold the lease longer", value: { attempt: ATTEMPT } } },
  ],
  [
    "POST /v1/heartbeats",
    {
      many: {
        summary: "Hold every job a worker has under way, each for another minute from now",
        value: {
          jobs: [
            { id: "01JEXAMPLE0000000000000001", attempt: 1 },
            { id: "01JEXAMPLE0000000000000002", attempt: 3 },
          ],
          leaseMs: 60_000,
        },
      },
    },
  ],
  [
    "POST /v1/jobs/:id/release",
    {
      back: { summary: "Shutting down: give the job back, its attempt unspent", value: { attempt: ATTEMPT } },
    },
  ],
  [
    "POST /v1/jobs/:id/checkpoint",
    {
      progress: {
        summary: "Save progress: a retry resumes from it",
        value: { attempt: ATTEMPT, data: { page: 7 } },
      },
    },
  ],
  [
    "POST /v1/jobs/:id/snooze",
    {
      wait: {
        summary: "Not yet: pending again in 5 minutes, no attempt spent",
        value: { attempt: ATTEMPT, delayMs: "5m" },
      },
    },
  ],
  [
    "POST /v1/report",
    {
      mixed: {
        summary: "Several outcomes at once",
        value: {
          reports: [
            { id: "01JEXAMPLE0000000000000001", attempt: 1, outcome: "complete", result: { ok: true } },
            { id: "01JEXAMPLE0000000000000002", attempt: 2, outcome: "fail", error: "upstream 502" },
            { id: "01JEXAMPLE0000000000000003", attempt: 1, outcome: "snooze", delayMs: "30s" },
          ],
        },
      },
    },
  ],
  [
    "PUT /v1/schedules/:name",
    {
      nightly: {
        summary: "Every night at 02:30, Paris time",
        value: {
          cron: "30 2 * * *",
          timezone: "Europe/Paris",
          type: "nightly-report",
          payload: { format: "pdf" },
          options: { queue: "reports", maxAttempts: 3 },
        },
      },
    },
  ],
  [
    "PUT /v1/types/:type",
    {
      limited: {
        summary: "At most 100 starts a minute, 2 at once per customer, 3 attempts by default",
        value: {
          rateLimit: { limit: 100, periodMs: "1m" },
          keyConcurrency: 2,
          maxAttempts: 3,
          backoff: { type: "fixed", delayMs: "10s" },
        },
      },
      push: {
        summary: "Push each job to a URL instead of waiting for a lease",
        value: { push: { url: "https://worker.example.com/errand", timeoutMs: 30_000 } },
      },
    },
  ],
]);
