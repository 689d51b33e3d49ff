/**
 * The job routes: enqueue (one, many, idempotent PUT), flows, get, list, dependencies,
 * dependents, cancel, retry, replay, reschedule.
 * @module
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { dependencyNotFound, ErrandError } from "../../errors.js";
import { type FlowNode, flowNodesFromWire } from "../../flow-plan.js";
import { type EnqueuedJob, type Job, type JobDependency, toJob } from "../../job.js";
import type { EnqueueOptions, ListOptions } from "../../queue.js";
import { checkInt, JOB_ID_PATTERN, MAX_DEPENDENCIES, MAX_LIMIT } from "../../validation.js";
import { type Principal, ROLE_PERMISSIONS, readsOwnJobsOnly } from "../auth.js";
import type { ServerContext } from "../context.js";
import { itemsPerRead, MAX_PAGE_CHARS, readInSteps } from "../page-size.js";
import { body, params } from "../routing.js";

/** A job as sent over HTTP (times become ISO strings when serialised). */
type WireJob = Job & { duplicate?: boolean };

interface EnqueueBody extends EnqueueOptions {
  type: string;
  payload?: unknown;
}

/** Registers the job routes on `app`. */
export function register(app: FastifyInstance, ctx: ServerContext): void {
  const { queue, routing } = ctx;
  const route = routing.on(app);
  const principal = (r: FastifyRequest) => routing.principal(r);
  /** Whole jobs one read of a page takes: each may carry a payload, checkpoint and result at the queue's bound. */
  const wholeJobsPerRead = () => itemsPerRead(3 * queue.maxPayloadBytes);
  /** The job the path names, if the principal may read it. */
  const readableJob = async (request: FastifyRequest): Promise<Job> => {
    const job = await queue.get(params(request).id!);
    // Another owner's job is not found, for a producer: it learns nothing of it, not even that it exists.
    if (!job || !readable(principal(request), job)) {
      throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(params(request).id)}`);
    }
    return job;
  };

  /**
   * For a producer, refuses a dependency on a job it may not read as if there were no such job,
   * and a dependency on no job with the same words: an enqueue would otherwise tell it which ids
   * exist (the stores word their own refusal differently), and its blocked job how they ended.
   * Ids in `made` are the request's own jobs, which need not exist yet.
   */
  const checkDependencies = async (
    p: Principal | null,
    ids: readonly unknown[],
    made: ReadonlySet<unknown> = new Set(),
  ): Promise<void> => {
    if (!readsOwnJobsOnly(p)) return;
    // Anything that is no job id is refused by the enqueue's own checks, with its own message.
    const named = [...new Set(ids)].filter(
      (id): id is string => typeof id === "string" && JOB_ID_PATTERN.test(id),
    );
    for (let at = 0; at < named.length; at += MAX_DEPENDENCIES) {
      const chunk = named.slice(at, at + MAX_DEPENDENCIES);
      const found = await queue.store.getMany({ ids: chunk });
      const hidden = found.findIndex((r, i) => (r === null ? !made.has(chunk[i]) : !readable(p, r)));
      if (hidden >= 0) throw dependencyNotFound(chunk[hidden]!);
    }
  };

  route("POST /v1/jobs", "enqueue", async (request, reply) => {
    const b = body<EnqueueBody | { jobs: EnqueueBody[] }>(request);
    const p = principal(request);
    if ("jobs" in b && Array.isArray(b.jobs)) {
      if (readsOwnJobsOnly(p)) refuseKeyedDependencies(batchKeyedDependencies(b.jobs), "INVALID_OPTION");
      await checkDependencies(p, ...batchDependencyIds(b.jobs));
    } else await checkDependencies(p, dependsOnOf(b as EnqueueBody));
    // The jobs whole are most of a bulk reply's cost (serialised, sent, parsed): a bulk load that
    // does not read them back asks for their ids. The server's own listeners need the jobs built.
    const idsOnly = (request.query as { return?: string }).return === "ids";
    let jobs: EnqueuedJob[];
    if ("jobs" in b) jobs = await queue.enqueueBatch(b.jobs.map((j) => withOwner(p, toEnqueueItem(j))));
    else {
      const { job, payload, options } = withOwner(p, toEnqueueItem(b));
      jobs = [await queue.enqueue(job, payload, options)];
    }
    const status = jobs.every((j) => j.duplicate) ? 200 : 201;
    if (idsOnly) return reply.status(status).send({ ids: jobs.map((j) => j.id) });
    return reply
      .status(status)
      .send("jobs" in b ? { jobs: jobs.map((j) => enqueued(p, j)) } : enqueued(p, jobs[0]!));
  });

  route("PUT /v1/jobs/:id", "enqueue", async (request, reply) => {
    const p = principal(request);
    const b = body<EnqueueBody>(request);
    await checkDependencies(p, dependsOnOf(b));
    const { job, payload, options } = withOwner(p, toEnqueueItem(b));
    const one = await queue.enqueue(job, payload, { ...options, id: params(request).id });
    return reply.status(one.duplicate ? 200 : 201).send(enqueued(p, one));
  });

  route("POST /v1/flows", "enqueue", async (request, reply) => {
    const p = principal(request);
    const given = flowNodesFromWire(body(request));
    if (readsOwnJobsOnly(p)) refuseKeyedDependencies(flowKeyedDependencies(given), "INVALID_FLOW");
    await checkDependencies(p, ...flowDependencyIds(given));
    const nodes = given.map((n) => {
      const owner = ownerFor(p, n.options?.owner);
      return owner === undefined ? n : { ...n, options: { ...n.options, owner } };
    });
    const flow = await queue.enqueueFlow(nodes);
    // Refs are the caller's names: a null-prototype record, so a ref like `__proto__` is a plain key.
    const jobs: Record<string, unknown> = Object.create(null);
    let allDuplicates = true;
    for (const [ref, job] of Object.entries(flow.jobs)) {
      jobs[ref] = enqueued(p, job);
      allDuplicates &&= job.duplicate;
    }
    return reply.status(allDuplicates ? 200 : 201).send({ jobs });
  });

  route("GET /v1/jobs/:id", "read", async (request) => readableJob(request));

  // A remote worker reads its job's dependencies (ctx.dependencies()), so `work` will do as well as `read`.
  route("GET /v1/jobs/:id/dependencies", ["read", "work"], async (request) => {
    const p = principal(request);
    const job = await readableJob(request);
    const dependencies = await queue.dependencies(job.id);
    if (!readsOwnJobsOnly(p)) return { dependencies };
    // A producer learns nothing of another owner's job: it reads as a pruned one.
    const owners = await Promise.all(dependencies.map((d) => (d.state === null ? null : queue.get(d.id))));
    return {
      dependencies: dependencies.map(
        (d, i): JobDependency =>
          owners[i] && readable(p, owners[i]) ? d : { id: d.id, type: null, state: null, result: null },
      ),
    };
  });

  route("GET /v1/jobs/:id/dependents", "read", async (request) => {
    const q = request.query as Record<string, string | undefined>;
    const p = principal(request);
    const job = await readableJob(request);
    const limit = checkInt("limit", q.limit === undefined ? 50 : Number(q.limit), 1, MAX_LIMIT);
    const step = wholeJobsPerRead();
    if (!readsOwnJobsOnly(p)) {
      const page = await readInSteps(
        limit,
        step,
        async (n, cursor) => {
          const got = await queue.dependents(job.id, { limit: n, ...(cursor ? { cursor } : {}) });
          return { items: got.jobs, nextCursor: got.nextCursor };
        },
        q.cursor || undefined,
      );
      return { jobs: page.items, nextCursor: page.nextCursor };
    }
    // A producer's page holds only its own jobs, and its cursor must not be another owner's id
    // (the store's is the last job it read): read on, a step at a time, until `limit` of its own,
    // the end, or what one answer carries (a dependents cursor is a job id: it can stop anywhere).
    const jobs: Job[] = [];
    let chars = 0;
    for (let cursor = q.cursor || undefined; ; ) {
      const page = await queue.dependents(job.id, { limit: step, ...(cursor ? { cursor } : {}) });
      for (const j of page.jobs) {
        if (!readable(p, j)) continue;
        chars += JSON.stringify(j).length;
        if (chars > MAX_PAGE_CHARS && jobs.length > 0) return { jobs, nextCursor: jobs.at(-1)!.id };
        jobs.push(j);
        if (jobs.length === limit) return { jobs, nextCursor: j.id };
      }
      if (page.nextCursor === null) return { jobs, nextCursor: null };
      cursor = page.nextCursor;
    }
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
    const filter = {
      ...(q.state ? { state: q.state as Job["state"] } : {}),
      ...(q.queue ? { queue: q.queue } : {}),
      ...(q.type ? { type: q.type } : {}),
      ...(owner ? { owner } : {}),
      ...(q.key !== undefined ? { key: q.key } : {}),
    };
    const limit = checkInt("limit", q.limit === undefined ? 50 : Number(q.limit), 1, MAX_LIMIT);
    const cursor = q.cursor ? { cursor: q.cursor } : {};
    if (q.view !== "summary") return wholePage({ ...filter, ...cursor }, limit);
    // A summary leaves out what a caller may make large, and the store does not read it: one
    // read, its size measured on what is sent (read again, shorter, past 32 MiB).
    const page = await readInSteps(
      limit,
      limit,
      async (n, at) => {
        const got = await queue.list({ ...filter, limit: n, view: "summary", ...(at ? { cursor: at } : {}) });
        return { items: got.jobs, nextCursor: got.nextCursor };
      },
      q.cursor || undefined,
    );
    return { jobs: page.items, nextCursor: page.nextCursor };
  });

  /**
   * A page of whole jobs: which jobs, and the cursor, from one summary read (the store's one scan
   * of a filtered list, one consistent read on Redis), then the jobs whole by id a step at a time
   * (page-size.ts), so no read takes far more than the answer carries. A page past 32 MiB is read
   * again, shorter, until it fits, so that its cursor is the store's own for where it stops; the
   * jobs already read whole are not read again. A job pruned between the two reads is left out.
   */
  const wholePage = async (
    filter: ListOptions,
    limit: number,
  ): Promise<{ jobs: Job[]; nextCursor: string | null }> => {
    const step = wholeJobsPerRead();
    const whole = new Map<string, Job>();
    for (;;) {
      const page = await queue.list({ ...filter, limit, view: "summary" });
      const jobs: Job[] = [];
      let chars = 0;
      let fits = page.jobs.length;
      read: for (let at = 0; at < page.jobs.length; at += step) {
        const ids = page.jobs.slice(at, at + step).map((j) => j.id);
        const missing = ids.filter((id) => !whole.has(id));
        if (missing.length > 0) {
          const records = await queue.store.getMany({ ids: missing });
          for (const [i, r] of records.entries()) if (r) whole.set(missing[i]!, toJob(r));
        }
        for (const [i, id] of ids.entries()) {
          const job = whole.get(id);
          if (!job) continue;
          chars += JSON.stringify(job).length;
          if (chars > MAX_PAGE_CHARS && jobs.length > 0) {
            fits = at + i;
            break read;
          }
          jobs.push(job);
        }
      }
      if (fits === page.jobs.length) return { jobs, nextCursor: page.nextCursor };
      limit = fits;
    }
  };

  route("POST /v1/jobs/:id/cancel", "manage", async (request) => queue.cancel(params(request).id!));
  route("POST /v1/jobs/:id/retry", "manage", async (request) => queue.retry(params(request).id!));
  route("POST /v1/jobs/:id/replay", "manage", async (request, reply) =>
    reply.status(201).send(await queue.replay(params(request).id!)),
  );
  route("POST /v1/jobs/:id/reschedule", "manage", async (request) =>
    queue.reschedule(params(request).id!, body(request)),
  );
}

/**
 * The owner an enqueue records: the principal's name, or (admins only) the owner it names.
 * Without auth there is no principal, and the request's own `owner`, if any, is kept.
 */
function ownerFor(p: Principal | null, given: string | undefined): string | undefined {
  if (!p) return given;
  if (given !== undefined && given !== p.name && !ROLE_PERMISSIONS[p.role].includes("manage")) {
    throw new ErrandError(
      "FORBIDDEN",
      `role "${p.role}" enqueues as itself (${JSON.stringify(p.name ?? null)}); only an admin may name another owner`,
      { details: { role: p.role, needs: "manage" } },
    );
  }
  return given ?? p.name;
}

function withOwner(p: Principal | null, item: ReturnType<typeof toEnqueueItem>) {
  const owner = ownerFor(p, item.options.owner);
  return { ...item, options: { ...item.options, ...(owner === undefined ? {} : { owner }) } };
}

/** The ids an enqueue's `dependsOn` names, as given (checked later). */
function dependsOnOf(b: EnqueueBody): unknown[] {
  return Array.isArray(b?.dependsOn) ? b.dependsOn : [];
}

/** The ids a batch's jobs depend on, and the ids of its jobs before each, which need not exist. */
function batchDependencyIds(jobs: readonly EnqueueBody[]): [unknown[], Set<unknown>] {
  const ids: unknown[] = [];
  const earlier = new Set<unknown>();
  const notEarlier: unknown[] = [];
  for (const j of jobs) {
    for (const id of dependsOnOf(j)) {
      ids.push(id);
      if (!earlier.has(id)) notEarlier.push(id);
    }
    earlier.add(j?.id);
  }
  // A later job's id is no dependency the store takes: it must exist already.
  for (const id of notEarlier) earlier.delete(id);
  return [ids, earlier];
}

/**
 * The jobs a flow's nodes may come to wait for, and the ids its own nodes give (which need not
 * exist): each `{ id }` dependency, and the given id of each node another names by ref (a node
 * whose id is taken stands for the job holding it).
 */
function flowDependencyIds(nodes: readonly FlowNode[]): [unknown[], Set<unknown>] {
  const refs = new Set<unknown>();
  const ids: unknown[] = [];
  for (const n of nodes) {
    if (!Array.isArray(n?.dependsOn)) continue;
    for (const d of n.dependsOn as unknown[]) {
      if (typeof d === "object" && d !== null) ids.push((d as { id?: unknown }).id);
      else refs.add(d);
    }
  }
  const own = new Set<unknown>();
  for (const n of nodes) {
    if (!refs.has(n?.ref) || n.options?.id === undefined) continue;
    ids.push(n.options.id);
    own.add(n.options.id);
  }
  return [ids, own];
}

/**
 * For a producer, refuses a job of the request that others of it wait for and that has a
 * `uniqueKey`: the key may be held by another owner's job, which would then stand for it, and the
 * jobs waiting would wait for (and learn how ended) a job the producer may not read.
 */
function refuseKeyedDependencies(where: string | null, code: "INVALID_FLOW" | "INVALID_OPTION"): void {
  if (where === null) return;
  throw new ErrandError(
    code,
    `${where} has a uniqueKey and other jobs of the request wait for it: for a producer, a job others wait for has no uniqueKey (another owner's job may hold the key)`,
  );
}

/** The first flow node another names by ref that has a uniqueKey, as `nodes[i]`; else null. */
function flowKeyedDependencies(nodes: readonly FlowNode[]): string | null {
  const refs = new Set<unknown>();
  for (const n of nodes) {
    if (!Array.isArray(n?.dependsOn)) continue;
    for (const d of n.dependsOn as unknown[]) if (typeof d !== "object" || d === null) refs.add(d);
  }
  const i = nodes.findIndex((n) => refs.has(n?.ref) && n.options?.uniqueKey !== undefined);
  return i < 0 ? null : `enqueueFlow: nodes[${i}]`;
}

/** The first job of a batch that a later one names in dependsOn and that has a uniqueKey; else null. */
function batchKeyedDependencies(jobs: readonly EnqueueBody[]): string | null {
  const named = new Set<unknown>();
  for (const j of jobs) for (const id of dependsOnOf(j)) named.add(id);
  const i = jobs.findIndex((j) => j?.id !== undefined && named.has(j.id) && j.uniqueKey !== undefined);
  return i < 0 ? null : `enqueueBatch: jobs[${i}]`;
}

/** False for a job the principal may not read: another owner's, for a producer. */
function readable(p: Principal | null, job: { owner: string | null }): boolean {
  return !readsOwnJobsOnly(p) || job.owner === p!.name;
}

/**
 * A just-enqueued job as the caller may see it: a duplicate of a job it may not read is only
 * `{ id, duplicate }` (it learns that the id or unique key is taken, nothing of the job).
 */
function enqueued(p: Principal | null, job: WireJob) {
  return job.duplicate && !readable(p, job) ? { id: job.id, duplicate: true } : job;
}

function toEnqueueItem(b: EnqueueBody): {
  job: string;
  payload: unknown;
  options: EnqueueOptions;
} {
  const { type, payload, ...options } = b;
  return { job: type, payload: payload === undefined ? null : payload, options };
}
