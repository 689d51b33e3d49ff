import swagger from "@fastify/swagger";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyListenOptions,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from "fastify";
import { MAX_TIMER_MS } from "../duration.js";
import { ErrandError } from "../errors.js";
import { checkKnownKeys } from "../known-keys.js";
import { checkLogger, isLoggerLike, SERVER_LOGGER_METHODS } from "../logger.js";
import { Maintainer } from "../maintenance/maintainer.js";
import { type Repeating, repeat } from "../maintenance/repeat.js";
import type { Queue } from "../queue.js";
import { checkObject, checkQueueArgument } from "../queue-checks.js";
import { checkFlagOption, checkInt, describe } from "../validation.js";
import { Authenticator, type AuthOptions } from "./auth.js";
import { parseJsonBody } from "./body.js";
import type { ServerContext } from "./context.js";
import { registerDashboard } from "./dashboard.js";
import { clientErrorResponse, toErrorResponse } from "./http-errors.js";
import { type JobTypeConfig, JobTypeRegistry } from "./job-types.js";
import { lazyValidators } from "./lazy-validators.js";
import { DEFAULT_DRAIN_GRACE_MS, OpenConnections, ServerLifecycle } from "./lifecycle.js";
import { LongPoll } from "./long-poll.js";
import { ServerMetrics } from "./metrics.js";
import { withErrorCodes } from "./openapi.js";
import { PushDelivery, type PushOptions } from "./push.js";
import { type RequestCheckOptions, RequestChecks } from "./request-checks.js";
import * as jobRoutes from "./routes/jobs.js";
import * as opsRoutes from "./routes/ops.js";
import * as queueRoutes from "./routes/queues.js";
import * as scheduleRoutes from "./routes/schedules.js";
import * as typeRoutes from "./routes/types.js";
import * as workerRoutes from "./routes/worker-protocol.js";
import { Routing } from "./routing.js";
import { scheduleSchema, sharedSchemas } from "./schemas.js";
import { StatsHistory } from "./stats-history.js";
import { checkTrustProxy, type TrustProxy } from "./trust-proxy.js";

/**
 * Options for {@link createServer}.
 * @since 0.1.0
 */
export interface ServerOptions extends RequestCheckOptions {
  /** The queue the server exposes (its store, clock and retention). */
  queue: Queue;
  /**
   * Which proxies to believe about the client: Fastify's `trustProxy`. With it, the client address
   * (what failed logins are counted by, see {@link AuthOptions.maxFailures}) comes from
   * `X-Forwarded-For`, and the host checked against `allowedHosts` and `Origin` from
   * `X-Forwarded-Host`, when the request comes from a trusted proxy. Give the proxies' addresses or
   * CIDRs (`"10.0.0.0/8"`, `"loopback"`; a comma-separated string or an array), or a function of
   * each hop's address; `true` believes any sender, so use it only when nothing but the proxy can
   * reach the server. A hop count is refused: Fastify 5 would take it and trust no proxy at all.
   * @defaultValue false (the client is the TCP peer)
   */
  trustProxy?: TrustProxy;
  /**
   * Tokens and/or an `authorize` hook. Without auth every route is open and `listen()` refuses any
   * address but loopback.
   */
  auth?: AuthOptions;
  /**
   * Largest request body in bytes; larger ones get 413 before they are buffered. The default
   * leaves room for the largest payload, result or checkpoint the queue takes and the request
   * around it, so whatever the queue accepts in code it accepts over HTTP too.
   * @defaultValue the queue's `maxPayloadBytes` + 65,536, and at least 1,048,576 (1,114,112 at
   * the queue's default `maxPayloadBytes`)
   */
  bodyLimit?: number;
  /**
   * Job types to know from the start: written to the store (unless it holds them already), where
   * types PUT through any server on the store are kept too.
   */
  types?: JobTypeConfig[];
  /**
   * How often the server reads the store's job types, to pick up ones created, changed or deleted
   * through another server on the same store (one small read each time).
   * @defaultValue 1000
   */
  typesRefreshMs?: number;
  /**
   * The most job types the store may hold when a type is added through this server (`PUT
   * /v1/types/:type`, `types`): a new one past it is refused with `LIMIT_REACHED` (409). Every
   * server keeps every type in memory and reads them all each `typesRefreshMs`. 1 to 100,000.
   * @defaultValue 1000
   */
  maxJobTypes?: number;
  /**
   * Run maintenance (lease recovery, expiry, cron, pruning) in this server, on the queue's clock.
   * Safe with any number of servers and workers (all compare-and-set).
   * @defaultValue true
   */
  maintenance?: boolean;
  /** How often the server sweeps (lease recovery, expiry, cron), with `maintenance`. @defaultValue 1000 */
  sweepIntervalMs?: number;
  /** How often the server prunes jobs past retention, with `maintenance`. @defaultValue 60_000 */
  pruneIntervalMs?: number;
  /**
   * While a long-polling lease waits, it also looks again this often, to find delayed jobs that
   * came due (enqueues wake it at once).
   * @defaultValue 1000
   */
  leasePollMs?: number;
  /** Push delivery tuning. */
  push?: PushOptions;
  /**
   * How long `close()` waits for the requests in flight to be answered (an enqueue being written,
   * a report) before it cuts their connections, on the queue's clock. Idle keep-alive connections
   * are closed at once, and waiting long-polls answered at once, whatever this is. 0 to 2^31 − 1.
   * @defaultValue 10_000
   */
  closeGraceMs?: number;
  /**
   * Fastify's logger option (`true`, or pino options), or a pino-compatible logger instance to log
   * through (callable `error`, `warn`, `info`, `debug`, `fatal`, `trace` and `child`). Anything
   * else is refused with `INVALID_OPTION`.
   * @defaultValue false
   */
  logger?: FastifyServerOptions["logger"] | FastifyBaseLogger;
  /**
   * Serve the web dashboard at `/dashboard/` (and redirect `/` there). Its static files need no
   * token; the data it shows comes from the API, which does.
   * @defaultValue true
   */
  dashboard?: boolean;
}

