/**
 * Calls errand's HTTP API with the token this tab was given (sessionStorage: it lasts as long as
 * the tab and is never written to disk by the page). Every failure becomes an ApiError carrying
 * the server's `{ code, message, details }`.
 */

const TOKEN_KEY = "errand.token";

/** A refused or failed request. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = null,
  ) {
    super(message);
  }

  /** The server wants a (different) token, or the one given cannot be sent ({@link BAD_TOKEN}). */
  get unauthorized(): boolean {
    return this.status === 401 || this.code === BAD_TOKEN;
  }
}

/**
 * How long a read (GET) may take before it is given up as TIMEOUT: a server that accepted the
 * connection and never answers would otherwise leave a view polling it waiting for ever, its
 * numbers stale and nothing said. A change (POST) is never given up on: it may have been done.
 */
export const READ_TIMEOUT_MS = 30_000;

/** The code of the ApiError for a token that no request can carry: the request was never sent. */
export const BAD_TOKEN = "BAD_TOKEN";

/**
 * Why `token` cannot be sent as `Authorization: Bearer <token>`, or null when it can. A header
 * carries only bytes: a character above U+00FF (a zero-width space or a typographic quote pasted
 * with the token from a chat) or a control character makes the browser refuse the request before
 * it leaves, so it is refused here, saying which character and where.
 */
export function tokenProblem(token: string): string | null {
  let position = 0;
  for (const char of token) {
    position++;
    const code = char.codePointAt(0)!;
    if (code > 0x1f && code !== 0x7f && code <= 0xff) continue;
    const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    const shown = /[\p{C}\p{Z}]/u.test(char) ? `${hex}, an invisible character` : `"${char}" (${hex})`;
    return `the token has ${shown} at position ${position}, which an HTTP header cannot carry (a token is plain text: letters, digits, punctuation). It often comes along when a token is copied from a chat or a document: paste it again without it.`;
  }
  return null;
}

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * One request. `path` starts with `v1/`; it is resolved against the page's folder's parent, so a
 * server behind a proxy under a path prefix works as well as one at the root.
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const fields: Record<string, string> = { accept: "application/json" };
  const token = getToken();
  if (token) fields.authorization = `Bearer ${token}`;
  // The server asks every change for JSON, body or not: a web page on another site cannot send it.
  if (body !== undefined || method !== "GET") fields["content-type"] = "application/json";
  // Built apart from fetch, whose refusal of a header would read as a server that is unreachable.
  // The token is the only header value that comes from outside: one no header can carry is
  // forgotten, and the token form asks for another.
  let headers: Headers;
  try {
    const problem = token === null ? null : tokenProblem(token);
    if (problem !== null) throw new ApiError(0, BAD_TOKEN, problem);
    headers = new Headers(fields);
  } catch (error) {
    if (token === null) throw error;
    setToken(null);
    throw error instanceof ApiError
      ? error
      : new ApiError(
          0,
          BAD_TOKEN,
          `the token cannot be sent in an HTTP header (${(error as Error).message})`,
        );
  }
  // A timer of the page's own (not AbortSignal.timeout), so a test's fake clock can run it out.
  const abort = new AbortController();
  let timedOut = false;
  const timer =
    method === "GET"
      ? setTimeout(() => {
          timedOut = true;
          abort.abort();
        }, READ_TIMEOUT_MS)
      : undefined;
  const gaveUp = () =>
    new ApiError(0, "TIMEOUT", `the server did not answer within ${READ_TIMEOUT_MS / 1000} s`);
  let response: Response;
  let text: string;
  try {
    try {
      response = await fetch(new URL(`../${path}`, location.href), {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        cache: "no-store",
        signal: abort.signal,
      });
    } catch (error) {
      if (timedOut) throw gaveUp();
      throw new ApiError(0, "UNREACHABLE", `the server did not answer (${(error as Error).message})`);
    }
    try {
      text = await response.text();
    } catch (error) {
      if (timedOut) throw gaveUp();
      throw new ApiError(0, "UNREACHABLE", `the answer was cut off (${(error as Error).message})`);
    }
  } finally {
    clearTimeout(timer);
  }
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const e = (parsed ?? {}) as { code?: string; message?: string; details?: unknown };
    throw new ApiError(
      response.status,
      e.code ?? `HTTP_${response.status}`,
      e.message ?? (response.statusText || "request failed"),
      e.details ?? null,
    );
  }
  return parsed as T;
}

/** Builds `v1/...?k=v` from the set values of `query`. */
export function withQuery(path: string, query: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query))
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
