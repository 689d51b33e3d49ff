/**
 * What the OpenAPI document says beyond the route schemas, for people and generators: the tags,
 * each error status's codes and their `details` (from {@link HTTP_STATUS}, through
 * schemas/error-codes.ts), `Retry-After` where the server sends it, the 500 any request may meet,
 * and push delivery as `webhooks`. Applied after the statuses every request may meet are added
 * (server.ts, `withEveryRequestsTerms`).
 * @module
 */
import { describeStatus, STATUS_LEADS } from "./schemas/error-codes.js";
import { pushWebhooks } from "./schemas/push-webhook.js";

/** The tags operations are grouped by, declared once with what each covers. */
export const TAGS = [
  { name: "jobs", description: "Enqueue, read, list, cancel, retry, replay, reschedule and prune jobs" },
  {
    name: "flows",
    description: "Jobs that wait for other jobs: a DAG enqueued at once, a job's dependencies and dependents",
  },
  {
    name: "workers",
    description: "The remote-worker protocol: lease jobs, then report each attempt (any language)",
  },
  {
    name: "types",
    description: "Job types' server-side settings: defaults, caps, order, rate limits and push delivery",
  },
  { name: "schedules", description: "Cron schedules that enqueue jobs" },
  { name: "queues", description: "Queues with their counts; pause and resume" },
  { name: "stats", description: "Counts by state, queue and type, and this server's recent throughput" },
] as const;

const ERROR_REF = "#/components/schemas/Error";

/** A response as far as {@link withErrorCodes} reads and writes it. */
interface Response {
  description?: string;
  headers?: Record<string, unknown>;
  content?: { "application/json"?: { schema?: { $ref?: string } } };
}

/** `Retry-After` as the server sends it: whole seconds, from the error's `details.retryAfterMs`. */
const retryAfter = (when: string) => ({
  "Retry-After": {
    description: `Seconds to wait before trying again; ${when}`,
    schema: { type: "integer", minimum: 0 },
  },
});

/**
 * The document with tags declared, each error response's description naming the codes it can
 * carry and their `details`, `Retry-After` on 429 and 503, a 500 on every operation, and push
 * delivery's `webhooks`. A response a route describes itself keeps its words, the codes added.
 */
export function withErrorCodes<D extends { paths?: object; components?: { schemas?: object } }>(doc: D): D {
  const generic = (doc.components?.schemas as Record<string, { description?: string }> | undefined)?.Error
    ?.description;
  for (const item of Object.values(doc.paths ?? {}) as Array<Record<string, unknown> | undefined>) {
    for (const op of Object.values(item ?? {}) as Array<{ responses?: Record<string, Response> }>) {
      if (typeof op !== "object" || op === null || typeof op.responses !== "object") continue;
      const responses = op.responses;
      responses["500"] ??= { content: { "application/json": { schema: { $ref: ERROR_REF } } } };
      for (const [status, response] of Object.entries(responses)) {
        if (response.content?.["application/json"]?.schema?.$ref !== ERROR_REF) continue;
        const own =
          response.description && response.description !== generic ? response.description : undefined;
        response.description = describeStatus(
          Number(status),
          own ?? STATUS_LEADS[Number(status)] ?? "An error",
        );
        if (status === "429") response.headers ??= retryAfter("always sent");
        if (status === "503") response.headers ??= retryAfter("sent when the server says when to come back");
      }
    }
  }
  return Object.assign(doc, { tags: [...TAGS], webhooks: pushWebhooks });
}