/** What the server keeps, reachable as `server.errand`. */
export interface ErrandServerState {
  /** The queue the server exposes (`options.queue`). */
  queue: Queue;
  /** The job types the server knows, shared through the store. */
  types: JobTypeRegistry;
  /** The Prometheus metrics `/metrics` serves. */
  metrics: ServerMetrics;
  /** Push delivery of the types with a push target. */
  push: PushDelivery;
  /** The server's authentication: its tokens, `authorize` hook and failure throttling. */
  auth: Authenticator;
  /** Enqueues, completions and failures per second, for `GET /v1/stats/history`. */
  history: StatsHistory;
  /** Long-poll lease requests waiting for a job right now. */
  leaseWaiters(): number;
  /**
   * Begins shutting down without closing: the server hands out no more work, and serves
   * everything else. Lease requests are answered 503 `UNAVAILABLE` with `Retry-After` (a long-poll
   * waiting now at once; jobs a claim under way took go back, their attempts unspent); push
   * delivery leases nothing more and lets the deliveries in flight finish; `/readyz` answers 503, so
   * a load balancer stops routing here. Reports (complete, fail, heartbeat, checkpoint, release,
   * snooze, report), enqueues and reads are served as before.
   *
   * Resolves once the push deliveries in flight are over and every attempt this server handed out
   * is reported (through it), ended otherwise or past its lease, or after `graceMs` of the queue's
   * clock, whichever comes first; then `close()` the server. Draining is never undone; `close()`
   * drains too (without waiting for reports). `errand serve` drains on SIGTERM and SIGINT while its
   * in-process worker closes.
   * @example
   * ```ts
   * process.once("SIGTERM", async () => {
   *   await Promise.all([server.errand.drain({ graceMs: 10_000 }), worker.close({ graceMs: 10_000 })]);
   *   await server.close();
   *   await queue.close();
   * });
   * ```
   * @throws ErrandError `INVALID_OPTION` for a `graceMs` that is not an integer from 0 to 2^31 − 1.
   * @since 0.2.0
   */
  drain(options?: { graceMs?: number }): Promise<void>;
  /** True once the server drains or closes: see {@link ErrandServerState.drain}. */
  draining(): boolean;
}

