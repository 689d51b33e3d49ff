/**
 * `errand worker`: runs the job definitions a module exports, on a store or through a server.
 * @module
 */
import type { Command } from "commander";
import { RemoteWorker } from "../../client/remote-worker.js";
import type { Job } from "../../job.js";
import { Worker } from "../../worker/worker.js";
import type { CliContext } from "../context.js";
import { int, loadJobs } from "../input.js";
import { out } from "../output.js";
import { onStopSignal } from "../stop-signal.js";
import { openTarget, type TargetCommandOptions, withTarget } from "../target.js";

interface WorkerOptions extends TargetCommandOptions {
  jobs: string;
  concurrency: number;
  prefetch: number;
  queues?: string;
}

/**
 * `--queues critical=6,default=1` as weights (a name alone weighs 1). The Worker checks the names
 * and weights; the record has no prototype, since the names are the user's.
 */
function parseQueues(list: string): Record<string, number> {
  const weights: Record<string, number> = Object.create(null);
  for (const q of list.split(",")) {
    const [name, w] = q.split("=");
    weights[name!] = w ? Number(w) : 1;
  }
  return weights;
}

/** Registers `worker`. */
export function registerWorker(program: Command, ctx: CliContext): void {
  withTarget(program.command("worker"))
    .description("run a worker for the job definitions a module exports")
    .requiredOption("--jobs <module>", "module exporting job definitions (defineJob)")
    .option("--concurrency <n>", "total weight running at once", int("--concurrency"), 10)
    .option("--prefetch <n>", "jobs to claim ahead of free capacity (0 to 10000)", int("--prefetch"), 0)
    .option("--queues <names>", "comma-separated queues, optionally name=weight")
    .action(async (o: WorkerOptions) => {
      const jobs = await loadJobs(o.jobs);
      const queues = o.queues ? parseQueues(o.queues) : undefined;
      const common = {
        jobs,
        concurrency: o.concurrency,
        prefetch: o.prefetch,
        ...(queues ? { queues } : {}),
      };
      const t = await openTarget(o, ctx.env);
      const worker = t.client ? new RemoteWorker(t.client, common) : new Worker(t.queue, common);
      const log = (event: string) => (job: Job, extra?: unknown) =>
        out(
          ctx,
          o.json
            ? JSON.stringify({ event, id: job.id, type: job.type, attempt: job.attempt })
            : `${event.padEnd(9)} ${job.type} ${job.id}${extra instanceof Error ? `: ${extra.message}` : ""}`,
        );
      worker.on("completed", log("completed"));
      worker.on("retrying", log("retrying"));
      worker.on("dead", log("dead"));
      onStopSignal(async () => {
        await worker.close();
        await t.close();
      });
      await worker.start();
      out(
        ctx,
        o.json
          ? JSON.stringify({ event: "started", types: jobs.map((j) => j.type) })
          : `worker running ${jobs.map((j) => j.type).join(", ")}`,
      );
    });
}
