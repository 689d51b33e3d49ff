/**
 * A real Redis Cluster for the tests: three `redis-server` masters in cluster mode on free ports
 * (nothing on disk, files in a temp dir), joined with `redis-cli --cluster create`. Started once
 * per run by test/setup/global.ts when the `redis-cluster` store is selected, so the conformance
 * suite runs against it like any other store.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster, type ClusterNode, type ClusterOptions } from "ioredis";

const run = promisify(execFile);

/**
 * The options errand's tests (and errand's users) give an ioredis `Cluster`, without which
 * `RedisStore.open` refuses the client: `retryDelayOnFailover: 0` (otherwise ioredis sends again a
 * command whose connection closed after it reached Redis) and `enableOfflineQueue: false`
 * (otherwise a command waits with no deadline while no node is reachable).
 */
export const clusterOptions = {
  retryDelayOnFailover: 0,
  enableOfflineQueue: false,
} as const satisfies ClusterOptions;

/** An ioredis `Cluster` on `nodes` as errand needs it ({@link clusterOptions}). */
export function clusterClient(nodes: ClusterNode[], options: ClusterOptions = {}): Cluster {
  return new Cluster(nodes, { ...clusterOptions, ...options });
}

/** A cluster started by {@link startRedisCluster}. */
export interface RedisClusterHandle {
  /** The masters, as ioredis `Cluster` start nodes. */
  nodes: Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts one `redis-server` in cluster mode on `port`, its files in `dir`; resolves once it accepts
 * connections. `nodeTimeoutMs`: how long its peers wait before they count it failed.
 */
export function startClusterNode(port: number, dir: string, nodeTimeoutMs = 5000): Promise<ChildProcess> {
  const proc = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      join(dir, `nodes-${port}.conf`),
      "--cluster-node-timeout",
      String(nodeTimeoutMs),
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Promise<ChildProcess>((resolve, reject) => {
    let log = "";
    proc.once("error", reject);
    proc.once("exit", (code) =>
      reject(new Error(`redis-server (cluster node ${port}) exited (${code}): ${log}`)),
    );
    proc.stdout!.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Ready to accept connections")) resolve(proc);
    });
  });
}

/** Starts three cluster masters, assigns every slot, and waits until each node reports `cluster_state:ok`. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const dir = mkdtempSync(join(tmpdir(), "errand-redis-cluster-"));
  const ports = [await freePort(), await freePort(), await freePort()];
  const procs: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once("exit", () => resolve());
            p.kill("SIGKILL");
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) procs.push(await startClusterNode(port, dir));
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    // `--cluster create` returns once slots are assigned; the nodes agree a moment later (gossip).
    for (const port of ports) {
      for (let i = 0; ; i++) {
        const { stdout } = await run("redis-cli", ["-p", String(port), "cluster", "info"]);
        if (stdout.includes("cluster_state:ok")) break;
        if (i > 200) throw new Error(`cluster node ${port} never reached cluster_state:ok:\n${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: ports.map((port) => ({ host: "127.0.0.1", port })), stop };
}