declare module "fastify" {
  interface FastifyInstance {
    errand: ErrandServerState;
  }
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);
const DRAIN_KEYS = new Set(["graceMs"]);
const SERVER_KEYS = new Set([
  "queue",
  "auth",
  "bodyLimit",
  "types",
  "typesRefreshMs",
  "maxJobTypes",
  "maintenance",
  "sweepIntervalMs",
  "pruneIntervalMs",
  "leasePollMs",
  "push",
  "closeGraceMs",
  "logger",
  "dashboard",
  "allowedHosts",
  "trustProxy",
]);
/**
 * The longest path segment the router takes (Fastify's default, 100, refused long ids with 414). A
 * job id is up to 255 characters, none of which needs more than 3 when percent-encoded (`/` is
 * `%2F`), and names are shorter: so every id and name errand accepts fits whether the router
 * measures a segment encoded or decoded (find-my-way 9 measures it decoded). Longer segments get
 * 414, shorter ones past an id's or name's bound 400, from the route's schema; both in errand's shape.
 */
const MAX_PARAM_LENGTH = 3 * 255;

/** The route modules, in the order their routes appear in the OpenAPI document. */
const ROUTES = [jobRoutes, workerRoutes, typeRoutes, scheduleRoutes, queueRoutes, opsRoutes];

/**
 * The Ajv options of the server's request validation: requests are checked as sent, never
 * coerced or trimmed. Exported for the test that compiles every route's schemas with them.
 * @internal
 */
export const SERVER_AJV = {
  customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, strict: false },
} as const;

/**
 * Builds errand's HTTP server: JSON under `/v1`, the OpenAPI 3.1 document at `/openapi.json`,
 * Prometheus metrics at `/metrics`, `/healthz` and `/readyz`. Call `listen()` on the result; it
 * binds 127.0.0.1 unless told otherwise, and refuses a non-loopback address without auth.
 * @example
 * ```ts
 * const queue = await openQueue("sqlite:./errand.db");
 * const server = await createServer({ queue, auth: { tokens: [{ token: process.env.TOKEN!, role: "admin" }] } });
 * await server.listen({ port: 8080 });
 * ```
 * @since 0.1.0
 */
