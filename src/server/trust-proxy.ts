import { isIP } from "node:net";
import proxyAddr from "@fastify/proxy-addr";
import { ErrandError } from "../errors.js";
import { describe } from "../validation.js";

/** A trust function, as Fastify calls it: the address of each hop, nearest first, and its index. */
export type TrustFunction = (address: string, hop: number) => boolean;

/** The forms of `trustProxy` errand takes (Fastify's, without the hop count it no longer honours). */
export type TrustProxy = boolean | string | string[] | TrustFunction;

/** proxy-addr's names for the private ranges. */
const NAMED_RANGES: ReadonlySet<string> = new Set(["loopback", "linklocal", "uniquelocal"]);

/** Most proxy addresses or ranges one `trustProxy` may list. */
export const MAX_TRUSTED_PROXIES = 1000;
/** Longest `trustProxy` string; room for the list above at IPv6 CIDR length. */
const MAX_TRUST_PROXY_LENGTH = 64 * MAX_TRUSTED_PROXIES;

/**
 * `trustProxy` checked as Fastify will read it, so a bad one fails `createServer` in errand's words
 * instead of Fastify's constructor with a TypeError. The list is compiled by the same
 * `@fastify/proxy-addr` Fastify compiles it with, so what passes here is what Fastify takes.
 * @throws ErrandError `INVALID_OPTION`
 */
export function checkTrustProxy(value: unknown): TrustProxy | undefined {
  if (value === undefined || typeof value === "boolean" || typeof value === "function") {
    return value as TrustProxy | undefined;
  }
  if (typeof value === "number") {
    // Fastify 5 takes a number and then trusts no hop (a count cannot check the nearest peer), so
    // X-Forwarded-* would go unread while the option looked set.
    throw new ErrandError(
      "INVALID_OPTION",
      `createServer: trustProxy ${value} is a hop count, which Fastify no longer honours (it cannot check the nearest peer); give the proxies' addresses or CIDRs`,
    );
  }
  let list: unknown[];
  if (typeof value === "string") {
    if (value.length > MAX_TRUST_PROXY_LENGTH) {
      throw new ErrandError(
        "INVALID_OPTION",
        `createServer: trustProxy is longer than ${MAX_TRUST_PROXY_LENGTH} characters`,
      );
    }
    list = value.split(",").map((entry) => entry.trim());
  } else if (Array.isArray(value)) {
    list = value;
  } else {
    throw new ErrandError(
      "INVALID_OPTION",
      `createServer: trustProxy must be true, false, the proxies' addresses or CIDRs (a string or an array) or a function; got ${describe(value)}`,
    );
  }
  if (list.length > MAX_TRUSTED_PROXIES) {
    throw new ErrandError(
      "INVALID_OPTION",
      `createServer: trustProxy lists ${list.length} proxies; at most ${MAX_TRUSTED_PROXIES}`,
    );
  }
  for (const entry of list) {
    if (typeof entry !== "string" || entry.length === 0 || entry.length > 64) {
      throw new ErrandError(
        "INVALID_OPTION",
        `createServer: trustProxy entries must be addresses or CIDRs, got ${describe(entry)}`,
      );
    }
    // proxy-addr also reads inet_aton's shorthands ("2" is 0.0.0.2, "127.1" is 127.0.0.1), so a hop
    // count given as text would quietly trust an address no proxy has: only the written-out forms.
    const address = entry.split("/", 1)[0]!.trim();
    if (!NAMED_RANGES.has(address) && isIP(address) === 0) {
      throw new ErrandError(
        "INVALID_OPTION",
        `createServer: trustProxy entry ${describe(entry)} is no IP address, CIDR or ${[...NAMED_RANGES].join(", ")}${
          /^\d+$/.test(address) ? " (a hop count is not taken: give the proxies' addresses)" : ""
        }`,
      );
    }
  }
  try {
    proxyAddr.compile(list as string[]);
  } catch (error) {
    throw new ErrandError("INVALID_OPTION", `createServer: trustProxy: ${(error as Error).message}`);
  }
  return value as TrustProxy;
}
