/**
 * Held back, seen over HTTP (issue 15): `GET /v1/stats` reports `limits` for the types whose rules
 * the server knows (its `PUT /v1/types` settings), in the OpenAPI schema's shape; the client
 * hands it back as a null-prototype record; `/metrics` has it as `errand_jobs_held_back`.
 */
import { describe, expect, it } from "vitest";
import { ErrandClient } from "../../src/client/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "./harness.js";

for (const backend of selectedBackends()) {
  describe(`held back over HTTP on ${backend.name}`, () => {
    it("reports held-back counts and busiest keys for the types the server has rules for", async () => {
      const h = await startServer(backend);
      expect((await h.http("PUT", "/v1/types/sync", { body: { keyConcurrency: 1 } })).status).toBe(201);
      expect((await h.http("PUT", "/v1/types/ledger", { body: { ordered: true } })).status).toBe(201);
      const jobs = [
        ...["a", "a", "a", "b"].map((key) => ({ type: "sync", key })),
        ...["x", "x"].map((key) => ({ type: "ledger", key })),
        { type: "plain", key: "a" },
      ];
      expect((await h.http("POST", "/v1/jobs", { body: { jobs } })).status).toBe(201);
      const leased = await h.http("POST", "/v1/lease", { body: { types: ["sync"], limit: 10 } });
      expect(leased.body.jobs).toHaveLength(2);

      const stats = await h.http("GET", "/v1/stats");
      expect(stats.status).toBe(200);
      expect(stats.body.limits).toEqual({
        ledger: {
          heldBack: { rateLimit: 0, keyConcurrency: 0, order: 1, exact: true },
          busiestKeys: [{ key: "x", ready: 2, active: 0 }],
        },
        sync: {
          heldBack: { rateLimit: 0, keyConcurrency: 2, order: 0, exact: true },
          busiestKeys: [
            { key: "a", ready: 2, active: 1 },
            { key: "b", ready: 0, active: 1 },
          ],
        },
      });
      const client = new ErrandClient(h.base);
      const fromClient = await client.stats();
      expect(Object.getPrototypeOf(fromClient.limits)).toBeNull();
      expect(fromClient.limits.sync?.heldBack.keyConcurrency).toBe(2);
      expect(Object.hasOwn(fromClient.limits, "plain")).toBe(false);

      const metrics = await h.http("GET", "/metrics");
      expect(metrics.body).toContain('errand_jobs_held_back{type="sync",rule="key_concurrency"} 2');
      expect(metrics.body).toContain('errand_jobs_held_back{type="ledger",rule="order"} 1');
      expect(metrics.body).toContain('errand_jobs_held_back{type="ledger",rule="rate_limit"} 0');
    });
  });
}
