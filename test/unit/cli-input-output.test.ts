/**
 * What the CLI reads from its user (integers, queue weights, files with a BOM) and how it prints
 * text from jobs (control characters escaped), without a process or a store.
 */
import { describe, expect, it } from "vitest";
import { parseQueues } from "../../src/cli/commands/worker.js";
import { int, port, withoutBom } from "../../src/cli/input.js";
import { jobDetail, oneLine, out, shown } from "../../src/cli/output.js";
import { ErrandError } from "../../src/errors.js";
import type { Job } from "../../src/job.js";

const refusal = (f: () => unknown): ErrandError => {
  try {
    f();
  } catch (e) {
    if (e instanceof ErrandError) return e;
    throw e;
  }
  throw new Error("not refused");
};

describe("the CLI's integer options", () => {
  it("take an optionally signed run of decimal digits, within their bounds", () => {
    expect(int("--priority")("42")).toBe(42);
    expect(int("--priority")("-7")).toBe(-7);
    expect(int("--priority")("+7")).toBe(7);
    expect(int("--priority")("007")).toBe(7);
    expect(port("--port")("0")).toBe(0);
    expect(port("--port")("65535")).toBe(65_535);
  });

  it("refuse what Number() would read as a number, naming the text typed", () => {
    for (const text of [
      "",
      " ",
      " 1",
      "1 ",
      "0x10",
      "0b11",
      "0o7",
      " 1e3 ",
      "1e3",
      "1.0",
      "1_000",
      "+-1",
      "Infinity",
    ]) {
      const e = refusal(() => int("--priority")(text));
      expect(e.code, JSON.stringify(text)).toBe("INVALID_OPTION");
      expect(e.message).toBe(`--priority must be an integer, got ${JSON.stringify(text)}`);
    }
    expect(refusal(() => port("--port")("")).message).toBe(
      '--port must be an integer from 0 to 65535, got ""',
    );
    expect(refusal(() => port("PORT")("65536")).message).toMatch(/from 0 to 65535, got "65536"/);
    expect(refusal(() => int("--batch", 1, 10)("9007199254740993")).code).toBe("INVALID_OPTION");
  });

  it("--queues reads name=weight with the same digits, and a name alone as weight 1", () => {
    expect({ ...parseQueues("critical=6,default,bulk=+2") }).toEqual({ critical: 6, default: 1, bulk: 2 });
    for (const [list, text] of [
      ["a=abc", "abc"],
      ["a=", ""],
      ["a=1=junk", "1=junk"],
      ["a=0x10", "0x10"],
      ["a= 3", " 3"],
    ]) {
      const e = refusal(() => parseQueues(list!));
      expect(e.code).toBe("INVALID_OPTION");
      expect(e.message).toBe(`--queues: the weight of "a" must be an integer, got ${JSON.stringify(text)}`);
    }
  });
});

describe("the CLI's printing of text from jobs", () => {
  const hostile = "\u001b]0;pwned\u0007\u001b[31mRED\r\n\u009b2J\u007f\tok";

  it("escapes every C0 and C1 control character and DEL, as JSON does", () => {
    expect(oneLine(hostile)).toBe(
      "\\u001b]0;pwned\\u0007\\u001b[31mRED\\u000d\\u000a\\u009b2J\\u007f\\u0009ok",
    );
    expect(oneLine("plain text, ünïcödé ✓")).toBe("plain text, ünïcödé ✓");
    // A JSON line stays the same JSON.
    const json = JSON.stringify({ s: hostile });
    expect(JSON.parse(oneLine(json))).toEqual({ s: hostile });
  });

  it("shows a string with control characters JSON-encoded, and one without as it is", () => {
    expect(shown("tenant-7")).toBe("tenant-7");
    expect(JSON.parse(shown(hostile))).toBe(hostile);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters.
    expect(shown(hostile)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it("prints lines with their line feeds and no other control character", () => {
    let written = "";
    out({ env: {}, stdout: { write: (t: string) => (written += t) } }, `a\u001b[2Jb\nc\u0085d`);
    expect(written).toBe("a\\u001b[2Jb\nc\\u0085d\n");
  });

  it("jobs get prints each field on its own line, whatever the payload, result or error holds", () => {
    const job = {
      id: "j1",
      payload: hostile,
      result: { note: "\u009b31m" },
      lastError: { message: "boom\r\nfake line" },
      runAt: new Date(0),
    } as unknown as Job;
    const lines = jobDetail(job).split("\n");
    expect(lines).toHaveLength(5);
    expect(lines[1]).toBe(`payload         ${shown(hostile)}`);
    expect(lines[2]).toBe('result          {"note":"\\u009b31m"}');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters.
    for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it("drops a leading byte order mark only", () => {
    expect(withoutBom('\uFEFF{"a":1}')).toBe('{"a":1}');
    expect(withoutBom('{"a":"\uFEFF"}')).toBe('{"a":"\uFEFF"}');
  });
});
