/**
 * `errand flows enqueue FILE.json`: a DAG of jobs in one transaction, from a file holding the body
 * `POST /v1/flows` takes.
 * @module
 */
import type { Command } from "commander";
import { flowNodesFromWire } from "../../flow-plan.js";
import type { CliContext } from "../context.js";
import { parseUserJson, readUserFile } from "../input.js";
import { jobLine, print } from "../output.js";
import { actOn, withTarget } from "../target.js";

/** The flow in `file` (`-` for standard input): `{ jobs: [{ ref, type, payload, dependsOn, …options }] }`. */
function readFlow(file: string): unknown {
  const source = file === "-" ? 0 : file;
  return parseUserJson("flows enqueue", source, readUserFile("flows enqueue", source), "INVALID_FLOW");
}

/** Registers `flows` and its subcommands. */
export function registerFlows(program: Command, ctx: CliContext): void {
  const flows = program.command("flows").description("jobs that wait for other jobs, enqueued as one");
  withTarget(flows.command("enqueue"))
    .description(
      "enqueue every job of a flow or none: FILE is { jobs: [{ ref, type, payload, dependsOn: [ref | { id }], …options }] } (- for standard input)",
    )
    .argument("<file>", "the flow, as POST /v1/flows takes it")
    .action(
      actOn(
        ctx,
        // Read and shaped before the store is opened, so a bad file changes nothing.
        (_o, file: string) => flowNodesFromWire(readFlow(file)),
        async ({ target }, nodes, o) => {
          const flow = await target.enqueueFlow(nodes);
          print(
            ctx,
            o,
            flow,
            () =>
              Object.entries(flow.jobs)
                .map(([ref, job]) => `${job.duplicate ? "exists  " : "enqueued"} ${ref}  ${jobLine(job)}`)
                .join("\n") || "no jobs: the flow is empty",
          );
        },
      ),
    );
}
