/**
 * The PostgreSQL store's wake-ups: LISTEN on a connection kept from the pool, NOTIFY on a channel
 * per schema, and the reconnection of a lost LISTEN connection with backoff.
 * @module
 */
import type { EventEmitter } from "node:events";
import type pg from "pg";
import { type Notifier, WakeListeners } from "../notifier.js";
import type { PgConnection } from "./connection.js";

/** Events a `PostgresStore` emits about its LISTEN connection. */
export interface PostgresStoreEvents {
  /** LISTEN is (again) in place on the connection with this backend pid. */
  listen: [pid: number];
  /** The LISTEN connection was lost; the store reconnects with backoff and workers poll meanwhile. */
  unlisten: [error: unknown];
}

/** What {@link PostgresNotifier} needs besides its connection. */
export interface PostgresNotifierOptions {
  /** The NOTIFY channel: one per schema, so installations sharing a database do not wake each other. */
  channel: string;
  /** queries/notify.sql with the channel filled in; its one parameter is the sender's tag. */
  notifySql: string;
  /** Backoff between attempts to re-establish LISTEN, doubling from `min` (100) to `max` (5,000). */
  reconnectDelayMs: { min?: number; max?: number } | undefined;
}

/**
 * LISTEN/NOTIFY wake-ups. The store tags its own NOTIFYs with {@link origin} and has delivered
 * them to this process's listeners already, so the notifier drops them when they come back.
 */
export class PostgresNotifier implements Notifier {
  /** Tags this store's own notifications, which it has already delivered to its listeners. */
  readonly origin = Math.random().toString(36).slice(2, 12);
  readonly #connection: PgConnection;
  readonly #channel: string;
  readonly #notifySql: string;
  readonly #reconnectMin: number;
  readonly #reconnectMax: number;
  readonly #events: EventEmitter<PostgresStoreEvents>;
  readonly #listeners = new WakeListeners();
  #listenClient: pg.PoolClient | null = null;
  /** Gives the LISTEN connection back (destroyed); safe to call more than once. */
  #dropListener: (() => void) | null = null;
  #listenPid: number | null = null;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #reconnectAttempt = 0;

  /**
   * @param connection - LISTEN takes a connection of its pool; once it is closing, nothing is
   *   re-established or sent.
   * @param events - where `listen` and `unlisten` are emitted: the store.
   */
  constructor(
    connection: PgConnection,
    events: EventEmitter<PostgresStoreEvents>,
    options: PostgresNotifierOptions,
  ) {
    this.#connection = connection;
    this.#events = events;
    this.#channel = options.channel;
    this.#notifySql = options.notifySql;
    this.#reconnectMin = options.reconnectDelayMs?.min ?? 100;
    this.#reconnectMax = options.reconnectDelayMs?.max ?? 5_000;
  }

  get #closed(): boolean {
    return this.#connection.closed;
  }

  /** Whether the LISTEN connection is up. */
  get listening(): boolean {
    return this.#listenClient !== null;
  }

  /** The backend pid of the LISTEN connection, when it is up. */
  get listenerPid(): number | null {
    return this.#listenPid;
  }

  /** Calls this process's listeners, for jobs this process made ready (no NOTIFY). */
  emit(): void {
    this.#listeners.emit();
  }

  onWake(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  wake(): void {
    this.emit();
    if (this.#closed) return;
    // One the store's close waits for: a process that changes something and closes at once (a
    // CLI's `queues resume`) must still wake the workers elsewhere, not leave them to their poll.
    this.#connection.queryOnce(this.#notifySql, [this.origin]).catch((error: unknown) => {
      // Best effort, tried once: other processes still poll.
      this.#connection.log.warn({ err: error }, "errand: NOTIFY failed");
    });
  }

  /** Takes a connection for LISTEN and keeps it; on loss, {@link #scheduleReconnect}. */
  async listen(): Promise<void> {
    const client = await this.#connection.pool.connect();
    let lost = false;
    let released = false;
    const drop = (error?: Error) => {
      if (released) return;
      released = true;
      client.removeListener("notification", onNotification);
      client.release(error ?? true);
    };
    const onLost = (error: unknown) => {
      if (lost) return;
      lost = true;
      drop(error instanceof Error ? error : undefined);
      if (this.#listenClient !== client) return;
      this.#listenClient = null;
      this.#listenPid = null;
      if (this.#closed) return;
      this.#connection.log.warn(
        { err: error },
        "errand: LISTEN connection lost; reconnecting (workers poll meanwhile)",
      );
      this.#events.emit("unlisten", error);
      this.#scheduleReconnect();
    };
    const onNotification = (msg: pg.Notification) => {
      if (msg.channel === this.#channel && msg.payload !== this.origin) this.emit();
    };
    client.on("notification", onNotification);
    client.on("error", onLost);
    client.on("end", () => onLost(new Error("the LISTEN connection ended")));
    try {
      await client.query(`LISTEN "${this.#channel}"`);
    } catch (error) {
      onLost(error);
      throw error;
    }
    if (lost) throw new Error("the LISTEN connection was lost while starting");
    this.#listenClient = client;
    this.#dropListener = () => {
      lost = true;
      drop();
    };
    this.#listenPid = (client as unknown as { processID: number }).processID;
    this.#reconnectAttempt = 0;
    this.#events.emit("listen", this.#listenPid);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const base = Math.min(this.#reconnectMax, this.#reconnectMin * 2 ** this.#reconnectAttempt++);
    const delay = base / 2 + (Math.random() * base) / 2;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (this.#closed) return;
      this.listen().then(
        () => {
          this.#connection.log.info({ pid: this.#listenPid }, "errand: LISTEN connection re-established");
          // Notifications sent while it was down are gone: have every claimer look now.
          this.emit();
        },
        (error: unknown) => {
          this.#connection.log.warn({ err: error }, "errand: LISTEN reconnect failed; trying again");
          this.#scheduleReconnect();
        },
      );
    }, delay);
    this.#reconnectTimer.unref();
  }

  /** Stops reconnecting, gives the LISTEN connection back and forgets every listener. */
  async close(): Promise<void> {
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    this.#listenClient = null;
    this.#listenPid = null;
    this.#dropListener?.();
    this.#dropListener = null;
    this.#listeners.clear();
  }
}
