/**
 * The Redis store's transport: connecting, the scripts (loaded once, called by SHA, sent again on
 * NOSCRIPT), the epoch every writing script checks, the commands whose connection closed before
 * their reply, and how Redis's errors become errand's.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Cluster, Redis, RedisOptions } from "ioredis";
import { MAX_TIMER_MS } from "../../duration.js";
import { debounceKeyHeld, debounceKeyHeldByOwner, dependencyNotFound, ErrandError } from "../../errors.js";
import { SlotMap } from "../../slot-map.js";
import {
  CommandNotSentError,
  commandSender,
  notSentOr,
  type QueuedCommand,
  type SendCommand,
} from "./reply-command.js";
import { type ScriptName, scriptNames, scriptSha, scriptText } from "./scripts.js";

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
   * subscription. Required, so that a command whose connection dropped after it reached Redis is
   * reported, never silently sent a second time (a claim sent twice would lease a second batch of
   * jobs that no worker hears of): `autoResendUnfulfilledCommands: false` on a `Redis`, and
   * `retryDelayOnFailover: 0` on a `Cluster` (plus `redisOptions.autoResendUnfulfilledCommands:
   * false` if it sets `clusterNodeRetryStrategy`). And `enableOfflineQueue: false` on a `Cluster`:
   * its offline queue holds commands with no deadline while no node is reachable (`commandTimeout`
   * does not apply there); without it, errand sends them again until `retryMs` has passed.
   * `RedisStore.open` refuses a client without them (`INVALID_OPTION`). Recommended: `maxRetriesPerRequest` small (a command ioredis gave up on
   * before sending it is sent again by errand, within {@link RedisStoreOptions.retryMs}), and
   * `commandTimeout` (see {@link RedisStoreOptions.commandTimeoutMs}, which applies only to a
   * client errand opens).
   */
  client?: Redis | Cluster;
  /**
   * Namespace of every key: keys are `{prefix}:…`, so they share one Redis Cluster hash slot and
   * several errand installations can share one Redis. Letters, digits and `_ . : -`.
   * @defaultValue "errand"
   */
  prefix?: string;
  /**
   * How long a command that never reached Redis is sent again before it fails with
   * `STORE_ERROR`. While Redis is unreachable ioredis holds commands in its offline queue and gives
   * up on them after a few reconnection attempts (`maxRetriesPerRequest`, about 300 ms); errand
   * sends such a command again, with backoff, until `retryMs` has passed, so a worker's outcome
   * (a completion, a failure, a heartbeat) survives a short network blip. A command that was sent
   * and whose reply was lost is never sent again: it may have run, and is reported instead.
   * @remarks Longer rides out longer outages, but a caller waits that long to hear of one.
   * @defaultValue 10_000 (as the PostgreSQL store's `retryMs`)
   * @since 0.1.0
   */
  retryMs?: number;
  /**
   * How long a command may wait for its reply (ioredis's `commandTimeout`) before it fails with
   * `STORE_ERROR`: a Redis that stops answering with its connection open (a hung server, a network
   * that drops packets silently) then cannot hang a worker or `close()` for good. Such a command
   * may still have run, or still run later, like any command whose reply was lost. It must exceed
   * the longest command errand sends: a bulk enqueue of hundreds of thousands of jobs is one Lua
   * script, a few seconds long at worst. `0` turns the deadline off. Applies to a client errand
   * opens from `url`; set `commandTimeout` on a client you give.
   * @defaultValue 30_000
   * @since 0.1.0
   */
  commandTimeoutMs?: number;
  /** Extra ioredis options when opening from `url` (they override errand's defaults). */
  redisOptions?: RedisOptions;
}

/** How long a command never sent is sent again, by default ({@link RedisStoreOptions.retryMs}). */
const DEFAULT_RETRY_MS = 10_000;
/**
 * How many parked jobs of an upgrade from layout 2 one lua/upgradeSlice.lua call puts back: ~33 µs
 * each, so Redis is busy ~33 ms a call.
 */
const UPGRADE_SLICE = 1_000;
/** The default of {@link RedisStoreOptions.commandTimeoutMs}. */
const DEFAULT_COMMAND_TIMEOUT_MS = 30_000;

/**
 * Each client's {@link RedisStoreOptions.retryMs}, as {@link connect} read it, for the transport
 * made over that client.
 */
const retryBudgets = new WeakMap<Client, number>();

const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;

export type Client = Redis | Cluster;

