import { ErrandError } from "../../errors.js";
import { FINISHED_STATES, JOB_STATES, type JobRecord, type JobState } from "../../job.js";
import { SUMMARY_PLACEHOLDERS, shareAllButIdAndPayload, standsAlone } from "../../job-fields.js";
import { byteOrder, nameRecord } from "../../name-record.js";
import { claimOrder } from "../claim-order.js";
import {
  answerOwnExpired,
  attachExpired,
  type ExpiredByIndex,
  INSERTED,
  noteExpired,
} from "../enqueue-result.js";
import { expandJobs, jobCount, sharedAlone } from "../new-jobs.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  CompleteManyParams,
  DeleteJobTypeParams,
  DeleteScheduleParams,
  DependentsParams,
  EnqueueManyParams,
  EnqueueResult,
  ExpirePendingResult,
  FailManyParams,
  FailManyResult,
  FailResult,
  FireScheduleParams,
  GetJobTypeParams,
  GetManyParams,
  GetParams,
  GetScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  JobTypeRecord,
  ListParams,
  ListResult,
  ListSchedulesParams,
  NewJob,
  PauseQueueParams,
  PruneParams,
  PutJobTypeParams,
  PutScheduleParams,
  ReleaseParams,
  ReplayParams,
  RequeueResult,
  RescheduleParams,
  ResumeQueueParams,
  RetryParams,
  ScheduleRecord,
  SnoozeParams,
  StatsParams,
  Store,
  StoreCapabilities,
  StoreStats,
  SweepParams,
} from "../store.js";
import { attachCascaded, holdUntil, REDIS_LIST_SCAN, requeued, withCascade } from "../store.js";
import { limitStatsFromReply, statsHeldArgs } from "./held-sample.js";
import { decodeJob, pushNewJob } from "./job-codec.js";
import { RedisNotifier } from "./notifier.js";
import type { SendCommand } from "./reply-command.js";
import type { ScriptName } from "./scripts.js";
import {
  type Arg,
  type Client,
  checkEvictionPolicy,
  connect,
  loadScripts,
  loadSender,
  type RedisStoreOptions,
  RedisTransport,
  type Reply,
  redisFault,
} from "./transport.js";

export type { RedisStoreOptions } from "./transport.js";

/**
 * The Redis store: every state change is one Lua script (`lua/*.lua`, one per Store operation),
 * loaded once and called by SHA. Ready jobs wait in sorted sets per queue, priority and type
 * (score runAt, member id); delayed and retrying ones in one sorted set by runAt, promoted by
 * claims when due; active ones in a sorted set by lease expiry; each job is one small hash. A
 * ready job that a claim finds held back by its key's rules is parked, out of its lane, until its
 * key has room (lua/includes/job.lua), so a busy key's backlog holds up no other key.
 * Counters kept by the scripts make `stats()` independent of the number of jobs. Wake-ups travel
 * over pub/sub on a dedicated connection; workers still poll as a fallback.
 *
 * Every time comes from the caller's clock (`now`), never from Redis's `TIME`.
 *
 * Durability is Redis's: without AOF (`appendonly yes`, `appendfsync everysec` or `always`) a
 * Redis restart loses every job. The store notices lost data (its epoch key is gone) and reports
 * it once per process as a `STORE_ERROR`, then carries on with what Redis holds.
 * @since 0.1.0
 */
export class RedisStore implements Store {
  /** What every Redis store can do (see {@link StoreCapabilities}); tests read it before opening one. */
  static readonly capabilities: StoreCapabilities = {
    listen: true,
    multiProcess: true,
    transactionalEnqueue: false,
    // One cheap script per claim, and the largest worker heap before any job (ioredis).
    claimChunk: 64,
    // A Lua script runs alone on Redis's one thread: a larger claim would hold every other
    // client back the longer. claimAhead keeps two chunks of 64 in flight instead.
    prefetchChunk: 64,
    claimAhead: true,
    listScan: REDIS_LIST_SCAN,
  };
  readonly capabilities = RedisStore.capabilities;
  /** The key prefix, hash tag included: `{errand}:`. */
  readonly keyPrefix: string;
  /** Scripts, commands and the epoch over the store's client (transport.ts). */
  readonly #transport: RedisTransport;
  /** Pub/sub wake-ups (notifier.ts). */
  readonly #notifier: RedisNotifier;

