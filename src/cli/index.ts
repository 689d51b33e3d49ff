#!/usr/bin/env node
/**
 * The `errand` command line. Every command works on a store (`--store URL`, `ERRAND_STORE`,
 * default `sqlite:./errand.db`) or through a server (`--server URL --token T`, `ERRAND_SERVER`,
 * `ERRAND_TOKEN`). Human output by default, `--json` for scripts.
 *
 * Exit codes: 0 done; 1 failed; 2 bad usage or input; 3 not found; 4 conflict (wrong state,
 * stale attempt); 5 store or server unavailable; 6 not allowed (401/403/429).
 * @module
 */
import { createReadStream, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { Command } from "commander";
import { ErrandClient } from "../client/client.js";
import { RemoteWorker } from "../client/remote-worker.js";
import type { AnyJobDefinition } from "../define-job.js";
import { toMs } from "../duration.js";
import { ErrandError, type ErrandErrorCode } from "../errors.js";
import type { Job } from "../job.js";
import type { EnqueueOptions } from "../queue.js";
import { openQueue } from "../queue.js";
import { Worker } from "../worker/worker.js";
import { DEFAULT_STORE, openTarget, type TargetOptions } from "./target.js";

const EXIT: Partial<Record<ErrandErrorCode, number>> & { default: number } = {
  default: 1,
  JOB_NOT_FOUND: 3,
  NOT_FOUND: 3,
  INVALID_STATE: 4,
  STALE_ATTEMPT: 4,
  STORE_ERROR: 5,
  UNAVAILABLE: 5,
  CLOSED: 5,
  UNAUTHORIZED: 6,
  FORBIDDEN: 6,
  RATE_LIMITED: 6,
};

/** Exit code for an error: input errors (every INVALID_* code) are 2. */
export function exitCode(error: unknown): number {
  if (!(error instanceof ErrandError)) return EXIT.default;
  const mapped = EXIT[error.code];
  if (mapped !== undefined) return mapped;
  if (error.code.startsWith("INVALID_") || error.code === "PAYLOAD_TOO_LARGE") return 2;
  return EXIT.default;
}

type Global = TargetOptions & { json?: boolean };

const out = (text: string) => process.stdout.write(`${text}\n`);

function print(o: Global, value: unknown, human: () => string): void {
  out(o.json ? JSON.stringify(value) : human());
}

/** Adds the options every job command takes. */
function withTarget(cmd: Command): Command {
  return cmd
    .option("--store <url>", `store URL (env ERRAND_STORE; default ${DEFAULT_STORE})`)
    .option("--server <url>", "act through an errand server instead (env ERRAND_SERVER)")
    .option("--token <token>", "bearer token for --server (env ERRAND_TOKEN)")
    .option("--json", "print JSON");
}

/** Runs an action against its target, then closes it. */
function act<A extends unknown[]>(
  fn: (t: Awaited<ReturnType<typeof openTarget>>, o: Global, ...args: A) => Promise<void>,
) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const o = cmd.opts() as Global;
    const target = await openTarget(o);
    try {
      await fn(target, o, ...(args.slice(0, -2) as A));
    } finally {
      await target.close();
    }
  };
}

function jobLine(j: Job): string {
  const when = j.state === "pending" ? ` runAt=${j.runAt.toISOString()}` : "";
  return `${j.id}  ${j.type}  ${j.queue}  ${j.state}  attempt=${j.attempt}/${j.maxAttempts}${when}`;
}

function jobDetail(j: Job): string {
  return Object.entries(j)
    .map(
      ([k, v]) =>
        `${k.padEnd(15)} ${v instanceof Date ? v.toISOString() : typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}`,
    )
    .join("\n");
}

/** `--payload` as JSON text, `@file`, or `-` for standard input. */
function readPayload(arg: string | undefined): unknown {
  if (arg === undefined) return null;
  const text =
    arg === "-" ? readFileSync(0, "utf8") : arg.startsWith("@") ? readFileSync(arg.slice(1), "utf8") : arg;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ErrandError("INVALID_PAYLOAD", `--payload is not valid JSON: ${(cause as Error).message}`, {
      cause,
    });
  }
}

