import { ErrandError } from "./errors.js";
import type { QueueWeight } from "./store/store.js";
import { checkInt, checkQueueName, MAX_COUNT } from "./validation.js";

/** Normalises queue names or a weight map to {@link QueueWeight}s, validating both. */
export function toQueueWeights(queues: string[] | Record<string, number>): QueueWeight[] {
  const entries = Array.isArray(queues) ? queues.map((q) => [q, 1] as const) : Object.entries(queues);
  if (entries.length === 0) throw new ErrandError("INVALID_OPTION", "queues must name at least one queue");
  return entries.map(([name, weight]) => ({
    name: checkQueueName(name),
    weight: checkInt(`queues.${name}`, weight, 1, MAX_COUNT),
  }));
}