  private constructor(
    client: Client,
    ownsClient: boolean,
    prefix: string,
    connectionName: string,
    send: SendCommand | null,
  ) {
    this.keyPrefix = `{${prefix}}:`;
    this.#transport = new RedisTransport(client, ownsClient, this.keyPrefix, send);
    this.#notifier = new RedisNotifier(client, `${this.keyPrefix}wake`, connectionName);
  }

  /**
   * Connects (when given a `url`), checks that Redis will not evict errand's keys, and claims the
   * prefix (or checks its schema version).
   * @throws ErrandError `INVALID_STORE_URL` for a bad URL or prefix, or when ioredis is not
   *   installed; `STORE_ERROR` when Redis cannot be reached, its `maxmemory-policy` could evict
   *   keys, or the prefix holds data of a newer errand or jobs in an older layout.
   */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    const { client, owns, prefix, connectionName } = await connect(options);
    const store = new RedisStore(client, owns, prefix, connectionName, await loadSender());
    try {
      await store.#transport.clusterReady();
      await checkEvictionPolicy(client);
      // Those Redis lacks, loaded before any runs (claiming the prefix is the first); a NOSCRIPT
      // later (SCRIPT FLUSH, a restarted Redis) reloads per script.
      if (!client.isCluster) await loadScripts(client);
      await store.#transport.claimPrefix();
    } catch (error) {
      if (owns) client.disconnect();
      throw error instanceof ErrandError ? error : redisFault(error);
    }
    return store;
  }

  /** The ioredis client the store uses for commands. */
  get client(): Client {
    return this.#transport.client;
  }

  // ---- the transport runs scripts and commands -----------------------------------------------

  #run(name: ScriptName, args: Arg[]): Promise<unknown> {
    return this.#transport.run(name, args);
  }

  #write(name: ScriptName, args: Arg[]): Promise<unknown> {
    return this.#transport.write(name, args);
  }

  #writeEach(name: ScriptName, argLists: Arg[][]): Promise<unknown[]> {
    return this.#transport.writeEach(name, argLists);
  }

  #command(command: string, args: Arg[]): Promise<unknown> {
    return this.#transport.command(command, args);
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueueMany(p: EnqueueManyParams): Promise<EnqueueResult[]> {
    if (p.connection !== undefined) {
      throw new ErrandError(
        "INVALID_OPTION",
        "the Redis store cannot enqueue inside a caller's database transaction (connection)",
      );
    }
    const n = jobCount(p.jobs);
    // A shared batch is the "u" layout as it is; a batch of one goes whole.
    const shared = n > 1 ? sharedAlone(p.jobs) : null;
    const jobs = shared === null ? expandJobs(p.jobs) : null;
    const uniform = shared !== null || sendsUniform(jobs!);
    const args: Arg[] = [
      p.now,
      n,
      (shared !== null ? ascending(shared.ids) : inClaimOrder(jobs!)) ? "1" : "",
      "",
      p.fairTypes ? p.fairTypes.join("|") : "",
      uniform ? "u" : "",
    ];
    let withDependencies = false;
    let withDebounce = false;
    if (shared !== null) {
      // The first job whole, then the id and payload of each other (enqueueMany.lua).
      const { ids, payloads } = shared;
      pushNewJob(args, shared.shared, ids[0]!, payloads[0]!);
      for (let i = 1; i < n; i++) args.push(ids[i]!, payloads[i]!);
    } else if (uniform) {
      pushNewJob(args, jobs![0]!);
      for (let i = 1; i < n; i++) args.push(jobs![i]!.id, jobs![i]!.payload);
    } else {
      for (const job of jobs!) {
        pushNewJob(args, job);
        if (job.dependsOn !== null) withDependencies = true;
        if (job.debounceKey !== null) withDebounce = true;
      }
    }
    // Tells the script what to check of every job before it writes anything (a batch without
    // dependencies or debounce keys, nearly every one, checks nothing).
    args[3] = `${withDependencies ? "1" : ""}${withDebounce ? "d" : ""}`;
    const replies = (await this.#write("enqueueMany", args)) as Array<number | string | Reply>;
    const results: EnqueueResult[] = new Array(n).fill(INSERTED);
    /** Key holders past their expiresAt that a job's insert expired ("e<index>"), by index. */
    let expiredBy: ExpiredByIndex | undefined;
    /** The dependents their expiry cancelled ("c<index>"), by index (Store's `cascaded`). */
    let cascadedBy: ExpiredByIndex | undefined;
    for (let i = 0; i < replies.length; i += 2) {
      const index = replies[i] as number | string;
      const record = decodeJob(replies[i + 1] as Reply);
      if (typeof index === "string") {
        if (index.startsWith("c")) cascadedBy = noteExpired(cascadedBy, Number(index.slice(1)), [record]);
        else expiredBy = noteExpired(expiredBy, Number(index.slice(1)), [record]);
      } else if (index < 0) {
        // A negative index is an inserted job with dependencies, returned as stored (enqueueMany.lua).
        results[-index - 1] = { inserted: true, record };
      } else results[index] = { inserted: false, existing: record };
    }
    if (expiredBy !== undefined) {
      attachExpired(results, expiredBy);
      answerOwnExpired(results, (k) => (shared !== null ? shared.ids[k]! : jobs![k]!.id));
      attachCascaded(results, cascadedBy);
    }
    return results;
  }

  // ---- claim ---------------------------------------------------------------------------------

  async claim(p: ClaimParams): Promise<JobRecord[]> {
    const leaseExpiresAt = p.now + p.leaseMs;
    const types = p.types ?? [];
    const caps = Object.entries(p.concurrencyLimits ?? {});
    const args: Arg[] = [
      p.now,
      p.workerId,
      leaseExpiresAt,
      p.limit,
      finite(p.maxWeight),
      finite(p.weightCap),
      types.length,
      ...types,
      caps.length,
    ];
    for (const [type, cap] of caps) args.push(type, cap);
    const rules = Object.entries(p.keyRules ?? {});
    args.push(rules.length);
    for (const [type, rule] of rules) {
      const rate = rule.keyRateLimit;
      args.push(
        type,
        rule.keyConcurrency ?? "",
        rule.ordered ? "1" : "",
        rate?.limit ?? "",
        rate?.periodMs ?? "",
        rule.fair ? "1" : "",
      );
    }
    const rates = Object.entries(p.rateLimits ?? {});
    args.push(rates.length);
    for (const [type, rate] of rates) args.push(type, rate.limit, rate.periodMs);
    args.push(p.queues.length);
    for (const q of p.queues) args.push(q.name, q.weight);
    // planClaim draws at most `limit` numbers per round, and rounds with two or more open queues
    // number at most queues - 1; but limit × (queues - 1) numbers as arguments made a claim over
    // 600 queues with limit 1,000 cost ~1 s, empty or not. A claim of that shape needs few of them
    // (a round closes each queue that gave less than its share), so it gets two rounds' worth and
    // one per queue; past those the script draws its own (claim-plan.lua).
    const draws =
      p.queues.length > 1 ? Math.min(p.limit * (p.queues.length - 1), 2 * p.limit + p.queues.length) : 0;
    const random = p.random ?? Math.random;
    args.push(draws);
    for (let i = 0; i < draws; i++) args.push(Math.floor(random() * 4294967296));
    // "parked" after the jobs: the script parked as many held-back jobs as one run may (PARK_MAX,
    // claim.lua) and left the rest of those lanes unread. Each run parks a busy key's backlog
    // further (a job is parked once), so claiming again for what is still wanted reaches the
    // other keys' jobs behind it, as a claim on the SQL stores would; each run is a script of its
    // own, so other clients go between them. CLAIM_RUNS bounds one call all the same.
    const records: JobRecord[] = [];
    let runs = 0;
    let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
    for (;;) {
      runs++;
      const replies = (await this.#write("claim", args)) as Array<Reply | number | string>;
      // A trailing number: a rate limit held a ready job back until then.
      const last = replies.at(-1);
      if (typeof last === "number") {
        replies.pop();
        holdUntil(p.held, last);
      }
      const more = replies.at(-1) === "parked";
      if (more) replies.pop();
      const taken = claimedRecords(replies as Reply[], p, leaseExpiresAt);
      if (!more && runs === 1) {
        if (taken.length > 1 && p.queues.length > 1) taken.sort(claimOrder);
        return taken;
      }
      for (const r of taken) {
        records.push(r);
        budget -= Math.min(r.weight, p.weightCap ?? r.weight);
      }
      if (!more || records.length >= p.limit || budget <= 0 || runs >= CLAIM_RUNS) break;
      args[3] = p.limit - records.length;
      args[4] = finite(budget);
    }
    if (records.length > 1) records.sort(claimOrder);
    return records;
  }

  // ---- outcomes ------------------------------------------------------------------------------

  async completeMany(p: CompleteManyParams): Promise<boolean[]> {
    const args: Arg[] = [p.now, p.items.length, p.discard === true ? 1 : 0];
    for (const item of p.items) args.push(item.id, item.attempt, item.result);
    const out = (await this.#write("completeMany", args)) as number[];
    return out.map((n) => n === 1);
  }

  /** failMany.lua once per item, all in one pipeline: one round trip, each item atomic on its own. */
  async failMany(p: FailManyParams): Promise<FailManyResult> {
    const out = await this.#writeEach(
      "failMany",
      p.items.map((i) => [
        p.now,
        i.id,
        i.attempt,
        JSON.stringify(i.error),
        i.retryAt ?? "",
        i.retryAt === null ? "" : (i.retryQueue ?? ""),
        i.leaseExpired ? "1" : "",
      ]),
    );
    let cascaded: JobRecord[] | undefined;
    const results = out.map((r): FailResult => {
      if (!Array.isArray(r)) return (r as FailResult) ?? null;
      // { "dead", "c", job replies }: a dead job's end cancelled dependents (failMany.lua).
      cascaded = decodeCascaded(r, 1, cascaded);
      return r[0] as FailResult;
    });
    return withCascade(results, cascaded);
  }

  async heartbeatMany(p: HeartbeatManyParams): Promise<boolean[]> {
    const args: Arg[] = [p.now, p.now + p.leaseMs, p.items.length];
    for (const item of p.items) args.push(item.id, item.attempt);
    const out = (await this.#write("heartbeatMany", args)) as number[];
    return out.map((n) => n === 1);
  }

  async checkpoint(p: CheckpointParams): Promise<boolean> {
    return (await this.#write("checkpoint", [p.now, p.id, p.attempt, p.checkpoint])) === 1;
  }

  async release(p: ReleaseParams): Promise<boolean> {
    return (await this.#write("release", [p.now, p.id, p.attempt])) === 1;
  }

  async snooze(p: SnoozeParams): Promise<boolean> {
    return (await this.#write("snooze", [p.now, p.id, p.attempt, p.runAt])) === 1;
  }

  // ---- reads ---------------------------------------------------------------------------------

  async get({ id }: GetParams): Promise<JobRecord | null> {
    const flat = (await this.#command("HGETALL", [`${this.keyPrefix}j:${id}`])) as Reply;
    return flat.length === 0 ? null : decodeJob([id, ...flat]);
  }

  async getMany({ ids }: GetManyParams): Promise<Array<JobRecord | null>> {
    if (ids.length === 0) return [];
    const replies = (await this.#run("getMany", ids)) as Reply[];
    return replies.map((reply) => (reply.length > 1 ? decodeJob(reply) : null));
  }

  async dependents(p: DependentsParams): Promise<ListResult> {
    const [replies, next] = (await this.#run("dependents", [p.id, p.limit, p.cursor ?? ""])) as [
      Reply[],
      string | null,
    ];
    return { jobs: replies.map(decodeJob), nextCursor: next };
  }

  /**
   * A page of jobs, latest first. Each state is listed in the time order of its own index:
   * pending and blocked jobs by `runAt`, active ones by `leaseExpiresAt`, finished ones by `finishedAt` (and
   * by id within the same millisecond); without a state filter the states are merged in that
   * order. A page may hold fewer than `limit` jobs and still have a `nextCursor` when the filters
   * made the store examine many jobs: keep paging until `nextCursor` is null.
   */
  async list(p: ListParams): Promise<ListResult> {
    const [replies, time, id] = (await this.#run("list", [
      p.state ?? "",
      p.queue ?? "",
      p.type ?? "",
      p.limit,
      p.cursor ?? "",
      this.capabilities.listScan,
      p.owner ?? "",
      p.key ?? "",
      p.summary ? "1" : "",
    ])) as [Reply[], string | null, string | null];
    // `<time>:<id>` whatever the id's length (MAX_LIST_CURSOR_LENGTH holds the longest): the time
    // the job was listed at, which the next page starts below even if the job has moved or gone.
    const nextCursor = id !== null && time !== null ? `${time}:${id}` : null;
    const jobs = replies.map(decodeJob);
    // A summary's replies carry no payload (list.lua); decodeJob leaves "", which is no JSON.
    if (p.summary) for (const r of jobs) r.payload = SUMMARY_PAYLOAD;
    return { jobs, nextCursor };
  }

  async stats(p: StatsParams): Promise<StoreStats> {
    const [counters, scheduled, oldest] = (await this.#run("stats", [p.now])) as [
      Reply,
      number,
      string | null,
    ];
    const states = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    // Keyed by names from the store: null prototypes, so "__proto__" or "toString" is just a key.
    const queues: StoreStats["queues"] = nameRecord();
    const types: StoreStats["types"] = nameRecord();
    let retrying = 0;
    for (let i = 0; i < counters.length; i += 2) {
      const field = counters[i]!;
      const n = Number(counters[i + 1]);
      if (field === "retrying") {
        retrying = n;
      } else if (field.startsWith("q|") || field.startsWith("t|")) {
        const bar = field.lastIndexOf("|");
        const name = field.slice(2, bar);
        const state = field.slice(bar + 1) as JobState;
        const into = field[0] === "q" ? queues : types;
        (into[name] ??= {})[state] = n;
      } else if (Object.hasOwn(states, field)) {
        states[field as JobState] = n;
      }
    }
    const oldestReadyAt = oldest === null ? null : Number(oldest);
    if (!p.limits) return { states, scheduled, retrying, queues, types, oldestReadyAt };
    const held =
      p.limits.types.length === 0 ? [] : await this.#run("statsHeld", statsHeldArgs(p.limits, p.now));
    const limits = limitStatsFromReply(p.limits, held as Parameters<typeof limitStatsFromReply>[1]);
    return { states, scheduled, retrying, queues, types, oldestReadyAt, limits };
  }

  // ---- changes by id -------------------------------------------------------------------------

  async cancel(p: CancelParams): Promise<JobMutation> {
    return mutation(await this.#write("cancel", [p.now, p.id]));
  }

  async reschedule(p: RescheduleParams): Promise<JobMutation> {
    return mutation(
      await this.#write("reschedule", [p.now, p.id, p.runAt ?? "", p.priority ?? "", p.queue ?? ""]),
    );
  }

  async retry(p: RetryParams): Promise<RequeueResult> {
    return requeueResult(await this.#write("retry", [p.now, p.id]));
  }

  async replay(p: ReplayParams): Promise<RequeueResult> {
    return requeueResult(await this.#write("replay", [p.now, p.id, p.newId]));
  }

  // ---- sweeps --------------------------------------------------------------------------------

  async expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    return ((await this.#run("expiredLeases", [p.now, p.limit])) as Reply[]).map(decodeJob);
  }

  async expirePending(p: SweepParams): Promise<ExpirePendingResult> {
    const replies = (await this.#write("expirePending", [p.now, p.limit])) as Array<Reply | "c">;
    const at = replies.indexOf("c");
    if (at < 0) return (replies as Reply[]).map(decodeJob);
    return withCascade((replies.slice(0, at) as Reply[]).map(decodeJob), decodeCascaded(replies, at));
  }

  /**
   * Calls prune.lua until it has deleted `limit` or read every state to its cut-off. Each call
   * passes at most `limit` kept jobs (a blocked job waits on them) of a state and reports when it
   * stopped at them with deletions still to make: calling again goes on past them (prune.lua keeps
   * its place), so the kept ones never stop a prune() short, and Redis is held a chunk at a time.
   */
  async prune(p: PruneParams): Promise<number> {
    const cutoffs = FINISHED_STATES.map((s) => p.now - p.retainMs[s]);
    let deleted = 0;
    for (let call = 0; ; call++) {
      const [n, more] = (await this.#write("prune", [
        p.now,
        p.limit - deleted,
        ...cutoffs,
        p.limit,
        call > 0 ? "1" : "0",
      ])) as [number, number];
      deleted += n;
      if (more === 0 || deleted >= p.limit) return deleted;
    }
  }

  // ---- schedules -----------------------------------------------------------------------------

  async putSchedule(r: PutScheduleParams): Promise<void> {
    await this.#write("putSchedule", [
      r.name,
      r.cron,
      r.timezone,
      r.type,
      r.payload,
      r.options,
      r.nextRunAt,
      r.createdAt,
      r.updatedAt,
    ]);
  }

  async deleteSchedule({ name }: DeleteScheduleParams): Promise<boolean> {
    return (await this.#write("deleteSchedule", [name])) === 1;
  }

  async getSchedule({ name }: GetScheduleParams): Promise<ScheduleRecord | null> {
    return schedules((await this.#run("getSchedule", [name])) as unknown[])[0] ?? null;
  }

  async listSchedules(p: ListSchedulesParams): Promise<ScheduleRecord[]> {
    return schedules((await this.#run("listSchedules", [p.after ?? "", p.limit])) as unknown[]);
  }

  async dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    return schedules((await this.#run("dueSchedules", [p.now, p.limit])) as unknown[]);
  }

  async fireSchedule(p: FireScheduleParams): Promise<EnqueueResult | null> {
    const args: Arg[] = [p.now, p.name, p.expectedRunAt, p.nextRunAt];
    if (p.job !== null) pushNewJob(args, p.job);
    const reply = (await this.#write("fireSchedule", args)) as number | [number, Reply | "", ...Reply[]];
    if (typeof reply === "number") return reply === 1 ? INSERTED : null;
    const [flag, stored, ...rest] = reply;
    // The holders the insert expired, then "c" and the dependents their expiry cancelled.
    const at = (rest as unknown[]).indexOf("c");
    const holders = at < 0 ? rest : rest.slice(0, at);
    const cascaded = at < 0 ? undefined : decodeCascaded(rest, at);
    const record = stored === "" ? undefined : decodeJob(stored);
    const result: EnqueueResult =
      flag === 1
        ? record
          ? { inserted: true, record }
          : { inserted: true }
        : { inserted: false, existing: record! };
    if (holders.length === 0) return result;
    return cascaded === undefined
      ? { ...result, expired: holders.map(decodeJob) }
      : { ...result, expired: holders.map(decodeJob), cascaded };
  }

  // ---- job types -----------------------------------------------------------------------------

  async putJobType(r: PutJobTypeParams): Promise<boolean> {
    return (await this.#write("putJobType", [r.name, r.createdAt, r.updatedAt, r.config])) === 1;
  }

  async getJobType({ name }: GetJobTypeParams): Promise<JobTypeRecord | null> {
    const value = (await this.#command("HGET", [`${this.keyPrefix}types`, name])) as string | null;
    return value === null ? null : jobType(name, value);
  }

  async listJobTypes(): Promise<JobTypeRecord[]> {
    const flat = (await this.#command("HGETALL", [`${this.keyPrefix}types`])) as Reply;
    const out: JobTypeRecord[] = [];
    for (let i = 0; i < flat.length; i += 2) out.push(jobType(flat[i]!, flat[i + 1]!));
    return out.sort((a, b) => byteOrder(a.name, b.name));
  }

  async deleteJobType({ name }: DeleteJobTypeParams): Promise<boolean> {
    return (await this.#command("HDEL", [`${this.keyPrefix}types`, name])) === 1;
  }

  // ---- paused queues -------------------------------------------------------------------------
  // {p}:paused: queue name -> pausedAt. One command each, atomic by itself; claim.lua checks it.

  async pauseQueue(p: PauseQueueParams): Promise<boolean> {
    return (await this.#command("HSETNX", [`${this.keyPrefix}paused`, p.name, p.now])) === 1;
  }

  async resumeQueue(p: ResumeQueueParams): Promise<boolean> {
    return (await this.#command("HDEL", [`${this.keyPrefix}paused`, p.name])) === 1;
  }

  async pausedQueues(): Promise<string[]> {
    const names = (await this.#command("HKEYS", [`${this.keyPrefix}paused`])) as string[];
    return names.sort(byteOrder);
  }

  // ---- wake-ups ------------------------------------------------------------------------------

  onWake(listener: () => void): () => void {
    return this.#notifier.onWake(listener);
  }

  wake(): void {
    this.#notifier.wake();
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#transport.closed) return;
    // Both begin at once: no call slips in between the listeners going and the client closing.
    await Promise.all([this.#notifier.close(), this.#transport.close()]);
  }
}

function mutation(reply: unknown): JobMutation {
  if (reply === null) return null;
  const r = reply as [number, Reply, ...Array<Reply | "c">];
  const record = decodeJob(r[1]);
  const changed = r[0] === 1;
  // cancel.lua: then "c" and the dependents it cancelled.
  return r.length > 2 ? { record, changed, cascaded: decodeCascaded(r, 2) } : { record, changed };
}

/**
 * retry.lua's and replay.lua's reply: {@link mutation}'s, then, when the script expired the holder
 * of the job's unique key, "e" and its job reply, and "c" and the dependents its expiry cancelled.
 */
function requeueResult(reply: unknown): RequeueResult {
  if (reply === null) return null;
  const r = reply as [number, Reply, ...Array<Reply | "e" | "c">];
  const record = decodeJob(r[1]);
  if (r[0] !== 1 || r[2] !== "e") return { record, changed: r[0] === 1 };
  const expired: JobRecord[] = [];
  let i = 3;
  for (; i < r.length && r[i] !== "c"; i++) expired.push(decodeJob(r[i] as Reply));
  return requeued(record, expired, i < r.length ? decodeCascaded(r, i) : undefined);
}

/**
 * The job replies after the marker "c" at `at` in a script's reply (the dependents the script
 * cancelled, `cascaded` in includes/dependencies.lua), decoded and added to `into`.
 */
function decodeCascaded(reply: readonly unknown[], at: number, into: JobRecord[] = []): JobRecord[] {
  for (let i = at + 1; i < reply.length; i++) into.push(decodeJob(reply[i] as Reply));
  return into;
}

function schedules(reply: unknown[]): ScheduleRecord[] {
  const out: ScheduleRecord[] = [];
  for (let i = 0; i < reply.length; i += 3) {
    const flat = reply[i + 2] as Reply;
    const f = nameRecord<string>();
    for (let k = 0; k < flat.length; k += 2) f[flat[k]!] = flat[k + 1]!;
    out.push({
      name: reply[i] as string,
      nextRunAt: Number(reply[i + 1]),
      cron: f.c ?? "",
      timezone: f.z ?? "UTC",
      type: f.t ?? "",
      payload: f.p ?? "null",
      options: f.o ?? "{}",
      createdAt: Number(f.ca),
      updatedAt: Number(f.ua),
    });
  }
  return out;
}

/** A job type from its {p}:types value, "<createdAt>:<updatedAt>:<config>" (see putJobType.lua). */
function jobType(name: string, value: string): JobTypeRecord {
  const a = value.indexOf(":");
  const b = value.indexOf(":", a + 1);
  return {
    name,
    config: value.slice(b + 1),
    createdAt: Number(value.slice(0, a)),
    updatedAt: Number(value.slice(a + 1, b)),
  };
}

/**
 * Whether `jobs` (more than one) share every value but the id and the payload, with no unique
 * key, dependencies or debounce key: enqueueMany.lua then takes the first job's values once and
 * two per job after it. Sending nineteen values a job cost more than the script's own work: a
 * 20,000-job call's arguments took ~7–10 µs a job to send and parse, two ~1 µs.
 */
function sendsUniform(jobs: readonly NewJob[]): boolean {
  const first = jobs[0];
  if (jobs.length < 2 || first === undefined) return false;
  return standsAlone(first) && shareAllButIdAndPayload(jobs);
}

/**
 * Whether the jobs come in (runAt, id) order, as a ready lane keeps them: then enqueueMany.lua
 * pages them as they come instead of sorting them first. Ids are ASCII (JOB_ID_PATTERN, UUIDs), so
 * `<` compares their bytes, as Redis does.
 */
function inClaimOrder(jobs: readonly NewJob[]): boolean {
  for (let i = 1; i < jobs.length; i++) {
    const a = jobs[i - 1]!;
    const b = jobs[i]!;
    if (a.runAt > b.runAt || (a.runAt === b.runAt && a.id >= b.id)) return false;
  }
  return true;
}

/**
 * A claim script's jobs as the claim left them. A function of its own: it runs once per job, so
 * V8 optimises it, where a loop in the rarely called claim() stays in its interpreter (measured:
 * ~1 µs a job more on the worker in a Redis drain).
 */
function claimedRecords(replies: Reply[], p: ClaimParams, leaseExpiresAt: number): JobRecord[] {
  return replies.map((reply) => {
    const r = decodeJob(reply);
    r.state = "active";
    r.attempt += 1;
    r.workerId = p.workerId;
    r.leaseExpiresAt = leaseExpiresAt;
    r.startedAt = p.now;
    return r;
  });
}

/**
 * At most this many claim script runs per claim: runs after the first only follow one that parked
 * PARK_MAX held-back jobs (claim.lua) and took fewer jobs than wanted, so a backlog of 50,000 of
 * one busy key is parked by one claim.
 */
const CLAIM_RUNS = 50;

/** A summary record's payload (SUMMARY_PLACEHOLDERS): list.lua sends none. */
const SUMMARY_PAYLOAD = SUMMARY_PLACEHOLDERS.get("payload") as string;

/** Whether ids sorted as given: a shared batch's jobs share their runAt, so that is claim order. */
function ascending(ids: readonly string[]): boolean {
  for (let i = 1; i < ids.length; i++) if (ids[i - 1]! >= ids[i]!) return false;
  return true;
}

function finite(n: number | undefined): Arg {
  return n === undefined || !Number.isFinite(n) ? "" : n;
}
