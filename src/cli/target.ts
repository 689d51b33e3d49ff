/**
 * Where a command acts: a store directly (`--store`, `ERRAND_STORE`, default
 * {@link DEFAULT_STORE}) or a server over HTTP (`--server`, `ERRAND_SERVER`, with `--token` or
 * `ERRAND_TOKEN`). The one place that reads those options and variables; every command gets its
 * target from here.
 * @module
 */
import type { Command } from "commander";
import { ErrandClient } from "../client/client.js";
import { ErrandError } from "../errors.js";
import { openQueue, type Queue } from "../queue.js";
import type { CliContext } from "./context.js";
import type { JsonOption } from "./output.js";

/** Where a command acts: a store directly, or a server over HTTP. Both have the Queue's methods. */
export type Target = Pick<
  Queue,
  | "enqueue"
  | "enqueueManyIds"
  | "enqueueBatch"
  | "enqueueFlow"
  | "get"
  | "dependencies"
  | "dependents"
  | "list"
  | "cancel"
  | "retry"
  | "replay"
  | "stats"
  | "schedule"
  | "unschedule"
  | "schedules"
  | "prune"
  | "pauseQueue"
  | "resumeQueue"
>;

/** Options every command that reaches jobs takes. */
export interface TargetOptions {
  store?: string;
  server?: string;
  token?: string;
}

/** The options of a command declared {@link withTarget}. */
export type TargetCommandOptions = TargetOptions & JsonOption;

/** The default store when neither `--store`, `ERRAND_STORE` nor `--server` is given. */
export const DEFAULT_STORE = "sqlite:./errand.db";

/** An open target; `close` releases it. `client` is set through a server, `queue` on a store. */
export type OpenTarget = { target: Target; close: () => Promise<void> } & (
  | { client: ErrandClient; queue: null }
  | { client: null; queue: Queue }
);

/** The store URL: `--store`, else `ERRAND_STORE`, else {@link DEFAULT_STORE}. */
export function storeUrl(o: Pick<TargetOptions, "store">, env: NodeJS.ProcessEnv): string {
  return o.store ?? env.ERRAND_STORE ?? DEFAULT_STORE;
}

/**
 * The server URL: `--server`, else `ERRAND_SERVER`; undefined (or an empty ERRAND_SERVER) means a
 * store. An empty `--server` (`--server "$URL"` with URL unset) is refused rather than read as
 * "no server": the command would act on the local store instead, creating `./errand.db`.
 * @throws ErrandError `INVALID_OPTION` for `--server ""`
 */
export function serverUrl(o: Pick<TargetOptions, "server">, env: NodeJS.ProcessEnv): string | undefined {
  if (o.server === "") {
    throw new ErrandError(
      "INVALID_OPTION",
      "--server is empty: give the server URL, or leave --server out for a store",
    );
  }
  return o.server ?? env.ERRAND_SERVER;
}

/** Opens the target: the server when `--server` or `ERRAND_SERVER` names one, else the store. */
export async function openTarget(o: TargetOptions, env: NodeJS.ProcessEnv): Promise<OpenTarget> {
  const server = serverUrl(o, env);
  if (server) {
    // An empty ERRAND_TOKEN is no token, as an unset one is.
    const client = new ErrandClient({ url: server, token: o.token ?? (env.ERRAND_TOKEN || undefined) });
    return { target: client as unknown as Target, client, queue: null, close: async () => {} };
  }
  const queue = await openQueue(storeUrl(o, env));
  return { target: queue, client: null, queue, close: () => queue.close() };
}

/** Adds `--store`, for a command that only ever works on a store (`serve`). */
export function withStore(cmd: Command): Command {
  return cmd.option("--store <url>", `store URL (env ERRAND_STORE; default ${DEFAULT_STORE})`);
}

/** Adds the options every job command takes: the target and `--json`. */
export function withTarget(cmd: Command): Command {
  return withStore(cmd)
    .option("--server <url>", "act through an errand server instead (env ERRAND_SERVER)")
    .option("--token <token>", "bearer token for --server (env ERRAND_TOKEN)")
    .option("--json", "print JSON");
}

/**
 * A commander action that opens the command's target, runs `fn` on it with the command's
 * options and arguments, and closes the target however `fn` ends.
 */
export function act<O extends TargetCommandOptions = TargetCommandOptions, A extends unknown[] = []>(
  ctx: CliContext,
  fn: (t: OpenTarget, o: O, ...args: A) => Promise<void>,
): (...args: unknown[]) => Promise<void> {
  return actOn<undefined, O, A>(
    ctx,
    () => undefined,
    (t, _input, o, ...args) => fn(t, o, ...args),
  );
}

/**
 * {@link act} for a command with input of its own (a payload file, a flow): `read` takes it from
 * the options and arguments before the target is opened, so input that cannot be read or parsed
 * is refused without touching the store (a mistyped `@file` creates no `./errand.db`).
 */
export function actOn<I, O extends TargetCommandOptions = TargetCommandOptions, A extends unknown[] = []>(
  ctx: CliContext,
  read: (o: O, ...args: A) => I | Promise<I>,
  fn: (t: OpenTarget, input: I, o: O, ...args: A) => Promise<void>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    // commander passes the arguments, then the options, then the command.
    const cmd = args[args.length - 1] as Command;
    const o = cmd.opts() as O;
    const rest = args.slice(0, -2) as A;
    serverUrl(o, ctx.env); // An empty --server is refused before the input is read.
    const input = await read(o, ...rest);
    const t = await openTarget(o, ctx.env);
    try {
      await fn(t, input, o, ...rest);
    } finally {
      await t.close();
    }
  };
}
