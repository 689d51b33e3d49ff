import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type Pg from "pg";
import { describe, expect, it } from "vitest";
import { loadPg } from "../../src/store/postgres/pg.js";

const STORE = fileURLToPath(new URL("../../src/store/postgres/index.ts", import.meta.url));

describe("loading pg", () => {
  it("does not build a Response in a fresh process (pg's Cloudflare probe), and leaves no navigator", () => {
    // Node 20 defines the global Response as a lazy accessor that loads undici on first read and
    // becomes a value; a fresh process is the only place where nothing has read it yet.
    const script = `
      const had = "navigator" in globalThis;
      await import(${JSON.stringify(STORE)});
      const d = Object.getOwnPropertyDescriptor(globalThis, "Response");
      console.log(JSON.stringify({ response: d && ("value" in d ? "value" : "accessor"), had, has: "navigator" in globalThis }));
    `;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
    });
    const seen = JSON.parse(out.trim().split("\n").at(-1)!) as {
      response: string;
      had: boolean;
      has: boolean;
    };
    expect(seen.response).toBe("accessor");
    expect(seen.has).toBe(seen.had);
  });

  it("gives pg a navigator saying Node.js only while it loads, where the process has none", () => {
    const had = "navigator" in globalThis;
    const before = (globalThis as { navigator?: unknown }).navigator;
    let during: unknown;
    const fake = { fake: true } as unknown as typeof Pg;
    expect(
      loadPg(() => {
        during = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent;
        return fake;
      }),
    ).toBe(fake);
    if (had) {
      // Node's own navigator is left as it is.
      expect((globalThis as { navigator?: unknown }).navigator).toBe(before);
    } else {
      expect(during).toBe("Node.js");
      expect("navigator" in globalThis).toBe(false);
    }
  });

  it("removes the navigator when the load throws", () => {
    const had = "navigator" in globalThis;
    expect(() =>
      loadPg(() => {
        throw new Error("no pg");
      }),
    ).toThrow("no pg");
    expect("navigator" in globalThis).toBe(had);
  });
});
