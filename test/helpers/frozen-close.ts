/**
 * The close of a worker and its store while the store's server stops answering (a TCP proxy
 * frozen between them), for the tests of each networked store.
 */
import { defineJob } from "../../src/define-job.js";
import type { Queue } from "../../src/queue.js";
import { Worker } from "../../src/worker/worker.js";
import { silentLogger } from "./postgres.js";
import { type TcpProxy, until } from "./tcp-proxy.js";

/** How long each close took, in ms, or null if it had not settled within `boundMs`. */
export interface FrozenClose {
  workerCloseMs: number | null;
  storeCloseMs: number | null;
  /** The errors the worker reported meanwhile. */
  errors: unknown[];
}

/** Resolves with the ms `promise` took to settle, or null once `boundMs` passes first. */
async function timed(promise: Promise<unknown>, boundMs: number): Promise<number | null> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const settled = promise.then(
    () => Date.now() - started,
    () => Date.now() - started,
  );
  const bound = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), boundMs);
  });
  try {
    return await Promise.race([settled, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts a worker on `queue` with one job running, freezes `proxy`, then closes the worker (grace
 * `graceMs`, after which the job is aborted and released) and the store, each given `boundMs`.
 */
export async function closeWhileFrozen(
  queue: Queue,
  proxy: TcpProxy,
  options: { graceMs: number; boundMs: number },
): Promise<FrozenClose> {
  let runs = 0;
  const job = defineJob({
    type: "t",
    handler: async (_payload: unknown, ctx) => {
      runs++;
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return 1;
    },
  });
  const worker = new Worker(queue, { jobs: [job], logger: silentLogger, pollIntervalMs: 200 });
  const errors: unknown[] = [];
  worker.on("error", (error) => errors.push(error));
  await worker.start();
  await queue.enqueue("t", {});
  await until("the job runs", () => runs === 1, 5_000);
  proxy.freeze();
  const workerCloseMs = await timed(worker.close({ graceMs: options.graceMs }), options.boundMs);
  const storeCloseMs = await timed(queue.store.close(), options.boundMs);
  return { workerCloseMs, storeCloseMs, errors };
}
