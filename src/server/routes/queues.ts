/** The inspection and queue routes: stats, stats history, queues, pause, resume, prune. @module */
import type { FastifyInstance } from "fastify";
import { ErrandError } from "../../errors.js";
import { byteOrder } from "../../name-record.js";
import type { ServerContext } from "../context.js";
import { params } from "../routing.js";
import { DEFAULT_HISTORY_SECONDS } from "../stats-history.js";

/** Registers the inspection and queue routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue, history } = ctx;
  const route = ctx.routing.on(app);

  route("GET /v1/stats", "read", async () => queue.stats());
  route("GET /v1/stats/history", "read", async (request) => {
    // The schema bounds `seconds` (1 to DEFAULT_HISTORY_SIZE, the size of the server's history)
    // and fills in its default.
    const { seconds } = request.query as { seconds?: string };
    const n = seconds === undefined ? DEFAULT_HISTORY_SECONDS : Number(seconds);
    if (n < 1 || n > history.size) {
      throw new ErrandError("INVALID_REQUEST", `seconds must be between 1 and ${history.size}, got ${n}`);
    }
    return history.series(n);
  });
  route("GET /v1/queues", "read", async () => {
    const stats = await queue.stats();
    const paused = new Set(stats.paused);
    // A paused queue with no jobs is listed too, so it can be found and resumed. A Map: a queue
    // named "constructor" or "toString" must not be found on Object.prototype and left out.
    const counts = new Map<string, Partial<Record<string, number>>>(Object.entries(stats.queues));
    for (const name of paused) if (!counts.has(name)) counts.set(name, {});
    return {
      queues: [...counts]
        .sort(([a], [b]) => byteOrder(a, b))
        .map(([name, c]) => ({ name, counts: c, paused: paused.has(name) })),
    };
  });
  route("POST /v1/queues/:name/pause", "manage", async (request) => {
    const { name } = params(request);
    return { name: name!, paused: true, changed: await queue.pauseQueue(name!) };
  });
  route("POST /v1/queues/:name/resume", "manage", async (request) => {
    const { name } = params(request);
    return { name: name!, paused: false, changed: await queue.resumeQueue(name!) };
  });
  route("POST /v1/prune", "manage", async () => ({ deleted: await queue.prune() }));
}
