/**
 * Request bodies as bytes. fast-check writes the bytes of a JSON string value (the payload of a
 * `POST /v1/jobs`): UTF-8 text of any code points, that text with one byte changed, cut or
 * added, and bytes at random. The property: bytes that are UTF-8 are stored as exactly the text
 * they encode; any other bytes are refused with 400 `INVALID_REQUEST` and the store is as it was.
 * Whether bytes are UTF-8 is decided without the server's decoder: they are when decoding them
 * (with U+FFFD for what is not UTF-8) and encoding the text again gives the same bytes back.
 */
import { request } from "node:http";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "../e2e/harness.js";
import { fcParams } from "../helpers/property.js";
import { storeSnapshot } from "./checks.js";

const RUNS = 200;
/** The first store picked that a server can open (none when ERRAND_STORES names only redis-cluster). */
const [backend] = selectedBackends();

/** Bytes JSON gives a meaning of its own inside a string (controls, `"`, `\`): left out. */
const jsonSafe = (b: number) => b >= 0x20 && b !== 0x22 && b !== 0x5c;

const utf8Text = fc
  .string({ unit: "grapheme", maxLength: 12 })
  .map((s) => [...Buffer.from(s, "utf8")].filter(jsonSafe));

/** UTF-8 text, spoiled one byte at a time, or random bytes. */
const valueBytes: fc.Arbitrary<number[]> = fc.oneof(
  utf8Text,
  fc
    .tuple(utf8Text, fc.nat(), fc.integer({ min: 0x80, max: 0xff }), fc.constantFrom("set", "insert", "cut"))
    .map(([bytes, at, byte, how]) => {
      const i = bytes.length === 0 ? 0 : at % bytes.length;
      if (how === "cut") return bytes.slice(0, i);
      if (how === "insert") return [...bytes.slice(0, i), byte, ...bytes.slice(i)];
      return bytes.length === 0 ? [byte] : bytes.map((b, j) => (j === i ? byte : b));
    }),
  fc.array(fc.integer({ min: 0x20, max: 0xff }), { maxLength: 12 }).map((bs) => bs.filter(jsonSafe)),
);

function post(
  base: string,
  body: Buffer,
): Promise<{ status: number; body: { code?: string; payload?: unknown } }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/v1/jobs",
        headers: { "content-type": "application/json", "content-length": body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe.runIf(backend)(`request body bytes on ${backend?.name}`, () => {
  it("stores UTF-8 text as the text it encodes, and refuses other bytes (400) changing nothing", async () => {
    const h = await startServer(backend!);
    await fc.assert(
      fc.asyncProperty(valueBytes, async (bytes) => {
        const value = Buffer.from(bytes);
        const text = value.toString("utf8");
        const isUtf8 = Buffer.from(text, "utf8").equals(value);
        const body = Buffer.concat([Buffer.from('{"type":"t","payload":"'), value, Buffer.from('"}')]);
        const before = isUtf8 ? null : await storeSnapshot(h.queue);
        const r = await post(h.base, body);
        const what = `bytes ${value.toString("hex")}`;
        if (isUtf8) {
          expect(r.status, what).toBe(201);
          expect(r.body.payload, what).toBe(text);
        } else {
          expect(r.status, what).toBe(400);
          expect(r.body.code, what).toBe("INVALID_REQUEST");
          expect(await storeSnapshot(h.queue), what).toEqual(before);
        }
      }),
      fcParams(RUNS),
    );
  }, 60_000);
});
