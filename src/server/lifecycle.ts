import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Clock } from "../clock.js";
import { ErrandError } from "../errors.js";

/** How long a drain waits by default (`server.errand.drain()`): a Worker's close grace too. */
export const DEFAULT_DRAIN_GRACE_MS = 10_000;

/**
 * How long a lease refused while the server drains asks the worker to wait before it leases again
 * (`Retry-After`, in whole seconds): by then a load balancer has taken this server out, or it has
 * started again.
 */
export const DRAIN_RETRY_AFTER_MS = 1000;

/**
 * What a lease is answered while the server drains or closes: 503 `UNAVAILABLE`, with
 * `Retry-After` from `details.retryAfterMs`. A worker in any language takes a 503 for "try again
 * later" (an empty answer would have it lease again at once, in a loop, until the server is gone).
 */
export function drainingError(): ErrandError {
  return new ErrandError(
    "UNAVAILABLE",
    "the server is shutting down and hands out no more jobs: lease again after Retry-After (another server may answer)",
    { details: { retryAfterMs: DRAIN_RETRY_AFTER_MS } },
  );
}

/**
 * A server's way out, in two steps. **Draining**: it hands out no more work (a lease is answered
 * {@link drainingError}, a long-poll waiting now at once; push delivery leases nothing more;
 * `/readyz` answers 503 so a load balancer stops routing here) while it serves everything else,
 * the reports of the jobs it handed out above all. **Closing** (`app.close()`) drains first, then
 * waits for the requests in flight.
 *
 * Each part of the server says here what draining means to it ({@link onDrain}): something to
 * stop at once, and what to wait for. Draining is never undone.
 */
export class ServerLifecycle {
  readonly #tasks: Array<() => Promise<unknown> | undefined> = [];
  #draining = false;
  /** What the parts wait for, from the first drain on. */
  #settled: Promise<unknown> | null = null;

  /** True from the first {@link drain} (or close) on. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Registers what draining means to a part: `task` runs once, when draining begins, and may answer
   * a promise of what the drain waits for (deliveries in flight, attempts not yet reported).
   */
  onDrain(task: () => Promise<unknown> | undefined): void {
    this.#tasks.push(task);
  }

  /** Begins draining, at once; later calls do nothing. */
  begin(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#settled = Promise.allSettled(this.#tasks.map((task) => task()));
  }

  /**
   * Begins draining, then resolves once every part is done (each delivery in flight over, each
   * attempt handed out reported or ended), or after `graceMs` of `clock`, whichever is first.
   */
  async drain(clock: Clock, graceMs: number): Promise<void> {
    this.begin();
    if (graceMs <= 0) return;
    let cancel = () => {};
    const graceOver = new Promise<void>((resolve) => {
      cancel = clock.setTimer(graceMs, resolve);
    });
    try {
      await Promise.race([this.#settled, graceOver]);
    } finally {
      cancel();
    }
  }
}

/**
 * The server's connections and the requests under way on each, for a close that waits for those
 * requests and for nothing else. Once {@link closeIdle} is called, a connection is closed as soon as
 * it has no request under way: at once for those idle then, or after its last answer is out.
 * Node's own idle check (`closeIdleConnections`) spares a connection that has not sent its first
 * request yet (a client's pool opens them ahead), which then held the close until its grace ended.
 */
export class OpenConnections {
  readonly #requests = new Map<Socket, number>();
  #closing = false;

  constructor(server: Server) {
    server.on("connection", (socket: Socket) => {
      this.#requests.set(socket, 0);
      socket.once("close", () => this.#requests.delete(socket));
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      const under = this.#requests.get(socket);
      if (under === undefined) return;
      this.#requests.set(socket, under + 1);
      response.once("close", () => {
        const left = (this.#requests.get(socket) ?? 1) - 1;
        if (!this.#requests.has(socket)) return;
        this.#requests.set(socket, left);
        // After the answer's own end handling (a `connection: close` answer ends its socket).
        if (this.#closing && left === 0) setImmediate(() => this.#closeIfIdle(socket));
      });
    });
  }

  /** Closes every connection with no request under way, now and as each one's last answer is out. */
  closeIdle(): void {
    this.#closing = true;
    for (const socket of [...this.#requests.keys()]) this.#closeIfIdle(socket);
  }

  #closeIfIdle(socket: Socket): void {
    if (this.#requests.get(socket) !== 0 || socket.destroyed) return;
    // What was written goes out first.
    if (socket.writableLength === 0) socket.destroy();
    else socket.end(() => socket.destroy());
  }
}
