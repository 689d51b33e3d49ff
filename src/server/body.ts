import { ErrandError } from "../errors.js";

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 128;

/**
 * Parses a JSON request body, refusing nesting deeper than {@link MAX_JSON_DEPTH} before parsing
 * (a deeply nested body would otherwise cost a stack overflow later, when it is serialised).
 * An empty body is `undefined`.
 * @throws ErrandError `INVALID_REQUEST`
 */
export function parseJsonBody(text: string): unknown {
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
