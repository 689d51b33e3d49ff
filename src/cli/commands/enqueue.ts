/**
 * `errand enqueue`: one job, or one per line of an ndjson file in batches.
 * @module
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { ErrandError } from "../../errors.js";
import type { EnqueueOptions } from "../../queue.js";
import type { CliContext } from "../context.js";
import { int, readPayload } from "../input.js";
import { jobLine, print, progressBar } from "../output.js";
import { act, type Target, type TargetCommandOptions, withTarget } from "../target.js";

interface EnqueueCommandOptions extends TargetCommandOptions {
  payload?: string;
  file?: string;
  batch: number;
  queue?: string;
  delay?: string;
  at?: string;
  priority?: number;
  id?: string;
  dependsOn?: string[];
  onDependencyFailure?: string;
  key?: string;
  debounceKey?: string;
  debounceMs?: string;
}

/** A duration flag: a bare number is ms, anything else a duration like "30s" (the target checks it). */
function durationFlag(value: string): number | string {
  return /^\d+$/.test(value) ? Number(value) : value;
}

/**
 * `--debounce-key` with `--debounce-ms`, as the `debounce` option.
 * @throws ErrandError `INVALID_OPTION` when only one of the two is given.
 */
function debounceOption(o: EnqueueCommandOptions): Pick<EnqueueOptions, "debounce"> {
  if (o.debounceKey === undefined && o.debounceMs === undefined) return {};
  if (o.debounceKey === undefined || o.debounceMs === undefined) {
    throw new ErrandError("INVALID_OPTION", "enqueue: give --debounce-key and --debounce-ms together");
  }
  return { debounce: { key: o.debounceKey, delayMs: durationFlag(o.debounceMs) } };
}

/** The enqueue options the command's flags give; a bare number for `--delay` is ms. */
function enqueueOptions(o: EnqueueCommandOptions): EnqueueOptions {
  return {
    ...(o.queue ? { queue: o.queue } : {}),
    ...(o.delay ? { delayMs: durationFlag(o.delay) } : {}),
    ...(o.at ? { runAt: o.at } : {}),
    ...(o.priority !== undefined ? { priority: o.priority } : {}),
    ...(o.id ? { id: o.id } : {}),
    ...(o.dependsOn ? { dependsOn: o.dependsOn } : {}),
    // Checked by the target, which names the two values it takes.
    ...(o.onDependencyFailure
      ? { onDependencyFailure: o.onDependencyFailure as EnqueueOptions["onDependencyFailure"] }
      : {}),
    ...(o.key !== undefined ? { key: o.key } : {}),
    ...debounceOption(o),
  };
}

/**
 * Enqueues one job per non-blank line of `file`, `o.batch` to a round trip, and returns how many.
 * A line that is not JSON stops the run with its line number; the batches before it stay enqueued.
 */
async function enqueueFile(
  target: Target,
  type: string,
  file: string,
  options: EnqueueOptions,
  o: EnqueueCommandOptions,
): Promise<number> {
  const bar = await progressBar(o, "enqueue");
  let batch: unknown[] = [];
  let total = 0;
  let line = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    // One type and one set of options: enqueueManyIds takes the stores' bulk path and builds no
    // job the command would only count.
    await target.enqueueManyIds(type, batch, options);
    total += batch.length;
    batch = [];
    bar?.update(total);
  };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const text of lines) {
    line++;
    if (!text.trim()) continue;
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      throw new ErrandError("INVALID_PAYLOAD", `${file}:${line} is not valid JSON`);
    }
    batch.push(payload);
    if (batch.length >= o.batch) await flush();
  }
  await flush();
  bar?.stop();
  return total;
}

/** Registers `enqueue`. */
export function registerEnqueue(program: Command, ctx: CliContext): void {
  withTarget(program.command("enqueue"))
    .description("enqueue a job of TYPE, or one per line of an ndjson file")
    .argument("<type>", "job type")
    .option("--payload <json>", "payload: JSON, @file, or - for standard input")
    .option("--file <ndjson>", "one payload per line, enqueued in batches")
    .option("--batch <n>", "jobs per batch with --file", int("--batch"), 1000)
    .option("--queue <name>")
    .option("--delay <duration>", 'run after this long ("30s", "2h", or ms)')
    .option("--at <time>", "run at this ISO-8601 time")
    .option("--priority <n>", "higher runs first", int("--priority"))
    .option("--id <id>", "your own id (idempotent)")
    .option("--depends-on <id...>", "wait (blocked) until these jobs have completed")
    .option(
      "--on-dependency-failure <policy>",
      'when a dependency ends dead, cancelled or expired: "cancel" (default) or "run"',
    )
    .option(
      "--key <key>",
      "the job's key (tenant, account): its type's keyConcurrency, order, keyRateLimit and fair turns apply per key",
    )
    .option(
      "--debounce-key <key>",
      "collapse bursts: replace the pending, not started job holding this key (with --debounce-ms)",
    )
    .option("--debounce-ms <duration>", 'with --debounce-key: run after this long ("5s", or ms)')
    .action(
      act(ctx, async ({ target }, o: EnqueueCommandOptions, type: string) => {
        const options = enqueueOptions(o);
        if (!o.file) {
          const job = await target.enqueue(type, readPayload(o.payload), options);
          print(ctx, o, job, () => `${job.duplicate ? "exists  " : "enqueued"} ${jobLine(job)}`);
          return;
        }
        const total = await enqueueFile(target, type, o.file, options, o);
        print(ctx, o, { enqueued: total }, () => `enqueued ${total} jobs of ${type}`);
      }),
    );
}
