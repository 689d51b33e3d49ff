/**
 * How the Redis store sends a command: an ioredis `Command` that hands its reply straight to the
 * caller, so the reply is not left reachable from ioredis's own promise.
 * @module
 */
import type { ChainableCommander, Cluster, Command, Redis } from "ioredis";

type CommandClass = typeof Command;
type Arg = string | number | Buffer;

/**
 * A command ioredis never wrote to a connection: it waited in the offline queue while Redis was
 * unreachable, and ioredis gave up on it (`MaxRetriesPerRequestError`, which also removes it from
 * that queue, so it can never go out later). Redis never saw it, so sending it again cannot apply
 * it twice. Its message is the ioredis error's; `cause` is that error.
 *
 * Only that pair means "never sent": the same `MaxRetriesPerRequestError` also fails commands that
 * were written and whose connection then dropped; a command that timed out (`commandTimeout`) is
 * still queued and may go out later; a closed client's "Connection is closed." is final.
 * @internal
 */
export class CommandNotSentError extends Error {
  override readonly name = "CommandNotSentError";
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

/** The error a command failed with, as a {@link CommandNotSentError} if it never went out. */
export function notSentOr(error: unknown, sent: boolean): unknown {
  return !sent && error instanceof Error && error.name === "MaxRetriesPerRequestError"
    ? new CommandNotSentError(error)
    : error;
}

/** A command sent, or queued in a pipeline, which tells whether it has been written to a connection. */
export interface QueuedCommand {
  readonly sent: boolean;
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
    /** Written to a connection (ioredis asks each command for its bytes only then). */
    sent = false;

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
        reject(notSentOr(error, command.sent)),
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
