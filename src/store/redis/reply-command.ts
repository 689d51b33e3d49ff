/**
 * How the Redis store sends a command: an ioredis `Command` that hands its reply straight to the
 * caller, so the reply is not left reachable from ioredis's own promise.
 * @module
 */
import type { ChainableCommander, Cluster, Command, Redis } from "ioredis";

type CommandClass = typeof Command;
type Arg = string | number | Buffer;

/**
 * A command Redis never ran, so sending it again cannot apply it twice. Its message is the ioredis
 * error's (or says why it was not run); `cause` is that error. One of:
 * - ioredis never wrote it to a connection: it waited in the offline queue while Redis was
 *   unreachable, and ioredis gave up on it (`MaxRetriesPerRequestError`, which also removes it from
 *   that queue, so it can never go out later);
 * - on a Redis Cluster, the last node it went to answered MOVED, ASK, TRYAGAIN or CLUSTERDOWN
 *   (checked before a command runs) and ioredis stopped following ("Too many Cluster
 *   redirections"); TRYAGAIN and ASK mean errand's hash slot is being migrated;
 * - on a Redis Cluster, it was never written and its node connection closed ("Connection is
 *   closed."), or no node was ready ("Cluster isn't ready and enableOfflineQueue options is false").
 *
 * Not "never sent": the same `MaxRetriesPerRequestError` also fails commands that were written and
 * whose connection then dropped; a command that timed out (`commandTimeout`) is still queued and may
 * go out later; a closed standalone client's "Connection is closed." is final.
 * @internal
 */
export class CommandNotSentError extends Error {
  override readonly name = "CommandNotSentError";
  constructor(cause: Error, text = cause.message) {
    super(text, { cause });
  }
}

