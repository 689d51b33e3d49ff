/** `npm run bench` options, parsed and checked by commander (run.ts's head documents them). */
import { Command, InvalidArgumentError, Option } from "commander";
import { positiveInt } from "./common.js";

export interface Options {
  store: string;
  /** `--scenario`: one scenario's name, or a group's (`http`); null runs the default set. */
  scenario: string | null;
  jobs: number;
  backlog: number;
  latencyJobs: number;
  quick: boolean;
  json: boolean;
  compiled: boolean;
  /** Concurrent lease → report loops in http-work. */
  httpLoops: number;
  /** How long rate-limit runs; unset: 60 s, 10 s with --quick. */
  seconds?: number;
}

/** `--store`: a store name or URL that `benchStore` (stores.ts) knows. */
function storeSpec(value: string): string {
  if (/^(sqlite|postgres|redis)$|^(postgres(ql)?|rediss?):\/\//.test(value)) return value;
  throw new InvalidArgumentError("one of sqlite, postgres, redis, or a postgres:// or redis:// URL");
}

/**
 * Parses the command line (after `npm run bench --`); on a bad or unknown option commander
 * prints why and exits.
 * @param scenarios - what `--scenario` accepts: every scenario's name and group.
 */
export function parseArgs(argv: string[], scenarios: readonly string[]): Options {
  const program = new Command("npm run bench --")
    .description("throughput, latency and memory of errand on one store (see the head of bench/run.ts)")
    .option(
      "--store <store>",
      "sqlite, postgres, redis, or a postgres:// or redis:// URL",
      storeSpec,
      "sqlite",
    )
    .addOption(new Option("--scenario <name>", "run one scenario").choices(scenarios))
    .option("--jobs <n>", "jobs per throughput scenario", positiveInt, 20_000)
    .option(
      "--backlog <n>",
      "backlog size for drain-backlog, drain-blocked, rate-held and scheduled-ahead",
      positiveInt,
      1_000_000,
    )
    .option("--latency-jobs <n>", "jobs in the latency scenario", positiveInt, 300)
    .option("--http-loops <n>", "concurrent lease → report loops in http-work", positiveInt, 4)
    .option("--seconds <n>", "how long rate-limit runs (default 60; 10 with --quick)", positiveInt)
    .option(
      "--quick",
      "skip drain-backlog, drain-blocked, rate-held and scheduled-ahead (100,000 at most when asked for)",
      false,
    )
    .option("--compiled", "run worker processes on a tsc build instead of under tsx", false)
    .option("--json", "print one JSON object to stdout instead of a table", false)
    .showHelpAfterError("(npm run bench -- --help for the options)")
    .parse(argv, { from: "user" });
  const o = program.opts<Omit<Options, "scenario"> & { scenario?: string }>();
  return { ...o, scenario: o.scenario ?? null };
}
