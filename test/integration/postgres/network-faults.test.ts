/**
 * The PostgreSQL store through a TCP proxy that freezes the connection (a server that stops
 * answering, the sockets left open): with a statement deadline (`queryTimeoutMs`, off by default), so
 * neither a worker's close() nor the store's can hang for good.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { Queue } from "../../../src/queue.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { closeWhileFrozen } from "../../helpers/frozen-close.js";
import { dropSchema, freshSchema, PG_URL, silentLogger } from "../../helpers/postgres.js";
import { startTcpProxy } from "../../helpers/tcp-proxy.js";

describe("the PostgreSQL store through network faults", () => {
  it("closes a worker and the store within a bound while the server stops answering", {
    timeout: 60_000,
  }, async () => {
    const target = new URL(PG_URL);
    const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    onTestFinished(() => proxy.close());
    const schema = freshSchema("errand_nf");
    onTestFinished(() => dropSchema(schema));
    const url = new URL(PG_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const store = await PostgresStore.open({
      connectionString: url.toString(),
      schema,
      poolSize: 2,
      logger: silentLogger,
      queryTimeoutMs: 1_000,
      retryMs: 500,
    });
    const { workerCloseMs, storeCloseMs, errors } = await closeWhileFrozen(new Queue(store), proxy, {
      graceMs: 200,
      boundMs: 20_000,
    });
    // Without a deadline both waited for an answer that never came.
    expect(workerCloseMs).not.toBeNull();
    expect(storeCloseMs).not.toBeNull();
    // The release of the aborted job, at least, timed out and was reported.
    expect(errors.length).toBeGreaterThan(0);
  });

  it("refuses a queryTimeoutMs that is not an integer ≥ 0", async () => {
    await expect(PostgresStore.open({ connectionString: PG_URL, queryTimeoutMs: -1 })).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("queryTimeoutMs"),
    });
  });
});
