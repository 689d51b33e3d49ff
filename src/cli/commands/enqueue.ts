/**
 * `errand enqueue`: one job, or one per line of an ndjson file in batches.
 * @module
 */
import { type FileHandle, open } from "node:fs/promises";
import { createInterface } from "node:readline";
import { type Command, Option } from "commander";
import { ErrandError } from "../../errors.js";
import type { EnqueueOptions } from "../../queue.js";
import { MAX_BULK } from "../../server/schemas/fields.js";
import { toJsonText } from "../../validation.js";
import type { CliContext } from "../context.js";
import { int, isSystemError, readPayload, unreadable, withoutBom } from "../input.js";
import { jobLine, print, progressBar } from "../output.js";
import { actOn, type OpenTarget, type TargetCommandOptions, withTarget } from "../target.js";

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

/**
 * The enqueue options the command's flags give; a bare number for `--delay` is ms. A flag given
 * empty (`--id ""`) is passed on for the target to refuse with its code, never dropped: a lost
 * `--id` would enqueue a duplicate.
 */
function enqueueOptions(o: EnqueueCommandOptions): EnqueueOptions {
  return {
    ...(o.queue !== undefined ? { queue: o.queue } : {}),
    ...(o.delay !== undefined ? { delayMs: durationFlag(o.delay) } : {}),
    ...(o.at !== undefined ? { runAt: o.at } : {}),
    ...(o.priority !== undefined ? { priority: o.priority } : {}),
    ...(o.id !== undefined ? { id: o.id } : {}),
    ...(o.dependsOn !== undefined ? { dependsOn: o.dependsOn } : {}),
    // Checked by the target, which names the two values it takes.
    ...(o.onDependencyFailure !== undefined
      ? { onDependencyFailure: o.onDependencyFailure as EnqueueOptions["onDependencyFailure"] }
      : {}),
    ...(o.key !== undefined ? { key: o.key } : {}),
    ...debounceOption(o),
  };
}

/**
 * Most bytes of payloads (with each job's share of the request) in one batch of `--file`: under the 1 MiB
 * a server's default body limit never goes below (`serve --body-limit`), so that 1,000 payloads of a kilobyte
 * go as two requests rather than one the server refuses. A batch ends at `--batch` jobs or here.
 */
export const BATCH_BYTES = 768 * 1024;

/** One payload of `--file`, with the line it came from and its length in bytes. */
interface FileLine {
  payload: unknown;
  line: number;
  bytes: number;
}

/** `--file`, read a line at a time. */
interface NdjsonSource {
  name: string;
  handle: FileHandle;
  lines: AsyncIterator<string>;
  /** The last line read. */
  line: number;
  /** A line read but left for the next batch (it would have made this one too large). */
  held: FileLine | null;
}

/**
 * The next payload of `--file`, or null at its end: blank lines are skipped, a BOM before the first
 * is dropped.
 * @throws ErrandError `INVALID_PAYLOAD` naming the line that is not JSON; `INVALID_OPTION` when
 *   the file cannot be read.
 */
async function readLine(src: NdjsonSource): Promise<FileLine | null> {
  if (src.held) {
    const held = src.held;
    src.held = null;
    return held;
  }
  for (;;) {
    let next: IteratorResult<string>;
    try {
      next = await src.lines.next();
    } catch (error) {
      // The stream's own error: the file could be opened but not read.
      if (!isSystemError(error)) throw error;
      throw unreadable("--file", src.name, error);
    }
    if (next.done) return null;
    src.line++;
    const text = src.line === 1 ? withoutBom(next.value) : next.value;
    if (!text.trim()) continue;
    try {
      return { payload: JSON.parse(text), line: src.line, bytes: Buffer.byteLength(text) };
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new ErrandError("INVALID_PAYLOAD", `${src.name}:${src.line} is not valid JSON: ${why}`, {
        cause,
      });
    }
  }
}

/**
 * The next batch of `--file`: up to `max` payloads and about {@link BATCH_BYTES} (a payload larger
 * than that goes alone); empty at the end of the file. `envelope` is each job's share of a request
 * besides its payload.
 */
async function nextBatch(src: NdjsonSource, max: number, envelope: number): Promise<FileLine[]> {
  const batch: FileLine[] = [];
  let bytes = 0;
  while (batch.length < max) {
    const next = await readLine(src);
    if (next === null) break;
    if (batch.length > 0 && bytes + next.bytes + envelope > BATCH_BYTES) {
      src.held = next;
      break;
    }
    batch.push(next);
    bytes += next.bytes + envelope;
  }
  return batch;
}

/**
 * The target's refusal of a batch, naming the line it was for where it can be found (a payload too
 * large or not serialisable, on a store: each is checked again alone; through a server, `jobs[i]`
 * of its message), else the batch's lines; a request too large for a server says to lower --batch.
 */
