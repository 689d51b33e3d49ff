/**
 * The PostgreSQL store through a TCP proxy that freezes the connection (a server that stops
 * answering, the sockets left open), and behind a table lock (a statement that waits): the
 * statement deadline (`queryTimeoutMs`, 30 s by default, lowered here through the option) fails
 * errand's own statements that get no answer in time, so neither a worker's close() nor the
 * store's can hang for good, and leaves alone those that answer in time and those on a caller's
 * connection.
 */
import pg from "pg";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { Queue } from "../../../src/queue.js";
import { GOODBYE_MS } from "../../../src/store/postgres/connection.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { closeWhileFrozen } from "../../helpers/frozen-close.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, someoneWaits } from "../../helpers/postgres.js";
import { startTcpProxy, type TcpProxy, until } from "../../helpers/tcp-proxy.js";

/** A store on a fresh schema with the deadline `queryTimeoutMs`, through `proxy` if given. */
async function openStore(queryTimeoutMs: number, proxy?: TcpProxy, retryMs = 500) {
  const schema = freshSchema("errand_nf");
  onTestFinished(() => dropSchema(schema));
  const url = new URL(PG_URL);
  if (proxy) url.host = `127.0.0.1:${proxy.port}`;
  const store = await PostgresStore.open({
    connectionString: url.toString(),
    schema,
    poolSize: 2,
    logger: silentLogger,
    queryTimeoutMs,
    retryMs,
  });
  onTestFinished(() => store.close());
  return { schema, store, queue: new Queue(store) };
}

/** A TCP proxy in front of the test's PostgreSQL server, closed when the test ends. */
async function pgProxy(): Promise<TcpProxy> {
  const target = new URL(PG_URL);
  const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  onTestFinished(() => proxy.close());
  return proxy;
}

/** A connection of its own that holds an ACCESS EXCLUSIVE lock on `schema`'s job table until release(). */
async function lockJobs(schema: string): Promise<{ release(): Promise<void> }> {
  const holder = new pg.Client({ connectionString: PG_URL });
  await holder.connect();
  onTestFinished(() => holder.end());
  await holder.query("BEGIN");
  await holder.query(`LOCK TABLE "${schema}".errand_job IN ACCESS EXCLUSIVE MODE`);
  return {
    async release() {
      await holder.query("COMMIT");
    },
  };
}

