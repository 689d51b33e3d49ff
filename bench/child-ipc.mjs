/**
 * The child side of the benchmark's IPC (bench/child.ts is the parent's): `init` starts the
 * child's work, `ping` is answered with the child's clock (for the clock offset), `exit` and a
 * lost parent end the process, and a failure of `init` is reported as an `error` message.
 */

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export const now = () => performance.timeOrigin + performance.now();

export const send = (m) => process.send(m);

/**
 * Routes the parent's messages: `init(message)` runs once per `init`; `more` answers other types
 * (e.g. `{ mem: () => … }`).
 */
export function serve(init, more = {}) {
  process.on("message", (m) => {
    if (m.type === "init") void init(m).catch(fail);
    else if (m.type === "ping") send({ type: "pong", t: now() });
    else if (m.type === "exit") process.exit(0);
    else more[m.type]?.(m);
  });
  process.on("disconnect", () => process.exit(0));
}

export function fail(error) {
  send({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
