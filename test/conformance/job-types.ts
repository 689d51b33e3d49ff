/**
 * Job types kept in the store (the server's `PUT /v1/types/{type}`): created, replaced, read,
 * listed and deleted, the settings' JSON text kept exactly, and every connection to the store
 * sees the same set.
 */
import { describe, expect, it } from "vitest";
import type { JobTypeRecord } from "../../src/store/store.js";
import type { Backend } from "./backend.js";

const T0 = Date.UTC(2026, 0, 1);

function record(name: string, config: object | string, at: number): JobTypeRecord {
  return {
    name,
    config: typeof config === "string" ? config : JSON.stringify(config),
    createdAt: at,
    updatedAt: at,
  };
}

export function exerciseJobTypes(backend: Backend): void {
  describe("job types", () => {
    it("creates, replaces (keeping createdAt), reads, lists by name and deletes a type", async () => {
      const { store } = await backend.setup();
      expect(await store.getJobType({ name: "resize" })).toBeNull();
      expect(await store.listJobTypes()).toEqual([]);

      expect(await store.putJobType(record("resize", { type: "resize", concurrency: 2 }, T0))).toBe(true);
      expect(await store.putJobType(record("email", { type: "email" }, T0 + 1))).toBe(true);
      expect(await store.getJobType({ name: "resize" })).toEqual(
        record("resize", { type: "resize", concurrency: 2 }, T0),
      );

      // A replace: new settings and updatedAt, the first createdAt.
      const replaced = record("resize", { type: "resize", concurrency: 5 }, T0 + 60_000);
      expect(await store.putJobType(replaced)).toBe(false);
      expect(await store.getJobType({ name: "resize" })).toEqual({ ...replaced, createdAt: T0 });
      expect(await store.listJobTypes()).toEqual([
        record("email", { type: "email" }, T0 + 1),
        { ...replaced, createdAt: T0 },
      ]);

      expect(await store.deleteJobType({ name: "resize" })).toBe(true);
      expect(await store.deleteJobType({ name: "resize" })).toBe(false);
      expect(await store.getJobType({ name: "resize" })).toBeNull();
      expect((await store.listJobTypes()).map((t) => t.name)).toEqual(["email"]);
      // Deleted and created again: a new type, with a new createdAt.
      expect(await store.putJobType(record("resize", { type: "resize" }, T0 + 120_000))).toBe(true);
      expect((await store.getJobType({ name: "resize" }))?.createdAt).toBe(T0 + 120_000);
    });

    it("keeps the settings' JSON text exactly as given", async () => {
      const { store } = await backend.setup();
      const text =
        '{"type":"ünï:cödé","push":{"url":"https://x.test/h?a=1&b=2","secret":"s3cr\\"et"},"z":1,"a":[]}';
      const long = JSON.stringify({ type: "long", note: "x".repeat(5000) });
      await store.putJobType(record("ünï-name", text, T0));
      await store.putJobType(record("long", long, T0));
      expect((await store.getJobType({ name: "ünï-name" }))?.config).toBe(text);
      expect((await store.getJobType({ name: "long" }))?.config).toBe(long);
      // Names that share a prefix, or look like patterns, are distinct types.
      await store.putJobType(record("long.1", "{}", T0));
      await store.putJobType(record("lon%", "{}", T0));
      expect(await store.getJobType({ name: "lon" })).toBeNull();
      expect((await store.listJobTypes()).map((t) => t.name)).toEqual(["lon%", "long", "long.1", "ünï-name"]);
    });

    it("shows every connection to the store the same types", async () => {
      const { store, connect } = await backend.setup();
      const other = (await connect()).store;
      await store.putJobType(record("a", { type: "a", concurrency: 1 }, T0));
      expect(await other.getJobType({ name: "a" })).toEqual(record("a", { type: "a", concurrency: 1 }, T0));
      expect(await other.putJobType(record("a", { type: "a", concurrency: 3 }, T0 + 5))).toBe(false);
      expect((await store.getJobType({ name: "a" }))?.config).toBe('{"type":"a","concurrency":3}');
      expect(await other.deleteJobType({ name: "a" })).toBe(true);
      expect(await store.listJobTypes()).toEqual([]);
    });
  });
}
