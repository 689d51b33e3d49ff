/**
 * Issue 12, item 7: a `logger` option that is not a logger is refused where it is given
 * (`INVALID_OPTION` naming the field), not discovered on the first fault, when a worker logging a
 * store error would throw from its own `error` handler and end the process.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrandClient } from "../../src/client/client.js";
import { RemoteWorker } from "../../src/client/remote-worker.js";
import { defineJob } from "../../src/define-job.js";
import { ErrandError } from "../../src/errors.js";
import { openQueue, type Queue } from "../../src/queue.js";
import { createServer } from "../../src/server/index.js";
import { Worker } from "../../src/worker/worker.js";

const task = defineJob({ type: "task", handler: async () => null });

/** Not loggers: each must be refused, and each message must name what is wrong. */
const NOT_LOGGERS: Array<[string, unknown, RegExp]> = [
  ["an empty object", {}, /got object/],
  ["a string", "debug", /got string/],
  ["null", null, /got null/],
  ["an object missing child and debug", { error() {}, warn() {}, info() {} }, /it has no debug, child/],
  [
    "an object whose error is not callable",
    { error: "x", warn() {}, info() {}, debug() {}, child() {} },
    /no error/,
  ],
];

function refusal(make: () => unknown): ErrandError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(ErrandError);
    return error as ErrandError;
  }
  throw new Error("expected the option to be refused");
}

/** A pino logger writing its lines into `lines`. */
function capturing(lines: string[]): pino.Logger {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return pino({ level: "warn" }, stream);
}

describe("the logger option", () => {
  let queue: Queue;
  beforeEach(async () => {
    queue = await openQueue("sqlite::memory:");
  });
  afterEach(async () => {
    await queue.close();
  });

  describe("Worker", () => {
    for (const [what, logger, message] of NOT_LOGGERS) {
      it(`refuses ${what} with INVALID_OPTION naming the field`, () => {
        const error = refusal(() => new Worker(queue, { jobs: [task], logger: logger as pino.Logger }));
        expect(error.code).toBe("INVALID_OPTION");
        expect(error.message).toMatch(/^Worker: logger must be a pino-compatible logger/);
        expect(error.message).toMatch(message);
      });
    }

    it("logs a store error through a pino logger and survives it", async () => {
      const lines: string[] = [];
      const worker = new Worker(queue, { jobs: [task], logger: capturing(lines), maintenance: false });
      const errors: unknown[] = [];
      worker.on("error", (e) => errors.push(e));
      worker.emit("error", new Error("store unreachable"));
      expect(errors).toHaveLength(1);
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ msg: "worker error", workerId: worker.workerId });
    });
  });

  describe("RemoteWorker", () => {
    const client = new ErrandClient({ url: "http://127.0.0.1:9" });
    for (const [what, logger, message] of NOT_LOGGERS) {
      it(`refuses ${what} with INVALID_OPTION naming the field`, () => {
        const error = refusal(
          () => new RemoteWorker(client, { jobs: [task], logger: logger as pino.Logger }),
        );
        expect(error.code).toBe("INVALID_OPTION");
        expect(error.message).toMatch(/^RemoteWorker: logger must be a pino-compatible logger/);
        expect(error.message).toMatch(message);
      });
    }

    it("takes a pino logger and logs its errors there", () => {
      const lines: string[] = [];
      const worker = new RemoteWorker(client, { jobs: [task], logger: capturing(lines) });
      worker.emit("error", new Error("server unreachable"));
      expect(JSON.parse(lines[0]!)).toMatchObject({ msg: "remote worker error" });
    });
  });

  describe("createServer", () => {
    it("refuses a value that is neither a boolean, pino options nor a logger", async () => {
      for (const logger of ["info", 1, null, []]) {
        await expect(
          createServer({ queue, maintenance: false, logger: logger as never }),
        ).rejects.toMatchObject({
          code: "INVALID_OPTION",
          message: expect.stringMatching(
            /^createServer: logger must be a boolean, pino options or a pino-compatible logger/,
          ),
        });
      }
    });

    it("refuses a partial logger, naming the methods it lacks", async () => {
      const partial = { error() {}, warn() {}, info() {}, debug() {}, child() {} };
      await expect(
        createServer({ queue, maintenance: false, logger: partial as never }),
      ).rejects.toMatchObject({
        code: "INVALID_OPTION",
        message: expect.stringMatching(/^createServer: logger .* it has no fatal, trace$/),
      });
    });

    it("logs through a pino logger instance", async () => {
      const lines: string[] = [];
      const app = await createServer({ queue, maintenance: false, logger: capturing(lines) });
      try {
        app.log.warn("hello from the server");
        expect(lines.map((l) => JSON.parse(l).msg)).toContain("hello from the server");
      } finally {
        await app.close();
      }
    });

    it("still takes true and pino options", async () => {
      for (const logger of [true, false, { level: "silent" }]) {
        const app = await createServer({ queue, maintenance: false, logger });
        await app.close();
      }
    });
  });
});
