/**
 * `errand serve`: the HTTP job server on a store, optionally with an in-process worker.
 * @module
 */
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import type { FastifyInstance } from "fastify";
import { ErrandError } from "../../errors.js";
import { openQueue, type Queue } from "../../queue.js";
import type { JobTypeConfig, ServerOptions, TokenEntry } from "../../server/index.js";
import { DEFAULT_MAX_JOB_TYPES, MAX_JOB_TYPES } from "../../server/job-types.js";
import { DEFAULT_DRAIN_GRACE_MS } from "../../server/lifecycle.js";
import { Worker } from "../../worker/worker.js";
import type { CliContext } from "../context.js";
import { int, isSystemError, loadJobs, parseUserJson, port, readUserFile, timerDuration } from "../input.js";
import { oneLine, out, stderrLogger } from "../output.js";
import { onStopSignal } from "../stop-signal.js";
import { storeUrl, withStore } from "../target.js";

/** The options `errand serve` takes, as commander parses them. */
interface ServeOptions {
  store?: string;
  port?: number;
  host: string;
  tokensFile?: string;
  types?: string;
  jobs?: string;
  bodyLimit?: number;
  maxJobTypes?: number;
  pushLease?: number;
  log?: boolean;
  dashboard: boolean;
  allowedHost?: string[];
  trustProxy?: string;
  grace?: number;
}

/**
 * The server's options from the command's: each `serve` flag that configures the server maps to
 * its `createServer` option here, and only here.
 */
function serverOptions(
  o: ServeOptions,
  queue: Queue,
  tokens: TokenEntry[],
  types: JobTypeConfig[],
): ServerOptions {
  return {
    queue,
    types,
    ...(tokens.length ? { auth: { tokens } } : {}),
    ...(o.bodyLimit ? { bodyLimit: o.bodyLimit } : {}),
    ...(o.maxJobTypes ? { maxJobTypes: o.maxJobTypes } : {}),
    ...(o.pushLease ? { push: { leaseMs: o.pushLease } } : {}),
    logger: Boolean(o.log),
    dashboard: o.dashboard !== false,
    ...(o.allowedHost?.length ? { allowedHosts: o.allowedHost } : {}),
    ...(o.trustProxy !== undefined ? { trustProxy: trustProxy(o.trustProxy) } : {}),
  };
}

/**
 * `--trust-proxy`, as Fastify's `trustProxy` takes it: `true` (trust every hop) or the proxies'
 * addresses / CIDR ranges separated by commas.
 */
function trustProxy(value: string): boolean | string {
  return value === "true" ? true : value;
}

/**
 * The URL a server bound to `address` answers at, and whether it is a wildcard. Read from the
 * socket rather than from `listen()`'s answer, which for 0.0.0.0 names one interface (loopback)
 * and for `--port 0` is the only place the chosen port shows.
 */
export function servedAddress(address: AddressInfo): { url: string; allInterfaces: boolean } {
  const host = address.address.includes(":") ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    allInterfaces: address.address === "0.0.0.0" || address.address === "::",
  };
}

/**
 * `app.listen`, with the address being taken or not allowed (the machine's state, not errand's
 * fault) reported as `UNAVAILABLE` naming the address.
 */
async function listen(
  app: { listen(o: { port: number; host: string }): Promise<string> },
  port: number,
  host: string,
) {
  try {
    await app.listen({ port, host });
  } catch (cause) {
    if (!isSystemError(cause)) throw cause;
    throw new ErrandError("UNAVAILABLE", `cannot listen on ${host}:${port}: ${cause.message}`, { cause });
  }
}

/**
 * How long a stopping `errand serve` lets work in flight finish unless `--grace` says: a Worker's
 * default close grace, so the remote workers' jobs and the in-process ones get the same time.
 */
const STOP_GRACE_MS = DEFAULT_DRAIN_GRACE_MS;

/**
 * What `errand serve` does on SIGINT or SIGTERM. The server drains at once (no job leased to a
 * remote worker or push target any more, `/readyz` not ready) while it goes on taking reports,
 * and the in-process worker closes alongside, both within one grace period (`graceMs`, from
 * `--grace`): the remote workers' jobs under way can report their outcomes meanwhile. Then the
 * server closes (the requests in flight answered), then the queue and its store.
 */
