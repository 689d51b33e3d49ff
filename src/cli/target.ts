import { ErrandClient } from "../client/client.js";
import { openQueue, type Queue } from "../queue.js";

/** Where a command acts: a store directly, or a server over HTTP. Both have the Queue's methods. */
export type Target = Pick<
  Queue,
  | "enqueue"
  | "enqueueBatch"
  | "get"
  | "list"
  | "cancel"
  | "retry"
  | "replay"
  | "stats"
  | "schedule"
  | "unschedule"
  | "schedules"
  | "prune"
  | "pauseQueue"
  | "resumeQueue"
>;

/** Options every command that reaches jobs takes. */
export interface TargetOptions {
  store?: string;
  server?: string;
  token?: string;
}

/** The default store when neither `--store`, `ERRAND_STORE` nor `--server` is given. */
export const DEFAULT_STORE = "sqlite:./errand.db";

/** Opens the target; `close` releases it. */
export async function openTarget(
  o: TargetOptions,
): Promise<{ target: Target; client: ErrandClient | null; queue: Queue | null; close: () => Promise<void> }> {
  const server = o.server ?? process.env.ERRAND_SERVER;
  if (server) {
    const client = new ErrandClient({ url: server, token: o.token ?? process.env.ERRAND_TOKEN });
    return { target: client as unknown as Target, client, queue: null, close: async () => {} };
  }
  const queue = await openQueue(o.store ?? process.env.ERRAND_STORE ?? DEFAULT_STORE);
  return { target: queue, client: null, queue, close: () => queue.close() };
}
