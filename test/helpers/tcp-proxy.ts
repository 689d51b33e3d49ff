/**
 * A TCP proxy between a store client and its server, for tests of network faults: `cut()` drops
 * every connection and refuses new ones (a server gone, a cable pulled), `freeze()` keeps the
 * connections open but forwards nothing, not even a close (a hung server, a black hole: a socket
 * ended then waits for a goodbye that never comes), `restore()` ends either.
 */
import net from "node:net";

/** What {@link startTcpProxy} gives back. */
export interface TcpProxy {
  /** The local port to connect to instead of the server's. */
  readonly port: number;
  /** Destroys every connection; new ones are accepted and destroyed at once until restore(). */
  cut(): void;
  /** Keeps every connection open but forwards no byte, nor an end, either way until restore(). */
  freeze(): void;
  /** Forwards again (connections cut stay gone; clients reconnect). */
  restore(): void;
  /** Connections refused (accepted and destroyed) while cut, since the start. */
  refused(): number;
  /** Connections open through the proxy now. */
  connections(): number;
  /** Cuts everything and stops listening. */
  close(): Promise<void>;
}

/** Starts a proxy on a free local port to `host:port`. */
export async function startTcpProxy(port: number, host = "127.0.0.1"): Promise<TcpProxy> {
  let mode: "up" | "cut" | "frozen" = "up";
  let refused = 0;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const destroyAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  // Half-open allowed, so that an end reaches the other side only when forwarded (not while frozen).
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on("error", () => {});
    if (mode === "cut") {
      refused++;
      client.destroy();
      return;
    }
    const upstream = net.connect({ port, host, allowHalfOpen: true });
    upstream.on("error", () => {});
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    // Bytes that arrive while frozen are dropped: the peer never hears of them, as in a black hole.
    client.on("data", (data) => {
      if (mode === "up") upstream.write(data);
    });
    upstream.on("data", (data) => {
      if (mode === "up") client.write(data);
    });
    client.on("end", () => {
      if (mode === "up") upstream.end();
    });
    upstream.on("end", () => {
      if (mode === "up") client.end();
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      mode = "cut";
      destroyAll();
    },
    freeze() {
      mode = "frozen";
    },
    restore() {
      mode = "up";
    },
    refused: () => refused,
    connections: () => pairs.size,
    close() {
      mode = "cut";
      destroyAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Resolves once `condition` holds (checked every `stepMs`); rejects, naming `what`, if it still
 * does not after `withinMs`.
 */
export async function until(
  what: string,
  condition: () => boolean | Promise<boolean>,
  withinMs: number,
  stepMs = 20,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() >= deadline) throw new Error(`timed out after ${withinMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}
