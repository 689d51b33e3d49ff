import type { Queue } from "../queue.js";
import type { Authenticator } from "./auth.js";
import type { JobTypeRegistry } from "./job-types.js";
import type { ServerLifecycle } from "./lifecycle.js";
import type { LongPoll } from "./long-poll.js";
import type { ServerMetrics } from "./metrics.js";
import type { PushDelivery } from "./push.js";
import type { Routing } from "./routing.js";
import type { StatsHistory } from "./stats-history.js";

/**
 * What the route modules (`routes/*.ts`) share, built once by `createServer`. Routes reach the
 * store only through `queue`, the one door.
 */
export interface ServerContext {
  queue: Queue;
  auth: Authenticator;
  /** The guard each route is registered behind, and who passed it. */
  routing: Routing;
  types: JobTypeRegistry;
  metrics: ServerMetrics;
  push: PushDelivery;
  history: StatsHistory;
  /** Lease requests waiting for a job. */
  longPoll: LongPoll;
  /** How often a waiting lease looks again without a wake-up (`leasePollMs`). */
  leasePollMs: number;
  /** False when the server was told to run no maintenance, not even the lease API's own. */
  maintenance: boolean;
  /** Draining and closing: what each part stops, and what a drain waits for. */
  lifecycle: ServerLifecycle;
}
