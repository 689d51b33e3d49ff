/**
 * How the Redis store sends a command: an ioredis `Command` that hands its reply straight to the
 * caller, so the reply is not left reachable from ioredis's own promise.
 * @module
 */
import type { Cluster, Command, Redis } from "ioredis";

type CommandClass = typeof Command;
type Arg = string | number | Buffer;

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
export type SendCommand = (client: Redis | Cluster, name: string, args: Arg[]) => Promise<unknown>;

/** Builds {@link SendCommand} on the `Command` class of the loaded ioredis. */
export function commandSender(Base: CommandClass): SendCommand {
  class HandOverCommand extends Base {
    #deliver: ((reply: unknown) => void) | undefined;

    constructor(
      name: string,
      args: Arg[],
      options: ConstructorParameters<CommandClass>[2],
      deliver: (reply: unknown) => void,
    ) {
      super(name, args, options);
      this.#deliver = deliver;
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

  return (client, name, args) =>
    new Promise((resolve, reject) => {
      // The options `call()` would give the command.
      const options = client.options as { showFriendlyErrorStack?: boolean; keyPrefix?: string };
      const command = new HandOverCommand(
        name,
        args,
        {
          replyEncoding: "utf8",
          errorStack: options.showFriendlyErrorStack ? new Error() : undefined,
          keyPrefix: options.keyPrefix,
        },
        resolve,
      );
      // Resolves with null once the reply was handed over (a no-op then), or with the reply.
      (client.sendCommand(command) as Promise<unknown>).then(resolve, reject);
    });
}
