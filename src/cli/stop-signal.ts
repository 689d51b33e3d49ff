/**
 * What stops a command that runs until told: SIGINT, SIGTERM, or its standard output closed by
 * the reader (`errand worker | head -1`, a log shipper that died). A closed output is the shell's
 * SIGPIPE, which Node ignores: writes fail with EPIPE instead, an unhandled `error` event that
 * would kill the process mid-run, leaving a worker's jobs active until their leases ran out.
 * @module
 */

const listeners = new Set<() => void>();
let outputClosed = false;

/**
 * Watches standard output for its reader going away (EPIPE): the commands waiting in
 * {@link onStop} stop as on SIGINT, and one that is only printing its result ends as usual, its
 * status 0, as `head` wanted no more (nothing is printed about it). Any other error of the stream
 * is thrown, as it was. Called once, by the entry point.
 */
export function watchStdout(stream: NodeJS.EventEmitter): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    if (outputClosed) return;
    outputClosed = true;
    for (const listener of [...listeners]) listener();
  });
}

/**
 * Calls `listener` once, on the first SIGINT or SIGTERM or when standard output closes; answers a
 * function that stops listening. A second signal meanwhile has its default effect (ends the process).
 */
export function onStop(listener: () => void): () => void {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    off();
    listener();
  };
  const off = () => {
    listeners.delete(once);
    process.off("SIGINT", once).off("SIGTERM", once);
  };
  listeners.add(once);
  process.once("SIGINT", once).once("SIGTERM", once);
  if (outputClosed) queueMicrotask(once);
  return off;
}

/**
 * Runs `stop` once on the first SIGINT or SIGTERM, or when standard output closes, then exits: 0
 * when it finished, 1 when it threw. For `serve`, whose shutdown closes its worker, server and
 * store before the process ends.
 */
export function onStopSignal(stop: () => Promise<void>): void {
  onStop(() => {
    stop().then(
      () => process.exit(0),
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  });
}
