import { createHash, randomUUID } from "node:crypto";
import type { Cluster, Redis, RedisOptions } from "ioredis";
import { ErrandError } from "../../errors.js";
import { FINISHED_STATES, JOB_STATES, type JobRecord, type JobState } from "../../job.js";
import { SlotMap } from "../../slot-map.js";
import { type ScriptName, scripts } from "../generated/redis-scripts.js";
import type {
  CancelParams,
  CheckpointParams,
  ClaimParams,
  CompleteManyParams,
  DeleteJobTypeParams,
  DeleteScheduleParams,
  EnqueueManyParams,
  EnqueueResult,
  FailManyParams,
  FailResult,
  FireScheduleParams,
  GetJobTypeParams,
  GetParams,
  GetScheduleParams,
  HeartbeatManyParams,
  JobMutation,
  JobTypeRecord,
  ListParams,
  ListResult,
  NewJob,
  PauseQueueParams,
  PruneParams,
  PutJobTypeParams,
  PutScheduleParams,
  ReleaseParams,
  ReplayParams,
  RescheduleParams,
  ResumeQueueParams,
  RetryParams,
  ScheduleRecord,
  StatsParams,
  Store,
  StoreCapabilities,
  StoreStats,
  SweepParams,
} from "../store.js";
import { decodeJob, pushNewJob } from "./job-codec.js";
import { commandSender, type SendCommand } from "./reply-command.js";

/**
 * Options for {@link RedisStore.open}: a `url` (errand opens and owns the connection) or a
 * `client` you made (errand uses it and leaves it open on close).
 * @since 0.1.0
 */
export interface RedisStoreOptions {
  /**
   * `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS). A `?prefix=` query
   * parameter sets {@link RedisStoreOptions.prefix}; other parameters go to ioredis.
   */
  url?: string;
  /**
   * An ioredis client (`Redis` or `Cluster`). errand duplicates it once for its wake-up
   * subscription. Recommended settings: `maxRetriesPerRequest` small (errand's workers retry on
   * their own) and `autoResendUnfulfilledCommands: false`, so a command whose connection dropped
   * is reported, not silently sent a second time.
   */
  client?: Redis | Cluster;
  /**
   * Namespace of every key: keys are `{prefix}:…`, so they share one Redis Cluster hash slot and
   * several errand installations can share one Redis. Letters, digits and `_ . : -`.
   * @defaultValue "errand"
   */
  prefix?: string;
  /** Extra ioredis options when opening from `url` (they override errand's defaults). */
  redisOptions?: RedisOptions;
}

const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;
/** Candidates a `list` call examines at most, so one call never holds Redis long. */
const LIST_BUDGET = 10_000;
/** Our cursors are `<time>:<id>`; an id this long gets a bare-id cursor instead (see list.lua). */
const CURSOR_MAX = 255;

type Client = Redis | Cluster;
type Arg = string | number;
type Reply = string[];

/** Script sources by name, with their SHA-1 (the EVALSHA handle), computed once per process. */
const SHAS = new Map<ScriptName, string>();
function sha(name: ScriptName): string {
  let s = SHAS.get(name);
  if (!s) SHAS.set(name, (s = createHash("sha1").update(scripts[name]).digest("hex")));
  return s;
}

