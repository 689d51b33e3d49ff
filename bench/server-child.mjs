/**
 * The benchmark's HTTP server process: opens the store, runs errand's server on a random
 * loopback port, and reports over IPC. Plain JavaScript, like worker-child.mjs, so it runs both
 * under tsx (errand's TypeScript source) and under plain node (a compiled build).
 *
 * parent → child: `init` { entry, serverEntry, url }, `mem`, `exit`
 * child → parent: `ready` { port, rssBytes }, `mem` { rssBytes, heapUsedBytes, waiters }, `error`
 */

import { send, serve } from "./child-ipc.mjs";

let server = null;

serve(init, {
  mem() {
    const { rss, heapUsed } = process.memoryUsage();
    send({
      type: "mem",
      rssBytes: rss,
      heapUsedBytes: heapUsed,
      waiters: server?.errand.leaseWaiters() ?? 0,
    });
  },
});

async function init(o) {
  const { openQueue } = await import(o.entry);
  const { createServer } = await import(o.serverEntry);
  const queue = await openQueue(o.url);
  server = await createServer({ queue });
  await server.listen({ host: "127.0.0.1", port: 0 });
  send({ type: "ready", port: server.server.address().port, rssBytes: process.memoryUsage().rss });
}
