import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import type { FastifyRequest } from "fastify";
import type { Clock } from "../clock.js";
import { ErrandError } from "../errors.js";
import { checkKnownKeys } from "../known-keys.js";
import { checkObject } from "../queue-checks.js";
import { checkInt, describe, MAX_TOKEN_LENGTH, NAME_PATTERN } from "../validation.js";

/**
 * Who may do what:
 * - `admin`: everything;
 * - `producer`: enqueue, and read its own jobs (those it enqueued: `GET /v1/jobs/{id}` of another
 *   owner's job is 404, `GET /v1/jobs` lists its own only), stats, queues, types, schedules and
 *   metrics;
 * - `worker`: lease and report (complete, fail, heartbeat, checkpoint, release);
 * - `viewer`: read only (every job, stats, queues, types, schedules, metrics).
 *
 * Every job enqueued through the server records the enqueuing principal's name as its `owner`
 * (see {@link TokenEntry.name}); an admin may name another owner, a producer only itself.
 * @since 0.1.0
 */
export type Role = "admin" | "producer" | "worker" | "viewer";

/** Every role, in order of power. */
export const ROLES: readonly Role[] = ["admin", "producer", "worker", "viewer"];

/** What a route needs; each role holds some of these. */
export type Permission = "enqueue" | "read" | "work" | "manage";

/** The permissions of each role. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  admin: ["enqueue", "read", "work", "manage"],
  producer: ["enqueue", "read"],
  worker: ["work"],
  viewer: ["read"],
};

/** Every permission: a route guarded by it is open to any authenticated role. */
export const ANY_PERMISSION: readonly Permission[] = [...new Set(Object.values(ROLE_PERMISSIONS).flat())];

/** The roles that may use a route guarded by `permission` (or any one of a list), in {@link ROLES} order. */
export function rolesWith(permission: Permission | readonly Permission[]): Role[] {
  const anyOf: readonly Permission[] = typeof permission === "string" ? [permission] : permission;
  return ROLES.filter((role) => anyOf.some((p) => ROLE_PERMISSIONS[role].includes(p)));
}

/** Roles whose `read` covers only the jobs they own (see {@link Role}). */
export const OWN_JOBS_ONLY: readonly Role[] = ["producer"];

/** A bearer token and the role it grants. */
export interface TokenEntry {
  /**
   * What clients send as `Authorization: Bearer <token>`: 8 to {@link MAX_TOKEN_LENGTH} printable
   * ASCII characters without spaces. Kept only as its SHA-256; each token once in the list.
   */
  token: string;
  /** What the token may do. */
  role: Role;
  /**
   * Who the token stands for: the `owner` of the jobs it enqueues (a producer reads only those),
   * and what logs show instead of the token. A name like a queue name (letters, digits,
   * `_ . : -`, up to 128). Give producer tokens a name: without one the owner is derived from
   * the token itself (`token:` and 16 hex digits of its SHA-256), stable across restarts and
   * reorderings of the token list, but a rotated token then owns none of its predecessor's jobs.
   */
  name?: string;
}

/** Who made a request. */
export interface Principal {
  /** What the principal may do. */
  role: Role;
  /** The principal's name: the owner of the jobs it enqueues. Required for a `producer`. */
  name?: string;
}

/**
 * Authentication for {@link createServer}. Without it, every route is open, and the server refuses
 * to listen on anything but a loopback address.
 * @since 0.1.0
 */
