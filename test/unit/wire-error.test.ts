import { describe, expect, it } from "vitest";
import { wireError } from "../../src/client/client.js";

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
});
