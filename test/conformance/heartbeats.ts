import type { Store } from "../../src/store/store.js";

/**
 * Tracks the heartbeat writes a worker sends to `store`, so a test on the manual clock can wait
 * for them to land. A heartbeat a timer starts takes real time to reach a networked store, while
 * the manual clock moves as fast as the test loop goes: on a loaded machine, without waiting, a
 * sweep can overtake two heartbeats in a row and recover a lease the worker is keeping alive.
 * @returns a function resolving once every heartbeat write started so far has settled.
 */
export function trackHeartbeats(store: Store): () => Promise<void> {
  const writes = new Set<Promise<void>>();
  const heartbeatMany = store.heartbeatMany.bind(store);
  store.heartbeatMany = (params) => {
    const write = heartbeatMany(params);
    const done = (): void => {
      writes.delete(settled);
    };
    const settled: Promise<void> = write.then(done, done);
    writes.add(settled);
    return write;
  };
  return async () => {
    await Promise.all([...writes]);
  };
}
