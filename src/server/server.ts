import { isDeepStrictEqual } from "node:util";
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
import type { Job } from "../job.js";
import { checkKnownKeys } from "../known-keys.js";
import { checkLogger, isLoggerLike, SERVER_LOGGER_METHODS } from "../logger.js";
import { Maintainer } from "../maintenance/maintainer.js";
import { type Repeating, repeat } from "../maintenance/repeat.js";
import type { EnqueueOptions, Queue } from "../queue.js";
import type { Completion } from "../store/instrument.js";
import { checkInt, toJsonText } from "../validation.js";
import {
  Authenticator,
  type AuthOptions,
  checkPermission,
  type Permission,
  type Principal,
  ROLE_PERMISSIONS,
  readsOwnJobsOnly,
} from "./auth.js";
import { parseJsonBody } from "./body.js";
import { registerDashboard } from "./dashboard.js";
import { toErrorResponse } from "./http-errors.js";
import { type JobTypeConfig, JobTypeRegistry, publicType } from "./job-types.js";
import { ServerMetrics } from "./metrics.js";
import { PushDelivery, type PushOptions } from "./push.js";
import { type RequestCheckOptions, RequestChecks } from "./request-checks.js";
import { type RouteKey, routeSchemas, scheduleSchema, sharedSchemas } from "./schemas.js";
import { StatsHistory } from "./stats-history.js";

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
   * CIDRs (`"10.0.0.0/8"`), or the number of proxy hops; `true` believes any sender, so use it only
   * when nothing but the proxy can reach the server.
   * @defaultValue false (the client is the TCP peer)
   */
  trustProxy?: FastifyServerOptions["trustProxy"];
  /**
   * Tokens and/or an `authorize` hook. Without auth every route is open and `listen()` refuses any
   * address but loopback.
   */
  auth?: AuthOptions;
  /**
   * Largest request body in bytes; larger ones get 413 before they are buffered.
   * @defaultValue 1_048_576
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
   * Run maintenance (lease recovery, expiry, cron, pruning) in this server, on the queue's clock.
   * Safe with any number of servers and workers (all compare-and-set).
   * @defaultValue true
   */
  maintenance?: boolean;
  /** @defaultValue 1000 */
  sweepIntervalMs?: number;
  /** @defaultValue 60_000 */
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
  queue: Queue;
  types: JobTypeRegistry;
  metrics: ServerMetrics;
  push: PushDelivery;
  auth: Authenticator;
  /** Enqueues, completions and failures per second, for `GET /v1/stats/history`. */
  history: StatsHistory;
  /** Long-poll lease requests waiting for a job right now. */
  leaseWaiters(): number;
}