export async function createServer(options: ServerOptions): Promise<FastifyInstance> {
  checkKnownKeys("createServer", options, SERVER_KEYS);
  const queue = checkQueueArgument("createServer", options.queue);
  const maintenance = checkFlagOption("createServer: maintenance", options.maintenance, true);
  const dashboard = checkFlagOption("createServer: dashboard", options.dashboard, true);
  const trustProxy = checkTrustProxy(options.trustProxy) ?? false;
  if (options.types !== undefined && !Array.isArray(options.types)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `createServer: types must be an array of job type settings, got ${describe(options.types)}`,
    );
  }
  const bodyLimit = checkInt("bodyLimit", options.bodyLimit ?? defaultBodyLimit(queue.maxPayloadBytes), 1);
  const leasePollMs = checkInt("leasePollMs", options.leasePollMs ?? 1000, 1, MAX_TIMER_MS);
  const typesRefreshMs = checkInt("typesRefreshMs", options.typesRefreshMs ?? 1000, 1, MAX_TIMER_MS);
  // Checked here, not when the timers start at ready(): a bad option fails createServer.
  const sweepIntervalMs = checkInt("sweepIntervalMs", options.sweepIntervalMs ?? 1000, 1, MAX_TIMER_MS);
  const pruneIntervalMs = checkInt("pruneIntervalMs", options.pruneIntervalMs ?? 60_000, 1, MAX_TIMER_MS);
  const closeGraceMs = checkInt("closeGraceMs", options.closeGraceMs ?? 10_000, 0, MAX_TIMER_MS);
  const logging = loggerOption(options.logger);
  const auth = new Authenticator(options.auth === undefined ? {} : options.auth, queue.clock);
  const checks = new RequestChecks(options, auth.enabled);
  // Checks maxJobTypes (INVALID_OPTION) before anything is written or subscribed.
  const types = new JobTypeRegistry(queue, options.maxJobTypes);
  // Checks its options: before the types are written and anything subscribes to the queue, so a
  // refusal changes nothing and leaves no listener behind.
  const push = new PushDelivery(queue, types, options.push, maintenance);
  // Before anything subscribes to the queue: bad types end createServer with nothing to undo.
  await types.refresh();
  await types.ensure(options.types ?? []);
  // Its failed reads are logged once the app (and its logger) exists.
  let logStoreError: (error: unknown) => void = () => {};
  const metrics = new ServerMetrics(queue, (error) => logStoreError(error));
  const history = new StatsHistory(queue.clock).follow(queue);
  const longPoll = new LongPoll(queue);
  const lifecycle = new ServerLifecycle();
  // Draining: the long-polls waiting now answered (the lease route answers them 503), push
  // leasing nothing more and its deliveries in flight waited for.
  lifecycle.onDrain(() => {
    longPoll.close();
    return undefined;
  });
  lifecycle.onDrain(() => push.stop());
  try {
    const app = Fastify({
      ...logging,
      bodyLimit,
      ajv: SERVER_AJV,
      // Each route's validators compiled on its first request, not in ready() (lazy-validators.ts).
      schemaController: { compilersFactory: { buildValidator: lazyValidators() } },
      // close() closes idle keep-alive connections and waits for the ones with a request in
      // flight (`true` cut those off: an enqueue stored, its answer lost); the preClose hook below
      // closes each connection once its answer is out, and bounds the wait by closeGraceMs.
      forceCloseConnections: "idle",
      trustProxy,
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      // The router's own refusals (bad percent-encoding, an over-long segment) in errand's shape,
      // after the request checks: a foreign host or another site's change is refused (403, 415)
      // whatever its path, as it would be with a path the router can read.
      frameworkErrors: (error, request, reply) => {
        let refusal: unknown = error;
        try {
          checks.check(request as unknown as FastifyRequest);
        } catch (checked) {
          refusal = checked;
        }
        const { status, body } = toErrorResponse(refusal);
        return (reply as unknown as FastifyReply).status(status).send(body);
      },
      // Requests Node itself refused (a head over its header limit) in errand's shape too.
      clientErrorHandler: (error, socket) => {
        const response = clientErrorResponse(error as { code?: unknown });
        if (response !== null && socket.writable) socket.write(response);
        socket.destroy(error);
      },
    });
    const ctx: ServerContext = {
      queue,
      auth,
      routing: new Routing(auth),
      types,
      metrics,
      push,
      history,
      longPoll,
      leasePollMs,
      maintenance,
      lifecycle,
    };
    const state: ErrandServerState = {
      queue,
      types,
      metrics,
      push,
      auth,
      history,
      leaseWaiters: () => longPoll.size,
      drain: async (o = {}) => {
        checkObject("drain", "options", o);
        checkKnownKeys("drain", o, DRAIN_KEYS);
        const graceMs = checkInt("graceMs", o.graceMs ?? DEFAULT_DRAIN_GRACE_MS, 0, MAX_TIMER_MS);
        return lifecycle.drain(queue.clock, graceMs);
      },
      draining: () => lifecycle.draining,
    };
    app.decorate("errand", state);
    await speakJson(app, checks);
    for (const routes of ROUTES) routes.register(app, ctx);
    if (dashboard) registerDashboard(app);

    logStoreError = (error) => app.log.warn({ err: error }, "metrics: reading the store's counts failed");
    const maintainer = maintenance
      ? new Maintainer(queue, {
          sweepIntervalMs,
          pruneIntervalMs,
          onError: (error) => app.log.error({ err: error }, "maintenance failed"),
        })
      : null;
    // The queue's faults that no caller sees (a schedule's tick skipped, a stored type unreadable):
    // its error event is otherwise heard by no one in a server. Subscribed last, as nothing after
    // it can fail and leave it behind.
    const onQueueError = (error: unknown) => app.log.error({ err: error }, "queue error");
    let typesRefresh: Repeating | null = null;
    app.addHook("onReady", async () => {
      await maintainer?.start();
      typesRefresh = repeat(
        queue.clock,
        typesRefreshMs,
        () => types.refresh(),
        (error) => app.log.error({ err: error }, "reading job types failed"),
      );
      push.start();
    });
    // Closing: Fastify runs the preClose hooks, then stops listening and waits for the connections
    // still open, then runs the onClose hooks. What would hold a connection is answered here
    // first (long-polls, a stats read waiting its turn); each request in flight ends its
    // connection once answered; and past closeGraceMs the rest are cut.
    let closing = false;
    let cancelGrace = () => {};
    const connections = new OpenConnections(app.server);
    app.addHook("preClose", async () => {
      closing = true;
      cancelGrace = queue.clock.setTimer(closeGraceMs, () => app.server.closeAllConnections());
      // A stats request waiting for its count's turn (up to 5 s) is answered, not cut off by the close.
      queue.hurryReads();
      const stopping = Promise.all([maintainer?.stop(), typesRefresh?.stop()]);
      // Long-polls answered, push leasing nothing more (its deliveries are waited for on close).
      lifecycle.begin();
      await stopping;
      // Idle connections closed now, the others once their answer is out: keep-alive would hold
      // the close until each client let go.
      connections.closeIdle();
    });
    // An answer sent while closing says so, so the client opens a new connection for its next.
    app.addHook("onSend", async (_request, reply, payload) => {
      if (closing) void reply.header("connection", "close");
      return payload;
    });
    app.addHook("onClose", async () => {
      cancelGrace();
      // The push deliveries in flight, and a lease under way, waited for here rather than in
      // preClose, which Fastify fails past its pluginTimeout (10 s): a delivery may take its
      // target's timeoutMs (30 s by default). They hold no connection of this server's.
      await push.stop();
      queue.off("error", onQueueError);
      longPoll.detach();
      metrics.close();
      history.close();
    });
    listenOnLoopback(app, auth, checks);
    queue.on("error", onQueueError);
    return app;
  } catch (error) {
    // What subscribed to the queue above lets go: a server that was never made holds nothing.
    longPoll.detach();
    metrics.close();
    history.close();
    throw error;
  }
}

