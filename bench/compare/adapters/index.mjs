/**
 * Every queue `npm run bench:compare` measures, by the name `--lib` takes, grouped by store.
 *
 * An adapter: `{ name, store, package, settings(concurrency), create(env) → ns, open(ns, env) → session,
 * destroy(ns, env) }`, where a session offers `enqueueBulk(payloads)`, `enqueue(payload)`,
 * `work(concurrency, onJob)` (starts a worker that calls `onJob(payload)` from its handler),
 * `remaining()` (jobs not yet completed in the store) and `close()`. `ns` is a fresh namespace
 * (a file, a schema, a key prefix), so runs never see each other's jobs. `open` leaves the session
 * connected, so a first `enqueueBulk` measures the call and not the connection's set-up.
 * `settings(concurrency)` names every setting that differs from the queue's defaults at the drain's
 * concurrency: it is printed in the queue's row of the table. An adapter with `scenarios` takes part
 * in those scenarios only (errand's `enqueueManyIds` rows: a bulk-enqueue variant).
 */
/** Loaded on demand, so a worker process holds only its own queue's library (its RSS is measured). */
export const ADAPTERS = {
  "errand-sqlite": () => import("./errand.mjs").then((m) => m.sqlite),
  "errand-sqlite-prefetch": () => import("./errand.mjs").then((m) => m.sqlitePrefetch),
  "errand-sqlite-ids": () => import("./errand.mjs").then((m) => m.sqliteIds),
  plainjob: () => import("./plainjob.mjs").then((m) => m.plainjob),
  "errand-postgres": () => import("./errand.mjs").then((m) => m.postgres),
  "errand-postgres-discard": () => import("./errand.mjs").then((m) => m.postgresDiscard),
  "errand-postgres-prefetch": () => import("./errand.mjs").then((m) => m.postgresPrefetch),
  "errand-postgres-prefetch-discard": () => import("./errand.mjs").then((m) => m.postgresPrefetchDiscard),
  "errand-postgres-ids": () => import("./errand.mjs").then((m) => m.postgresIds),
  "graphile-worker": () => import("./graphile-worker.mjs").then((m) => m.best),
  "graphile-worker-defaults": () => import("./graphile-worker.mjs").then((m) => m.defaults),
  "pg-boss": () => import("./pg-boss.mjs").then((m) => m.pgBoss),
  "errand-redis": () => import("./errand.mjs").then((m) => m.redis),
  "errand-redis-prefetch": () => import("./errand.mjs").then((m) => m.redisPrefetch),
  "errand-redis-ids": () => import("./errand.mjs").then((m) => m.redisIds),
  bullmq: () => import("./bullmq.mjs").then((m) => m.bullmq),
};

/**
 * The queues a run without `--lib` measures: errand and each other queue at its documented best
 * for throughput, and nothing below it (a figure against a peer's defaults would flatter errand).
 */
export const DEFAULT_LIBS = Object.keys(ADAPTERS).filter((lib) => lib !== "graphile-worker-defaults");