declare module "fastify" {
  interface FastifyInstance {
    errand: ErrandServerState;
  }
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);
const SERVER_KEYS = new Set([
  "queue",
  "auth",
  "bodyLimit",
  "types",
  "typesRefreshMs",
  "maintenance",
  "sweepIntervalMs",
  "pruneIntervalMs",
  "leasePollMs",
  "push",
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

/** A job as sent over HTTP (times become ISO strings when serialised). */
type WireJob = Job & { duplicate?: boolean };

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
  const { queue } = options;
  const bodyLimit = checkInt("bodyLimit", options.bodyLimit ?? 1_048_576, 1);
  const leasePollMs = checkInt("leasePollMs", options.leasePollMs ?? 1000, 1, MAX_TIMER_MS);
  const typesRefreshMs = checkInt("typesRefreshMs", options.typesRefreshMs ?? 1000, 1, MAX_TIMER_MS);
  // Checked here, not when the timers start at ready(): a bad option fails createServer.
  const sweepIntervalMs = checkInt("sweepIntervalMs", options.sweepIntervalMs ?? 1000, 1, MAX_TIMER_MS);
  const pruneIntervalMs = checkInt("pruneIntervalMs", options.pruneIntervalMs ?? 60_000, 1, MAX_TIMER_MS);
  const logging = loggerOption(options.logger);
  const auth = new Authenticator(options.auth ?? {}, queue.clock);
  const checks = new RequestChecks(options, auth.enabled);
  const types = new JobTypeRegistry(queue);
  // Before anything subscribes to the queue: bad types end createServer with nothing to undo.
  await types.refresh();
  await types.ensure(options.types ?? []);
  const metrics = new ServerMetrics(queue);
  const push = new PushDelivery(queue, types, options.push, options.maintenance ?? true);
  const history = new StatsHistory(queue.clock).follow(queue);

  const app = Fastify({
    ...logging,
    bodyLimit,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, strict: false } },
    forceCloseConnections: true,
    trustProxy: options.trustProxy ?? false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // The router's own refusals (bad percent-encoding, an over-long segment) in errand's shape.
    frameworkErrors: (error, _request, reply) => {
      const { status, body } = toErrorResponse(error);
      return (reply as unknown as FastifyReply).status(status).send(body);
    },
  });
  /**
   * Long-polls waiting now, oldest first, grouped by what they ask for (types, queues); closing
   * the server ends them. A wake-up from the store rouses the oldest waiter of each group; a waiter
   * that then leases jobs passes the wake-up on to the next of its group (more may be ready), and
   * one that finds nothing ends its group's chain. Waiters of one group are interchangeable, so an
   * enqueue costs a claim or a few per group, not one per waiting worker: with hundreds of idle
   * long-polls that is the difference between a claim and a thundering herd.
   */
  const groups = new Map<string, Set<() => void>>();
  const waiting = {
    get size() {
      let n = 0;
      for (const g of groups.values()) n += g.size;
      return n;
    },
    all: () => [...groups.values()].flatMap((g) => [...g]),
  };
  /** Counts store wake-ups, so a lease that raced one looks again instead of waiting. */
  let wakeups = 0;
  const handoff = (group: string) => {
    const [oldest] = groups.get(group) ?? [];
    oldest?.();
  };
  const unsubscribeWake = queue.onWake(() => {
    wakeups++;
    for (const group of [...groups.keys()]) handoff(group);
  });
  app.decorate("errand", { queue, types, metrics, push, auth, history, leaseWaiters: () => waiting.size });

  // Responses are built here in their final shape; plain JSON.stringify keeps them exact (the
  // response schemas document them).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // JSON only: Fastify's text/plain parser would let a form's body through (see request-checks.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.setErrorHandler((error, request, reply) => {
    const { status, body } = toErrorResponse(error);
    if (status >= 500) request.log.error({ err: error }, "request failed");
    if (body.code === "RATE_LIMITED") {
      const after = (body.details as { retryAfterMs?: number } | null)?.retryAfterMs ?? 60_000;
      void reply.header("retry-after", Math.ceil(after / 1000));
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
  });
  for (const s of [...sharedSchemas, scheduleSchema]) app.addSchema(s);

  /** Registers a route with its schema from schemas.ts and the permission it needs. */
  const route = (
    key: RouteKey,
    permission: Permission,
    handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  ) => {
    const [method, url] = key.split(" ") as [string, string];
    app.route({
      method: method as "GET",
      url,
      schema: { ...routeSchemas[key], security: auth.enabled ? [{ bearer: [] }] : [] },
      onRequest: guard(permission),
      handler,
    });
  };
  /** Who made each request, once its guard passed (none without auth). */
  const principals = new WeakMap<FastifyRequest, Principal>();
  const guard = (permission: Permission) => async (request: FastifyRequest) => {
    if (!auth.enabled) return;
    const principal = await auth.authenticate(request);
    checkPermission(principal, permission);
    principals.set(request, principal);
  };
  const principal = (r: FastifyRequest) => principals.get(r) ?? null;
  const params = (r: FastifyRequest) => r.params as Record<string, string>;
  const body = <T>(r: FastifyRequest) => (r.body ?? {}) as T;

  /**
   * The owner an enqueue records: the principal's name, or (admins only) the owner it names.
   * Without auth there is no principal, and the request's own `owner`, if any, is kept.
   */
  const ownerFor = (p: Principal | null, given: string | undefined): string | undefined => {
    if (!p) return given;
    if (given !== undefined && given !== p.name && !ROLE_PERMISSIONS[p.role].includes("manage")) {
      throw new ErrandError(
        "FORBIDDEN",
        `role "${p.role}" enqueues as itself (${JSON.stringify(p.name ?? null)}); only an admin may name another owner`,
        { details: { role: p.role, needs: "manage" } },
      );
    }
    return given ?? p.name;
  };
  const withOwner = (p: Principal | null, item: ReturnType<typeof toEnqueueItem>) => {
    const owner = ownerFor(p, item.options.owner);
    return { ...item, options: { ...item.options, ...(owner === undefined ? {} : { owner }) } };
  };
  /** False for a job the principal may not read: another owner's, for a producer. */
  const readable = (p: Principal | null, job: { owner: string | null }) =>
    !readsOwnJobsOnly(p) || job.owner === p!.name;
  /**
   * A just-enqueued job as the caller may see it: a duplicate of a job it may not read is only
   * `{ id, duplicate }` (it learns that the id or unique key is taken, nothing of the job).
   */
  const enqueued = (p: Principal | null, job: WireJob) =>
    job.duplicate && !readable(p, job) ? { id: job.id, duplicate: true } : job;

  // ---- enqueue and read ------------------------------------------------------------------

  route("POST /v1/jobs", "enqueue", async (request, reply) => {
    const b = body<EnqueueBody | { jobs: EnqueueBody[] }>(request);
    const p = principal(request);
    if ("jobs" in b) {
      const jobs = await queue.enqueueBatch(b.jobs.map((j) => withOwner(p, toEnqueueItem(j))));
      return reply
        .status(jobs.every((j) => j.duplicate) ? 200 : 201)
        .send({ jobs: jobs.map((j) => enqueued(p, j)) });
    }
    const { job, payload, options } = withOwner(p, toEnqueueItem(b));
    const one = await queue.enqueue(job, payload, options);
    return reply.status(one.duplicate ? 200 : 201).send(enqueued(p, one));
  });

  route("PUT /v1/jobs/:id", "enqueue", async (request, reply) => {
    const p = principal(request);
    const { job, payload, options } = withOwner(p, toEnqueueItem(body<EnqueueBody>(request)));
    const one = await queue.enqueue(job, payload, { ...options, id: params(request).id });
    return reply.status(one.duplicate ? 200 : 201).send(enqueued(p, one));
  });

  route("GET /v1/jobs/:id", "read", async (request) => {
    const job = await queue.get(params(request).id!);
    // Another owner's job is not found, for a producer: it learns nothing of it, not even that it exists.
    if (!job || !readable(principal(request), job)) {
      throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(params(request).id)}`);
    }
    return job;
  });

  route("GET /v1/jobs", "read", async (request) => {
    const q = request.query as Record<string, string | undefined>;
    const p = principal(request);
    let owner = q.owner;
    if (readsOwnJobsOnly(p)) {
      if (owner !== undefined && owner !== p!.name) {
        throw new ErrandError("FORBIDDEN", `role "${p!.role}" lists only its own jobs (owner ${p!.name})`, {
          details: { role: p!.role, owner: p!.name },
        });
      }
      owner = p!.name;
    }
    return queue.list({
      ...(q.state ? { state: q.state as Job["state"] } : {}),
      ...(q.queue ? { queue: q.queue } : {}),
      ...(q.type ? { type: q.type } : {}),
      ...(owner ? { owner } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      limit: q.limit === undefined ? 50 : Number(q.limit),
    });
  });

  route("POST /v1/jobs/:id/cancel", "manage", async (request) => queue.cancel(params(request).id!));
  route("POST /v1/jobs/:id/retry", "manage", async (request) => queue.retry(params(request).id!));
  route("POST /v1/jobs/:id/replay", "manage", async (request, reply) =>
    reply.status(201).send(await queue.replay(params(request).id!)),
  );
  route("POST /v1/jobs/:id/reschedule", "manage", async (request) =>
    queue.reschedule(params(request).id!, body(request)),
  );

  // ---- the remote-worker protocol ---------------------------------------------------------

  /**
   * Attempts this server handed out, by id: a remote completion names only the id and attempt,
   * and the job as handed out gives its `completed` event without reading it back.
   */
  const leased = new Map<string, Job>();
  let closing = false;

  route("POST /v1/lease", "work", async (request, reply) => {
    const b = body<LeaseBody>(request);
    const waitMs = b.waitMs ?? 0;
    const leaseOptions = {
      ...(b.types ? { types: b.types } : {}),
      ...(b.queues ? { queues: b.queues } : {}),
      limit: b.limit ?? 1,
      leaseMs: b.leaseMs ?? 30_000,
      workerId: b.workerId ?? `remote:${request.ip}`,
      ...(b.maxWeight ? { maxWeight: b.maxWeight } : {}),
      ...(b.weightCap ? { weightCap: b.weightCap } : {}),
      // A server told not to run maintenance runs none, not even the lease API's own.
      ...(options.maintenance === false ? { maintenance: false } : {}),
    };
    if (!b.queues && !b.types) leaseOptions.queues = allQueues(types.list());
    const started = queue.clock.now();
    const lease = async () => {
      const t0 = performance.now();
      const jobs = await queue.lease(leaseOptions);
      metrics.claimSeconds.observe(
        { outcome: jobs.length ? "jobs" : "empty" },
        (performance.now() - t0) / 1000,
      );
      return jobs;
    };
    const group = JSON.stringify([leaseOptions.types ?? null, leaseOptions.queues ?? null]);
    let wake = () => {};
    const gone = () => wake();
    reply.raw.once("close", gone);
    try {
      let seen = wakeups;
      let jobs = await lease();
      while (jobs.length === 0 && !closing && !reply.raw.destroyed) {
        const left = started + waitMs - queue.clock.now();
        if (left <= 0) break;
        if (seen === wakeups) {
          await new Promise<void>((resolve) => {
            const cancel = queue.clock.setTimer(Math.min(left, leasePollMs), () => wake());
            wake = () => {
              cancel();
              const g = groups.get(group)!;
              g.delete(wake);
              if (g.size === 0) groups.delete(group);
              wake = () => {};
              resolve();
            };
            let g = groups.get(group);
            if (!g) groups.set(group, (g = new Set()));
            g.add(wake);
          });
        }
        seen = wakeups;
        if (closing || reply.raw.destroyed) break;
        jobs = await lease();
        if (jobs.length > 0) handoff(group);
      }
      if (waitMs > 0) metrics.leaseWaitSeconds.observe((queue.clock.now() - started) / 1000);
      if (leased.size > 100_000) leased.clear();
      for (const j of jobs) leased.set(j.id, j);
      return { jobs };
    } finally {
      reply.raw.off("close", gone);
    }
  });

  /** Writes a completion; on a stale attempt, tells a repeat of the same completion from a conflict. */
  const complete = async (id: string, attempt: number, result: unknown) => {
    const resultText = queue.resultText(result);
    const [ok] = await queue.completeAttempts([completion(id, attempt, result, resultText)]);
    if (ok) {
      leased.delete(id);
      return { ok: true, duplicate: false };
    }
    return repeatOrStale(id, attempt, resultText);
  };
  /** A completion through the queue, with the job as this server handed it out when it did. */
  const completion = (id: string, attempt: number, result: unknown, resultText: string): Completion => {
    const job = leased.get(id);
    return { id, attempt, result, resultText, ...(job?.attempt === attempt ? { job } : {}) };
  };
  const repeatOrStale = async (id: string, attempt: number, resultText: string) => {
    const job = await queue.get(id);
    if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
    if (
      job.state === "completed" &&
      job.attempt === attempt &&
      isDeepStrictEqual(job.result, JSON.parse(resultText))
    ) {
      return { ok: true, duplicate: true };
    }
    throw stale(job, attempt, "different result");
  };

  route("POST /v1/jobs/:id/complete", "work", async (request) => {
    const b = body<{ attempt: number; result?: unknown }>(request);
    return complete(params(request).id!, b.attempt, b.result);
  });

  /**
   * Fails the current attempts among `items` in one store write. Per item: the outcome, or the
   * error to answer with (a missing job, an attempt that is not current).
   */
  const failMany = async (items: FailReport[]): Promise<Array<FailOutcome | ErrandError>> => {
    const jobs = await Promise.all(items.map((f) => queue.get(f.id)));
    const out: Array<FailOutcome | ErrandError> = new Array(items.length);
    const current: number[] = [];
    for (const [k, f] of items.entries()) {
      const job = jobs[k];
      if (!job) out[k] = new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(f.id)}`);
      else if (job.state !== "active" || job.attempt !== f.attempt) out[k] = stale(job, f.attempt);
      else current.push(k);
    }
    const failed = await queue.failAttempts(
      current.map((k) => ({
        job: jobs[k]!,
        error: toError(items[k]!.error),
        retryable: items[k]!.retryable,
      })),
    );
    for (const [n, k] of current.entries()) {
      const f = items[k]!;
      const done = failed[n];
      if (!done) {
        out[k] = stale((await queue.get(f.id)) ?? jobs[k]!, f.attempt);
        continue;
      }
      leased.delete(f.id);
      out[k] = { ok: true, state: done.job.state, runAt: done.job.runAt };
    }
    return out;
  };
  const fail = async (id: string, attempt: number, error: FailError, retryable: boolean | undefined) => {
    const [out] = await failMany([{ id, attempt, error, retryable }]);
    if (out instanceof ErrandError) throw out;
    return out!;
  };

  route("POST /v1/jobs/:id/fail", "work", async (request) => {
    const b = body<{ attempt: number; error: FailError; retryable?: boolean }>(request);
    return fail(params(request).id!, b.attempt, b.error, b.retryable);
  });

  /** For a report that changed nothing: 404 for a missing job, else 409 with its state. */
  const refused = async (id: string, attempt: number): Promise<never> => {
    const job = await queue.get(id);
    if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
    throw stale(job, attempt);
  };

  route("POST /v1/jobs/:id/heartbeat", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number; leaseMs?: number }>(request);
    const ok = await queue.heartbeat({ id: id!, attempt: b.attempt }, { leaseMs: b.leaseMs ?? 30_000 });
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/jobs/:id/checkpoint", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number; data: unknown }>(request);
    const ok = await queue.checkpoint({ id: id!, attempt: b.attempt }, b.data);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/jobs/:id/release", "work", async (request) => {
    const { id } = params(request);
    const b = body<{ attempt: number }>(request);
    const ok = await queue.release({ id: id!, attempt: b.attempt });
    if (ok) leased.delete(id!);
    return ok ? { ok } : refused(id!, b.attempt);
  });

  route("POST /v1/report", "work", async (request) => {
    const { reports } = body<{ reports: ReportItem[] }>(request);
    const results: Array<{ id: string; ok: boolean; code?: string; state?: string }> = reports.map((r) => ({
      id: r.id,
      ok: false,
    }));
    // Completions go to the store in one write, then failures in another.
    const completes: Array<{ i: number; item: Completion }> = [];
    for (const [i, r] of reports.entries()) {
      if (r.outcome !== "complete") continue;
      try {
        const result = r.result ?? null;
        completes.push({ i, item: completion(r.id, r.attempt, result, toJsonText("result", result)) });
      } catch (error) {
        results[i]!.code = (error as ErrandError).code;
      }
    }
    const oks = await queue.completeAttempts(completes.map((c) => c.item));
    for (const [k, { i, item }] of completes.entries()) {
      try {
        if (oks[k]) leased.delete(item.id);
        const duplicate = !oks[k] && (await repeatOrStale(item.id, item.attempt, item.resultText)).duplicate;
        results[i] = { id: item.id, ok: true, ...(duplicate ? { state: "completed" } : {}) };
      } catch (error) {
        results[i]!.code = error instanceof ErrandError ? error.code : "INTERNAL";
      }
    }
    const fails = [...reports.entries()].filter(([, r]) => r.outcome === "fail");
    const failed = await failMany(
      fails.map(([, r]) => ({
        id: r.id,
        attempt: r.attempt,
        error: r.error ?? "failed",
        retryable: r.retryable,
      })),
    );
    for (const [n, [i, r]] of fails.entries()) {
      const out = failed[n]!;
      if (out instanceof ErrandError) results[i]!.code = out.code;
      else results[i] = { id: r.id, ok: true, state: out.state };
    }
    return { results };
  });

  // ---- job types and schedules -----------------------------------------------------------

  route("PUT /v1/types/:type", "manage", async (request, reply) => {
    const config = { ...body<JobTypeConfig>(request), type: params(request).type! };
    const created = await types.set(config);
    return reply.status(created ? 201 : 200).send(publicType(types.get(config.type)!));
  });
  route("GET /v1/types/:type", "read", async (request) => {
    await types.refresh();
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
  route("GET /v1/types", "read", async () => {
    await types.refresh();
    return { types: types.list().map(publicType) };
  });

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
    const found = (await queue.schedules()).find((s) => s.name === name);
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
  route("GET /v1/schedules", "read", async () => ({ schedules: await queue.schedules() }));

  // ---- inspection ------------------------------------------------------------------------

  route("GET /v1/stats", "read", async () => queue.stats());
  route("GET /v1/stats/history", "read", async (request) => {
    const { seconds } = request.query as { seconds?: string };
    const n = seconds === undefined ? 300 : Number(seconds);
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
        .sort(([a], [b]) => a.localeCompare(b))
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
  app.get("/metrics", { schema: { hide: true }, onRequest: guard("read") }, async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply
      .type(metrics.registry.contentType)
      .serializer((d: string) => d)
      .send(text);
  });
  app.get("/openapi.json", { schema: { hide: true }, onRequest: guard("read") }, async () => app.swagger());
  if (options.dashboard ?? true) registerDashboard(app);

  // ---- lifecycle -------------------------------------------------------------------------

  const maintainer =
    (options.maintenance ?? true)
      ? new Maintainer(queue, {
          sweepIntervalMs,
          pruneIntervalMs,
          onError: (error) => app.log.error({ err: error }, "maintenance failed"),
        })
      : null;
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
  app.addHook("preClose", async () => {
    closing = true;
    const stopping = Promise.all([maintainer?.stop(), typesRefresh?.stop()]);
    for (const wake of waiting.all()) wake();
    await push.stop();
    await stopping;
  });
  app.addHook("onClose", async () => {
    unsubscribeWake();
    metrics.close();
    history.close();
  });

  // Bind to loopback unless told otherwise; refuse anything else without auth.
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
  return app;
}

interface EnqueueBody extends EnqueueOptions {
  type: string;
  payload?: unknown;
}

interface LeaseBody {
  types?: string[];
  queues?: string[] | Record<string, number>;
  limit?: number;
  leaseMs?: number;
  waitMs?: number;
  workerId?: string;
  maxWeight?: number;
  weightCap?: number;
}

type FailError = string | { message: string; name?: string; stack?: string };

/** A failure to record, as the fail and report endpoints take it. */
interface FailReport {
  id: string;
  attempt: number;
  error: FailError;
  retryable: boolean | undefined;
}

interface FailOutcome {
  ok: true;
  state: Job["state"];
  runAt: Date;
}

interface ReportItem {
  id: string;
  attempt: number;
  outcome: "complete" | "fail";
  result?: unknown;
  error?: FailError;
  retryable?: boolean;
}

function toEnqueueItem(b: EnqueueBody): { job: string; payload: unknown; options: EnqueueOptions } {
  const { type, payload, ...options } = b;
  return { job: type, payload: payload === undefined ? null : payload, options };
}

/** A remote worker's error as an Error, keeping its own name and stack (not the server's). */
function toError(e: FailError): Error {
  const error = new Error(typeof e === "string" ? e : e.message);
  error.name = typeof e === "string" ? "Error" : (e.name ?? "Error");
  error.stack = typeof e === "string" ? undefined : e.stack;
  return error;
}

/**
 * The 409 for a report that changed nothing, saying what it conflicts with: a job cancelled or
 * expired, an attempt never handed out, a later attempt, or this attempt already ended (a repeat
 * with another outcome). `details` carries the job's state and attempt for programs.
 */
function stale(job: WireJob, attempt: number, conflict?: "different result"): ErrandError {
  const j = `job ${job.id}`;
  let why: string;
  if (job.state === "cancelled" || job.state === "expired") {
    why = `${j} is ${job.state}`;
  } else if (attempt > job.attempt) {
    why =
      job.attempt === 0
        ? `${j} has no attempt ${attempt}: it has not been handed out yet (it is ${job.state})`
        : `${j} has no attempt ${attempt}: it is on attempt ${job.attempt} (${job.state})`;
  } else if (attempt < job.attempt) {
    why = `attempt ${attempt} of ${j} is not current: the job is on attempt ${job.attempt} (${job.state})`;
  } else if (job.state === "completed") {
    why = `${j} attempt ${attempt} already completed${conflict === "different result" ? " with a different result" : ""}`;
  } else if (job.state === "dead") {
    why = `${j} attempt ${attempt} already failed, and the job is dead`;
  } else if (job.state === "pending") {
    why = `${j} attempt ${attempt} has already ended; the job is pending for attempt ${attempt + 1}`;
  } else {
    why = `${j} attempt ${attempt} is ${job.state} but changed while the report was made`;
  }
  return new ErrandError("STALE_ATTEMPT", `${why}; nothing changed`, {
    details: { state: job.state, attempt: job.attempt },
  });
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

/** Without a filter, a lease takes from every queue the registered types name, and "default". */
function allQueues(types: JobTypeConfig[]): string[] {
  return [...new Set(["default", ...types.map((t) => t.queue ?? "default")])];
}
