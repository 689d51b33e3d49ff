/**
 * The `errand` command tree: one register function per command group, in the order `--help`
 * lists them.
 * @module
 */
import { Command } from "commander";
import { registerEnqueue } from "./commands/enqueue.js";
import { registerFlows } from "./commands/flows.js";
import { registerJobs } from "./commands/jobs.js";
import { registerMaintenance } from "./commands/maintenance.js";
import { registerQueues } from "./commands/queues.js";
import { registerSchedules } from "./commands/schedules.js";
import { registerServe } from "./commands/serve.js";
import { registerStats } from "./commands/stats.js";
import { registerTypes } from "./commands/types.js";
import { registerWorker } from "./commands/worker.js";
import { type CliContext, processContext } from "./context.js";

/**
 * Builds the program. Errors propagate out of `parseAsync` (commander's own ones too, through
 * `exitOverride`) for the entry point to turn into a message and an exit code.
 */
export function buildProgram(ctx: CliContext = processContext()): Command {
  const program = new Command("errand")
    .description("errand: a durable job queue. Run a server, workers, and manage jobs.")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();
  registerServe(program, ctx);
  registerWorker(program, ctx);
  registerEnqueue(program, ctx);
  registerFlows(program, ctx);
  registerJobs(program, ctx);
  registerStats(program, ctx);
  registerSchedules(program, ctx);
  registerQueues(program, ctx);
  registerTypes(program, ctx);
  registerMaintenance(program, ctx);
  return program;
}