function int(name: string, min = Number.MIN_SAFE_INTEGER) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) {
      const bound = min === Number.MIN_SAFE_INTEGER ? "" : ` ≥ ${min}`;
      throw new ErrandError("INVALID_OPTION", `${name} must be an integer${bound}, got ${v}`);
    }
    return n;
  };
}

/** Shortest `stats` refresh: a tighter loop only loads the store. */
const MIN_REFRESH_MS = 100;

/** `--watch [seconds]`'s value, in ms. */
function watchSeconds(v: string): number {
  const seconds = Number(v);
  if (!Number.isFinite(seconds) || seconds * 1000 < MIN_REFRESH_MS) {
    throw new ErrandError("INVALID_OPTION", `--watch takes seconds ≥ ${MIN_REFRESH_MS / 1000}, got ${v}`);
  }
  return Math.round(seconds * 1000);
}

/** `--interval <duration>`: "500ms", "2s", or ms. */
function refreshInterval(v: string): number {
  const ms = toMs("--interval", /^\d+$/.test(v) ? Number(v) : v);
  if (ms < MIN_REFRESH_MS) {
    throw new ErrandError("INVALID_OPTION", `--interval must be at least ${MIN_REFRESH_MS}ms, got ${v}`);
  }
  return ms;
}

/** Job definitions a module exports: a default array, or every export that is a definition. */
async function loadJobs(file: string): Promise<AnyJobDefinition[]> {
  const mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  const isDef = (v: unknown): v is AnyJobDefinition =>
    typeof v === "object" &&
    v !== null &&
    typeof (v as AnyJobDefinition).type === "string" &&
    typeof (v as AnyJobDefinition).handler === "function";
  const found = Array.isArray(mod.default) ? mod.default.filter(isDef) : Object.values(mod).filter(isDef);
  if (found.length === 0)
    throw new ErrandError("INVALID_OPTION", `${file} exports no job definitions (defineJob)`);
  return found;
}

