/**
 * `errand jobs list|get|cancel|retry|replay`: find jobs and change one.
 * @module
 */
import { type Command, Option } from "commander";
import { ErrandError } from "../../errors.js";
import type { JobState } from "../../job.js";
import type { CliContext } from "../context.js";
import { int } from "../input.js";
import { jobDetail, jobLine, print } from "../output.js";
import { act, type TargetCommandOptions, withTarget } from "../target.js";

interface ListOptions extends TargetCommandOptions {
  state?: string;
  queue?: string;
  type?: string;
  key?: string;
  limit: number;
  cursor?: string;
  view?: "full" | "summary";
}

/** Registers `jobs` and its subcommands. */
export function registerJobs(program: Command, ctx: CliContext): void {
  const jobs = program.command("jobs").description("list, inspect and change jobs");
  withTarget(jobs.command("list"))
    .description("list jobs, newest first")
    .option("--state <state>", "blocked, pending, active, completed, dead, cancelled or expired")
    .option("--queue <name>")
    .option("--type <type>")
    .option("--key <key>", "only jobs with this key")
    .option("--limit <n>", "page size (1 to 1000)", int("--limit"), 50)
    .option("--cursor <cursor>", "next page, from the previous page's nextCursor")
    .addOption(
      new Option(
        "--view <view>",
        "summary (no payload, checkpoint, result, errors or dependsOn) or full; default: summary, full with --json",
      ).choices(["full", "summary"]),
    )
    .action(
      act(ctx, async ({ target }, o: ListOptions) => {
        // The target checks the filters (state, names, limit), as it does for every caller; one
        // given empty is passed on to be refused, never dropped (which would list everything).
        // A line needs no payload: a summary page leaves the large fields unread in the store.
        const page = await target.list({
          view: o.view ?? (o.json ? "full" : "summary"),
          ...(o.state !== undefined ? { state: o.state as JobState } : {}),
          ...(o.queue !== undefined ? { queue: o.queue } : {}),
          ...(o.type !== undefined ? { type: o.type } : {}),
          ...(o.key !== undefined ? { key: o.key } : {}),
          ...(o.cursor !== undefined ? { cursor: o.cursor } : {}),
          limit: o.limit,
        });
        print(
          ctx,
          o,
          page,
          () =>
            [
              ...page.jobs.map(jobLine),
              // A filtered page reads a bounded stretch of jobs (LIST_SCAN): it may be empty and go on.
              ...(page.nextCursor && page.jobs.length === 0
                ? ["none in this stretch of jobs; older ones may match"]
                : []),
              ...(page.nextCursor ? [`next: --cursor ${page.nextCursor}`] : []),
            ].join("\n") || "no jobs",
        );
      }),
    );
  withTarget(jobs.command("get"))
    .description("show one job")
    .argument("<id>")
    .action(
      act(ctx, async ({ target }, o, id: string) => {
        const job = await target.get(id);
        if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
        print(ctx, o, job, () => jobDetail(job));
      }),
    );
  withTarget(jobs.command("dependencies"))
    .description("the jobs one waits for, with their states")
    .argument("<id>")
    .action(
      act(ctx, async ({ target }, o, id: string) => {
        const deps = await target.dependencies(id);
        print(
          ctx,
          o,
          deps,
          () =>
            deps.map((d) => `${d.id}  ${d.type ?? "-"}  ${d.state ?? "pruned"}`).join("\n") ||
            "no dependencies",
        );
      }),
    );
  withTarget(jobs.command("dependents"))
    .description("the jobs waiting on one, in id order")
    .argument("<id>")
    .option("--limit <n>", "page size (1 to 1000)", int("--limit"), 50)
    .option("--cursor <cursor>", "next page, from the previous page's nextCursor")
    .action(
      act(ctx, async ({ target }, o: ListOptions, id: string) => {
        const page = await target.dependents(id, {
          limit: o.limit,
          ...(o.cursor !== undefined ? { cursor: o.cursor } : {}),
        });
        print(
          ctx,
          o,
          page,
          () =>
            [
              ...page.jobs.map(jobLine),
              ...(page.nextCursor ? [`next: --cursor ${page.nextCursor}`] : []),
            ].join("\n") || "no dependents",
        );
      }),
    );
  for (const [name, description] of [
    ["cancel", "cancel a blocked, pending or active job"],
    ["retry", "put a dead, cancelled or expired job back to pending"],
    ["replay", "enqueue a finished job again under a new id"],
  ] as const) {
    withTarget(jobs.command(name))
      .description(description)
      .argument("<id>")
      .action(
        act(ctx, async ({ target }, o, id: string) => {
          const job = await target[name](id);
          print(ctx, o, job, () => `${name}: ${jobLine(job)}`);
        }),
      );
  }
}
