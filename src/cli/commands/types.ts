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
import { actOn, serverUrl, type TargetCommandOptions, type TargetOptions, withTarget } from "../target.js";

const NO_SERVER = "types: give --server (types live on a server)";

/**
 * Refuses a types command without a server before anything is opened: a store has no job types,
 * and opening one would create `./errand.db` only to refuse.
 */
function needServer(ctx: CliContext, o: TargetOptions): void {
  if (!serverUrl(o, ctx.env)) throw new ErrandError("INVALID_OPTION", NO_SERVER);
}

/** The server's client (needServer has made sure there is one). */
function serverOnly(client: ErrandClient | null): ErrandClient {
  if (!client) throw new ErrandError("INVALID_OPTION", NO_SERVER);
  return client;
}

/**
 * `--config` as a type's settings: a JSON object only. Anything else (a number, `true`, `null`, a
 * string, an array) is refused before a request: spread into the body it became `{}`, which
 * replaced the type's settings with the defaults.
 * @throws ErrandError `INVALID_OPTION`
 */
function settingsOf(config: unknown): Record<string, unknown> {
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    const got = Array.isArray(config) ? "an array" : config === null ? "null" : `a ${typeof config}`;
    throw new ErrandError("INVALID_OPTION", `--config must be a JSON object of settings, got ${got}`);
  }
  return config as Record<string, unknown>;
}

/** Registers `types` and its subcommands. */
export function registerTypes(program: Command, ctx: CliContext): void {
  const types = program.command("types").description("job types on a server (--server only)");
  withTarget(types.command("list"))
    .description("list job types")
    .action(
      actOn(
        ctx,
        (o) => needServer(ctx, o),
        async ({ client }, _none, o) => {
          const list = await serverOnly(client).types();
          print(
            ctx,
            o,
            list,
            () =>
              list.map((t) => `${t.type}  ${JSON.stringify({ ...t, type: undefined })}`).join("\n") ||
              "no types",
          );
        },
      ),
    );
  withTarget(types.command("set"))
    .description("create or replace a job type from JSON settings")
    .argument("<type>")
    .requiredOption(
      "--config <json>",
      'settings: JSON, @file or -, e.g. {"maxAttempts": 3, "concurrency": 5, "keyConcurrency": 1, "fair": true, "rateLimit": {"limit": 100, "periodMs": "1m"}}',
    )
    .action(
      actOn(
        ctx,
        (o: TargetCommandOptions & { config: string }, _type: string) => {
          needServer(ctx, o);
          return settingsOf(readPayload(o.config, "--config"));
        },
        async ({ client }, config, o, type) => {
          const t = await serverOnly(client).setType({ ...config, type });
          print(ctx, o, t, () => `set ${t.type}`);
        },
      ),
    );
}
