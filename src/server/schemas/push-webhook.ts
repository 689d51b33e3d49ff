/**
 * Push delivery as the OpenAPI document tells it (`webhooks`): what the server POSTs to a job
 * type's push `url` (src/server/push.ts) and what each answer of the receiver does to the job.
 * @module
 */
import { MAX_ATTEMPT } from "../../validation.js";

/** The OpenAPI 3.1 `webhooks` entry for push delivery. */
export const pushWebhooks = {
  pushDelivery: {
    post: {
      operationId: "receivePushedJob",
      tags: ["types"],
      summary: "A job delivered to its type's push `url` (the receiver implements this)",
      description: [
        "For each job type with `push` (`PUT /v1/types/{type}`), the server leases the type's ready jobs from its queue and retry queue (at most the type's `concurrency`, else the server's `push.concurrency`, 10, at once) and POSTs each to `push.url`, waiting at most `push.timeoutMs` (default 30000) for the answer. Redirects are not followed.",
        "",
        "**Verifying.** With a `secret`, `x-errand-signature` is `sha256=` and the hex HMAC-SHA256, keyed with the secret, of the `x-errand-timestamp` value, a `.`, and the raw body bytes as sent (`signPush(secret, timestamp, body)` in `errand/server`). Recompute it over the body before parsing, compare in constant time, and refuse a timestamp too far from now (a replay).",
        "",
        "**Answers.** 2xx other than 202: the job is completed, with the answer's JSON (its text when not JSON, null when empty) as its result; an answer too large to keep as a result (past the queue's `maxPayloadBytes`) sends the job to `dead`. 202: accepted, and the receiver reports later with `POST /v1/jobs/{id}/complete` or `/fail` and `attempt` (heartbeating with `/heartbeat` if it needs longer than the lease). 4xx whose JSON body has `retryable: false`: the job goes to `dead` (the body's `message` is recorded). Any other answer (another 4xx, 5xx, a 3xx), a refused connection, a timeout, or an answer cut off mid-body: the attempt fails and the job is retried with its type's backoff while attempts remain. A server that dies mid-delivery holds the job until its lease runs out (`push.leaseMs`, default `timeoutMs` + 30000), and it is delivered again: make the receiver idempotent on (`id`, `attempt`).",
      ].join("\n"),
      parameters: [
        {
          name: "x-errand-signature",
          in: "header",
          required: false,
          description:
            '`sha256=<hex HMAC-SHA256(secret, "<x-errand-timestamp>.<body>")>`; sent when the target has a `secret`',
          schema: { type: "string", pattern: "^sha256=[0-9a-f]{64}$" },
        },
        {
          name: "x-errand-timestamp",
          in: "header",
          required: true,
          description: "When the server sent it, in epoch milliseconds; part of what the signature signs",
          schema: { type: "string", pattern: "^[0-9]+$" },
        },
        {
          name: "x-errand-job-id",
          in: "header",
          required: true,
          description: "The job's id (as `id` in the body)",
          schema: { type: "string" },
        },
        {
          name: "x-errand-attempt",
          in: "header",
          required: true,
          description: "The attempt (as `attempt` in the body)",
          schema: { type: "string", pattern: "^[0-9]+$" },
        },
      ],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["id", "type", "payload", "attempt", "checkpoint"],
              properties: {
                id: { type: "string", description: "The job's id" },
                type: { type: "string", description: "The job's type" },
                payload: { description: "The job's payload, as enqueued" },
                attempt: {
                  type: "integer",
                  minimum: 1,
                  maximum: MAX_ATTEMPT,
                  description: "The attempt: give it back with a later `complete`, `fail` or `heartbeat`",
                },
                checkpoint: { description: "The last checkpoint saved for the job, or null" },
              },
            },
          },
        },
      },
      responses: {
        "200": {
          description: "Done (any 2xx but 202): the job is completed, with this answer's JSON as its result",
          content: { "application/json": { schema: {} } },
        },
        "202": {
          description:
            "Accepted: the receiver reports later with `POST /v1/jobs/{id}/complete` or `/fail` and the attempt",
        },
        "400": {
          description:
            'Any 4xx: with a JSON body `{ "retryable": false }` the job goes to `dead`; otherwise it is retried with its backoff',
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: {
                  retryable: {
                    type: "boolean",
                    description: "`false`: do not retry; the job goes to `dead`",
                  },
                  message: { type: "string", description: "Recorded in the job's error history" },
                },
              },
            },
          },
        },
        "500": {
          description: "Any 5xx (or a 3xx, or no answer in time): the job is retried with its backoff",
        },
      },
    },
  },
} as const;