export interface AuthOptions {
  /** Bearer tokens, compared in constant time. */
  tokens?: TokenEntry[];
  /**
   * Your own check, run when no token matched (or instead of tokens): return the principal, or
   * null for 401. The server still checks the principal's role against the route (403). A
   * principal that is not as {@link Principal} says (an unknown role, a name that is not a name, a
   * producer without one) is a fault of the server's setup: the request is answered 500 `INTERNAL`,
   * telling the client nothing more, and the server logs what the hook returned at error level.
   */
  authorize?: (request: FastifyRequest) => Principal | null | Promise<Principal | null>;
  /**
   * Failed attempts one client address may make per `rateLimitWindowMs`; its further failures get
   * 429 instead of 401 until the window ends. Only failures are throttled: a request with a valid
   * credential is always let in, whatever its address did, so a wrong token behind the same proxy,
   * NAT or host never locks out the right ones. (The limit therefore slows no one who already holds a
   * token, and cannot make a short token safe: use long random tokens.) A failure is a request that
   * presented an `Authorization` header, or that the `authorize` hook refused; a request with no
   * credential at all is answered 401 and not counted (the dashboard's first call, say).
   *
   * Addresses are the request's `ip`, which is the proxy's unless the server's `trustProxy` says
   * otherwise; IPv6 addresses count per /64, the block one host is usually given.
   * @defaultValue 10
   */
  maxFailures?: number;
  /**
   * The window, in ms, that an address's first failure opens: its failures count against
   * `maxFailures` until the window ends.
   * @defaultValue 60_000
   */
  rateLimitWindowMs?: number;
}

/**
 * Addresses whose failures the server remembers at once; past it, the oldest is forgotten, so a
 * flood from many addresses costs bounded memory.
 */
export const MAX_TRACKED_ADDRESSES = 10_000;

/** Most tokens one server takes (each is compared on every authenticated request). */
export const MAX_TOKENS = 1000;
const MIN_TOKEN_LENGTH = 8;
/** What `Bearer (\S+)` reads back whole: visible ASCII, no spaces. */
const TOKEN_PATTERN = new RegExp(`^[\\x21-\\x7e]{${MIN_TOKEN_LENGTH},${MAX_TOKEN_LENGTH}}$`);
const AUTH_KEYS: ReadonlySet<string> = new Set(["tokens", "authorize", "maxFailures", "rateLimitWindowMs"]);
const TOKEN_KEYS: ReadonlySet<string> = new Set(["token", "role", "name"]);

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Checks requests against the configured tokens and hook, throttling failures per address. */
export class Authenticator {
  readonly #tokens: Array<{ hash: Buffer; principal: Principal }>;
  readonly #authorize: AuthOptions["authorize"];
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  /**
   * Failures per address key, in the order their windows began (an entry is deleted, never moved,
   * when its window ends), so the expired ones are always at the front.
   */
  readonly #failures = new Map<string, { count: number; since: number }>();