/**
 * The Redis store: every state change is one Lua script (`lua/*.lua`, one per Store operation),
 * loaded once and called by SHA. Ready jobs wait in sorted sets per queue, priority and type
 * (score runAt, member id); delayed and retrying ones in one sorted set by runAt, promoted by
 * claims when due; active ones in a sorted set by lease expiry; each job is one small hash.
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
  };
  readonly capabilities = RedisStore.capabilities;
  /** The key prefix, hash tag included: `{errand}:`. */
  readonly keyPrefix: string;
  readonly #client: Client;
  readonly #ownsClient: boolean;
  readonly #meta: string;
  readonly #channel: string;
  readonly #connectionName: string;
  readonly #listeners = new Set<() => void>();
  #subscriber: Client | null = null;
  /**
   * Rejecters of the calls sent on the current connection and not yet answered. ioredis, told not
   * to resend them after a reconnection (a script may have run already), leaves their promises
   * pending forever; the store rejects them itself when the connection closes.
   */
  readonly #unanswered = new SlotMap<number, (error: Error) => void>();
  /** Keys of #unanswered: a SlotMap, since each entry would otherwise keep its reply alive. */
  #asked = 0;
  /** The epoch of the data this store works on (see lua/includes/epoch.lua). */
  #epoch = "";
  /** The epoch this store would write if it found the data gone; renewed each time it is used. */
  #fresh = randomUUID();
  #closed = false;
  /** Null when errand cannot load ioredis itself (a client was given): `call()` is used then. */
  readonly #sendCommand: SendCommand | null;

  private constructor(
    client: Client,
    ownsClient: boolean,
    prefix: string,
    connectionName: string,
    send: SendCommand | null,
  ) {
    this.#client = client;
    this.#sendCommand = send;
    this.#ownsClient = ownsClient;
    this.keyPrefix = `{${prefix}}:`;
    this.#meta = `${this.keyPrefix}meta`;
    this.#channel = `${this.keyPrefix}wake`;
    this.#connectionName = connectionName;
    client.on("close", this.#onClose);
  }

  readonly #onClose = (): void => {
    const lost = new Error(
      "the connection to Redis closed before the reply came: the command may or may not have run",
    );
    for (const reject of this.#unanswered.values()) reject(lost);
    this.#unanswered.clear();
  };

  /**
   * Connects (when given a `url`), checks that Redis will not evict errand's keys, and claims the
   * prefix (or checks its schema version).
   * @throws ErrandError `INVALID_STORE_URL` for a bad URL or prefix, or when ioredis is not
   *   installed; `STORE_ERROR` when Redis cannot be reached, its `maxmemory-policy` could evict
   *   keys, or the prefix holds data of a newer errand or jobs in an older layout.
   */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    let prefix = options.prefix;
    let url = options.url;
    if (url !== undefined) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch (cause) {
        throw new ErrandError("INVALID_STORE_URL", `cannot parse Redis URL ${redact(url)}`, { cause });
      }
      if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
        throw new ErrandError(
          "INVALID_STORE_URL",
          `a Redis URL starts redis:// or rediss://, got ${redact(url)}`,
        );
      }
      const fromUrl = parsed.searchParams.get("prefix");
      if (fromUrl !== null) {
        prefix ??= fromUrl;
        parsed.searchParams.delete("prefix");
        url = parsed.toString();
      }
    }
    prefix ??= "errand";
    if (!PREFIX_PATTERN.test(prefix)) {
      throw new ErrandError(
        "INVALID_STORE_URL",
        `Redis key prefix ${JSON.stringify(prefix)} must match ${PREFIX_PATTERN} (no braces: errand adds the hash tag)`,
      );
    }
    const connectionName = `errand:${prefix}`;
    let client: Client;
    let owns = false;
    if (options.client) {
      client = options.client;
    } else if (url !== undefined) {
      let Redis: typeof import("ioredis").Redis;
      try {
        ({ Redis } = await import("ioredis"));
      } catch (cause) {
        throw new ErrandError("INVALID_STORE_URL", "the Redis store needs ioredis: npm install ioredis", {
          cause,
        });
      }
      client = new Redis(url, {
        lazyConnect: true,
        connectionName,
        // A command whose connection dropped may or may not have run: report it, never resend it.
        autoResendUnfulfilledCommands: false,
        // Fail commands quickly while Redis is away; workers report the error and poll again.
        maxRetriesPerRequest: 2,
        ...options.redisOptions,
      });
      owns = true;
      // Faults reach callers as rejected commands; without a listener ioredis would log each one.
      client.on("error", () => {});
      try {
        await client.connect();
      } catch (cause) {
        client.disconnect();
        throw new ErrandError("STORE_ERROR", `cannot connect to Redis at ${redact(url)}: ${message(cause)}`, {
          cause,
        });
      }
    } else {
      throw new ErrandError("INVALID_STORE_URL", "RedisStore.open needs a url or a client");
    }
    const store = new RedisStore(client, owns, prefix, connectionName, await loadSender());
    try {
      await checkEvictionPolicy(client);
      await store.#claimPrefix();
      if (!client.isCluster) {
        // Loaded once here; a NOSCRIPT later (SCRIPT FLUSH, a restarted Redis) reloads per script.
        await Promise.all(
          (Object.keys(scripts) as ScriptName[]).map((n) => client.script("LOAD", scripts[n])),
        );
      }
    } catch (error) {
      if (owns) client.disconnect();
      throw error instanceof ErrandError ? error : fault(error);
    }
    return store;
  }

  async #claimPrefix(): Promise<void> {
    const [version, epoch, ours] = (await this.#run("open", [this.#fresh])) as [number, string, number];
    if (version > ours) {
      throw new ErrandError(
        "STORE_ERROR",
        `the keys under ${this.keyPrefix} are at schema version ${version}, newer than this errand (${ours}); upgrade errand`,
      );
    }
    if (version < ours) {
      // Only when they hold jobs or schedules: open.lua takes an empty prefix over.
      throw new ErrandError(
        "STORE_ERROR",
        `the keys under ${this.keyPrefix} hold jobs in the layout of schema version ${version}, which this errand (${ours}) cannot read; ` +
          "finish them with the errand that wrote them, or delete those keys, or use another prefix",
      );
    }
    this.#epoch = epoch;
    if (epoch === this.#fresh) this.#fresh = randomUUID();
  }

  /** The ioredis client the store uses for commands. */
  get client(): Client {
    return this.#client;
  }

  // ---- scripts -------------------------------------------------------------------------------

  /** Runs a script by SHA; on NOSCRIPT, EVAL sends the source (and Redis caches it again). */
  async #run(name: ScriptName, args: Arg[]): Promise<unknown> {
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    try {
      // concat, not spread: a bulk enqueue passes hundreds of thousands of arguments.
      try {
        return await this.#send("EVALSHA", ([sha(name), 1, this.#meta] as Arg[]).concat(args));
      } catch (error) {
        if (!message(error).startsWith("NOSCRIPT")) throw error;
        return await this.#send("EVAL", ([scripts[name], 1, this.#meta] as Arg[]).concat(args));
      }
    } catch (error) {
      throw this.#fault(error);
    }
  }

  /** Sends one command; rejected if the connection it went out on closes before the reply. */
  #send(command: string, args: Arg[]): Promise<unknown> {
    // A command issued while disconnected waits in ioredis's offline queue, which settles it.
    if (this.#client.status !== "ready") return this.#call(command, args);
    return new Promise((resolve, reject) => {
      const key = this.#asked++;
      this.#unanswered.set(key, reject);
      this.#call(command, args).then(
        (reply) => {
          this.#unanswered.delete(key);
          resolve(reply);
        },
        (error) => {
          this.#unanswered.delete(key);
          reject(error);
        },
      );
    });
  }

  #call(command: string, args: Arg[]): Promise<unknown> {
    const send = this.#sendCommand;
    return send ? send(this.#client, command, args) : this.#client.call(command, args);
  }

  /** A writing script: it checks the caller's epoch first (lua/includes/epoch.lua). */
  #write(name: ScriptName, args: Arg[]): Promise<unknown> {
    return this.#run(name, ([this.#epoch, this.#fresh] as Arg[]).concat(args));
  }

  /**
   * Runs a writing script once per argument list, in order, in one pipeline (one round trip); each
   * run is atomic on its own. Runs Redis did not know the script for are sent again with EVAL.
   * A fault in any run rejects the whole call, like a fault of a single script.
   */
  async #writeEach(name: ScriptName, argLists: Arg[][]): Promise<unknown[]> {
    if (argLists.length === 0) return [];
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    const head = [1, this.#meta, this.#epoch, this.#fresh];
    const send = async (
      command: "EVALSHA" | "EVAL",
      lists: Arg[][],
    ): Promise<Array<[Error | null, unknown]>> => {
      const pipeline = this.#client.pipeline();
      const script = command === "EVALSHA" ? sha(name) : scripts[name];
      for (const args of lists) pipeline.call(command, ([script] as Arg[]).concat(head, args));
      return (await this.#exec(pipeline)) ?? [];
    };
    try {
      const replies = await send("EVALSHA", argLists);
      const missing = replies.flatMap(([error], i) =>
        error && message(error).startsWith("NOSCRIPT") ? [i] : [],
      );
      if (missing.length > 0) {
        const again = await send(
          "EVAL",
          missing.map((i) => argLists[i]!),
        );
        missing.forEach((i, k) => {
          replies[i] = again[k]!;
        });
      }
      return replies.map(([error, reply]) => {
        if (error) throw error;
        return reply;
      });
    } catch (error) {
      throw this.#fault(error);
    }
  }

  /** Sends a pipeline; rejected if the connection it went out on closes before the replies. */
  #exec(pipeline: ReturnType<Client["pipeline"]>): Promise<Array<[Error | null, unknown]> | null> {
    if (this.#client.status !== "ready") return pipeline.exec();
    return new Promise((resolve, reject) => {
      const key = this.#asked++;
      this.#unanswered.set(key, reject);
      pipeline.exec().then(
        (replies) => {
          this.#unanswered.delete(key);
          resolve(replies);
        },
        (error: unknown) => {
          this.#unanswered.delete(key);
          reject(error);
        },
      );
    });
  }

  #fault(error: unknown): ErrandError {
    const text = message(error);
    if (text.startsWith("ERRAND_DATA_LOST ")) {
      this.#epoch = text.slice("ERRAND_DATA_LOST ".length);
      if (this.#epoch === this.#fresh) this.#fresh = randomUUID();
      return new ErrandError(
        "STORE_ERROR",
        `Redis lost errand's data under ${this.keyPrefix} (restarted without persistence, flushed or evicted); ` +
          "jobs stored before are gone, and this operation was not applied",
        { cause: error },
      );
    }
    if (text.startsWith("ERRAND_INVALID_STATE ")) {
      return new ErrandError("INVALID_STATE", text.slice("ERRAND_INVALID_STATE ".length), { cause: error });
    }
    if (text.startsWith("ERRAND_INVALID_CURSOR ")) {
      return new ErrandError("INVALID_OPTION", "list: the cursor is not one the Redis store gave", {
        cause: error,
      });
    }
    return fault(error);
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueueMany(p: EnqueueManyParams): Promise<EnqueueResult[]> {
    if (p.connection !== undefined) {
      throw new ErrandError(
        "INVALID_OPTION",
        "the Redis store cannot enqueue inside a caller's database transaction (connection)",
      );
    }
    const args: Arg[] = [p.now, p.jobs.length, inClaimOrder(p.jobs) ? "1" : ""];
    for (const job of p.jobs) pushNewJob(args, job);
    const duplicates = (await this.#write("enqueueMany", args)) as Array<number | Reply>;
    const results: EnqueueResult[] = new Array(p.jobs.length).fill(INSERTED);
    for (let i = 0; i < duplicates.length; i += 2) {
      results[duplicates[i] as number] = { inserted: false, existing: decodeJob(duplicates[i + 1] as Reply) };
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
    args.push(p.queues.length);
    for (const q of p.queues) args.push(q.name, q.weight);
    // planClaim draws at most `limit` numbers per round, and rounds with two or more open queues
    // number at most queues - 1.
    const draws = p.queues.length > 1 ? p.limit * (p.queues.length - 1) : 0;
    const random = p.random ?? Math.random;
    args.push(draws);
    for (let i = 0; i < draws; i++) args.push(Math.floor(random() * 4294967296));
    const replies = (await this.#write("claim", args)) as Reply[];
    const records = replies.map((reply) => {
      const r = decodeJob(reply);
      r.state = "active";
      r.attempt += 1;
      r.workerId = p.workerId;
      r.leaseExpiresAt = leaseExpiresAt;
      r.startedAt = p.now;
      return r;
    });
    if (records.length > 1 && p.queues.length > 1) records.sort(claimOrder);
    return records;
  }

  // ---- outcomes ------------------------------------------------------------------------------

  async completeMany(p: CompleteManyParams): Promise<boolean[]> {
    const args: Arg[] = [p.now, p.items.length];
    for (const item of p.items) args.push(item.id, item.attempt, item.result);
    const out = (await this.#write("completeMany", args)) as number[];
    return out.map((n) => n === 1);
  }

  /** failMany.lua once per item, all in one pipeline: one round trip, each item atomic on its own. */
  async failMany(p: FailManyParams): Promise<FailResult[]> {
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
    return out.map((r) => (r as FailResult) ?? null);
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

  // ---- reads ---------------------------------------------------------------------------------

  async get({ id }: GetParams): Promise<JobRecord | null> {
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    let flat: Reply;
    try {
      flat = (await this.#send("HGETALL", [`${this.keyPrefix}j:${id}`])) as Reply;
    } catch (error) {
      throw this.#fault(error);
    }
    return flat.length === 0 ? null : decodeJob([id, ...flat]);
  }

  /**
   * A page of jobs, latest first. Each state is listed in the time order of its own index:
   * pending jobs by `runAt`, active ones by `leaseExpiresAt`, finished ones by `finishedAt` (and
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
      LIST_BUDGET,
      p.owner ?? "",
    ])) as [Reply[], string | null, string | null];
    let nextCursor: string | null = null;
    if (id !== null && time !== null) {
      nextCursor = `${time}:${id}`;
      if (nextCursor.length > CURSOR_MAX) nextCursor = id;
    }
    return { jobs: replies.map(decodeJob), nextCursor };
  }

  async stats(p: StatsParams): Promise<StoreStats> {
    const [counters, scheduled, oldest] = (await this.#run("stats", [p.now])) as [
      Reply,
      number,
      string | null,
    ];
    const states = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const queues: StoreStats["queues"] = {};
    const types: StoreStats["types"] = {};
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
      } else if (field in states) {
        states[field as JobState] = n;
      }
    }
    return {
      states,
      scheduled,
      retrying,
      queues,
      types,
      oldestReadyAt: oldest === null ? null : Number(oldest),
    };
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

  async retry(p: RetryParams): Promise<JobMutation> {
    return mutation(await this.#write("retry", [p.now, p.id]));
  }

  async replay(p: ReplayParams): Promise<JobMutation> {
    return mutation(await this.#write("replay", [p.now, p.id, p.newId]));
  }

  // ---- sweeps --------------------------------------------------------------------------------

  async expiredLeases(p: SweepParams): Promise<JobRecord[]> {
    return ((await this.#run("expiredLeases", [p.now, p.limit])) as Reply[]).map(decodeJob);
  }

  async expirePending(p: SweepParams): Promise<JobRecord[]> {
    return ((await this.#write("expirePending", [p.now, p.limit])) as Reply[]).map(decodeJob);
  }

  async prune(p: PruneParams): Promise<number> {
    const cutoffs = FINISHED_STATES.map((s) => p.now - p.retainMs[s]);
    return (await this.#write("prune", [p.now, p.limit, ...cutoffs])) as number;
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

  async listSchedules(): Promise<ScheduleRecord[]> {
    const all = schedules((await this.#run("listSchedules", [])) as unknown[]);
    return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async dueSchedules(p: SweepParams): Promise<ScheduleRecord[]> {
    return schedules((await this.#run("dueSchedules", [p.now, p.limit])) as unknown[]);
  }

  async fireSchedule(p: FireScheduleParams): Promise<boolean> {
    const args: Arg[] = [p.now, p.name, p.expectedRunAt, p.nextRunAt];
    pushNewJob(args, p.job);
    return (await this.#write("fireSchedule", args)) === 1;
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

  /** One plain command (atomic by itself), with faults reported as every store operation's are. */
  async #command(command: string, args: Arg[]): Promise<unknown> {
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    try {
      return await this.#send(command, args);
    } catch (error) {
      throw this.#fault(error);
    }
  }

  // ---- wake-ups ------------------------------------------------------------------------------

  onWake(listener: () => void): () => void {
    this.#listeners.add(listener);
    this.#subscribe();
    return () => this.#listeners.delete(listener);
  }

  wake(): void {
    if (this.#closed) return;
    // Reaches this process too, through its own subscription; a lost wake-up is covered by polling.
    this.#client.publish(this.#channel, "").catch(() => {});
  }

  /** Starts the wake-up subscription, on its own connection (a subscribed one runs no commands). */
  #subscribe(): void {
    if (this.#subscriber || this.#closed) return;
    const connectionName = `${this.#connectionName}:wake`;
    const sub = this.#client.isCluster
      ? (this.#client as Cluster).duplicate(undefined, {
          redisOptions: { ...(this.#client as Cluster).options.redisOptions, connectionName },
        })
      : (this.#client as Redis).duplicate({ connectionName, lazyConnect: false });
    this.#subscriber = sub;
    sub.on("error", () => {});
    sub.on("message", (channel: string) => {
      if (channel === this.#channel) this.#emitWake();
    });
    let connected = false;
    sub.on("ready", () => {
      // After a reconnection: wake-ups sent meanwhile were lost, so look now.
      if (connected) this.#emitWake();
      connected = true;
    });
    // Wake-ups published before the subscription took effect were missed: look once it has.
    sub.subscribe(this.#channel).then(
      () => this.#emitWake(),
      () => {},
    );
  }

  #emitWake(): void {
    for (const listener of this.#listeners) listener();
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#subscriber?.disconnect();
    this.#subscriber = null;
    this.#client.off("close", this.#onClose);
    if (this.#ownsClient) {
      // QUIT waits for the replies of commands already sent.
      await this.#client.quit().catch(() => this.#client.disconnect());
    }
  }
}

const INSERTED: EnqueueResult = Object.freeze({ inserted: true }) as EnqueueResult;

function mutation(reply: unknown): JobMutation {
  if (reply === null) return null;
  const [changed, job] = reply as [number, Reply];
  return { record: decodeJob(job), changed: changed === 1 };
}

function schedules(reply: unknown[]): ScheduleRecord[] {
  const out: ScheduleRecord[] = [];
  for (let i = 0; i < reply.length; i += 3) {
    const flat = reply[i + 2] as Reply;
    const f: Record<string, string> = {};
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

/** Compares by UTF-8 bytes, as SQLite's BINARY and PostgreSQL's "C" collations do. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
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

function claimOrder(a: JobRecord, b: JobRecord): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function finite(n: number | undefined): Arg {
  return n === undefined || !Number.isFinite(n) ? "" : n;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A Redis fault as errand reports it, whichever command met it. */
function fault(error: unknown): ErrandError {
  return new ErrandError("STORE_ERROR", `Redis: ${message(error)}`, { cause: error });
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(
    /\/\/([^@/]*)@/,
    (_, auth: string) => `//${auth.includes(":") ? `${auth.split(":")[0]}:***` : "***"}@`,
  );
}

/**
 * errand's keys carry no TTL, so only an `allkeys-*` policy can evict them, and an evicted job is
 * a lost job. `noeviction` (writes fail when memory is full) and `volatile-*` (only keys with a
 * TTL go) keep them.
 */
async function checkEvictionPolicy(client: Client): Promise<void> {
  const info = await client.info("memory");
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (policy && policy !== "noeviction" && !policy.startsWith("volatile-")) {
    throw new ErrandError(
      "STORE_ERROR",
      `Redis maxmemory-policy is ${policy}: Redis could evict errand's keys and lose jobs. ` +
        "Set it to noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or use a Redis of its own for errand",
    );
  }
}

/** errand's way of sending a command (see reply-command.ts), or null if ioredis cannot be loaded here. */
async function loadSender(): Promise<SendCommand | null> {
  try {
    const { Command } = await import("ioredis");
    return commandSender(Command);
  } catch {
    return null;
  }
}
