/**
 * errand on a Redis Cluster whose topology changes under it: its hash slot migrated to another
 * node, its master killed and a replica promoted. Each test starts its own cluster
 * (test/helpers/owned-cluster.ts) and stops it. Run with the `redis-cluster` store selected.
 */
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defineJob } from "../../../src/define-job.js";
import { Queue } from "../../../src/queue.js";
import { RedisStore } from "../../../src/store/redis/redis-store.js";
import { OwnedCluster, waitUntil } from "../../helpers/owned-cluster.js";
import { clusterOptions } from "../../helpers/redis-cluster.js";

const task = defineJob({ type: "task", handler: async () => 1 });

/** A queue over its own Cluster client, closed (client too) when the test finishes. */
async function openQueue(cluster: OwnedCluster, prefix: string, retryMs: number, clock: ManualClock) {
  const client = new Cluster(cluster.nodes, {
    ...clusterOptions,
    redisOptions: { commandTimeout: 5_000 },
  });
  client.on("error", () => {});
  const store = await RedisStore.open({ client, prefix, retryMs });
  const queue = new Queue(store, { clock });
  onTestFinished(async () => {
    await queue.close().catch(() => {});
    await store.close().catch(() => {});
    client.disconnect();
  });
  return queue;
}

/** Fails with how long it took, or throws if `call` succeeded. */
async function failure(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await call();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error("expected the call to fail");
}