/** A call awaiting its reply (see `RedisTransport.#unanswered`). */
interface Unanswered {
  readonly key: number;
  readonly reject: (error: Error) => void;
  /**
   * What tells whether the call was written to a connection: its command, or its pipeline's
   * commands ({@link ALWAYS_SENT} when errand cannot tell).
   */
  commands: QueuedCommand | readonly QueuedCommand[];
}

/**
 * The commands of a call made through `client.call()` (ioredis not loadable by errand): whether
 * they went out is unknown, so a connection closing rejects them, and only calls made while
 * connected are registered.
 */
const ALWAYS_SENT: QueuedCommand = { sent: true };

/**
 * A command's name as errand sends it: upper-case. A Cluster made with `scaleReads` other than
 * "master" sends a command to a replica when @ioredis/commands lists it as read-only, and that
 * table is keyed by lower-case names, so an upper-case one is never found there: every command of
 * errand's goes to a master. A replica lags its master, and a read there (a job, the layout
 * version) could answer what the master has moved on from.
 */
export function masterBound(command: string): string {
  return command.toUpperCase();
}

/** Whether any of a call's commands was written to a connection. */
function wasSent(commands: QueuedCommand | readonly QueuedCommand[]): boolean {
  return "sent" in commands ? commands.sent : commands.some((c) => c.sent);
}
export type Arg = string | number;
export type Reply = string[];

/** What {@link connect} made of the options: a client, and whether errand owns it. */
export interface Connected {
  client: Client;
  /** errand opened the client from a URL, so it closes it; a given client is left open. */
  owns: boolean;
  prefix: string;
  /** The CLIENT SETNAME of errand's connections: `errand:<prefix>`. */
  connectionName: string;
}

/**
 * Parses the options and, given a `url`, opens errand's own client.
 * @throws ErrandError `INVALID_STORE_URL` for a bad URL or prefix, or when ioredis is not
 *   installed; `STORE_ERROR` when Redis cannot be reached.
 */
export async function connect(options: RedisStoreOptions): Promise<Connected> {
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
  // Timers' bound: a longer commandTimeout overflows Node's timer and fires at once, failing
  // every command.
  for (const [field, value] of [
    ["retryMs", options.retryMs],
    ["commandTimeoutMs", options.commandTimeoutMs],
  ] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0 || value > MAX_TIMER_MS)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `RedisStore: ${field} must be an integer from 0 to ${MAX_TIMER_MS}`,
      );
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
    refuseResending(client);
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
      // Give up on commands queued while Redis is away quickly; the transport sends those again
      // itself (they never went out) until retryMs has passed.
      maxRetriesPerRequest: 2,
      // A Redis that stops answering fails commands instead of leaving them (and close) hanging.
      ...(options.commandTimeoutMs === 0
        ? {}
        : { commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS }),
      // Dead peers found by the kernel, not only by the command deadline.
      keepAlive: 10_000,
      ...options.redisOptions,
    });
    owns = true;
    try {
      refuseResending(client); // redisOptions may not turn resending back on
    } catch (error) {
      client.disconnect();
      throw error;
    }
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
  retryBudgets.set(client, options.retryMs ?? DEFAULT_RETRY_MS);
  return { client, owns, prefix, connectionName };
}

/**
 * Refuses a client that would send a command again after its connection closed, when the command
 * may have reached Redis and run: ioredis's `Redis` resends those after reconnecting unless
 * `autoResendUnfulfilledCommands` is false, and its `Cluster` resends them once
 * `retryDelayOnFailover` has passed unless that is 0 (and its node connections, which reconnect
 * only with a `clusterNodeRetryStrategy`, resend like a `Redis`). errand promises such a command
 * is reported, never sent twice: a claim sent twice leases a second batch no worker hears of.
 * Also refuses a `Cluster` with its offline queue on: commands wait there, while no node is
 * reachable, with no deadline; without it they fail at once as never sent, and the transport sends
 * them again until `retryMs` has passed.
 * @throws ErrandError `INVALID_OPTION` naming the setting.
 */
