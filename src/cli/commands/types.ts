/**
 * `errand types list|set`: job types, which live on a server (`--server` only).
 * @module
 */
import type { Command } from "commander";
import type { ErrandClient } from "../../client/client.js";
import { ErrandError } from "../../errors.js";
import type { CliContext } from "../context.js";
import { readPayload } from "../input.js";
import { print } from "../output.js";
import { act, withTarget } from "../target.js";

/** The server's client; a store has no job types to show or set. */
function serverOnly(client: ErrandClient | null): ErrandClient {
  if (!client) throw new ErrandError("INVALID_OPTION", "types: give --server (types live on a server)");
  return client;
}

/** Registers `types` and its subcommands. */
export function registerTypes(program: Command, ctx: CliContext): void {
  const types = program.command("types").description("job types on a server (--server only)");
  withTarget(types.command("list"))
    .description("list job types")
    .action(
      act(ctx, async ({ client }, o) => {
        const list = await serverOnly(client).types();
        print(
          ctx,
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
      'settings: JSON, @file or -, e.g. {"maxAttempts": 3, "concurrency": 5, "keyConcurrency": 1, "fair": true, "rateLimit": {"limit": 100, "periodMs": "1m"}}',
    )
    .action(
      act(ctx, async ({ client }, o: { config: string; json?: boolean }, type: string) => {
        const server = serverOnly(client);
        const config = readPayload(o.config) as object;
        const t = await server.setType({ ...config, type });
        print(ctx, o, t, () => `set ${t.type}`);
      }),
    );
}
