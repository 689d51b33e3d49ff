import { describe, expect, it } from "vitest";
import { ErrandClient } from "../../src/client/client.js";
import { RemoteWorker } from "../../src/client/remote-worker.js";
import { defineJob } from "../../src/define-job.js";

const task = defineJob({ type: "task", handler: async () => null });

describe("new RemoteWorker", () => {
  it("refuses what is not a client with INVALID_OPTION, before anything starts", () => {
    const notClients: unknown[] = [
      null,
      undefined,
      "http://127.0.0.1:8080",
      { url: "http://127.0.0.1:8080" },
      { lease: () => [] },
      42,
    ];
    for (const client of notClients) {
      expect(() => new RemoteWorker(client as ErrandClient, { jobs: [task] })).toThrow(
        expect.objectContaining({
          code: "INVALID_OPTION",
          message: expect.stringContaining("RemoteWorker: client"),
        }),
      );
    }
  });

  it("takes an ErrandClient, and anything with its calls", () => {
    const client = new ErrandClient({ url: "http://127.0.0.1:9" });
    expect(new RemoteWorker(client, { jobs: [task] }).client).toBe(client);
    // A client of another copy of errand: the same calls, another class.
    const lookalike = Object.fromEntries(
      Object.getOwnPropertyNames(ErrandClient.prototype).map((name) => [name, () => undefined]),
    );
    expect(() => new RemoteWorker(lookalike as unknown as ErrandClient, { jobs: [task] })).not.toThrow();
  });
});

describe("RemoteWorker's reportRetryMs", () => {
  it("takes 0 (send each report once) up to the longest timer, or a duration string; refuses the rest", () => {
    const client = new ErrandClient({ url: "http://127.0.0.1:9" });
    for (const reportRetryMs of [0, "5m", 2 ** 31 - 1]) {
      expect(() => new RemoteWorker(client, { jobs: [task], reportRetryMs })).not.toThrow();
    }
    for (const reportRetryMs of [-1, 2 ** 31, Number.NaN, "soon"]) {
      expect(() => new RemoteWorker(client, { jobs: [task], reportRetryMs }), String(reportRetryMs)).toThrow(
        expect.objectContaining({
          code: "INVALID_DURATION",
          message: expect.stringContaining("reportRetryMs"),
        }),
      );
    }
  });
});
