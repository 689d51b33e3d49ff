import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF, toStoredBackoff } from "../../src/backoff.js";
import { decodeJob, packBackoff, unpackBackoff } from "../../src/store/redis/job-codec.js";

describe("Redis job codec", () => {
  it("stores every backoff policy in a form that gives back the very same JSON text", () => {
    const policies = [
      DEFAULT_BACKOFF,
      toStoredBackoff({ type: "fixed", delayMs: 5000 }),
      toStoredBackoff({ type: "exponential", baseMs: 250, maxMs: 60_000, factor: 1.5, jitter: false }),
      toStoredBackoff(() => 1000),
      { type: "exponential", factor: 2, baseMs: 1000, maxMs: 5000, jitter: true }, // keys in another order
      { type: "fixed", delayMs: 10, extra: true },
    ];
    for (const policy of policies) {
      const text = JSON.stringify(policy);
      const stored = packBackoff(text);
      expect(unpackBackoff(stored === "" ? text : stored)).toBe(text);
      // Short enough for a compact hash value, unless it is stored as it came.
      if (!stored.startsWith("{")) expect(stored.length).toBeLessThanOrEqual(64);
    }
    expect(packBackoff(JSON.stringify(DEFAULT_BACKOFF))).toBe("");
    expect(packBackoff(JSON.stringify({ type: "fixed", delayMs: 5000 }))).toBe("f5000");
  });

  it("decodes a job hash, defaults for fields left out and long values from their pieces in any order", () => {
    const record = decodeJob([
      "job-1",
      "t",
      "email",
      "p:1",
      "é wörld",
      "q",
      "mail",
      "s",
      "a",
      "p",
      '{"hello":"',
      "p:2",
      '"}',
      "r",
      "1767225600000",
      "a",
      "2",
      "c",
      "1767225500000",
      "h:1",
      "-2",
      "h",
      "worker",
    ]);
    expect(record).toMatchObject({
      id: "job-1",
      type: "email",
      queue: "mail",
      state: "active",
      payload: '{"hello":"é wörld"}',
      workerId: "worker-2",
      priority: 0,
      weight: 1,
      runAt: 1767225600000,
      attempt: 2,
      maxAttempts: 5,
      backoff: JSON.stringify(DEFAULT_BACKOFF),
      delivery: "at_least_once",
      errors: "[]",
      expiresAt: null,
      checkpoint: null,
      result: null,
      uniqueKey: null,
      createdAt: 1767225500000,
    });
  });

  it("takes a job's runAt from createdAt when the hash leaves it out, wherever c comes", () => {
    const due = decodeJob(["job-2", "t", "email", "q", "default", "s", "p", "c", "1767225600000"]);
    expect(due).toMatchObject({ runAt: 1767225600000, createdAt: 1767225600000, state: "pending" });
    const later = decodeJob(["job-3", "r", "1767225700000", "t", "email", "s", "p", "c", "1767225600000"]);
    expect(later).toMatchObject({ runAt: 1767225700000, createdAt: 1767225600000 });
  });
});
