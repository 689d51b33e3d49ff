/**
 * `/readyz` with PostgreSQL gone: every connection to it is cut and none can be made (a TCP relay
 * in front of the database, closed). The probe answers a bare 503 in about READY_TIMEOUT_MS,
 * though the store goes on retrying for its `retryMs`, and names neither the store's address nor
 * its driver's error to anyone; the server's log does, once the store gives up.
 */

import type { AddressInfo } from "node:net";
import { connect, createServer as netServer, type Server, type Socket } from "node:net";
import pino from "pino";
import { expect, onTestFinished, test, vi } from "vitest";
import { Queue } from "../../../src/queue.js";
import { createServer } from "../../../src/server/index.js";
import { READY_TIMEOUT_MS } from "../../../src/server/routes/ops.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";

/** A relay to the test database on a port of its own; `cut()` closes it and every connection through it. */
async function relay(): Promise<{ port: number; cut: () => Promise<void> }> {
  const target = new URL(PG_URL);
  const sockets = new Set<Socket>();
  const server: Server = netServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return { port: (server.address() as AddressInfo).port, cut };
}

test("/readyz with the store unreachable: a bare 503 within the bound, the detail in the log", {
  timeout: 30_000,
}, async () => {
  const { port, cut } = await relay();
  const schema = freshSchema("errand_ready");
  const url = new URL(PG_URL);
  url.port = String(port);
  // Retrying its connection for 5 s, well past the probe's bound.
  const store = await PostgresStore.open({
    connectionString: url.toString(),
    schema,
    retryMs: 5_000,
    logger: silentLogger,
  });
  const queue = new Queue(store);
  const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
  const logger = pino({ level: "error" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = await createServer({
    queue,
    maintenance: false,
    logger,
    auth: { tokens: [{ token: "admin-token-0123456789", role: "admin" }] },
  });
  await app.listen({ port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  onTestFinished(async () => {
    await app.close();
    await store.close();
    await dropSchema(schema);
  });
  expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ ok: true });

  await cut();
  const started = performance.now();
  const r = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(20_000) });
  const took = performance.now() - started;
  const text = await r.text();
  expect(r.status).toBe(503);
  expect(JSON.parse(text)).toEqual({
    code: "UNAVAILABLE",
    message: "the store is not answering",
    details: null,
  });
  expect(text).not.toContain(String(port));
  expect(text).not.toMatch(/ECONNREFUSED|PostgreSQL|127\.0\.0\.1/);
  expect(took).toBeLessThan(READY_TIMEOUT_MS + 1500);
  expect(lines).toEqual([
    expect.objectContaining({ level: 50, msg: expect.stringContaining(`within ${READY_TIMEOUT_MS} ms`) }),
  ]);
  await vi.waitFor(
    () =>
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 50,
          msg: "readiness: the store failed",
          err: expect.objectContaining({ message: expect.stringContaining("ECONNREFUSED") }),
        }),
      ),
    { timeout: 10_000, interval: 200 },
  );
});
