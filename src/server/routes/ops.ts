/**
 * The routes for operators and tools, outside `/v1` and the OpenAPI document: `/healthz` and
 * `/readyz` (open to probes), `/metrics` and `/openapi.json` (behind the `read` permission).
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { ServerContext } from "../context.js";

/** Registers the health, readiness, metrics and OpenAPI routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue, metrics, routing } = ctx;

  app.get("/healthz", { schema: { hide: true } }, async () => ({ ok: true }));
  app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
    try {
      await queue.ping();
      return { ok: true };
    } catch (error) {
      return reply.status(503).send({
        code: "UNAVAILABLE",
        message: `store unreachable: ${(error as Error).message}`,
        details: null,
      });
    }
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
  app.get("/openapi.json", { schema: { hide: true }, onRequest: routing.guard("read") }, async () =>
    app.swagger(),
  );
}