function refuseResending(client: Client): void {
  const refuse = (setting: string, value: unknown) => {
    throw new ErrandError(
      "INVALID_OPTION",
      `RedisStore: the client must be made with ${setting} (it is ${String(value)}): otherwise ioredis sends ` +
        "again a command whose connection closed after it reached Redis, so a script could run twice " +
        "(a claim leasing jobs no worker gets); errand reports such a command instead",
    );
  };
  if (client.isCluster) {
    const options = (client as Cluster).options;
    if (options.retryDelayOnFailover !== 0) {
      refuse("retryDelayOnFailover: 0 (a Cluster option)", options.retryDelayOnFailover);
    }
    const nodeResend = options.redisOptions?.autoResendUnfulfilledCommands;
    if (typeof options.clusterNodeRetryStrategy === "function" && nodeResend !== false) {
      refuse(
        "redisOptions: { autoResendUnfulfilledCommands: false } (it sets clusterNodeRetryStrategy)",
        nodeResend,
      );
    }
    if (options.enableOfflineQueue !== false) {
      throw new ErrandError(
        "INVALID_OPTION",
        `RedisStore: the Cluster client must be made with enableOfflineQueue: false (it is ${String(options.enableOfflineQueue)}): ` +
          "otherwise, while no node is reachable, ioredis holds every command with no deadline " +
          "(commandTimeout does not apply there), so a worker or close() could hang for good; " +
          "errand sends such a command again itself until retryMs has passed",
      );
    }
  } else {
    const resend = (client as Redis).options.autoResendUnfulfilledCommands;
    if (resend !== false) refuse("autoResendUnfulfilledCommands: false", resend);
  }
}

/**
 * One client and how errand talks over it: scripts by SHA, each writing script carrying the
 * epoch, every call rejected, not left pending, when its connection closes before the reply, and a
 * call ioredis never sent (Redis was unreachable) sent again until `retryMs` has passed.
 */
export class RedisTransport {
  readonly client: Client;
  /** The key prefix, hash tag included: `{errand}:`. */
  readonly #keyPrefix: string;
  readonly #ownsClient: boolean;
  readonly #meta: string;
  /**
   * `{p}:never`, a key no script creates, declared as every script's KEYS[2] (see
   * lua/includes/prelude.lua): a Cluster node checks a script's declared keys before running it,
   * and while errand's slot is being migrated a command over several keys of which one is missing
   * is refused (TRYAGAIN, or ASK to the importing node, which answers TRYAGAIN) before any of it
   * runs. With KEYS[1] alone, a script on the migrating node ran until it reached a key already
   * moved, its writes so far kept, and one sent on with ASK ran on the importing node against the
   * keys moved so far.
   */
  readonly #never: string;
  /**
   * Every call not yet settled, with its commands. ioredis, told not to resend a command written
   * before a reconnection (a script may have run already), leaves its promise pending forever; the
   * transport rejects such calls itself when the connection closes. A call still in ioredis's
   * offline queue (never written) stays: ioredis writes it after reconnecting, or gives up on it
   * and rejects it. Registered whether or not the client is connected at the call, since a call
   * queued offline is written on the next connection, and that one too may close before the reply.
   * Each entry leaves when its call settles, either way.
   */
  readonly #unanswered = new SlotMap<number, Unanswered>();
  /** Keys of #unanswered: a SlotMap, since each entry would otherwise keep its reply alive. */
  #asked = 0;
  /** The epoch of the data this store works on (see lua/includes/epoch.lua). */
  #epoch = "";
  /** The epoch this store would write if it found the data gone; renewed each time it is used. */
  #fresh = randomUUID();
  #closed = false;
  /**
   * Null when errand cannot load ioredis itself (a client was given): `call()` is used then, and a
   * command never sent cannot be told from one whose reply was lost, so none is sent again.
   */
  readonly #sendCommand: SendCommand | null;
  /** How long a call ioredis never sent is sent again ({@link RedisStoreOptions.retryMs}). */
  readonly #retryMs: number;

