/**
 * The Redis store's wake-ups: pub/sub on a channel under the key prefix, over a connection of its
 * own (a subscribed connection runs no other commands).
 * @module
 */
import type { Cluster, Redis } from "ioredis";
import { type Notifier, WakeListeners } from "../notifier.js";
import type { Client } from "./transport.js";

/**
 * Pub/sub wake-ups. The subscription starts with the first listener; a store that only enqueues
 * never opens the second connection.
 */
export class RedisNotifier implements Notifier {
  readonly #client: Client;
  readonly #channel: string;
  readonly #connectionName: string;
  readonly #listeners = new WakeListeners();
  #subscriber: Client | null = null;
  #closed = false;

  /**
   * @param client - the store's client, duplicated for the subscription and used to PUBLISH.
   * @param channel - `{prefix}:wake`.
   * @param connectionName - the store's; the subscription's is this plus `:wake`.
   */
  constructor(client: Client, channel: string, connectionName: string) {
    this.#client = client;
    this.#channel = channel;
    this.#connectionName = connectionName;
  }

  onWake(listener: () => void): () => void {
    const remove = this.#listeners.add(listener);
    this.#subscribe();
    return remove;
  }

  wake(): void {
    if (this.#closed) return;
    // Reaches this process too, through its own subscription; a lost wake-up is covered by polling.
    this.#client.publish(this.#channel, "").catch(() => {});
  }

  /** Starts the wake-up subscription, on its own connection (a subscribed one runs no commands). */
  #subscribe(): void {
    if (this.#subscriber || this.#closed) return;
    const connectionName = `${this.#connectionName}:wake`;
    const sub = this.#client.isCluster
      ? (this.#client as Cluster).duplicate(undefined, {
          redisOptions: { ...(this.#client as Cluster).options.redisOptions, connectionName },
        })
      : (this.#client as Redis).duplicate({ connectionName, lazyConnect: false });
    this.#subscriber = sub;
    sub.on("error", () => {});
    sub.on("message", (channel: string) => {
      if (channel === this.#channel) this.#emitWake();
    });
    // SUBSCRIBE on every (re)connection, not once: a first SUBSCRIBE that failed (Redis was
    // unreachable when the first listener came, and ioredis gave up on the queued command) or whose
    // reply a dropped connection lost is one ioredis's autoResubscribe never sends again, as it
    // only knows the channels a reply confirmed; every listener would then only poll. SUBSCRIBE is
    // idempotent, so one more for a channel autoResubscribe restored is harmless. Once it is in
    // effect, look: wake-ups published before, or while the connection was down, were missed.
    sub.on("ready", () => {
      sub.subscribe(this.#channel).then(
        () => this.#emitWake(),
        () => {},
      );
    });
  }

  #emitWake(): void {
    this.#listeners.emit();
  }

  /** Forgets every listener and drops the subscription's connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    this.#subscriber?.disconnect();
    this.#subscriber = null;
  }
}