/**
 * Makes `app` speak errand's JSON: requests parsed as JSON only and checked by {@link RequestChecks},
 * every error and unknown route answered in errand's shape, and the OpenAPI document built from the
 * shared schemas and the routes registered after this.
 */
async function speakJson(app: FastifyInstance, checks: RequestChecks): Promise<void> {
  // Responses are built here in their final shape; plain JSON.stringify keeps them exact (the
  // response schemas document them).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // JSON only: Fastify's text/plain parser would let a form's body through (see request-checks.ts).
  app.removeAllContentTypeParsers();
  // As bytes, decoded in parseJsonBody: Fastify's "string" decodes whatever arrives, turning bytes
  // that are not UTF-8 into U+FFFD. The charset is checked before (RequestChecks: only UTF-8).
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.setErrorHandler((error, request, reply) => {
    const { status, body } = toErrorResponse(error);
    // A refusal that says when to come back (a client throttled, a server draining) says it in
    // Retry-After too, in whole seconds; a draining server's is expected, not a failure to log.
    const after = (body.details as { retryAfterMs?: unknown } | null)?.retryAfterMs;
    if (status >= 500 && typeof after !== "number") request.log.error({ err: error }, "request failed");
    if (body.code === "RATE_LIMITED" || typeof after === "number") {
      void reply.header("retry-after", Math.ceil((typeof after === "number" ? after : 60_000) / 1000));
    }
    return reply.status(status).send(body);
  });
  app.addHook("onRequest", async (request) => checks.check(request));
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      code: "NOT_FOUND",
      message: `no route ${request.method} ${request.url.split("?")[0]}`,
      details: null,
    }),
  );

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "errand",
        version: "0.1.0",
        description: "errand's HTTP API: enqueue, inspect and change jobs, and run remote workers.",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (doc) =>
      "openapiObject" in doc ? withErrorCodes(withEveryRequestsTerms(doc.openapiObject)) : doc.swaggerObject,
  });
  for (const s of [...sharedSchemas, scheduleSchema]) app.addSchema(s);
}

/** An OpenAPI operation, as far as {@link withEveryRequestsTerms} reads and writes it. */
interface Operation {
  requestBody?: unknown;
  responses: Record<string, unknown>;
}

/** The methods that change something: each needs `content-type: application/json` (RequestChecks). */
const CHANGES = new Set(["post", "put", "patch", "delete"]);

/**
 * The OpenAPI document with what every route answers beyond its own schema, so that a client
 * generated from it can talk to the server: a change with no body of its own still takes a JSON
 * one (`{}`), since the server refuses a change without `content-type: application/json` (415,
 * its guard against cross-site requests); and the statuses any request may meet (413 and 415 for
 * a change; 414 and 431 for a path or headers too long; 429 for a client throttled after failed
 * logins; 503 when the store is down or the server closing), each in errand's error shape.
 */
