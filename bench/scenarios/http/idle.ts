/**
 * Idle long-polls: 300 concurrent `POST /v1/lease` (waitMs 60 s, each on its own connection) on an
 * empty queue; the server's RSS once all 300 wait (the highest of 5 readings over 2 s).
 */
import { now, round } from "../../common.js";
import type { Scenario } from "../scenario.js";
import { http, sleep, withServer } from "./server.js";

export interface HttpIdleResult {
  connections: number;
  waiters: number;
  rssBeforeMB: number;
  rssMB: number;
  heapUsedMB: number;
}

export const httpIdle: Scenario<"http-idle"> = {
  name: "http-idle",
  measures: "the server's RSS with 300 long-poll leases waiting on an empty queue",
  group: "http",
  inDefaultRun: () => false,
  async run({ store, runtime: rt, log }) {
    const CONNECTIONS = 300;
    const db = store.fresh("http-idle");
    try {
      return await withServer(db, rt, "http-idle", async (s) => {
        await http(s.base, "POST", "/v1/lease", { limit: 1, waitMs: 0 });
        const ac = new AbortController();
        const polls = Array.from({ length: CONNECTIONS }, () =>
          fetch(`${s.base}/v1/lease`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ limit: 50, leaseMs: 30_000, waitMs: 60_000 }),
            signal: ac.signal,
          }).then(
            (res) => res.text(),
            () => null,
          ),
        );
        try {
          const deadline = now() + 20_000;
          let m = await s.mem();
          while (m.waiters < CONNECTIONS) {
            if (now() > deadline)
              throw new Error(`http-idle: only ${m.waiters} of ${CONNECTIONS} long-polls waiting`);
            await sleep(50);
            m = await s.mem();
          }
          let peak = m;
          for (let i = 0; i < 5; i++) {
            await sleep(400);
            const x = await s.mem();
            if (x.rssBytes > peak.rssBytes) peak = x;
          }
          const r = {
            connections: CONNECTIONS,
            waiters: peak.waiters,
            rssBeforeMB: round(s.rssBeforeBytes / 2 ** 20, 1),
            rssMB: round(peak.rssBytes / 2 ** 20, 1),
            heapUsedMB: round(peak.heapUsedBytes / 2 ** 20, 1),
          };
          log(
            `http-idle: server RSS ${r.rssMB} MB with ${r.waiters} long-polls waiting (${r.rssBeforeMB} MB idle)`,
          );
          return r;
        } finally {
          ac.abort();
          await Promise.all(polls);
        }
      });
    } finally {
      await db.dispose();
    }
  },
};
