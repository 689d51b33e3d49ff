/**
 * `errand schedules list|set|rm`: cron schedules.
 * @module
 */
import type { Command } from "commander";
import { ErrandError } from "../../errors.js";
import type { CliContext } from "../context.js";
import { readPayload } from "../input.js";
import { print } from "../output.js";
import { act, actOn, type TargetCommandOptions, withTarget } from "../target.js";

interface SetOptions extends TargetCommandOptions {
  cron: string;
  type: string;
  payload?: string;
  timezone: string;
}

/** Registers `schedules` and its subcommands. */
export function registerSchedules(program: Command, ctx: CliContext): void {
  const schedules = program.command("schedules").description("cron schedules");
  withTarget(schedules.command("list"))
    .description("list schedules")
    .action(
      act(ctx, async ({ target }, o) => {
        const list = await target.schedules();
        print(
          ctx,
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
      actOn(
        ctx,
        (o: SetOptions, _name: string) => readPayload(o.payload),
        async ({ target }, payload, o, name) => {
          const s = await target.schedule(name, { cron: o.cron, timezone: o.timezone, job: o.type, payload });
          print(ctx, o, s, () => `scheduled ${s.name}: next ${s.nextRunAt.toISOString()}`);
        },
      ),
    );
  withTarget(schedules.command("rm"))
    .description("remove a schedule")
    .argument("<name>")
    .action(
      act(ctx, async ({ target }, o, name: string) => {
        if (!(await target.unschedule(name)))
          throw new ErrandError("NOT_FOUND", `no schedule ${JSON.stringify(name)}`);
        print(ctx, o, { removed: name }, () => `removed ${name}`);
      }),
    );
}