function onSignal(fn: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    fn().then(
      () => process.exit(0),
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

export function buildProgram(): Command {
  const program = new Command("errand")
    .description("errand: a durable job queue. Run a server, workers, and manage jobs.")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();

  program
    .command("serve")
    .description("run the HTTP job server")
    .option("--store <url>", `store URL (env ERRAND_STORE; default ${DEFAULT_STORE})`)
    .option("--port <n>", "port (env PORT)", int("--port", 0))
    .option("--host <host>", "address to bind; anything but loopback needs tokens", "127.0.0.1")
    .option(
      "--tokens-file <file>",
      "tokens: JSON [{token, role}] or role:token lines (also env ERRAND_TOKENS)",
    )
    .option("--types <file>", "JSON array of job types to write to the store at start (kept there)")
    .option("--jobs <module>", "also run an in-process worker for the job definitions this module exports")
    .option("--body-limit <bytes>", "largest request body", int("--body-limit", 1))
    .option(
      "--push-lease <ms>",
      "lease per push delivery; another server redelivers after it (default: target timeout + 30 s)",
      int("--push-lease", 1),
    )
    .option("--log", "log requests (pino, JSON)")
    .option("--no-dashboard", "do not serve the web dashboard at /dashboard/")
    .action(async (o) => {
      const { createServer, loadTokens } = await import("../server/index.js");
      const queue = await openQueue(o.store ?? process.env.ERRAND_STORE ?? DEFAULT_STORE);
      const tokens = loadTokens({ env: process.env.ERRAND_TOKENS, file: o.tokensFile });
      const types = o.types ? JSON.parse(readFileSync(o.types, "utf8")) : [];
      const app = await createServer({
        queue,
        types,
        ...(tokens.length ? { auth: { tokens } } : {}),
        ...(o.bodyLimit ? { bodyLimit: o.bodyLimit } : {}),
        ...(o.pushLease ? { push: { leaseMs: o.pushLease } } : {}),
        logger: Boolean(o.log),
        dashboard: o.dashboard !== false,
      });
      // The server's job types (--types, or stored) are laid over these definitions by the queue.
      const jobs = o.jobs ? await loadJobs(o.jobs) : null;
      const worker = jobs ? new Worker(queue, { jobs, maintenance: false }) : null;
      if (worker) {
        worker.on("completed", (job, result) =>
          out(`completed ${job.type} ${job.id} → ${JSON.stringify(result)}`),
        );
        worker.on("failed", (job, error) =>
          out(`failed    ${job.type} ${job.id}: ${(error as Error).message}`),
        );
      }
      const port = o.port ?? (process.env.PORT ? Number(process.env.PORT) : 8080);
      const address = await app.listen({ port, host: o.host });
      await worker?.start();
      out(
        `errand serving ${address} on ${o.store ?? process.env.ERRAND_STORE ?? DEFAULT_STORE}${tokens.length ? ` (${tokens.length} tokens)` : " (no auth: loopback only)"}`,
      );
      if (o.dashboard !== false) out(`dashboard: ${address}/dashboard/`);
      onSignal(async () => {
        await worker?.close();
        await app.close();
        await queue.close();
      });
    });

  withTarget(program.command("worker"))
    .description("run a worker for the job definitions a module exports")
    .requiredOption("--jobs <module>", "module exporting job definitions (defineJob)")
    .option("--concurrency <n>", "total weight running at once", int("--concurrency"), 10)
    .option("--queues <names>", "comma-separated queues, optionally name=weight")
    .action(async (o) => {
      const jobs = await loadJobs(o.jobs);
      const queues = o.queues
        ? Object.fromEntries(
            String(o.queues)
              .split(",")
              .map((q: string) => {
                const [name, w] = q.split("=");
                return [name!, w ? Number(w) : 1];
              }),
          )
        : undefined;
      const common = { jobs, concurrency: o.concurrency, ...(queues ? { queues } : {}) };
      const server = o.server ?? process.env.ERRAND_SERVER;
      const queue = server ? null : await openQueue(o.store ?? process.env.ERRAND_STORE ?? DEFAULT_STORE);
      const worker = server
        ? new RemoteWorker(
            new ErrandClient({ url: server, token: o.token ?? process.env.ERRAND_TOKEN }),
            common,
          )
        : new Worker(queue!, common);
      const log = (event: string) => (job: Job, extra?: unknown) =>
        out(
          o.json
            ? JSON.stringify({ event, id: job.id, type: job.type, attempt: job.attempt })
            : `${event.padEnd(9)} ${job.type} ${job.id}${extra instanceof Error ? `: ${extra.message}` : ""}`,
        );
      worker.on("completed", log("completed"));
      worker.on("retrying", log("retrying"));
      worker.on("dead", log("dead"));
      onSignal(async () => {
        await worker.close();
        await queue?.close();
      });
      await worker.start();
      out(
        o.json
          ? JSON.stringify({ event: "started", types: jobs.map((j) => j.type) })
          : `worker running ${jobs.map((j) => j.type).join(", ")}`,
      );
    });

  withTarget(program.command("enqueue"))
    .description("enqueue a job of TYPE, or one per line of an ndjson file")
    .argument("<type>", "job type")
    .option("--payload <json>", "payload: JSON, @file, or - for standard input")
    .option("--file <ndjson>", "one payload per line, enqueued in batches")
    .option("--batch <n>", "jobs per batch with --file", int("--batch"), 1000)
    .option("--queue <name>")
    .option("--delay <duration>", 'run after this long ("30s", "2h", or ms)')
    .option("--at <time>", "run at this ISO-8601 time")
    .option("--priority <n>", "higher runs first", int("--priority"))
    .option("--id <id>", "your own id (idempotent)")
    .action(
      act(async ({ target }, o, type: string) => {
        const opts = o as Global & Record<string, string | number | undefined>;
        const options: EnqueueOptions = {
          ...(opts.queue ? { queue: String(opts.queue) } : {}),
          ...(opts.delay
            ? { delayMs: /^\d+$/.test(String(opts.delay)) ? Number(opts.delay) : String(opts.delay) }
            : {}),
          ...(opts.at ? { runAt: String(opts.at) } : {}),
          ...(opts.priority !== undefined ? { priority: Number(opts.priority) } : {}),
          ...(opts.id ? { id: String(opts.id) } : {}),
        };
        if (!opts.file) {
          const job = await target.enqueue(type, readPayload(opts.payload as string | undefined), options);
          print(o, job, () => `${job.duplicate ? "exists  " : "enqueued"} ${jobLine(job)}`);
          return;
        }
        const { SingleBar, Presets } = await import("cli-progress");
        const bar =
          process.stderr.isTTY && !o.json
            ? new SingleBar({ format: "enqueue |{bar}| {value} jobs" }, Presets.shades_classic)
            : null;
        bar?.start(0, 0);
        const size = Number(opts.batch);
        let batch: Array<{ job: string; payload: unknown; options: EnqueueOptions }> = [];
        let total = 0;
        let line = 0;
        const flush = async () => {
          if (batch.length === 0) return;
          await target.enqueueBatch(batch);
          total += batch.length;
          batch = [];
          bar?.setTotal(total);
          bar?.update(total);
        };
        const lines = createInterface({
          input: createReadStream(String(opts.file)),
          crlfDelay: Number.POSITIVE_INFINITY,
        });
        for await (const text of lines) {
          line++;
          if (!text.trim()) continue;
          let payload: unknown;
          try {
            payload = JSON.parse(text);
          } catch {
            throw new ErrandError("INVALID_PAYLOAD", `${opts.file}:${line} is not valid JSON`);
          }
          batch.push({ job: type, payload, options });
          if (batch.length >= size) await flush();
        }
        await flush();
        bar?.stop();
        print(o, { enqueued: total }, () => `enqueued ${total} jobs of ${type}`);
      }),
    );

  const jobs = program.command("jobs").description("list, inspect and change jobs");
  withTarget(jobs.command("list"))
    .description("list jobs, newest first")
    .option("--state <state>")
    .option("--queue <name>")
    .option("--type <type>")
    .option("--limit <n>", "page size (1 to 1000)", int("--limit"), 50)
    .option("--cursor <cursor>", "next page, from the previous page's nextCursor")
    .action(
      act(async ({ target }, o) => {
        const x = o as Global & Record<string, string | number | undefined>;
        const page = await target.list({
          ...(x.state ? { state: x.state as Job["state"] } : {}),
          ...(x.queue ? { queue: String(x.queue) } : {}),
          ...(x.type ? { type: String(x.type) } : {}),
          ...(x.cursor ? { cursor: String(x.cursor) } : {}),
          limit: Number(x.limit),
        });
        print(
          o,
          page,
          () =>
            [
              ...page.jobs.map(jobLine),
              ...(page.nextCursor ? [`next: --cursor ${page.nextCursor}`] : []),
            ].join("\n") || "no jobs",
        );
      }),
    );
  withTarget(jobs.command("get"))
    .description("show one job")
    .argument("<id>")
    .action(
      act(async ({ target }, o, id: string) => {
        const job = await target.get(id);
        if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
        print(o, job, () => jobDetail(job));
      }),
    );
  for (const [name, description] of [
    ["cancel", "cancel a pending or active job"],
    ["retry", "put a dead, cancelled or expired job back to pending"],
    ["replay", "enqueue a finished job again under a new id"],
  ] as const) {
    withTarget(jobs.command(name))
      .description(description)
      .argument("<id>")
      .action(
        act(async ({ target }, o, id: string) => {
          const job = await target[name](id);
          print(o, job, () => `${name}: ${jobLine(job)}`);
        }),
      );
  }

  withTarget(program.command("stats"))
    .description("jobs per queue and state")
    .option("--watch [seconds]", "refresh every few seconds (default 2)", watchSeconds)
    .option(
      "--interval <duration>",
      'refresh this often ("500ms", "5s", or ms); implies --watch',
      refreshInterval,
    )
    .hook("preAction", (cmd) => {
      const { watch, interval } = cmd.opts() as { watch?: number | true; interval?: number };
      if (typeof watch === "number" && interval !== undefined) {
        throw new ErrandError(
          "INVALID_OPTION",
          "give the refresh period once: --watch <seconds> or --interval",
        );
      }
    })
    .action(
      act(async ({ target }, o) => {
        const show = async () => {
          const s = await target.stats();
          print(o, s, () => {
            const states = ["pending", "active", "completed", "dead", "cancelled", "expired"] as const;
            const rows = Object.entries(s.queues).map(([q, c]) => [
              q,
              ...states.map((st) => String(c[st] ?? 0)),
            ]);
            const table = [
              ["queue", ...states],
              ...rows,
              ["total", ...states.map((st) => String(s.states[st]))],
            ];
            const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
            return [
              ...table.map((r) =>
                r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "),
              ),
              `scheduled ${s.scheduled}  retrying ${s.retrying}  oldest ready ${Math.round(s.oldestPendingAgeMs / 1000)}s`,
            ].join("\n");
          });
        };
        const { watch, interval } = o as { watch?: number | true; interval?: number };
        await show();
        if (watch === undefined && interval === undefined) return;
        const everyMs = interval ?? (typeof watch === "number" ? watch : 2000);
        // The next refresh is timed from the end of the last, so a slow store never stacks them up.
        // SIGINT or SIGTERM ends the watch and closes the target: exit 0. A failed refresh exits
        // with its error's code.
        await new Promise<void>((done, fail) => {
          let timer: NodeJS.Timeout | undefined;
          const stop = (error?: unknown) => {
            clearTimeout(timer);
            timer = undefined;
            process.off("SIGINT", onStopSignal).off("SIGTERM", onStopSignal);
            if (error === undefined) done();
            else fail(error);
          };
          const onStopSignal = () => stop();
          const next = () => {
            timer = setTimeout(() => {
              if (!o.json) process.stdout.write("\x1b[2J\x1b[H");
              show().then(() => {
                if (timer !== undefined) next();
              }, stop);
            }, everyMs);
          };
          process.once("SIGINT", onStopSignal).once("SIGTERM", onStopSignal);
          next();
        });
      }),
    );

  const schedules = program.command("schedules").description("cron schedules");
  withTarget(schedules.command("list"))
    .description("list schedules")
    .action(
      act(async ({ target }, o) => {
        const list = await target.schedules();
        print(
          o,
          list,
          () =>
            list
              .map(
                (s) => `${s.name}  ${s.cron} (${s.timezone})  ${s.type}  next ${s.nextRunAt.toISOString()}`,
              )
              .join("\n") || "no schedules",
        );
      }),
    );
  withTarget(schedules.command("set"))
    .description("create or replace a schedule")
    .argument("<name>")
    .requiredOption("--cron <expr>", 'cron expression, e.g. "0 3 * * *"')
    .requiredOption("--type <type>", "job type to enqueue each tick")
    .option("--payload <json>", "payload: JSON, @file, or -")
    .option("--timezone <zone>", "IANA zone", "UTC")
    .action(
      act(async ({ target }, o, name: string) => {
        const x = o as Global & Record<string, string>;
        const s = await target.schedule(name, {
          cron: x.cron!,
          timezone: x.timezone!,
          job: x.type!,
          payload: readPayload(x.payload),
        });
        print(o, s, () => `scheduled ${s.name}: next ${s.nextRunAt.toISOString()}`);
      }),
    );
  withTarget(schedules.command("rm"))
    .description("remove a schedule")
    .argument("<name>")
    .action(
      act(async ({ target }, o, name: string) => {
        if (!(await target.unschedule(name)))
          throw new ErrandError("NOT_FOUND", `no schedule ${JSON.stringify(name)}`);
        print(o, { removed: name }, () => `removed ${name}`);
      }),
    );

  const queues = program.command("queues").description("queues: list, pause, resume");
  withTarget(queues.command("list"))
    .description("list queues with their counts by state, and whether each is paused")
    .action(
      act(async ({ target }, o) => {
        const s = await target.stats();
        const paused = new Set(s.paused);
        // A paused queue without jobs is listed too, so it can be found and resumed.
        const names = [...new Set([...Object.keys(s.queues), ...paused])].sort();
        const list = names.map((name) => ({ name, counts: s.queues[name] ?? {}, paused: paused.has(name) }));
        print(
          o,
          list,
          () =>
            list
              .map((q) => {
                const counts = Object.entries(q.counts)
                  .map(([state, n]) => `${state} ${n}`)
                  .join(", ");
                return `${q.name}${q.paused ? "  (paused)" : ""}  ${counts || "no jobs"}`;
              })
              .join("\n") || "no queues",
        );
      }),
    );
  for (const [name, verb] of [
    ["pause", "pauseQueue"],
    ["resume", "resumeQueue"],
  ] as const) {
    withTarget(queues.command(name))
      .description(
        name === "pause"
          ? "pause a queue: no worker takes its jobs until it is resumed (running jobs finish)"
          : "resume a paused queue: workers take its jobs again at once",
      )
      .argument("<name>")
      .action(
        act(async ({ target }, o, queue: string) => {
          const changed = await target[verb](queue);
          const state = name === "pause" ? "paused" : "resumed";
          print(o, { name: queue, paused: name === "pause", changed }, () =>
            changed ? `${state} ${queue}` : `${queue} was already ${name === "pause" ? "paused" : "running"}`,
          );
        }),
      );
  }

  const types = program.command("types").description("job types on a server (--server only)");
  withTarget(types.command("list"))
    .description("list job types")
    .action(
      act(async ({ client }, o) => {
        if (!client) throw new ErrandError("INVALID_OPTION", "types: give --server (types live on a server)");
        const list = await client.types();
        print(
          o,
          list,
          () =>
            list.map((t) => `${t.type}  ${JSON.stringify({ ...t, type: undefined })}`).join("\n") ||
            "no types",
        );
      }),
    );
  withTarget(types.command("set"))
    .description("create or replace a job type from JSON settings")
    .argument("<type>")
    .requiredOption(
      "--config <json>",
      'settings: JSON, @file or -, e.g. {"maxAttempts": 3, "concurrency": 5}',
    )
    .action(
      act(async ({ client }, o, type: string) => {
        if (!client) throw new ErrandError("INVALID_OPTION", "types: give --server (types live on a server)");
        const config = readPayload((o as Record<string, string>).config) as object;
        const t = await client.setType({ ...config, type });
        print(o, t, () => `set ${t.type}`);
      }),
    );

  withTarget(program.command("migrate"))
    .description("create or upgrade the store's schema (stores also migrate on open)")
    .action(
      act(async ({ client }, o) => {
        if (client)
          throw new ErrandError("INVALID_OPTION", "migrate: give --store (a server migrates its own store)");
        print(o, { migrated: true }, () => "store is up to date");
      }),
    );

  withTarget(program.command("prune"))
    .description("delete finished jobs past their retention now")
    .action(
      act(async ({ target }, o) => {
        const deleted = await target.prune();
        print(o, { deleted }, () => `deleted ${deleted} finished jobs`);
      }),
    );

  return program;
}

export async function main(argv = process.argv): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    const e = error as { code?: string; exitCode?: number };
    if (typeof e.code === "string" && e.code.startsWith("commander.")) {
      // --help and --version exit 0; usage errors 2 (commander printed them).
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    const json = process.argv.includes("--json");
    const code = error instanceof ErrandError ? error.code : "INTERNAL";
    const message = error instanceof Error ? error.message : String(error);
    if (json) process.stderr.write(`${JSON.stringify({ code, message })}\n`);
    else process.stderr.write(`errand: ${message} (${code})\n`);
    process.exitCode = exitCode(error);
  }
}

const invoked = process.argv[1] ? resolve(process.argv[1]) : "";
if (invoked && (import.meta.url === pathToFileURL(invoked).href || /[\\/]errand$/.test(invoked))) {
  void main();
}
