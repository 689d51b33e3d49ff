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

  /** The server wants a (different) token. */
  get unauthorized(): boolean {
    return this.status === 401;
  }
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
  const headers: Record<string, string> = { accept: "application/json" };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  // The server asks every change for JSON, body or not: a web page on another site cannot send it.
  if (body !== undefined || method !== "GET") headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(new URL(`../${path}`, location.href), {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (error) {
    throw new ApiError(0, "UNREACHABLE", `the server did not answer (${(error as Error).message})`);
  }
  const text = await response.text();
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
