/**
 * `errand/redis`: the Redis store (ioredis, Lua scripts). Needs `ioredis` installed.
 * @example
 * ```ts
 * import { openQueue } from "errand";
 * const queue = await openQueue("redis://127.0.0.1:6379?prefix=errand");
 * // or, with your own client:
 * import { RedisStore } from "errand/redis";
 * const queue = await openQueue({ store: await RedisStore.open({ client: new Redis({ autoResendUnfulfilledCommands: false }), prefix: "jobs" }) });
 * ```
 * @packageDocumentation
 */
export { RedisStore, type RedisStoreOptions } from "./redis-store.js";
