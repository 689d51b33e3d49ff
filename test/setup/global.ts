/**
 * Vitest global setup: starts what a selected store needs once per run, before any test file.
 * Today that is the `redis-cluster` store's three-node Redis Cluster; its start nodes reach the
 * tests through `inject("redisClusterNodes")`.
 */
import type { TestProject } from "vitest/node";
import { type RedisClusterHandle, startRedisCluster } from "../helpers/redis-cluster.js";
import { storeSelected } from "../helpers/stores.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisClusterNodes: Array<{ host: string; port: number }> | null;
  }
}

let cluster: RedisClusterHandle | null = null;

export async function setup(project: TestProject): Promise<void> {
  if (storeSelected("redis-cluster")) cluster = await startRedisCluster();
  project.provide("redisClusterNodes", cluster?.nodes ?? null);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
