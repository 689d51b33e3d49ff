/**
 * `errand queues list|pause|resume`.
 * @module
 */
import type { Command } from "commander";
import type { CliContext } from "../context.js";
import { print } from "../output.js";
import { act, withTarget } from "../target.js";

/** Registers `queues` and its subcommands. */
export function registerQueues(program: Command, ctx: CliContext): void {
  const queues = program.command("queues").description("queues: list, pause, resume");
  withTarget(queues.command("list"))
    .description("list queues with their counts by state, and whether each is paused")
    .action(
      act(ctx, async ({ target }, o) => {
        const s = await target.stats();
        const paused = new Set(s.paused);
        // A paused queue without jobs is listed too, so it can be found and resumed.
        const names = [...new Set([...Object.keys(s.queues), ...paused])].sort();
        const list = names.map((name) => ({ name, counts: s.queues[name] ?? {}, paused: paused.has(name) }));
        print(
          ctx,
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
  for (const [name, verb, description] of [
    [
      "pause",
      "pauseQueue",
      "pause a queue: no worker takes its jobs until it is resumed (running jobs finish)",
    ],
    ["resume", "resumeQueue", "resume a paused queue: workers take its jobs again at once"],
  ] as const) {
    withTarget(queues.command(name))
      .description(description)
      .argument("<name>")
      .action(
        act(ctx, async ({ target }, o, queue: string) => {
          const changed = await target[verb](queue);
          const pause = name === "pause";
          print(ctx, o, { name: queue, paused: pause, changed }, () =>
            changed
              ? `${pause ? "paused" : "resumed"} ${queue}`
              : `${queue} was already ${pause ? "paused" : "running"}`,
          );
        }),
      );
  }
}