function refusedBatch(
  file: string,
  batch: FileLine[],
  error: unknown,
  maxPayloadBytes: number | null,
): unknown {
  if (!(error instanceof ErrandError)) return error;
  const first = batch[0]!.line;
  const last = batch[batch.length - 1]!.line;
  let where = first === last ? `${file}:${first}` : `${file}: lines ${first} to ${last}`;
  let message = error.message;
  if (error.code === "INVALID_PAYLOAD") {
    const index = /\bjobs\[(\d+)\]/.exec(message)?.[1];
    const named = index === undefined ? undefined : batch[Number(index)];
    if (named) where = `${file}:${named.line}`;
    else if (maxPayloadBytes !== null) {
      for (const item of batch) {
        try {
          toJsonText("payload", item.payload, maxPayloadBytes);
        } catch (e) {
          where = `${file}:${item.line}`;
          message = e instanceof Error ? e.message : message;
          break;
        }
      }
    }
  }
  if (error.code === "PAYLOAD_TOO_LARGE" && batch.length > 1) {
    message += `; the request held ${batch.length} jobs: give a smaller --batch, or raise the server's --body-limit`;
  }
  return new ErrandError(error.code, `${where}: ${message}`, { cause: error });
}

/**
 * `error` with how far `--file` got: the jobs of the batches before it stay enqueued (each batch is
 * all or nothing), so the user can resume after the last line they hold.
 */
function withProgress(error: unknown, file: string, total: number, through: number): unknown {
  if (total === 0) return error;
  const note = `; ${total} jobs (${file} lines 1 to ${through}) were enqueued before it: resume from line ${through + 1}`;
  if (error instanceof ErrandError)
    return new ErrandError(error.code, `${error.message}${note}`, { cause: error });
  return new Error(`${error instanceof Error ? error.message : String(error)}${note}`, { cause: error });
}

/**
 * Enqueues one job per non-blank line of `--file`, starting with `first` (the batch read before
 * the target was opened), a batch to a round trip, and returns how many. A line that is not JSON,
 * or a batch the target refuses, stops the run, naming the line; the batches before it stay
 * enqueued and the error says how many jobs they held.
 */
async function enqueueFile(
  t: OpenTarget,
  type: string,
  src: NdjsonSource,
  first: FileLine[],
  options: EnqueueOptions,
  o: EnqueueCommandOptions,
): Promise<number> {
  const bar = await progressBar(o, "enqueue");
  const envelope = jobEnvelope(type, options);
  const maxPayloadBytes = t.queue ? t.queue.maxPayloadBytes : null;
  let total = 0;
  let through = 0;
  try {
    for (let batch = first; batch.length > 0; batch = await nextBatch(src, o.batch, envelope)) {
      try {
        // One type and one set of options: enqueueManyIds takes the stores' bulk path and builds no
        // job the command would only count.
        await t.target.enqueueManyIds(
          type,
          batch.map((l) => l.payload),
          options,
        );
      } catch (error) {
        throw refusedBatch(src.name, batch, error, maxPayloadBytes);
      }
      total += batch.length;
      through = batch[batch.length - 1]!.line;
      bar?.update(total);
    }
  } catch (error) {
    throw withProgress(error, src.name, total, through);
  } finally {
    bar?.stop();
  }
  return total;
}

/** A job's bytes in a bulk request besides its payload: its type and options, as the client sends them. */
function jobEnvelope(type: string, options: EnqueueOptions): number {
  return Buffer.byteLength(JSON.stringify({ type, payload: null, ...options })) + 1;
}

/**
 * `--file`, opened, and its first batch read, before the target is: a path that cannot be opened,
 * a directory, or a first batch with a line that is not JSON is refused without touching the store.
 * @throws ErrandError `INVALID_OPTION`, `INVALID_PAYLOAD`
 */
async function openFile(
  file: string,
  o: EnqueueCommandOptions,
  type: string,
  options: EnqueueOptions,
): Promise<{ src: NdjsonSource; first: FileLine[] }> {
  let handle: FileHandle;
  try {
    handle = await open(file, "r");
  } catch (cause) {
    throw unreadable("--file", file, cause);
  }
  try {
    if ((await handle.stat()).isDirectory()) throw unreadable("--file", file, "it is a directory");
    const lines = createInterface({
      input: handle.createReadStream({ autoClose: false }),
      crlfDelay: Number.POSITIVE_INFINITY,
    })[Symbol.asyncIterator]();
    const src: NdjsonSource = { name: file, handle, lines, line: 0, held: null };
    return { src, first: await nextBatch(src, o.batch, jobEnvelope(type, options)) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Registers `enqueue`. */
export function registerEnqueue(program: Command, ctx: CliContext): void {
  withTarget(program.command("enqueue"))
    .description("enqueue a job of TYPE, or one per line of an ndjson file")
    .argument("<type>", "job type")
    .option("--payload <json>", "payload: JSON, @file, or - for standard input")
    .addOption(
      new Option(
        "--file <ndjson>",
        `one payload per line, enqueued in batches (of --batch jobs, at most ${BATCH_BYTES / 1024} KiB)`,
      ).conflicts("payload"),
    )
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
        async (o: EnqueueCommandOptions, type: string) => {
          const options = enqueueOptions(o);
          return {
            options,
            file: o.file !== undefined ? await openFile(o.file, o, type, options) : null,
            payload: o.file !== undefined ? null : readPayload(o.payload),
          };
        },
        async (t, { options, file, payload }, o, type) => {
          if (file === null) {
            const job = await t.target.enqueue(type, payload, options);
            print(ctx, o, job, () => `${job.duplicate ? "exists  " : "enqueued"} ${jobLine(job)}`);
            return;
          }
          try {
            const total = await enqueueFile(t, type, file.src, file.first, options, o);
            print(ctx, o, { enqueued: total }, () => `enqueued ${total} jobs of ${type}`);
          } finally {
            await file.src.handle.close();
          }
        },
      ),
    );
}