export async function stopServing(
  app: Pick<FastifyInstance, "errand" | "close">,
  worker: Pick<Worker, "close"> | null,
  queue: Pick<Queue, "close">,
  graceMs: number = STOP_GRACE_MS,
): Promise<void> {
  await Promise.all([app.errand.drain({ graceMs }), worker?.close({ graceMs })]);
  await app.close();
  await queue.close();
}

/** Registers `serve`. */
export function registerServe(program: Command, ctx: CliContext): void {
  withStore(program.command("serve").description("run the HTTP job server"))
    .option("--port <n>", "port, 0 to 65535 (env PORT)", port("--port"))
    .option("--host <host>", "address to bind; anything but loopback needs tokens", "127.0.0.1")
    .option(
      "--tokens-file <file>",
      "tokens: JSON [{token, role}] or role:token lines (also env ERRAND_TOKENS)",
    )
    .option("--types <file>", "JSON array of job types to write to the store at start (kept there)")
    .option("--jobs <module>", "also run an in-process worker for the job definitions this module exports")
    .option(
      "--body-limit <bytes>",
      "largest request body (default: the queue's largest payload + 64 KiB, at least 1 MiB)",
      int("--body-limit", 1),
    )
    .option(
      "--max-job-types <n>",
      `most job types the store may hold when one is added through this server (default ${DEFAULT_MAX_JOB_TYPES})`,
      int("--max-job-types", 1, MAX_JOB_TYPES),
    )
    .option(
      "--push-lease <ms>",
      "lease per push delivery; another server redelivers after it (default: target timeout + 30 s)",
      int("--push-lease", 1),
    )
    .option(
      "--allowed-host <name>",
      "a Host the server answers to besides loopback and its bind address (repeatable; name or name:port)",
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      "--trust-proxy <value>",
      "read the client address and Host from X-Forwarded-* sent by these proxies: true, or addresses/CIDRs",
    )
    .option(
      "--grace <duration>",
      'on SIGINT/SIGTERM, how long work in flight may finish before it is cut ("30s", "500ms", or ms; default 10s)',
      timerDuration("--grace"),
    )
    .option("--log", "log requests (pino, JSON)")
    .option("--no-dashboard", "do not serve the web dashboard at /dashboard/")
    .action(async (o: ServeOptions) => {
      const { createServer, loadTokens } = await import("../../server/index.js");
      // Every input read before the store is opened: a bad one changes nothing and leaves nothing open.
      const env = ctx.env.PORT;
      const listenPort = o.port ?? (env === undefined || env === "" ? 8080 : port("PORT")(env));
      const tokens = loadTokens({ env: ctx.env.ERRAND_TOKENS, file: o.tokensFile });
      const types = o.types
        ? (parseUserJson(
            "--types",
            o.types,
            readUserFile("--types", o.types),
            "INVALID_OPTION",
          ) as JobTypeConfig[])
        : [];
      // The server's job types (--types, or stored) are laid over these definitions by the queue.
      const jobs = o.jobs !== undefined ? await loadJobs(o.jobs) : null;
      const store = storeUrl(o, ctx.env);
      const queue = await openQueue(store);
      let app: Awaited<ReturnType<typeof createServer>> | undefined;
      let worker: Worker | null = null;
      try {
        app = await createServer(serverOptions(o, queue, tokens, types));
        worker = jobs ? new Worker(queue, { jobs, maintenance: false, logger: stderrLogger() }) : null;
        if (worker) {
          worker.on("completed", (job, result) =>
            out(ctx, `completed ${job.type} ${job.id} → ${JSON.stringify(result)}`),
          );
          worker.on("failed", (job, error) =>
            out(ctx, `failed    ${job.type} ${job.id}: ${oneLine((error as Error).message)}`),
          );
        }
        await listen(app, listenPort, o.host);
        // Listened for before the worker takes a job: a signal then stops it gracefully too.
        const served = app;
        const running = worker;
        onStopSignal(() => stopServing(served, running, queue, o.grace));
        await worker?.start();
      } catch (error) {
        await worker?.close();
        await app?.close();
        await queue.close();
        throw error;
      }
      const { url, allInterfaces } = servedAddress(app.server.address() as AddressInfo);
      out(
        ctx,
        `errand serving ${url}${allInterfaces ? " (all interfaces)" : ""} on ${store}${tokens.length ? ` (${tokens.length} tokens)` : " (no auth: loopback only)"}`,
      );
      if (o.dashboard !== false) out(ctx, `dashboard: ${url}/dashboard/`);
    });
}
