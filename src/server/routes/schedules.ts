/** The schedule routes: create or replace, read, delete, list. @module */
import type { FastifyInstance } from "fastify";
import { ErrandError } from "../../errors.js";
import type { EnqueueOptions } from "../../queue.js";
import { checkInt, MAX_LIMIT } from "../../validation.js";
import type { ServerContext } from "../context.js";
import { itemsPerRead, readInSteps } from "../page-size.js";
import { body, params } from "../routing.js";

/** Registers the schedule routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue } = ctx;
  const route = ctx.routing.on(app);

  route("PUT /v1/schedules/:name", "manage", async (request) => {
    const b = body<{ cron: string; timezone?: string; type: string; payload?: unknown; options?: object }>(
      request,
    );
    return queue.schedule(params(request).name!, {
      cron: b.cron,
      ...(b.timezone ? { timezone: b.timezone } : {}),
      job: b.type,
      payload: b.payload ?? null,
      ...(b.options ? { options: b.options as EnqueueOptions } : {}),
    });
  });
  route("GET /v1/schedules/:name", "read", async (request) => {
    const { name } = params(request);
    const found = await queue.getSchedule(name!);
    if (!found) throw new ErrandError("NOT_FOUND", `no schedule ${JSON.stringify(name)}`);
    return found;
  });
  route("DELETE /v1/schedules/:name", "manage", async (request, reply) => {
    const { name } = params(request);
    if (!(await queue.unschedule(name!))) {
      throw new ErrandError("NOT_FOUND", `no schedule ${JSON.stringify(name)}`);
    }
    return reply.status(204).send();
  });
  route("GET /v1/schedules", "read", async (request) => {
    const q = request.query as Record<string, string | undefined>;
    // Read a step at a time, each schedule's payload up to the queue's bound (page-size.ts).
    const page = await readInSteps(
      checkInt("limit", q.limit === undefined ? 50 : Number(q.limit), 1, MAX_LIMIT),
      itemsPerRead(queue.maxPayloadBytes),
      async (limit, cursor) => {
        const got = await queue.schedulePage({ limit, ...(cursor === undefined ? {} : { cursor }) });
        return { items: got.schedules, nextCursor: got.nextCursor };
      },
      q.cursor,
    );
    return { schedules: page.items, nextCursor: page.nextCursor };
  });
}
