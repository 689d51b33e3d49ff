import { describe, expect, it } from "vitest";
import { wireError } from "../../src/client/client.js";
import { MAX_ERROR_STACK_LENGTH, MAX_ERROR_TEXT_LENGTH } from "../../src/validation.js";

describe("wireError: what a remote worker sends for whatever a handler threw", () => {
  it("never throws, as a Queue's failure record never does (property seed 2936: fail(ref, 10n))", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const badGetter = new Error("x");
    Object.defineProperty(badGetter, "message", {
      get() {
        throw new Error("getter");
      },
    });
    const proxy = new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
        getPrototypeOf() {
          throw new Error("trap");
        },
      },
    );
    for (const thrown of [10n, cyclic, badGetter, proxy, Symbol("s"), undefined, () => 1]) {
      const wire = wireError(thrown);
      expect(typeof wire.message, String(typeof thrown)).toBe("string");
      expect(() => JSON.stringify(wire)).not.toThrow();
    }
    expect(wireError({ code: 7 }).message).toBe('{"code":7}');
    expect(wireError("plain").message).toBe("plain");
    expect(wireError(Object.assign(new Error("boom"), { code: "E_X" }))).toMatchObject({
      message: "boom",
      name: "E_X",
    });
  });

  it("sends no more than the server keeps, as text the server takes: a stack cut to MAX_ERROR_STACK_LENGTH", () => {
    const error = new Error(`${"m".repeat(MAX_ERROR_TEXT_LENGTH - 1)}😀 and more`);
    error.stack = `${"s".repeat(MAX_ERROR_STACK_LENGTH - 1)}😀${"frame\n".repeat(1000)}`;
    error.name = "Bad\u0000Name";
    const wire = wireError(error);
    // A cut through a surrogate pair, and U+0000, would be refused by the server's schema (400),
    // losing the failure: both come out as U+FFFD, as the server records a handler's own.
    expect(wire.stack).toBe(`${"s".repeat(MAX_ERROR_STACK_LENGTH - 1)}\ufffd`);
    expect(wire.message).toBe(`${"m".repeat(MAX_ERROR_TEXT_LENGTH - 1)}\ufffd`);
    expect(wire.name).toBe("Bad\ufffdName");
    expect(wireError("lone \ud800 half").message).toBe("lone \ufffd half");
  });
});