/** Replies with which a Cluster node refuses a command before running it. */
const REDIRECTED = /^(?:MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;
/** Replies with which a node refuses a command while its keys' slot is being migrated. */
const MIGRATING = /^(?:TRYAGAIN|ASK) /;
/** How ioredis's Cluster gives up on a command after following redirections. */
const TOO_MANY_REDIRECTIONS = "Too many Cluster redirections. Last error: ";
/** A Cluster's refusal while no node is connected, with `enableOfflineQueue: false`. */
const CLUSTER_NOT_READY = "Cluster isn't ready and enableOfflineQueue options is false";
const CONNECTION_CLOSED = "Connection is closed.";

/**
 * The error a command failed with, as a {@link CommandNotSentError} if Redis never ran it. `sent`
 * tells whether it was written to a connection and not refused there before running; `cluster`,
 * whether it went through a Redis Cluster client; `migrating`, whether a node refused it with
 * TRYAGAIN or ASK on the way (ioredis follows those to other nodes, so the last refusal it reports
 * may be a MOVED back).
 */
export function notSentOr(error: unknown, sent: boolean, cluster = false, migrating = false): unknown {
  if (sent || !(error instanceof Error)) return error;
  if (error.name === "MaxRetriesPerRequestError") return new CommandNotSentError(error);
  if (!cluster) return error;
  const text = error.message;
  if (text === CONNECTION_CLOSED || text === CLUSTER_NOT_READY) return new CommandNotSentError(error);
  const last = text.startsWith(TOO_MANY_REDIRECTIONS) ? text.slice(TOO_MANY_REDIRECTIONS.length) : text;
  const reply = last.replace(/^ReplyError: /, "");
  if (!REDIRECTED.test(reply)) return error;
  if (migrating || MIGRATING.test(reply)) {
    return new CommandNotSentError(
      error,
      `errand's Redis Cluster hash slot is being migrated: the command was not run (${reply})`,
    );
  }
  return new CommandNotSentError(error);
}

/**
 * The error a node answered, if a Cluster reports it as "Too many Cluster redirections": ioredis
 * counts its hops before it looks at a reply, so the reply on the last hop is wrapped whatever it
 * is (NOSCRIPT, a script's own error). A refusal (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) stays wrapped.
 */
function lastReply(error: unknown): unknown {
  if (!(error instanceof Error) || !error.message.startsWith(TOO_MANY_REDIRECTIONS)) return error;
  const reply = error.message.slice(TOO_MANY_REDIRECTIONS.length).replace(/^ReplyError: /, "");
  if (REDIRECTED.test(reply)) return error;
  const unwrapped = new Error(reply, { cause: error });
  unwrapped.name = "ReplyError";
  return unwrapped;
}

/**
 * Whether a node's error reply refused the command before running it: a Cluster node checks the
 * slot of a command's declared keys first, and answers MOVED, ASK, TRYAGAIN or CLUSTERDOWN instead.
 */
function refusedUnrun(error: unknown): boolean {
  return error instanceof Error && REDIRECTED.test(error.message);
}

/** A command sent, or queued in a pipeline, which tells whether it has been written to a connection. */
export interface QueuedCommand {
  readonly sent: boolean;
  /** A Cluster node refused it because its slot is being migrated (see {@link notSentOr}). */
  readonly migrating?: boolean;
}

/**
 * Sends one command and resolves with its reply (strings, as `call()` gives them).
 *
 * Why not `client.call()`: ioredis's `Command` sets `this.reject = (err) => { … }` in its promise
 * executor, and V8 allocates a function literal assigned straight to a property in the old
 * generation (a parser heuristic: such functions are usually methods, so long-lived). That
 * closure's context holds the promise's reject function, whose context holds the promise, whose
 * value is the reply. Old-space garbage is a scavenge root until the next full collection, so
 * every reply (a claim's is ~1,300 strings) survived its scavenges and was promoted: in a worker
 * draining 20,000 jobs it was ~30% of everything allocated, which grew V8's young generation to
 * its maximum (worker RSS ~92 MB, against ~76 MB with this). Here the reply is handed over from
 * `transformReply` and the command's own promise resolves with null, so what that closure keeps
 * alive is small. If an ioredis version stops calling `transformReply`, the command's promise
 * still carries the reply, and that is used instead.
 */
export interface SendCommand {
  /**
   * Sends one command; a command ioredis never wrote to a connection rejects with
   * {@link CommandNotSentError}. `track`, if given, is handed the command before it goes to
   * ioredis, so the caller can tell later whether it was written.
   */
  (
    client: Redis | Cluster,
    name: string,
    args: Arg[],
    track?: (command: QueuedCommand) => void,
  ): Promise<unknown>;
  /** Adds one command to `pipeline` (its reply comes in the pipeline's), marked as sent once written. */
  queue(client: Redis | Cluster, pipeline: ChainableCommander, name: string, args: Arg[]): QueuedCommand;
}

/** Builds {@link SendCommand} on the `Command` class of the loaded ioredis. */
export function commandSender(Base: CommandClass): SendCommand {
  class HandOverCommand extends Base {
    #deliver: ((reply: unknown) => void) | undefined;
    /**
     * Written to a connection (ioredis asks each command for its bytes only then), and not refused
     * there unrun (see {@link refusedUnrun}): a Cluster sends a command on after MOVED, ASK,
     * TRYAGAIN or CLUSTERDOWN, and only its last node's answer tells whether it ran.
     */
    sent = false;
    /** A node refused it with TRYAGAIN or ASK: its slot is being migrated. */
    migrating = false;
    /** The reject function ioredis (and a Cluster, wrapping it) set: see `reject` below. */
    declare rejectWith: (error: Error) => void;

    constructor(
      name: string,
      args: Arg[],
      options: ConstructorParameters<CommandClass>[2],
      deliver: ((reply: unknown) => void) | undefined,
    ) {
      super(name, args, options);
      this.#deliver = deliver;
    }

    override toWritable(socket: object): string | Buffer {
      this.sent = true;
      return super.toWritable(socket);
    }

    override transformReply(result: Buffer | Buffer[]): string | string[] | Buffer | Buffer[] {
      const reply = super.transformReply(result);
      const deliver = this.#deliver;
      if (deliver === undefined) return reply;
      this.#deliver = undefined;
      // The command object stays reachable from that closure too: let go of what it sent.
      this.args = [];
      deliver(reply);
      return null as never;
    }
  }

  // ioredis sets `reject` in `Command`'s constructor, and a `Cluster` wraps it to follow
  // redirections; a node calls it with each error reply. This accessor notes a refusal of a command
  // that did not run before handing the error on. Defined on the prototype: the base constructor
  // assigns `reject` before this class's fields exist, and TypeScript allows no accessor over it.
  Object.defineProperty(HandOverCommand.prototype, "reject", {
    get(this: HandOverCommand) {
      // The function set now: a Cluster keeps the one it wrapped, and calls it after its own.
      const reject = this.rejectWith;
      return (error: Error) => {
        if (refusedUnrun(error)) {
          this.sent = false;
          if (MIGRATING.test(error.message)) this.migrating = true;
        }
        reject.call(this, error);
      };
    },
    set(this: HandOverCommand, reject: (error: Error) => void) {
      this.rejectWith = reject;
    },
  });

  /** The options `call()` would give the command. */
  const optionsOf = (client: Redis | Cluster) => {
    const options = client.options as { showFriendlyErrorStack?: boolean; keyPrefix?: string };
    return {
      replyEncoding: "utf8",
      errorStack: options.showFriendlyErrorStack ? new Error() : undefined,
      keyPrefix: options.keyPrefix,
    } as const;
  };

  const send = (
    client: Redis | Cluster,
    name: string,
    args: Arg[],
    track?: (command: QueuedCommand) => void,
  ): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const command = new HandOverCommand(name, args, optionsOf(client), resolve);
      track?.(command);
      // Resolves with null once the reply was handed over (a no-op then), or with the reply.
      (client.sendCommand(command) as Promise<unknown>).then(resolve, (error: unknown) =>
        reject(notSentOr(lastReply(error), command.sent, client.isCluster, command.migrating)),
      );
    });
  return Object.assign(send, {
    queue(client: Redis | Cluster, pipeline: ChainableCommander, name: string, args: Arg[]): QueuedCommand {
      // No hand-over: the pipeline reads the reply from the command's own promise.
      const command = new HandOverCommand(name, args, optionsOf(client), undefined);
      (pipeline as unknown as { sendCommand(command: Command): unknown }).sendCommand(command);
      return command;
    },
  });
}
