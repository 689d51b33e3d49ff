import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import type { FastifyRequest } from "fastify";
import { ErrandError } from "../errors.js";
import { describe } from "../validation.js";

/**
 * The checks every request passes before auth, against the two attacks a browser can make on a
 * server it can reach, with or without tokens:
 *
 * - **DNS rebinding**: a page at `evil.example`, whose name the attacker points at 127.0.0.1, reads
 *   the API as its own origin. Its requests name `Host: evil.example`, so a server that answers only
 *   the host names it is bound to or configured for ({@link RequestCheckOptions.allowedHosts}) gives
 *   it nothing.
 * - **Cross-site requests**: a page on another origin cannot read the answers, but can send a form
 *   POST or a no-cors `fetch` and so cancel, replay or prune. Those can only carry the content types
 *   a form can (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) or none;
 *   anything else makes the browser ask the server first (a CORS preflight), which errand never
 *   grants. So every request that changes something (POST, PUT, PATCH, DELETE) must say
 *   `content-type: application/json`, body or not; and is refused when the browser says it comes
 *   from another site (`Sec-Fetch-Site`) or another origin (`Origin`), a second lock for browsers
 *   that let a form through.
 *
 * `/healthz` and `/readyz` skip these checks: they reveal nothing, and probes name the host by
 * address (Kubernetes sends the pod's IP).
 */

/**
 * Options of {@link RequestChecks}, given to `createServer`.
 * @since 0.1.0
 */
export interface RequestCheckOptions {
  /**
   * Host names (or `name:port`) the server answers to besides the ones it always does: `localhost`,
   * `127.0.0.1`, `[::1]`, the host it was told to listen on, and its bound address; for a wildcard
   * bind (`0.0.0.0`, `::`) also every address of the machine's interfaces and its `hostname()`. A
   * name without a port matches any port. List the names clients use to reach the server: a DNS
   * name, a proxy's public name, a Kubernetes Service name. `["*"]` turns the check off: only with
   * auth, behind a proxy that checks the host itself.
   * @defaultValue []
   */
  allowedHosts?: string[];
}