describe.runIf(inject("redisClusterNodes"))("errand on a Redis Cluster whose topology changes", () => {
  /** Starts a cluster of its own before the enclosing block's tests (handed to `set`), stops it after. */
  function ownClusterPerBlock(
    options: Parameters<typeof OwnedCluster.start>[0],
    set: (c: OwnedCluster) => void,
  ): void {
    let cluster: OwnedCluster | undefined;
    beforeAll(async () => {
      cluster = await OwnedCluster.start(options);
      set(cluster);
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    });
  }

  describe("while errand's hash slot is being migrated", () => {
    let cluster: OwnedCluster;
    ownClusterPerBlock({ masters: 3 }, (c) => (cluster = c));

    for (const metaMoved of [false, true]) {
      it(`runs no script, waits, then carries on (${metaMoved ? "meta moved" : "meta not moved"} yet)`, {
        timeout: 60_000,
      }, async () => {
        const prefix = `mig-${metaMoved ? "b" : "a"}`;
        const slot = await cluster.slotOf(`{${prefix}}`);
        const { master: source } = await cluster.ownerOf(slot);
        const target = (await cluster.clusterNodes()).find(
          (n) => n.flags.includes("master") && n.id !== source.id,
        )!;
        const src = new Redis(source.port, "127.0.0.1");
        onTestFinished(() => src.disconnect());
        const clock = new ManualClock();
        const brief = await openQueue(cluster, prefix, 1_000, clock);
        const patient = await openQueue(cluster, prefix, 30_000, clock);

        const ids: string[] = [];
        for (let i = 0; i < 10; i++) ids.push((await brief.enqueue(task, { i })).id);
        const leased = await brief.lease({ types: ["task"], limit: 3, leaseMs: 3_600_000 });
        expect(leased).toHaveLength(3);

        // Half of errand's keys move to the target; the slot is MIGRATING on one, IMPORTING on the other.
        await cluster.cli(target.port, "cluster", "setslot", slot, "importing", source.id);
        await cluster.cli(source.port, "cluster", "setslot", slot, "migrating", target.id);
        const keys = async () => (await src.call("cluster", "getkeysinslot", slot, 100_000)) as string[];
        const meta = `{${prefix}}:meta`;
        const half = (await keys()).filter((k, i) => k !== meta && i % 2 === 0);
        if (metaMoved) half.push(meta);
        await src.call("migrate", "127.0.0.1", target.port, "", 0, 5_000, "KEYS", ...half);

        // Sent again until the migration ends: begun first, so it is waiting through all that follows.
        const lateEnqueue = patient.enqueue(task, { late: true });
        const lateComplete = patient.complete(leased[0]!, "done");
        // A call whose retryMs runs out before the migration ends fails, having changed nothing.
        for (const call of [
          () => brief.enqueue(task, { lost: true }),
          () => brief.complete(leased[1]!, "done"),
        ]) {
          const { error, ms } = await failure(call);
          expect(error).toMatchObject({
            code: "STORE_ERROR",
            message: expect.stringContaining("hash slot is being migrated: the command was not run"),
          });
          expect(ms).toBeGreaterThanOrEqual(1_000);
        }

        // The rest moves, and every node hands the slot to the target.
        const left = await keys();
        if (left.length > 0)
          await src.call("migrate", "127.0.0.1", target.port, "", 0, 5_000, "KEYS", ...left);
        for (const port of cluster.alive())
          await cluster.cli(port, "cluster", "setslot", slot, "node", target.id);
        await waitUntil(
          "every node sees the target serve the slot",
          async () => {
            for (const port of cluster.alive()) {
              if ((await cluster.ownerOf(slot, port)).master.id !== target.id) return false;
            }
            return true;
          },
          10_000,
        );

        const late = await lateEnqueue;
        await lateComplete;
        ids.push(late.id);
        const stats = await patient.stats();
        expect(stats.states).toMatchObject({ pending: 8, active: 2, completed: 1 });
        const states: Record<string, number> = {};
        for (const id of ids) {
          const state = (await patient.get(id))?.state ?? "missing";
          states[state] = (states[state] ?? 0) + 1;
        }
        expect(states).toEqual({ pending: 8, active: 2, completed: 1 });
      });
    }
  });

  describe("with a master that may evict keys", () => {
    let cluster: OwnedCluster;
    ownClusterPerBlock({ masters: 3 }, (c) => (cluster = c));

    it("refuses to open, whichever node serves errand's slot", async () => {
      const prefix = "evict";
      const { master } = await cluster.ownerOf(await cluster.slotOf(`{${prefix}}`));
      const other = cluster.alive().find((port) => port !== master.port)!;
      await cluster.cli(other, "config", "set", "maxmemory-policy", "allkeys-lru");
      // INFO through the Cluster would reach one master at random: each open asks them all.
      for (let i = 0; i < 6; i++) {
        const client = new Cluster(cluster.nodes, clusterOptions);
        client.on("error", () => {});
        try {
          await expect(RedisStore.open({ client, prefix })).rejects.toMatchObject({
            code: "STORE_ERROR",
            message: expect.stringContaining("maxmemory-policy is allkeys-lru"),
          });
        } finally {
          client.disconnect();
        }
      }
    });
  });

  describe("when every node is down", () => {
    let cluster: OwnedCluster;
    ownClusterPerBlock({ masters: 3, nodeTimeoutMs: 1_000 }, (c) => (cluster = c));

    it("sends a call again until retryMs has passed, then fails it: no call hangs", {
      timeout: 60_000,
    }, async () => {
      const queue = await openQueue(cluster, "alldown", 2_000, new ManualClock());
      await queue.enqueue(task, {});
      for (const port of cluster.alive()) await cluster.kill(port);
      for (const call of [() => queue.enqueue(task, {}), () => queue.stats()]) {
        const { error, ms } = await failure(call);
        expect(error).toMatchObject({ code: "STORE_ERROR" });
        expect(ms).toBeGreaterThanOrEqual(2_000);
        expect(ms).toBeLessThan(10_000);
      }
    });
  });

  describe("when errand's master dies and its replica takes over", () => {
    let cluster: OwnedCluster;
    ownClusterPerBlock({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 }, (c) => (cluster = c));

    it("sends again, until the failover ends, the commands the dead master never got", {
      timeout: 60_000,
    }, async () => {
      const prefix = "failover";
      const slot = await cluster.slotOf(`{${prefix}}`);
      const { master } = await cluster.ownerOf(slot);
      const clock = new ManualClock();
      const queue = await openQueue(cluster, prefix, 30_000, clock);
      const first = await queue.enqueue(task, {});
      const [leased] = await queue.lease({ types: ["task"], limit: 1, leaseMs: 3_600_000 });
      expect(leased?.id).toBe(first.id);
      // The replica has every write so far (WAIT), so the failover loses none of them.
      const direct = new Redis(master.port, "127.0.0.1");
      try {
        await direct.set(`{${prefix}}:synced`, "1");
        expect(await direct.wait(1, 5_000)).toBe(1);
      } finally {
        direct.disconnect();
      }

      await cluster.kill(master.port);
      const [completed, second] = await Promise.all([
        queue.complete(leased!, "done"),
        queue.enqueue(task, { after: true }),
      ]);
      expect(completed).toBeDefined();
      expect((await queue.get(first.id))?.state).toBe("completed");
      expect((await queue.get(second.id))?.state).toBe("pending");
      expect((await queue.stats()).states).toMatchObject({ pending: 1, active: 0, completed: 1 });
    });
  });
});
