import type { EnqueueResult } from "./store.js";

/**
 * The result of every job an enqueue inserted: one frozen object, shared, since a bulk enqueue
 * would otherwise make one per job just to say the same thing.
 * @internal
 */
export const INSERTED: EnqueueResult = Object.freeze({ inserted: true });