const OPEN_PATHS = new Set(["/healthz", "/readyz"]);
const MUTATIONS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const LOOPBACK = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARD = new Set(["0.0.0.0", "::", "[::]"]);
/** `name` or `[ipv6]`, then an optional port; nothing a URL would read as user info or path. */
const HOST_RE = /^(\[[0-9a-fA-F:.]+\]|[^\s/?#@:[\]\\]+)(?::(\d{1,5}))?$/;

/** A Host value (or allowedHosts entry) as its canonical name and port, or null if it is none. */
function parseHost(value: string): { name: string; port: string | null } | null {
  const bare = isIP(value) === 6 ? `[${value}]` : value;
  const m = HOST_RE.exec(bare);
  if (!m) return null;
  try {
    // WHATWG canonical form: lower case, IPv6 compressed, IPv4 dotted, IDNs in punycode.
    const name = new URL(`http://${m[1]}`).hostname.replace(/\.$/, "");
    return name ? { name, port: m[2] ?? null } : null;
  } catch {
    return null;
  }
}

const shown = (value: string) => JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);

/** Host, origin and content-type checks for every request (see the module comment). */
export class RequestChecks {
  /** Names allowed on any port. */
  readonly #names = new Set<string>();
  /** `name:port` pairs allowed exactly. */
  readonly #authorities = new Set<string>();
  readonly #anyHost: boolean;

  /** @throws ErrandError `INVALID_OPTION` for an entry that is not a host name. */
  constructor(options: RequestCheckOptions, authEnabled: boolean) {
    const given = options.allowedHosts ?? [];
    if (!Array.isArray(given)) {
      throw new ErrandError("INVALID_OPTION", "allowedHosts must be an array of host names");
    }
    this.#anyHost = given.includes("*");
    if (this.#anyHost && !authEnabled) {
      throw new ErrandError(
        "INVALID_OPTION",
        'allowedHosts: "*" needs auth: without tokens any page whose name resolves to this server could read it',
      );
    }
    for (const entry of given) {
      if (entry === "*") continue;
      if (typeof entry !== "string" || !this.#allow(entry)) {
        throw new ErrandError(
          "INVALID_OPTION",
          `allowedHosts: ${describe(entry)} is not a host name (name, name:port, IPv4 or [IPv6])`,
        );
      }
    }
    for (const name of LOOPBACK) this.#allow(name);
  }

  #allow(entry: string): boolean {
    const host = parseHost(entry);
    if (!host) return false;
    if (host.port === null) this.#names.add(host.name);
    else this.#authorities.add(`${host.name}:${host.port}`);
    return true;
  }

  /**
   * Adds the names a listening server answers to: the host it was told to listen on, and the
   * address it is bound to (every interface's, for a wildcard bind).
   */
  bound(requested: string, address: AddressInfo | string | null): void {
    const names = [requested];
    if (address && typeof address === "object") names.push(address.address);
    if (names.some((n) => WILDCARD.has(n))) {
      names.push(hostname());
      for (const list of Object.values(networkInterfaces())) {
        for (const a of list ?? []) if (!a.address.includes("%")) names.push(a.address);
      }
    }
    for (const n of names) if (!WILDCARD.has(n)) this.#allow(n);
  }

  /**
   * @throws ErrandError `INVALID_REQUEST` for several Host headers; `FORBIDDEN` for a Host the
   *   server does not answer to, or a change asked for by another site; `UNSUPPORTED_MEDIA_TYPE`
   *   for a change that is not `application/json`, is compressed, or names a charset other than
   *   UTF-8.
   */
  check(request: FastifyRequest): void {
    const path = request.url.split("?", 1)[0]!;
    if (OPEN_PATHS.has(path)) return;
    // Node keeps the first of two Host headers; a proxy before it may have read the other, so the
    // name checked would not be the name the request went to (RFC 9112: answer 400).
    if (hostHeaders(request.raw.rawHeaders) > 1) {
      throw new ErrandError("INVALID_REQUEST", "a request may carry one Host header, not several");
    }
    const host = request.host;
    if (!this.#anyHost && !this.#allowsHost(host)) {
      throw new ErrandError(
        "FORBIDDEN",
        `host ${shown(host)} is not one this server answers to: add it to allowedHosts. (Other names are refused so that a web page whose name points at this server cannot read it.)`,
        { details: { host } },
      );
    }
    if (!MUTATIONS.has(request.method)) return;
    const site = request.headers["sec-fetch-site"];
    // same-site is refused too: another port of the same host (a local dev server) is same-site.
    if (typeof site === "string" && site !== "same-origin" && site !== "none") {
      throw new ErrandError(
        "FORBIDDEN",
        `refusing a ${request.method} the browser says comes from another site (Sec-Fetch-Site: ${shown(site)}): only this server's own pages may change anything`,
        { details: { secFetchSite: site } },
      );
    }
    const origin = request.headers.origin;
    if (typeof origin === "string" && !sameOrigin(origin, host)) {
      throw new ErrandError(
        "FORBIDDEN",
        `refusing a ${request.method} from origin ${shown(origin)}: only this server's own pages (${shown(host)}) may change anything`,
        { details: { origin } },
      );
    }
    const encoding = request.headers["content-encoding"];
    // A compressed body is not read as one (no decoder): refused as a type this server does not take.
    if (encoding !== undefined && String(encoding).trim().toLowerCase() !== "identity") {
      throw new ErrandError(
        "UNSUPPORTED_MEDIA_TYPE",
        `${request.method} ${path}: content-encoding ${shown(String(encoding))} is not taken; send the JSON as it is`,
        { details: { contentEncoding: String(encoding) } },
      );
    }
    const type = request.headers["content-type"];
    const media = typeof type === "string" ? type.split(";", 1)[0]!.trim().toLowerCase() : "";
    if (media !== "application/json") {
      throw new ErrandError(
        "UNSUPPORTED_MEDIA_TYPE",
        `${request.method} ${path} needs content-type: application/json (got ${type === undefined ? "none" : shown(String(type))}); every request that changes something must send it, with a body or without`,
        { details: { contentType: type ?? null } },
      );
    }
    const charset = charsetOf(type as string);
    // The body is read as UTF-8 (RFC 8259's only encoding of JSON); another charset would be misread.
    if (charset !== null && !UTF8_LABELS.has(charset.toLowerCase())) {
      throw new ErrandError(
        "UNSUPPORTED_MEDIA_TYPE",
        `${request.method} ${path}: charset ${shown(charset)} is not taken; send the JSON as UTF-8 (charset=utf-8, or none)`,
        { details: { contentType: type } },
      );
    }
  }

  #allowsHost(value: string): boolean {
    const host = parseHost(value);
    if (!host) return false;
    return this.#names.has(host.name) || this.#authorities.has(`${host.name}:${host.port}`);
  }
}

/** True when `origin` (an Origin header) is the origin whose authority is `host` (the Host header). */
function sameOrigin(origin: string, host: string): boolean {
  try {
    const o = new URL(origin);
    if (o.origin === "null" || !HOST_RE.test(host)) return false;
    // Through the origin's scheme, so its default port compares equal to none.
    return new URL(`${o.protocol}//${host}`).host === o.host;
  } catch {
    return false;
  }
}

/**
 * One parameter of a media type (RFC 9110 §5.6.6): `;`, then `name=token` or `name="quoted
 * string"`, whose quoted value may hold `;`, `=` and `\"`. Anchored with the sticky flag at each
 * `;`, so a `charset=` inside another parameter's quoted value is not read as one.
 */
const PARAMETER_RE = /\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=("(?:[^"\\]|\\.)*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+)/y;

/** The charset labels of UTF-8 the server takes (lower case): the WHATWG Encoding Standard's. */
const UTF8_LABELS: ReadonlySet<string> = new Set(["utf-8", "utf8"]);

/**
 * The value of the `charset` parameter of a content type (unquoted), or null when it has none.
 * Parameters after one that cannot be read are not looked at: the body is decoded as strict
 * UTF-8 whatever they say.
 */
function charsetOf(contentType: string): string | null {
  PARAMETER_RE.lastIndex = contentType.indexOf(";");
  if (PARAMETER_RE.lastIndex < 0) return null;
  for (let m = PARAMETER_RE.exec(contentType); m !== null; m = PARAMETER_RE.exec(contentType)) {
    if (m[1]!.toLowerCase() !== "charset") continue;
    const value = m[2]!;
    return value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, "$1") : value;
  }
  return null;
}

/** How many Host headers a request's raw headers (name, value, name, value, …) hold. */
function hostHeaders(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === "host") n++;
  return n;
}
