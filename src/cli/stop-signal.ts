/**
 * Runs `stop` once on the first SIGINT or SIGTERM, then exits: 0 when it finished, 1 when it
 * threw. For the long-running commands (`serve`, `worker`), whose shutdown closes workers and
 * stores before the process ends.
 */
export function onStopSignal(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", handler);
  process.once("SIGTERM", handler);
}
