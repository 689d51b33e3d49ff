/**
 * `errand flows enqueue FILE.json`: a DAG of jobs in one transaction, from a file holding the body
 * `POST /v1/flows` takes.
 * @module
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { ErrandError } from "../../errors.js";
import { flowNodesFromWire } from "../../flow-plan.js";
import type { CliContext } from "../context.js";
import { jobLine, print } from "../output.js";
import { act, withTarget } from "../target.js";

/** The flow in `file` (`-` for standard input): `{ jobs: [{ ref, type, payload, dependsOn, …options }] }`. */
function readFlow(file: string): unknown {
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ErrandError("INVALID_FLOW", `${file} is not valid JSON: ${(cause as Error).message}`, {
      cause,
    });
  }
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
      act(ctx, async ({ target }, o, file: string) => {
        // Read and shaped before anything is stored, so a bad file changes nothing.
        const nodes = flowNodesFromWire(readFlow(file));
        const flow = await target.enqueueFlow(nodes);
        print(ctx, o, flow, () =>
          Object.entries(flow.jobs)
            .map(([ref, job]) => `${job.duplicate ? "exists  " : "enqueued"} ${ref}  ${jobLine(job)}`)
            .join("\n"),
        );
      }),
    );
}