  constructor(client: Client, ownsClient: boolean, keyPrefix: string, send: SendCommand | null) {
    this.client = client;
    this.#retryMs = retryBudgets.get(client) ?? DEFAULT_RETRY_MS;
    this.#sendCommand = send;
    this.#ownsClient = ownsClient;
    this.#keyPrefix = keyPrefix;
    this.#meta = `${keyPrefix}meta`;
    this.#never = `${keyPrefix}never`;
    client.on("close", this.#onClose);
  }

  /**
   * Waits until a `Cluster` client is ready (connecting it if it was made with `lazyConnect`), at
   * most `retryMs`: without an offline queue it fails commands sent before. A `Redis` is left as
   * it is (its own offline queue holds commands until it connects).
   * @throws ErrandError `STORE_ERROR` if it is not ready within `retryMs`.
   */
  async clusterReady(): Promise<void> {
    const client = this.client;
    if (!client.isCluster || client.status === "ready") return;
    if (client.status === "wait") client.connect().catch(() => {});
    let onReady = () => {};
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        onReady = resolve;
        client.once("ready", onReady);
        timer = setTimeout(
          () =>
            reject(
              new ErrandError(
                "STORE_ERROR",
                `Redis Cluster: no node ready within retryMs (${this.#retryMs} ms); status ${client.status}`,
              ),
            ),
          this.#retryMs,
        );
      });
    } finally {
      clearTimeout(timer);
      client.off("ready", onReady);
    }
  }

  /** True once {@link close} has begun: every call is refused with `CLOSED`. */
  get closed(): boolean {
    return this.#closed;
  }

  readonly #onClose = (): void => {
    const lost = new Error(
      "the connection to Redis closed before the reply came: the command may or may not have run",
    );
    for (const entry of this.#unanswered.values()) {
      // Never written: still in ioredis's offline queue, which sends it or gives up on it.
      if (!wasSent(entry.commands)) continue;
      this.#unanswered.delete(entry.key);
      entry.reject(lost);
    }
  };

  /**
   * Claims the prefix for this errand, or checks that its keys are in this errand's layout, and
   * finishes an upgrade from an older layout (lua/open.lua), in slices.
   */
  async claimPrefix(): Promise<void> {
    const [version, epoch, ours, upgrading] = (await this.run("open", [this.#fresh])) as [
      number,
      string,
      number,
      number,
    ];
    if (version > ours) {
      throw new ErrandError(
        "STORE_ERROR",
        `the keys under ${this.#keyPrefix} are at schema version ${version}, newer than this errand (${ours}); upgrade errand`,
      );
    }
    if (version < ours) {
      // Only when they hold jobs or schedules: open.lua takes an empty prefix over.
      throw new ErrandError(
        "STORE_ERROR",
        `the keys under ${this.#keyPrefix} hold jobs in the layout of schema version ${version}, which this errand (${ours}) cannot read; ` +
          "finish them with the errand that wrote them, or delete those keys, or use another prefix",
      );
    }
    this.#epoch = epoch;
    if (epoch === this.#fresh) this.#fresh = randomUUID();
    // Each slice is one short script: Redis serves other clients between them. Another process
    // opening now may run slices too; each job is handled by one of them.
    for (let left = upgrading; left > 0; ) {
      left = (await this.run("upgradeSlice", [UPGRADE_SLICE])) as number;
    }
  }

  /** Runs a script by SHA; on NOSCRIPT, EVAL sends the source (and Redis caches it again). */
  async run(name: ScriptName, args: Arg[]): Promise<unknown> {
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    let firstAt = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        // concat, not spread: a bulk enqueue passes hundreds of thousands of arguments.
        try {
          return await this.#send(
            "EVALSHA",
            ([scriptSha(name), 2, this.#meta, this.#never] as Arg[]).concat(args),
          );
        } catch (error) {
          if (!message(error).startsWith("NOSCRIPT")) throw error;
          return await this.#send(
            "EVAL",
            ([scriptText(name), 2, this.#meta, this.#never] as Arg[]).concat(args),
          );
        }
      } catch (error) {
        firstAt ||= Date.now();
        await this.#beforeResend(error, firstAt, attempt);
      }
    }
  }

  /**
   * After a failed call: waits before sending it again if it was never sent (ioredis gave up on it
   * in its offline queue) and `retryMs` from `firstAt` has not passed, the store still open; else
   * throws the failure as errand reports it. No caller ever hears of a blip shorter than that.
   */
  async #beforeResend(error: unknown, firstAt: number, attempt: number): Promise<void> {
    const left = firstAt + this.#retryMs - Date.now();
    if (!(error instanceof CommandNotSentError) || this.#closed || left <= 0) throw this.fault(error);
    // The resent call waits in the offline queue for the reconnection itself: short pauses suffice.
    const delay = Math.min(250, 25 * 2 ** attempt, left);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }

  /**
   * Sends one command; rejected if a connection it was written to closes before the reply, be it
   * the connection of the call or, for a call queued while Redis was unreachable, a later one.
   */
  #send(name: string, args: Arg[]): Promise<unknown> {
    const command = masterBound(name);
    const send = this.#sendCommand;
    if (send === null) {
      // Whether it goes out is unknown: a call queued offline is left to ioredis's offline queue.
      if (this.#offline()) return this.client.call(command, args);
      return this.#tracked(() => this.client.call(command, args));
    }
    return this.#tracked((entry) =>
      send(this.client, command, args, (sent) => {
        entry.commands = sent;
      }),
    );
  }

  /**
   * Runs `call` registered in #unanswered until it settles, so that #onClose can reject it once
   * written; `call` may replace the entry's commands with those it sends, before sending them.
   */
  #tracked<T>(call: (entry: Unanswered) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const key = this.#asked++;
      const entry: Unanswered = { key, reject, commands: ALWAYS_SENT };
      this.#unanswered.set(key, entry);
      call(entry).then(
        (reply) => {
          this.#unanswered.delete(key);
          resolve(reply);
        },
        (error: unknown) => {
          this.#unanswered.delete(key);
          reject(error);
        },
      );
    });
  }

  /**
   * Whether a command now would wait in ioredis's offline queue: not connected, or connected but
   * the socket already destroyed (a connection just cut, its close event not yet emitted). Only
   * for calls made through `client.call()`, whose commands cannot tell whether they went out.
   */
  #offline(): boolean {
    const client = this.client;
    return client.status !== "ready" || (!client.isCluster && (client as Redis).stream?.writable === false);
  }

  /** A writing script: it checks the caller's epoch first (lua/includes/epoch.lua). */
  write(name: ScriptName, args: Arg[]): Promise<unknown> {
    return this.run(name, ([this.#epoch, this.#fresh] as Arg[]).concat(args));
  }

  /**
   * Runs a writing script once per argument list, in order, in one pipeline (one round trip); each
   * run is atomic on its own. Runs Redis did not know the script for are sent again with EVAL.
   * A fault in any run rejects the whole call, like a fault of a single script.
   */
  async writeEach(name: ScriptName, argLists: Arg[][]): Promise<unknown[]> {
    if (argLists.length === 0) return [];
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    const head = [2, this.#meta, this.#never, this.#epoch, this.#fresh];
    const send = async (
      command: "EVALSHA" | "EVAL",
      lists: Arg[][],
    ): Promise<Array<[Error | null, unknown]>> => {
      const script = command === "EVALSHA" ? scriptSha(name) : scriptText(name);
      // Each pipeline on its own: one the EVALSHA pipeline ran is never sent again with the EVALs.
      let firstAt = 0;
      for (let attempt = 0; ; attempt++) {
        const replies = await this.#pipeline(
          command,
          lists.map((args) => ([script] as Arg[]).concat(head, args)),
        );
        if (!(replies instanceof CommandNotSentError)) return replies;
        firstAt ||= Date.now();
        await this.#beforeResend(replies, firstAt, attempt);
      }
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
      throw this.fault(error);
    }
  }

  /**
   * Sends `command` once per argument list in one pipeline: its replies, or a
   * {@link CommandNotSentError} when ioredis never sent any of it (queued together while Redis was
   * unreachable, so given up on together).
   */
  async #pipeline(
    name: string,
    argLists: Arg[][],
  ): Promise<Array<[Error | null, unknown]> | CommandNotSentError> {
    const command = masterBound(name);
    const pipeline = this.client.pipeline();
    const sender = this.#sendCommand;
    if (sender === null) {
      for (const args of argLists) pipeline.call(command, args);
      return (await this.#exec(pipeline, null)) ?? [];
    }
    const queued = argLists.map((args) => sender.queue(this.client, pipeline, command, args));
    const replies = (await this.#exec(pipeline, queued)) ?? [];
    // Sent again only whole: when Redis ran none of it (given up on together in the offline queue,
    // or each refused by a Cluster node before running).
    if (replies.length > 0 && queued.every((c) => !c.sent)) {
      const cluster = this.client.isCluster;
      const notSent = replies.map(([error], i) => notSentOr(error, false, cluster, queued[i]!.migrating));
      if (notSent.every((e) => e instanceof CommandNotSentError)) return notSent[0] as CommandNotSentError;
    }
    return replies;
  }

  /**
   * Sends a pipeline; rejected if a connection its commands were written to closes before the
   * replies. `queued` are its commands, or null when they cannot tell whether they went out.
   */
  #exec(
    pipeline: ReturnType<Client["pipeline"]>,
    queued: readonly QueuedCommand[] | null,
  ): Promise<Array<[Error | null, unknown]> | null> {
    if (queued === null) {
      if (this.#offline()) return pipeline.exec();
      return this.#tracked(() => pipeline.exec());
    }
    return this.#tracked((entry) => {
      entry.commands = queued;
      return pipeline.exec();
    });
  }

  /**
   * Maps a Redis error to errand's: the scripts' `ERRAND_*` errors to their codes (noting a new
   * epoch when the data was lost), anything else to `STORE_ERROR`.
   */
  fault(error: unknown): ErrandError {
    const text = message(error);
    if (text.startsWith("ERRAND_DATA_LOST ")) {
      this.#epoch = text.slice("ERRAND_DATA_LOST ".length);
      if (this.#epoch === this.#fresh) this.#fresh = randomUUID();
      return new ErrandError(
        "STORE_ERROR",
        `Redis lost errand's data under ${this.#keyPrefix} (restarted without persistence, flushed or evicted); ` +
          "jobs stored before are gone, and this operation was not applied",
        { cause: error },
      );
    }
    if (text.startsWith("ERRAND_INVALID_STATE ")) {
      return new ErrandError("INVALID_STATE", text.slice("ERRAND_INVALID_STATE ".length), { cause: error });
    }
    if (text.startsWith("ERRAND_DEBOUNCE_OWNER ")) {
      const hex = text.slice("ERRAND_DEBOUNCE_OWNER ".length);
      return debounceKeyHeldByOwner(Buffer.from(hex, "hex").toString("utf8"));
    }
    if (text.startsWith("ERRAND_DEBOUNCE_HELD ")) {
      // Types are names (no spaces); the key comes in hex, as the script sent it.
      const [holderType, type, hex] = text.slice("ERRAND_DEBOUNCE_HELD ".length).split(" ") as [
        string,
        string,
        string,
      ];
      return debounceKeyHeld(Buffer.from(hex, "hex").toString("utf8"), holderType, type);
    }
    if (text.startsWith("ERRAND_DEPENDENCY_NOT_FOUND ")) {
      const id = text.slice("ERRAND_DEPENDENCY_NOT_FOUND ".length);
      return dependencyNotFound(id);
    }
    if (text.startsWith("ERRAND_INVALID_CURSOR ")) {
      return new ErrandError("INVALID_OPTION", "list: the cursor is not one the Redis store gave", {
        cause: error,
      });
    }
    return redisFault(error);
  }

  /** One plain command (atomic by itself), with faults reported as every store operation's are. */
  async command(command: string, args: Arg[]): Promise<unknown> {
    if (this.#closed) throw new ErrandError("CLOSED", "the Redis store is closed");
    let firstAt = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#send(command, args);
      } catch (error) {
        firstAt ||= Date.now();
        await this.#beforeResend(error, firstAt, attempt);
      }
    }
  }

  /** Refuses calls from now on; then, if errand opened the client, quits it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.client.off("close", this.#onClose);
    if (this.#ownsClient) {
      // QUIT waits for the replies of commands already sent.
      await this.client.quit().catch(() => this.client.disconnect());
    }
  }
}

/**
 * Loads into Redis the scripts it lacks (a NOSCRIPT later, after SCRIPT FLUSH or a restart,
 * reloads per script). Every process sharing a Redis asks, but only the first sends the texts.
 */
export async function loadScripts(client: Client): Promise<void> {
  const known = (await client.script("EXISTS", ...scriptNames.map(scriptSha))) as number[];
  const missing = scriptNames.filter((_, i) => known[i] !== 1);
  await Promise.all(missing.map((n) => client.script("LOAD", scriptText(n))));
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A Redis fault as errand reports it, whichever command met it. */
export function redisFault(error: unknown): ErrandError {
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
 * TTL go) keep them. On a Cluster every master is asked: errand's slot may be served by any of
 * them, now or after a failover or a migration (INFO through the Cluster reaches one at random).
 */
export async function checkEvictionPolicy(client: Client): Promise<void> {
  const nodes: Redis[] = client.isCluster ? (client as Cluster).nodes("master") : [client as Redis];
  const infos = await Promise.all(nodes.map((node) => node.info("memory")));
  infos.forEach((info, i) => {
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy && policy !== "noeviction" && !policy.startsWith("volatile-")) {
      const node = nodes[i]!.options;
      const where = client.isCluster ? ` on the Cluster node ${node.host}:${node.port}` : "";
      throw new ErrandError(
        "STORE_ERROR",
        `Redis maxmemory-policy is ${policy}${where}: Redis could evict errand's keys and lose jobs. ` +
          "Set it to noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or use a Redis of its own for errand",
      );
    }
  });
}

/** errand's way of sending a command (see reply-command.ts), or null if ioredis cannot be loaded here. */
export async function loadSender(): Promise<SendCommand | null> {
  try {
    const { Command } = await import("ioredis");
    return commandSender(Command);
  } catch {
    return null;
  }
}
