/**
 * `errand migrate` and `errand prune`: the store's upkeep, run by hand.
 * @module
 */
import type { Command } from "commander";
import { ErrandError } from "../../errors.js";
import type { CliContext } from "../context.js";
import { print } from "../output.js";
import { act, withTarget } from "../target.js";

/** Registers `migrate` and `prune`. */
export function registerMaintenance(program: Command, ctx: CliContext): void {
  withTarget(program.command("migrate"))
    .description("create or upgrade the store's schema (stores also migrate on open)")
    .action(
      act(ctx, async ({ client }, o) => {
        // Opening the store migrated it; through a server there is nothing this can reach.
        if (client)
          throw new ErrandError("INVALID_OPTION", "migrate: give --store (a server migrates its own store)");
        print(ctx, o, { migrated: true }, () => "store is up to date");
      }),
    );

  withTarget(program.command("prune"))
    .description("delete finished jobs past their retention now")
    .action(
      act(ctx, async ({ target }, o) => {
        const deleted = await target.prune();
        print(ctx, o, { deleted }, () => `deleted ${deleted} finished jobs`);
      }),
    );
}
