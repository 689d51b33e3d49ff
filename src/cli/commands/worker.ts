/**
 * `errand worker`: runs the job definitions a module exports, on a store or through a server.
 * @module
 */
import type { Command } from "commander";
import { RemoteWorker } from "../../client/remote-worker.js";
import { ErrandError } from "../../errors.js";
import type { Job } from "../../job.js";
import { Worker } from "../../worker/worker.js";
import type { CliContext } from "../context.js";
import { decimalInteger, int, loadJobs, timerDuration } from "../input.js";
import { oneLine, out, stderrLogger } from "../output.js";
import { onStop } from "../stop-signal.js";
import { openTarget, type TargetCommandOptions, withTarget } from "../target.js";

interface WorkerOptions extends TargetCommandOptions {
  jobs: string;
  concurrency: number;
  prefetch: number;
  queues?: string;
  grace?: number;
}

/**
 * `--queues critical=6,default=1` as weights (a name alone weighs 1). A weight must be an
 * optionally signed run of decimal digits; the Worker checks the names and the weights' range.
 * The record has no prototype, since the names are the user's.
 * @throws ErrandError `INVALID_OPTION` for a weight that is not an integer, naming the text typed.
 */
export function parseQueues(list: string): Record<string, number> {
  const weights: Record<string, number> = Object.create(null);
  for (const q of list.split(",")) {
    const at = q.indexOf("=");
    if (at < 0) {
      weights[q] = 1;
      continue;
    }
    const name = q.slice(0, at);
    const text = q.slice(at + 1);
    const weight = decimalInteger(text);
    if (!Number.isSafeInteger(weight)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `--queues: the weight of ${JSON.stringify(name)} must be an integer, got ${JSON.stringify(text)}`,
      );
    }
    weights[name] = weight;
  }
  return weights;
}

/** The errors that end a worker: its token is refused, and every later request would be too. */
const FATAL = new Set(["UNAUTHORIZED", "FORBIDDEN"]);

/** Registers `worker`. */
export function registerWorker(program: Command, ctx: CliContext): void {
  withTarget(program.command("worker"))
    .description(
      "run a worker for the job definitions a module exports, until SIGINT or SIGTERM (or a token the server refuses)",
    )
    .requiredOption("--jobs <module>", "module exporting job definitions (defineJob)")
    .option("--concurrency <n>", "total weight running at once", int("--concurrency"), 10)
    .option("--prefetch <n>", "jobs to claim ahead of free capacity (0 to 10000)", int("--prefetch"), 0)
    .option("--queues <names>", "comma-separated queues, optionally name=weight")
    .option(
      "--grace <duration>",
      'on stopping, how long running jobs may finish before they are aborted and go back ("30s", "500ms", or ms; default 10s)',
      timerDuration("--grace"),
    )
    .action(async (o: WorkerOptions) => {
      const jobs = await loadJobs(o.jobs);
      const queues = o.queues !== undefined ? parseQueues(o.queues) : undefined;
      const common = {
        jobs,
        concurrency: o.concurrency,
        prefetch: o.prefetch,
        ...(queues ? { queues } : {}),
        logger: stderrLogger(),
      };
      const t = await openTarget(o, ctx.env);
      let worker: Worker | RemoteWorker;
      try {
        worker = t.client ? new RemoteWorker(t.client, common) : new Worker(t.queue, common);
      } catch (error) {
        // An option the worker refuses: the store is open by now (a pool, a connection), and
        // would keep the process alive after the error.
        await t.close();
        throw error;
      }
      const log = (event: string) => (job: Job, extra?: unknown) =>
        out(
          ctx,
          o.json
            ? JSON.stringify({ event, id: job.id, type: job.type, attempt: job.attempt })
            : `${event.padEnd(9)} ${job.type} ${job.id}${extra instanceof Error ? `: ${oneLine(extra.message)}` : ""}`,
        );
      worker.on("completed", log("completed"));
      worker.on("retrying", log("retrying"));
      worker.on("dead", log("dead"));
      // Runs until stopped (a signal, a closed standard output: resolves undefined) or refused by
      // the server (resolves with its error). A server that cannot be reached is retried, as a
      // restart of it is expected: each failure is logged on standard error.
      let stopListening = () => {};
      const ended = new Promise<ErrandError | undefined>((resolve) => {
        stopListening = onStop(() => resolve(undefined));
        worker.on("error", (error: unknown) => {
          if (error instanceof ErrandError && FATAL.has(error.code)) resolve(error);
        });
      });
      let reason: ErrandError | undefined;
      try {
        await worker.start();
        out(
          ctx,
          o.json
            ? JSON.stringify({ event: "started", types: jobs.map((j) => j.type) })
            : `worker running ${jobs.map((j) => j.type).join(", ")}`,
        );
        reason = await ended;
      } finally {
        stopListening();
        try {
          await worker.close({ graceMs: o.grace });
        } finally {
          await t.close();
        }
      }
      if (reason) throw reason;
    });
}
