/**
 * The routes for operators and tools, outside `/v1` and the OpenAPI document: `/healthz` and
 * `/readyz` (open to probes, and telling them nothing but ready or not: not ready once the server
 * drains), `/metrics` and `/openapi.json` (behind the `read` permission).
 * @module
 */
import type { FastifyInstance } from "fastify";
import { ANY_PERMISSION } from "../auth.js";
import type { ServerContext } from "../context.js";

/**
 * How long `/readyz` waits for the store's answer before it answers 503 itself. A store that cannot
 * connect retries for a while (PostgreSQL's `retryMs`, 10 s), and a probe gives up long before:
 * a wait bounded here answers "not ready" in time. The ping goes on in the background.
 */
export const READY_TIMEOUT_MS = 2000;

/** What `/readyz` answers when the store does not: the same to everyone, the detail is logged. */
const NOT_READY = { code: "UNAVAILABLE", message: "the store is not answering", details: null } as const;

/** What `/readyz` answers once the server drains or closes: a load balancer stops routing here. */
const SHUTTING_DOWN = { code: "UNAVAILABLE", message: "the server is shutting down", details: null } as const;

/** Registers the health, readiness, metrics and OpenAPI routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue, metrics, routing } = ctx;

  // The ping under way, which probes meanwhile join while it is younger than the bound: a store
  // that is down (or a flood of probes) gets at most one new ping per READY_TIMEOUT_MS, and a ping
  // that never settles holds no later probe.
  let pinging: { answer: Promise<void>; since: number } | null = null;
  const ping = () => {
    const now = performance.now();
    if (!pinging || now - pinging.since >= READY_TIMEOUT_MS) {
      const current = {
        since: now,
        answer: queue.ping().finally(() => {
          if (pinging === current) pinging = null;
        }),
      };
      // Logged once per ping, also when it fails after the probes were answered.
      current.answer.catch((error: unknown) => app.log.error({ err: error }, "readiness: the store failed"));
      pinging = current;
    }
    return pinging.answer;
  };

  app.get("/healthz", { schema: { hide: true } }, async () => ({ ok: true }));
  // Open to anyone (probes name no host and hold no token), so it tells nothing: neither the
  // store's address nor its driver's words, which go to the log.
  app.get("/readyz", { schema: { hide: true } }, async (request, reply) => {
    if (ctx.lifecycle.draining) return reply.status(503).send(SHUTTING_DOWN);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), READY_TIMEOUT_MS);
    });
    try {
      const answer = await Promise.race([ping(), late]);
      if (answer !== "late") return { ok: true };
      request.log.error(`readiness: the store did not answer within ${READY_TIMEOUT_MS} ms`);
    } catch {
      // Logged by ping().
    } finally {
      clearTimeout(timer);
    }
    return reply.status(503).send(NOT_READY);
  });
  app.get(
    "/metrics",
    { schema: { hide: true }, onRequest: routing.guard("read") },
    async (_request, reply) => {
      const text = await metrics.registry.metrics();
      return reply
        .type(metrics.registry.contentType)
        .serializer((d: string) => d)
        .send(text);
    },
  );
  // Any authenticated role reads the contract: a worker's token must be able to read what to send.
  app.get("/openapi.json", { schema: { hide: true }, onRequest: routing.guard(ANY_PERMISSION) }, async () =>
    app.swagger(),
  );
}