  /**
   * @throws ErrandError `INVALID_OPTION` for options that are not as {@link AuthOptions} says: a
   *   typo among them would otherwise serve with less auth than asked for.
   */
  constructor(options: AuthOptions, clock: Clock) {
    checkObject("createServer", "auth", options);
    checkKnownKeys("createServer: auth", options, AUTH_KEYS);
    const entries: unknown = options.tokens ?? [];
    if (!Array.isArray(entries) || entries.length > MAX_TOKENS) {
      throw new ErrandError(
        "INVALID_OPTION",
        `auth.tokens must be an array of at most ${MAX_TOKENS} { token, role, name? }, got ${describe(entries)}`,
      );
    }
    const seen = new Set<string>();
    this.#tokens = entries.map((t: unknown) => {
      checkObject("auth.tokens", "each entry", t);
      checkKnownKeys("auth.tokens", t as object, TOKEN_KEYS);
      const { token, role, name } = t as Partial<TokenEntry>;
      if (typeof token !== "string" || !TOKEN_PATTERN.test(token)) {
        throw new ErrandError(
          "INVALID_OPTION",
          `auth.tokens: each token must be ${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} printable ASCII characters without spaces (what "Authorization: Bearer <token>" can carry)`,
        );
      }
      if (!ROLES.includes(role as Role)) {
        throw new ErrandError("INVALID_OPTION", `auth.tokens: role must be one of ${ROLES.join(", ")}`);
      }
      const hash = digest(token);
      const key = hash.toString("hex");
      // Only the last of two equal tokens would be believed: refuse the ambiguity.
      if (seen.has(key)) throw new ErrandError("INVALID_OPTION", "auth.tokens: a token is listed twice");
      seen.add(key);
      const principalName = name === undefined ? `token:${key.slice(0, 16)}` : checkPrincipalName(name);
      return { hash, principal: { role: role as Role, name: principalName } };
    });
    if (options.authorize !== undefined && typeof options.authorize !== "function") {
      throw new ErrandError(
        "INVALID_OPTION",
        `auth.authorize must be a function, got ${describe(options.authorize)}`,
      );
    }
    this.#authorize = options.authorize;
    this.#maxFailures = checkInt("auth.maxFailures", options.maxFailures ?? 10, 1);
    this.#windowMs = checkInt("auth.rateLimitWindowMs", options.rateLimitWindowMs ?? 60_000, 1);
    this.#clock = clock;
  }

  /** True when any credential is configured. */
  get enabled(): boolean {
    return this.#tokens.length > 0 || this.#authorize !== undefined;
  }

  /** Addresses with failures remembered now (bounded by {@link MAX_TRACKED_ADDRESSES}). */
  get trackedAddresses(): number {
    return this.#failures.size;
  }

  /**
   * The request's principal. A valid credential is judged on itself alone; only a failure looks at
   * the address's earlier failures.
   * @throws ErrandError `UNAUTHORIZED`; `RATE_LIMITED` for a failure from an address past its limit
   */
  async authenticate(request: FastifyRequest): Promise<Principal> {
    const principal = await this.#identify(request);
    if (principal) return principal;
    if (request.headers.authorization !== undefined || this.#authorize !== undefined) {
      this.#recordFailure(addressKey(request.ip));
    }
    throw new ErrandError("UNAUTHORIZED", "a valid bearer token is required (Authorization: Bearer <token>)");
  }

  /** @throws ErrandError `RATE_LIMITED` when `key` has used up its failures for the window. */
  #recordFailure(key: string): void {
    const now = this.#clock.now();
    for (const [k, e] of this.#failures) {
      if (now - e.since < this.#windowMs) break;
      this.#failures.delete(k);
    }
    const entry = this.#failures.get(key);
    if (entry && entry.count >= this.#maxFailures) {
      throw new ErrandError("RATE_LIMITED", "too many failed authentication attempts; try again later", {
        details: { retryAfterMs: Math.max(0, entry.since + this.#windowMs - now) },
      });
    }
    if (entry) {
      entry.count++;
      return;
    }
    if (this.#failures.size >= MAX_TRACKED_ADDRESSES)
      this.#failures.delete(this.#failures.keys().next().value!);
    this.#failures.set(key, { count: 1, since: now });
  }

  async #identify(request: FastifyRequest): Promise<Principal | null> {
    const header = request.headers.authorization;
    const match = typeof header === "string" ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    if (match) {
      const given = digest(match[1]!);
      let found: Principal | null = null;
      // Compare against every token, so the time taken says nothing about which one is close.
      for (const t of this.#tokens) if (timingSafeEqual(given, t.hash)) found = t.principal;
      if (found) return found;
    }
    if (this.#authorize) {
      const p = await this.#authorize(request);
      if (p) checkAuthorized(p);
      return p;
    }
    return null;
  }
}

/**
 * What failures are counted under: an IPv4 address (also when written IPv4-mapped, `::ffff:a.b.c.d`),
 * or the /64 prefix of an IPv6 one, since one host (or one attacker) usually holds a whole /64.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const bare = ip.split("%", 1)[0]!;
  if (isIP(bare) !== 6) return ip;
  const groups = (part: string) =>
    part === "" ? [] : part.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g]));
  const [head = "", tail] = bare.split("::", 2) as [string, string | undefined];
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = [...before, ...Array(Math.max(0, 8 - before.length - after.length)).fill("0"), ...after];
  return `${all
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

/**
 * What the `authorize` hook returned, held to what {@link Principal} says. A principal that breaks
 * it is the operator's misconfiguration, not the client's request: it is thrown as a plain Error,
 * which the server answers 500 `INTERNAL` ("internal error", nothing of the hook) and logs whole
 * at error level.
 */
function checkAuthorized(p: Principal): void {
  let problem: string | null = null;
  if (!ROLES.includes(p.role)) {
    problem = `an unknown role ${describe(p.role)} (one of ${ROLES.join(", ")})`;
  } else if (p.name !== undefined && (typeof p.name !== "string" || !NAME_PATTERN.test(p.name))) {
    problem = `a principal name ${describe(p.name)} that does not match ${NAME_PATTERN} (it is the owner of the jobs it enqueues)`;
  } else if (p.name === undefined && OWN_JOBS_ONLY.includes(p.role)) {
    problem = `a ${p.role} without a name: it reads only the jobs it owns, so it needs one`;
  }
  if (problem) throw new Error(`auth.authorize() returned ${problem}; the request was refused with 500`);
}

/** A principal's name becomes its jobs' owner: it must be a name. */
function checkPrincipalName(name: unknown): string {
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new ErrandError(
      "INVALID_OPTION",
      `auth: principal name ${describe(name)} must match ${NAME_PATTERN} (it is the owner of the jobs it enqueues)`,
    );
  }
  return name;
}

/** True when `principal` may read only the jobs it owns. */
export function readsOwnJobsOnly(principal: Principal | null): boolean {
  return principal !== null && OWN_JOBS_ONLY.includes(principal.role);
}

/**
 * @throws ErrandError `FORBIDDEN` unless `principal`'s role holds `permission` (one of them, for a
 *   list: a route that both readers and workers use).
 */
export function checkPermission(principal: Principal, permission: Permission | readonly Permission[]): void {
  const anyOf: readonly Permission[] = typeof permission === "string" ? [permission] : permission;
  if (!anyOf.some((p) => ROLE_PERMISSIONS[principal.role].includes(p))) {
    const needs = anyOf.join(" or ");
    throw new ErrandError("FORBIDDEN", `role "${principal.role}" may not ${needs}`, {
      details: { role: principal.role, needs: typeof permission === "string" ? permission : anyOf },
    });
  }
}

/**
 * Reads tokens from text: a JSON array of `{ token, role, name? }`, or `role:token` entries
 * separated by commas or newlines (`#` starts a comment line). This is the format of
 * `ERRAND_TOKENS` and of `--tokens-file`. `role:token` entries have no name (see
 * {@link TokenEntry.name} for the owner they get); name producer tokens in the JSON form.
 * @throws ErrandError `INVALID_OPTION`
 */
export function parseTokens(text: string): TokenEntry[] {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (cause) {
      throw new ErrandError("INVALID_OPTION", "tokens: not valid JSON", { cause });
    }
    if (!Array.isArray(parsed)) {
      throw new ErrandError("INVALID_OPTION", "tokens: JSON must be an array of { token, role, name? }");
    }
    return parsed.map((t: unknown) => {
      checkObject("tokens", "each entry", t);
      const { token, role, name } = t as TokenEntry;
      return name === undefined ? { token, role } : { token, role, name };
    });
  }
  const entries: TokenEntry[] = [];
  for (const raw of trimmed.split(/[\n,]/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const colon = line.indexOf(":");
    const role = line.slice(0, colon) as Role;
    if (colon < 1 || !ROLES.includes(role)) {
      throw new ErrandError(
        "INVALID_OPTION",
        `tokens: expected "role:token" with a role of ${ROLES.join(", ")}`,
      );
    }
    // Unnamed: the owner is derived from the token (see TokenEntry.name); use JSON to name tokens.
    entries.push({ token: line.slice(colon + 1), role });
  }
  return entries;
}

/**
 * Tokens from `ERRAND_TOKENS` and/or a tokens file.
 * @throws ErrandError `INVALID_OPTION` for a file that cannot be read or tokens that do not parse.
 */
export function loadTokens(options: { env?: string; file?: string }): TokenEntry[] {
  const tokens: TokenEntry[] = [];
  if (options.env) tokens.push(...parseTokens(options.env));
  if (options.file) {
    let text: string;
    try {
      text = readFileSync(options.file, "utf8");
    } catch (cause) {
      throw new ErrandError(
        "INVALID_OPTION",
        `tokens file: cannot read ${JSON.stringify(options.file)}: ${(cause as Error).message}`,
        { cause },
      );
    }
    tokens.push(...parseTokens(text));
  }
  return tokens;
}