/** `promise` settled, as a value or an error, and the ms it took from `startedAt`. */
async function settle<T>(promise: Promise<T>, startedAt: number) {
  try {
    return { value: await promise, error: undefined, ms: performance.now() - startedAt };
  } catch (error) {
    return { value: undefined, error, ms: performance.now() - startedAt };
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the PostgreSQL store through network faults", () => {
  it("closes a worker and the store within a bound while the server stops answering", {
    timeout: 60_000,
  }, async () => {
    const proxy = await pgProxy();
    const { store } = await openStore(1_000, proxy);
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

  it("fails a statement frozen past the deadline with STORE_ERROR, not retried, and recovers after", {
    timeout: 30_000,
  }, async () => {
    const proxy = await pgProxy();
    // retryMs far past the deadline: a retry would show as a wait of seconds.
    const { queue } = await openStore(1_000, proxy, 10_000);
    const { id } = await queue.enqueue("t", {});
    proxy.freeze();
    const got = await settle(queue.get(id), performance.now());
    expect(got.error).toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringContaining("no answer from PostgreSQL within queryTimeoutMs (1000 ms)"),
    });
    // The deadline, plus at most a watchdog period (250 ms here), plus this host's slack.
    expect(got.ms).toBeGreaterThanOrEqual(950);
    expect(got.ms).toBeLessThan(3_000);
    // The frozen connection was destroyed, not handed on: once the server answers, so does the store.
    proxy.restore();
    expect((await queue.get(id))?.id).toBe(id);
  });

  it("lets a statement that answers before the deadline finish", { timeout: 30_000 }, async () => {
    const { schema, queue } = await openStore(1_000);
    const lock = await lockJobs(schema);
    const startedAt = performance.now();
    const enqueued = settle(queue.enqueue("t", {}), startedAt);
    await someoneWaits(schema);
    // Held past most of the deadline (and past two watchdog ticks), then let go.
    while (performance.now() - startedAt < 700) await new Promise((resolve) => setTimeout(resolve, 50));
    await lock.release();
    const { value, error, ms } = await enqueued;
    expect(error).toBeUndefined();
    expect(ms).toBeGreaterThanOrEqual(700);
    expect((await queue.get(value!.id))?.state).toBe("pending");
  });

  it("never times out a transactional enqueue on the caller's connection", { timeout: 30_000 }, async () => {
    const { schema, queue } = await openStore(500);
    const app = new pg.Client({ connectionString: PG_URL });
    await app.connect();
    onTestFinished(() => app.end());
    await app.query("BEGIN");
    const lock = await lockJobs(schema);
    const startedAt = performance.now();
    let callersSettled = false;
    const callers = settle(queue.enqueue("t", { by: "caller" }, { db: app }), startedAt).finally(() => {
      callersSettled = true;
    });
    // errand's own statement, behind the same lock, is failed by the watchdog meanwhile.
    const own = await settle(queue.enqueue("t", { by: "errand" }), startedAt);
    expect(own.error).toMatchObject({
      code: "STORE_ERROR",
      message: expect.stringContaining("queryTimeoutMs"),
    });
    expect(own.ms).toBeLessThan(2_500);
    // Twice the deadline and more: the caller's statement still waits for the lock.
    while (performance.now() - startedAt < 1_500) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(callersSettled).toBe(false);
    await lock.release();
    const { value, error } = await callers;
    expect(error).toBeUndefined();
    await app.query("COMMIT");
    expect((await queue.get(value!.id))?.payload).toEqual({ by: "caller" });
  });

  it("lets go of its connections when the server never answers their goodbye", {
    timeout: 30_000,
  }, async () => {
    const proxy = await pgProxy();
    // A deadline longer than the goodbye's, so that the goodbye's is the one that shows.
    const { store, queue } = await openStore(10_000, proxy);
    await Promise.all([1, 2].map((i) => queue.enqueue("t", { i })));
    await until("the LISTEN connection is open", () => proxy.connections() === 3, 5_000);
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length;
    const before = sockets();
    // A black hole: the goodbye (and its FIN) never reaches the server, no answer comes back.
    proxy.freeze();
    const started = performance.now();
    await store.close();
    // Closed at once; its three sockets, waiting for the goodbye's answer, kept the process alive
    // until TCP gave up (minutes on a real network) before they were destroyed after GOODBYE_MS.
    await until("the store's sockets are gone", () => sockets() === before - 3, GOODBYE_MS + 5_000);
    expect(performance.now() - started).toBeGreaterThanOrEqual(GOODBYE_MS - 50);
  });

  it("runs one unref'd watchdog timer, cleared when the store closes", { timeout: 30_000 }, async () => {
    const setIntervalSpy = vi.spyOn(globalThis, "setInterval");
    const clearIntervalSpy = vi.spyOn(globalThis, "clearInterval");
    const { store, queue } = await openStore(1_000);
    for (let i = 0; i < 20; i++) await queue.enqueue("t", { i });
    // A quarter of the deadline apart; one timer for all those statements, none of them its own.
    const watchdogs = setIntervalSpy.mock.calls.flatMap((call, i) =>
      call[1] === 250 ? [setIntervalSpy.mock.results[i]!.value as NodeJS.Timeout] : [],
    );
    expect(watchdogs).toHaveLength(1);
    // It does not keep the process alive.
    expect(watchdogs[0]!.hasRef()).toBe(false);
    await store.close();
    expect(clearIntervalSpy.mock.calls.some((call) => call[0] === watchdogs[0])).toBe(true);
  });

  it("refuses a queryTimeoutMs that is not an integer ≥ 0", async () => {
    for (const queryTimeoutMs of [-1, 2 ** 31]) {
      await expect(PostgresStore.open({ connectionString: PG_URL, queryTimeoutMs })).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining("queryTimeoutMs"),
      });
    }
    await expect(
      PostgresStore.open({ connectionString: PG_URL, reconnectDelayMs: { max: 2 ** 31 } }),
    ).rejects.toMatchObject({
      code: "INVALID_OPTION",
      message: expect.stringContaining("reconnectDelayMs.max"),
    });
  });
});
