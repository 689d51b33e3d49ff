import { ErrandError } from "../errors.js";

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 128;

/**
 * Strict UTF-8: bytes that are not UTF-8 throw instead of becoming U+FFFD, which would store text
 * the client never sent and make different keys equal ("k-\xff" and "k-\xfe" both "k-\uFFFD").
 * `ignoreBOM` keeps a leading byte order mark in the text, as Buffer's decoding did: so a BOM
 * before JSON is still refused as not JSON, and a BOM alone is still no body (see parseJsonBody).
 * One decoder serves every request: a non-streaming decode() starts afresh each time.
 */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Decodes a request body's bytes as UTF-8 and parses them as JSON ({@link parseJsonText}).
 * @throws ErrandError `INVALID_REQUEST` for bytes that are not UTF-8, or text that is not JSON.
 */
export function parseJsonBody(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new ErrandError(
      "INVALID_REQUEST",
      "request body is not valid UTF-8: JSON is sent as UTF-8 (RFC 8259), and other bytes would be stored altered",
    );
  }
  return parseJsonText(text);
}

/**
 * Parses a JSON request body, refusing nesting deeper than {@link MAX_JSON_DEPTH} before parsing
 * (a deeply nested body would otherwise cost a stack overflow later, when it is serialised).
 * An empty body (or one of whitespace, U+FEFF included) is `undefined`.
 * @throws ErrandError `INVALID_REQUEST`
 */
function parseJsonText(text: string): unknown {
  if (text.length === 0 || /^\s*$/.test(text)) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > MAX_JSON_DEPTH) {
        throw new ErrandError(
          "INVALID_REQUEST",
          `request body is nested deeper than ${MAX_JSON_DEPTH} levels`,
        );
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ErrandError("INVALID_REQUEST", `request body is not valid JSON: ${(cause as Error).message}`);
  }
}
