import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type Authenticator, checkPermission, type Permission, type Principal } from "./auth.js";
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

  /** A {@link Route} registering on `app`. */
  on(app: FastifyInstance): Route {
    return (key, permission, handler) => {
      const [method, url] = key.split(" ") as [string, string];
      app.route({
        method: method as "GET",
        url,
        schema: { ...routeSchemas[key], security: this.#auth.enabled ? [{ bearer: [] }] : [] },
        onRequest: this.guard(permission),
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

/** A request's path parameters; the route's schema has checked them. */
export const params = (request: FastifyRequest) => request.params as Record<string, string>;

/** A request's body as the route's schema has checked it (`{}` for none). */
export const body = <T>(request: FastifyRequest) => (request.body ?? {}) as T;