/**
 * A request body the server takes by default: the largest payload the queue takes, with 64 KiB for
 * the request around it (type, options, an id), and never less than 1 MiB, which a failure's
 * message and stack at their bounds can need.
 */
export function defaultBodyLimit(maxPayloadBytes: number): number {
  return Math.max(1_048_576, maxPayloadBytes + 65_536);
}

function withEveryRequestsTerms<D extends { paths?: object }>(doc: D): D {
  const error = (description: string) => ({
    description,
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
  });
  for (const [path, item] of Object.entries(doc.paths ?? {}) as Array<
    [string, Record<string, Operation> | undefined]
  >) {
    for (const [method, op] of Object.entries(item ?? {})) {
      if (typeof op !== "object" || op === null || typeof op.responses !== "object") continue;
      const responses = op.responses;
      if (path === "/v1/lease" && method === "post") responses["503"] ??= LEASE_UNAVAILABLE;
      if (CHANGES.has(method)) {
        op.requestBody ??= {
          description:
            "No fields: send `{}` (or no body) with `content-type: application/json`, which every change needs",
          required: false,
          content: { "application/json": { schema: { type: "object", additionalProperties: false } } },
        };
        responses["413"] ??= error("The request body is larger than the server's bodyLimit");
        responses["415"] ??= error(
          "A change sent without `content-type: application/json`, compressed, or with a charset other than utf-8",
        );
      }
      responses["414"] ??= error("A path segment longer than the router takes");
      responses["429"] ??= error("Too many failed logins from this client address: see Retry-After");
      responses["431"] ??= error("Request headers larger than the server takes");
      responses["503"] ??= error("The store is unreachable, or the server is closing");
    }
  }
  return doc;
}

/**
 * The lease's 503, said in full: besides a store that is down, a server that drains or closes
 * answers every lease so (lifecycle.ts), a long-poll waiting then at once, with `Retry-After`.
 */
const LEASE_UNAVAILABLE = {
  description:
    "The store is unreachable, or the server is shutting down (draining or closing): it hands out no more jobs, and answers `UNAVAILABLE` with `Retry-After` (seconds), a long-poll waiting then at once. Lease again after that, from another server if there is one; reports of the jobs already leased are still taken while it drains",
  headers: {
    "Retry-After": {
      description: "Seconds to wait before leasing again (sent when the server is shutting down)",
      schema: { type: "integer", minimum: 0 },
    },
  },
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
};

/** Binds `listen` to loopback unless told otherwise, and refuses anything else without auth. */
function listenOnLoopback(app: FastifyInstance, auth: Authenticator, checks: RequestChecks): void {
  const listen = app.listen.bind(app) as (o: FastifyListenOptions) => Promise<string>;
  (app as { listen: unknown }).listen = (o: FastifyListenOptions = {}) => {
    const host = o.host ?? "127.0.0.1";
    if (!LOOPBACK.has(host) && !auth.enabled) {
      return Promise.reject(
        new ErrandError(
          "INVALID_OPTION",
          `refusing to listen on ${host} without auth: configure tokens (ERRAND_TOKENS) or bind 127.0.0.1`,
        ),
      );
    }
    return listen({ ...o, host }).then((address) => {
      checks.bound(host, app.server.address());
      return address;
    });
  };
}

/** The server's `logger` option as Fastify takes it: an instance goes to `loggerInstance`. */
function loggerOption(
  logger: ServerOptions["logger"],
): Pick<FastifyServerOptions, "logger" | "loggerInstance"> {
  if (logger === undefined || typeof logger === "boolean") return { logger: logger ?? false };
  if (isLoggerLike(logger)) {
    return { loggerInstance: checkLogger("createServer: logger", logger, SERVER_LOGGER_METHODS) };
  }
  if (typeof logger !== "object" || logger === null || Array.isArray(logger)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `createServer: logger must be a boolean, pino options or a pino-compatible logger; got ${logger === null ? "null" : Array.isArray(logger) ? "an array" : typeof logger}`,
    );
  }
  return { logger: logger as FastifyServerOptions["logger"] };
}
