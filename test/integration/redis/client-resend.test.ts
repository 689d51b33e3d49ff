/**
 * A client given to the Redis store must not send a command again after its connection closed:
 * the command may have run (a claim sent twice leases a second batch no worker hears of). errand
 * refuses a `Redis` that would (`autoResendUnfulfilledCommands`) and a `Cluster` that would
 * (`retryDelayOnFailover`), and on a Cluster made as it asks, such a command is reported.
 */
import { Cluster, Redis } from "ioredis";
import { describe, expect, inject, it, onTestFinished } from "vitest";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { connect, loadSender, RedisTransport } from "../../../src/store/redis/transport.js";
import { deleteKeys, freshPrefix, REDIS_URL } from "../../helpers/redis.js";
import { clusterClient } from "../../helpers/redis-cluster.js";
import { until } from "../../helpers/tcp-proxy.js";

describe("the Redis store and a client that resends", () => {
  it("refuses a Redis client that resends unanswered commands after reconnecting", async () => {
    // ioredis's default is to resend them.
    for (const client of [new Redis(REDIS_URL, { lazyConnect: true })]) {
      await expect(RedisStore.open({ client, prefix: freshPrefix() })).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining("autoResendUnfulfilledCommands: false"),
      });
      client.disconnect();
    }
    await expect(
      RedisStore.open({
        url: REDIS_URL,
        prefix: freshPrefix(),
        redisOptions: { autoResendUnfulfilledCommands: true },
      }),
    ).rejects.toMatchObject({ code: "INVALID_OPTION" });

    const prefix = freshPrefix();
    onTestFinished(() => deleteKeys(prefix));
    const client = new Redis(REDIS_URL, { autoResendUnfulfilledCommands: false });
    onTestFinished(() => client.disconnect());
    const store = await RedisStore.open({ client, prefix });
    await store.close();
  });

  it("refuses a Cluster client that resends a command whose connection closed", async () => {
    const nodes = [{ host: "127.0.0.1", port: 1 }];
    for (const [client, setting] of [
      // ioredis's default retryDelayOnFailover is 100 ms.
      [new Cluster(nodes, { lazyConnect: true }), "retryDelayOnFailover: 0"],
      [
        new Cluster(nodes, {
          lazyConnect: true,
          retryDelayOnFailover: 0,
          clusterNodeRetryStrategy: () => 100,
        }),
        "autoResendUnfulfilledCommands: false",
      ],
      // Its offline queue holds commands with no deadline while no node is reachable.
      [new Cluster(nodes, { lazyConnect: true, retryDelayOnFailover: 0 }), "enableOfflineQueue: false"],
    ] as const) {
      await expect(RedisStore.open({ client, prefix: freshPrefix() })).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringContaining(setting),
      });
      client.disconnect();
    }
  });

  const nodes = inject("redisClusterNodes");
  it.runIf(nodes)(
    "reports, never resends, a Cluster command whose connection closed after it reached Redis",
    {
      timeout: 30_000,
    },
    async () => {
      const prefix = freshPrefix();
      const key = `{${prefix}}:nothing`;
      const { client } = await connect({ client: clusterClient(nodes!), prefix });
      onTestFinished(() => client.disconnect());
      const transport = new RedisTransport(client, false, `{${prefix}}:`, await loadSender());
      const direct = nodes!.map((n) => new Redis(n.port, n.host));
      onTestFinished(() => {
        for (const d of direct) d.disconnect();
      });
      /** The ids of connections blocked in a BLPOP, with the node each is on. */
      const blocked = async () => {
        const found: Array<[Redis, string]> = [];
        for (const d of direct) {
          for (const line of String(await d.client("LIST")).split("\n")) {
            if (line.includes("cmd=blpop")) found.push([d, /id=(\d+)/.exec(line)![1]!]);
          }
        }
        return found;
      };

      let outcome: "pending" | "resolved" | "rejected" = "pending";
      transport.command("BLPOP", [key, 60]).then(
        () => {
          outcome = "resolved";
        },
        () => {
          outcome = "rejected";
        },
      );
      await until("the BLPOP blocks on its node", async () => (await blocked()).length === 1, 10_000);
      const [[node, id]] = (await blocked()) as [[Redis, string]];
      await node.client("KILL", "ID", id);
      // Before: the Cluster sent it again after retryDelayOnFailover, and it blocked again.
      await until("the call settles", () => outcome !== "pending", 5_000);
      expect(outcome).toBe("rejected");
      expect(await blocked()).toEqual([]);
    },
  );
});
