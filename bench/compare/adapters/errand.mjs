/**
 * errand itself, on each of its stores, through the same harness as the other queues. `env.errand`
 * is the URL of a compiled build's index.js (run.mjs compiles src/ with tsc, as `npm run bench --
 * --compiled` does), so errand runs as deployed, not under tsx.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dropSchema, flushPrefix, freshName } from "./util.mjs";

/**
 * @param {"sqlite" | "postgres" | "redis"} store
 * @param {{ keepCompleted?: boolean, prefetch?: number, ids?: boolean }} [options] `keepCompleted:
 *   false`: `retention: { completed: 0 }`, completed jobs deleted as they complete, as
 *   graphile-worker, pg-boss's deleteAfter… and BullMQ's removeOnComplete do. `prefetch`: the
 *   Worker option the README advises for throughput (jobs claimed ahead of free capacity). `ids`:
 *   the bulk enqueue by `enqueueManyIds`, which answers each job's id (as plainjob's `addMany`
 *   does) rather than every job whole; such a row measures the bulk enqueue alone.
 */
function errandOn(store, { keepCompleted = true, prefetch = 0, ids = false } = {}) {
  const notes = [
    !keepCompleted && "completed not kept",
    prefetch > 0 && `prefetch ${prefetch}`,
    ids && "enqueueManyIds",
  ].filter(Boolean);
  return {
    name: notes.length === 0 ? `errand (${store})` : `errand (${store}, ${notes.join(", ")})`,
    store,
    package: "errand",
    ...(ids ? { scenarios: ["enqueue-bulk"] } : {}),
    settings: (c) =>
      ids
        ? "bulk enqueue by enqueueManyIds (answers ids), defaults otherwise"
        : [
            `Worker concurrency ${c}`,
            prefetch > 0 && `prefetch ${prefetch}`,
            !keepCompleted && "retention.completed 0",
            "defaults otherwise",
          ]
            .filter(Boolean)
            .join(", "),

    async create(env) {
      const tag = freshName("cmp_errand");
      if (store === "sqlite")
        return `sqlite:${join(mkdtempSync(join(tmpdir(), "errand-compare-")), "bench.db")}`;
      if (store === "postgres") {
        const url = new URL(env.pgUrl);
        url.searchParams.set("schema", tag);
        return url.href;
      }
      const url = new URL(env.redisUrl);
      url.searchParams.set("prefix", tag);
      return url.href;
    },

    async open(ns, env) {
      const { defineJob, openQueue, Worker } = await import(env.errand);
      const queue = await openQueue(keepCompleted ? ns : { store: ns, retention: { completed: 0 } });
      let onJob = () => {};
      const noop = defineJob({ type: "noop", handler: async (payload) => onJob(payload) });
      /** @type {InstanceType<typeof Worker> | null} */
      let worker = null;
      return {
        enqueueBulk: ids
          ? (payloads) => queue.enqueueManyIds(noop, payloads)
          : (payloads) => queue.enqueueMany(noop, payloads),
        enqueue: (payload) => queue.enqueue(noop, payload),
        async work(concurrency, handler) {
          onJob = handler;
          worker = new Worker(queue, { jobs: [noop], concurrency, ...(prefetch > 0 ? { prefetch } : {}) });
          await worker.start();
        },
        // Jobs still to do, as every other adapter's remaining() counts them (pending and running
        // rows alone). stats() would also count every finished job errand keeps (8-10 ms beside
        // the drain's 20,000 on SQLite and PostgreSQL, each time the drain's end is checked), which
        // no other queue's check reads; the harness asks only whether any job is left.
        async remaining() {
          let left = 0;
          for (const state of ["pending", "active"]) {
            // A filtered page may be empty with a cursor (it reads a stretch of jobs): page on
            // until one holds a job or none is left.
            let page = await queue.list({ state, limit: 1000 });
            while (page.jobs.length === 0 && page.nextCursor !== null) {
              page = await queue.list({ state, limit: 1000, cursor: page.nextCursor });
            }
            left += page.jobs.length;
          }
          return left;
        },
        async close() {
          await worker?.close();
          await queue.close();
        },
      };
    },

    async destroy(ns, env) {
      if (store === "sqlite")
        rmSync(join(ns.slice("sqlite:".length), ".."), { recursive: true, force: true });
      else if (store === "postgres") await dropSchema(env.pgUrl, new URL(ns).searchParams.get("schema"));
      else await flushPrefix(env.redisUrl, `{${new URL(ns).searchParams.get("prefix")}}:`);
    },
  };
}

export const sqlite = errandOn("sqlite");
export const postgres = errandOn("postgres");
export const redis = errandOn("redis");
export const postgresDiscard = errandOn("postgres", { keepCompleted: false });
export const sqlitePrefetch = errandOn("sqlite", { prefetch: 450 });
export const postgresPrefetch = errandOn("postgres", { prefetch: 450 });
export const postgresPrefetchDiscard = errandOn("postgres", { keepCompleted: false, prefetch: 450 });
export const redisPrefetch = errandOn("redis", { prefetch: 450 });
export const sqliteIds = errandOn("sqlite", { ids: true });
export const postgresIds = errandOn("postgres", { ids: true });
export const redisIds = errandOn("redis", { ids: true });
