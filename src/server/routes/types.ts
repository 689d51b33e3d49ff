/** The job-type routes: create or replace, read, delete, list. @module */
import type { FastifyInstance } from "fastify";
import { ErrandError } from "../../errors.js";
import type { ServerContext } from "../context.js";
import { type JobTypeConfig, publicType } from "../job-types.js";
import { body, params } from "../routing.js";

/** Registers the job-type routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { types } = ctx;
  const route = ctx.routing.on(app);

  route("PUT /v1/types/:type", "manage", async (request, reply) => {
    const given = body<JobTypeConfig>(request);
    const { type } = params(request);
    // The path names the type; a body naming another is a mistake to refuse, not to overrule.
    if (given.type !== undefined && given.type !== type) {
      throw new ErrandError(
        "INVALID_REQUEST",
        `the body's type ${JSON.stringify(given.type)} is not the path's ${JSON.stringify(type)}: leave it out or repeat the path's`,
        { details: { field: "type", path: type, body: given.type } },
      );
    }
    const config = { ...given, type: type! };
    const created = await types.set(config);
    return reply.status(created ? 201 : 200).send(publicType(types.get(config.type)!));
  });
  route("GET /v1/types/:type", "read", async (request) => {
    await types.refreshType(params(request).type!);
    const config = types.get(params(request).type!);
    if (!config) throw new ErrandError("NOT_FOUND", `no job type ${JSON.stringify(params(request).type)}`);
    return publicType(config);
  });
  route("DELETE /v1/types/:type", "manage", async (request, reply) => {
    if (!(await types.delete(params(request).type!))) {
      throw new ErrandError("NOT_FOUND", `no job type ${JSON.stringify(params(request).type)}`);
    }
    return reply.status(204).send();
  });
  route("GET /v1/types", "read", async (request) => {
    const q = request.query as Record<string, string | undefined>;
    await types.refresh();
    const page = types.page({
      ...(q.limit === undefined ? {} : { limit: Number(q.limit) }),
      ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
    });
    return { types: page.types.map(publicType), nextCursor: page.nextCursor };
  });
}
