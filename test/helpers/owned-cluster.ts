/**
 * A Redis Cluster one test starts, breaks and stops itself (unlike test/helpers/redis-cluster.ts's,
 * shared by a whole run): masters with optional replicas and a short node timeout, so a test can
 * migrate errand's slot or kill its master. Every node is a child process of the test's; `stop()`
 * kills them all and removes their files.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, startClusterNode } from "./redis-cluster.js";
import { until as waitUntil } from "./tcp-proxy.js";

const run = promisify(execFile);

export { until as waitUntil } from "./tcp-proxy.js";

/** One node as CLUSTER NODES lists it. */
export interface ClusterNodeInfo {
  id: string;
  port: number;
  flags: string[];
  /** The id of its master, `-` for a master. */
  master: string;
  slots: string[];
}

/** A cluster started by {@link OwnedCluster.start}. */
export class OwnedCluster {
  readonly #dir = mkdtempSync(join(tmpdir(), "errand-owned-cluster-"));
  readonly #procs = new Map<number, ChildProcess>();

  private constructor(readonly nodeTimeoutMs: number) {}

  /** Starts `masters` masters with `replicas` replicas each, and waits until every node is ok. */
  static async start(
    options: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {},
  ): Promise<OwnedCluster> {
    const cluster = new OwnedCluster(options.nodeTimeoutMs ?? 1000);
    const replicas = options.replicas ?? 0;
    try {
      const ports: number[] = [];
      for (let i = 0; i < (options.masters ?? 3) * (1 + replicas); i++) ports.push(await freePort());
      for (const port of ports) await cluster.#startNode(port);
      await run("redis-cli", [
        "--cluster",
        "create",
        ...ports.map((p) => `127.0.0.1:${p}`),
        "--cluster-replicas",
        String(replicas),
        "--cluster-yes",
      ]);
      await cluster.waitOk();
      for (const port of ports) {
        await waitUntil(
          `node ${port} is a master or a synced replica`,
          async () => {
            const info = await cluster.cli(port, "info", "replication");
            return info.includes("role:master") || info.includes("master_link_status:up");
          },
          20_000,
        );
      }
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  async #startNode(port: number): Promise<void> {
    this.#procs.set(port, await startClusterNode(port, this.#dir, this.nodeTimeoutMs));
  }

  /** The nodes still running, as ioredis `Cluster` start nodes. */
  get nodes(): Array<{ host: string; port: number }> {
    return this.alive().map((port) => ({ host: "127.0.0.1", port }));
  }

  alive(): number[] {
    return [...this.#procs]
      .filter(([, p]) => p.exitCode === null && p.signalCode === null)
      .map(([port]) => port);
  }

  /** Runs `redis-cli -p port …args` and returns its output. */
  async cli(port: number, ...args: Array<string | number>): Promise<string> {
    const { stdout } = await run("redis-cli", ["-p", String(port), ...args.map(String)]);
    return stdout.trim();
  }

  /** Waits until each of `ports` reports `cluster_state:ok`. */
  async waitOk(ports = this.alive(), withinMs = 20_000): Promise<void> {
    for (const port of ports) {
      await waitUntil(
        `node ${port} reports cluster_state:ok`,
        async () => (await this.cli(port, "cluster", "info")).includes("cluster_state:ok"),
        withinMs,
      );
    }
  }

  async clusterNodes(from = this.alive()[0]!): Promise<ClusterNodeInfo[]> {
    const out = await this.cli(from, "cluster", "nodes");
    return out.split("\n").map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.split(" ");
      return {
        id: id!,
        port: Number(address!.split(":")[1]!.split("@")[0]),
        flags: flags!.split(","),
        master: master!,
        slots,
      };
    });
  }

  async slotOf(key: string): Promise<number> {
    return Number(await this.cli(this.alive()[0]!, "cluster", "keyslot", key));
  }

  /** The master serving `slot` as `from` sees it, and its replicas. */
  async ownerOf(
    slot: number,
    from = this.alive()[0]!,
  ): Promise<{ master: ClusterNodeInfo; replicas: ClusterNodeInfo[] }> {
    const nodes = await this.clusterNodes(from);
    const master = nodes.find(
      (n) =>
        n.flags.includes("master") &&
        !n.flags.includes("fail") &&
        n.slots.some((range) => {
          if (range.startsWith("[")) return false;
          const [a, b] = range.split("-").map(Number);
          return slot >= a! && slot <= (b ?? a!);
        }),
    );
    if (!master) throw new Error(`no master serves slot ${slot}`);
    return { master, replicas: nodes.filter((n) => n.master === master.id && !n.flags.includes("fail")) };
  }

  /** SIGKILLs the node on `port`, resolving once it exited. */
  kill(port: number): Promise<void> {
    const proc = this.#procs.get(port)!;
    return new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill("SIGKILL");
    });
  }

  /** Kills every node and removes their files. */
  async stop(): Promise<void> {
    await Promise.all(this.alive().map((port) => this.kill(port)));
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
