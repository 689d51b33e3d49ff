import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrandError } from "../errors.js";
import { type Authenticator, checkPermission, type Permission, type Principal, rolesWith } from "./auth.js";
import { BODY_EXAMPLES } from "./schemas/examples.js";
import { type RouteKey, routeSchemas } from "./schemas.js";

/** A route's handler, as Fastify calls it. */
export type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * Registers one route: its schema from schemas.ts, the permission it needs (or a list, any one of
 * which will do), its handler.
 */
export type Route = (
  key: RouteKey,
  permission: Permission | readonly Permission[],
  handler: RouteHandler,
) => void;

/**
 * The guard in front of every route but health, and who passed it: each route names the
 * permission it needs, and the principal a request authenticated as is kept for the handler.
 */
export class Routing {
  readonly #auth: Authenticator;
  /** Who made each request, once its guard passed (none without auth). */
  readonly #principals = new WeakMap<FastifyRequest, Principal>();

  constructor(auth: Authenticator) {
    this.#auth = auth;
  }

  /**
   * A {@link Route} registering on `app`. The document says who may call each route from the
   * permission the route is guarded by: its roles as `x-errand-roles` and in its description.
   * A change whose schema takes no body refuses any field, as the document says (`{}` or nothing).
   * A body's examples (schemas/examples.ts) ride on a copy of its schema as `x-examples`, which
   * the document shows on the request body and the validator ignores.
   */
  on(app: FastifyInstance): Route {
    return (key, permission, handler) => {
      const [method, url] = key.split(" ") as [string, string];
      const schema = routeSchemas[key] as { description?: string; body?: unknown };
      const roles = rolesWith(permission);
      const examples = BODY_EXAMPLES.get(key);
      // A body that is a bare $ref is resolved to the shared schema, losing what stands beside it.
      const own = (schema.body as { $ref?: string } | undefined)?.$ref === undefined;
      const body =
        examples === undefined
          ? schema.body
          : { ...(own ? (schema.body as object) : { allOf: [schema.body] }), "x-examples": examples };
      const who = `Roles (with auth): ${roles.map((r) => `\`${r}\``).join(", ")}.`;
      app.route({
        method: method as "GET",
        url,
        schema: {
          ...schema,
          ...(body === undefined ? {} : { body }),
          description: schema.description ? `${schema.description}\n\n${who}` : who,
          "x-errand-roles": roles,
          security: this.#auth.enabled ? [{ bearer: [] }] : [],
        },
        onRequest: this.guard(permission),
        ...(method !== "GET" && schema.body === undefined ? { preValidation: refuseBodyFields } : {}),
        handler,
      });
    };
  }

  /** An `onRequest` hook that lets through only a principal with `permission` (anyone, without auth). */
  guard(permission: Permission | readonly Permission[]): (request: FastifyRequest) => Promise<void> {
    return async (request) => {
      if (!this.#auth.enabled) return;
      const principal = await this.#auth.authenticate(request);
      checkPermission(principal, permission);
      this.#principals.set(request, principal);
    };
  }

  /** Who made the request, once its guard passed; null without auth. */
  principal(request: FastifyRequest): Principal | null {
    return this.#principals.get(request) ?? null;
  }
}

/**
 * Refuses a body other than none or `{}` on a change that takes none (cancel, prune, a DELETE…),
 * as the schema `{ type: object, additionalProperties: false }` the document gives it would, with
 * its schema error in `details`: a field sent there does nothing, and the caller should know.
 */
async function refuseBodyFields(request: FastifyRequest): Promise<void> {
  const b = request.body;
  if (b === undefined) return;
  const object = typeof b === "object" && b !== null && !Array.isArray(b);
  if (object && Object.keys(b).length === 0) return;
  const extra = object ? Object.keys(b)[0]! : undefined;
  const error = object
    ? {
        instancePath: "",
        schemaPath: "#/additionalProperties",
        keyword: "additionalProperties",
        params: { additionalProperty: extra },
        message: "must NOT have additional properties",
      }
    : {
        instancePath: "",
        schemaPath: "#/type",
        keyword: "type",
        params: { type: "object" },
        message: "must be object",
      };
  throw new ErrandError(
    "INVALID_REQUEST",
    object
      ? `body must NOT have additional properties: this route takes no fields (send {} or no body), got ${JSON.stringify(extra)}`
      : "body must be object: this route takes no fields (send {} or no body)",
    { details: [error] },
  );
}

/** A request's path parameters; the route's schema has checked them. */
export const params = (request: FastifyRequest) => request.params as Record<string, string>;

/** A request's body as the route's schema has checked it (`{}` for none). */
export const body = <T>(request: FastifyRequest) => (request.body ?? {}) as T;
