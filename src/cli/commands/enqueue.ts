/**
 * `errand enqueue`: one job, or one per line of an ndjson file in batches.
 * @module
 */
import { type FileHandle, open } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { ErrandError } from "../../errors.js";
import type { EnqueueOptions } from "../../queue.js";
import { MAX_BULK } from "../../server/schemas/fields.js";
import type { CliContext } from "../context.js";
import { int, isSystemError, readPayload, unreadable } from "../input.js";
import { jobLine, print, progressBar } from "../output.js";
import { actOn, type Target, type TargetCommandOptions, withTarget } from "../target.js";

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
  handle: FileHandle,
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
  const lines = createInterface({
    input: handle.createReadStream({ autoClose: false }),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  try {
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
  } catch (error) {
    // The stream's own error: the file could be opened but not read.
    if (!isSystemError(error)) throw error;
    throw unreadable("--file", file, error);
  }
  await flush();
  bar?.stop();
  return total;
}

/**
 * `--file`, opened before the target is: a path that cannot be opened, or a directory, is refused
 * without touching the store.
 * @throws ErrandError `INVALID_OPTION`
 */
async function openFile(file: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, "r");
  } catch (cause) {
    throw unreadable("--file", file, cause);
  }
  if ((await handle.stat()).isDirectory()) {
    await handle.close();
    throw unreadable("--file", file, "it is a directory");
  }
  return handle;
}

/** Registers `enqueue`. */
export function registerEnqueue(program: Command, ctx: CliContext): void {
  withTarget(program.command("enqueue"))
    .description("enqueue a job of TYPE, or one per line of an ndjson file")
    .argument("<type>", "job type")
    .option("--payload <json>", "payload: JSON, @file, or - for standard input")
    .option("--file <ndjson>", "one payload per line, enqueued in batches")
    .option(
      "--batch <n>",
      `jobs per batch with --file (1 to ${MAX_BULK}, a server's largest bulk enqueue)`,
      int("--batch", 1, MAX_BULK),
      1000,
    )
    .option("--queue <name>")
    .option("--delay <duration>", 'run after this long ("30s", "2h", or ms)')
    .option("--at <time>", "run at this RFC 3339 time, with an offset (2030-01-01T09:00:00Z)")
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
      actOn(
        ctx,
        async (o: EnqueueCommandOptions, _type: string) => ({
          options: enqueueOptions(o),
          file: o.file ? { name: o.file, handle: await openFile(o.file) } : null,
          payload: o.file ? null : readPayload(o.payload),
        }),
        async ({ target }, { options, file, payload }, o, type) => {
          if (file === null) {
            const job = await target.enqueue(type, payload, options);
            print(ctx, o, job, () => `${job.duplicate ? "exists  " : "enqueued"} ${jobLine(job)}`);
            return;
          }
          try {
            const total = await enqueueFile(target, type, file.name, file.handle, options, o);
            print(ctx, o, { enqueued: total }, () => `enqueued ${total} jobs of ${type}`);
          } finally {
            await file.handle.close();
          }
        },
      ),
    );
}
