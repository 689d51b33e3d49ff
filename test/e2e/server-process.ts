/**
 * An errand server in its own process, for server-takeover.test.ts (spawned through
 * WorkerProcess from test/integration/child-process.ts, which speaks the same IPC protocol).
 *
 * parent → child: `init` (a ServerInit), `close`
 * child → parent: `ready` {port}, `error` {message}, `closed`
 */
import type { AddressInfo } from "node:net";
import { openQueue } from "../../src/index.js";
import { createServer, type JobTypeConfig } from "../../src/server/index.js";

export interface ServerInit {
  url: string;
  types: JobTypeConfig[];
  maintenance: boolean;
  sweepIntervalMs?: number;
  push: { leaseMs: number; pollIntervalMs?: number; concurrency?: number };
}

const send = (m: object) => {
  if (process.connected) process.send!(m);
};
const describe = (error: unknown) =>
  error instanceof Error ? (error.stack ?? error.message) : String(error);

process.on("message", (m: { type: string }) => {
  if (m.type === "init")
    void main(m as unknown as ServerInit).catch((e) => send({ type: "error", message: describe(e) }));
});
// The parent went away (a test that failed): do not linger.
process.on("disconnect", () => process.exit(0));

async function main(init: ServerInit): Promise<void> {
  const queue = await openQueue(init.url);
  queue.on("error", (error) => send({ type: "error", message: describe(error) }));
  const app = await createServer({
    queue,
    types: init.types,
    maintenance: init.maintenance,
    sweepIntervalMs: init.sweepIntervalMs,
    push: init.push,
  });
  await app.listen({ port: 0 });
  process.on("message", (m: { type: string }) => {
    if (m.type !== "close") return;
    void (async () => {
      await app.close();
      await queue.close();
      process.send!({ type: "closed" }, () => process.exit(0));
    })();
  });
  send({ type: "ready", port: (app.server.address() as AddressInfo).port });
}
