/**
 * Why a Cluster made with `scaleReads: "slave"` (or "all") still sends every command of errand's
 * to a master: ioredis routes a command to a replica when `exists(name) && hasFlag(name,
 * "readonly")` in @ioredis/commands, whose table is lower-case, and errand sends names through
 * masterBound. Checked against the copy of @ioredis/commands that the installed ioredis loads.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { masterBound } from "../../src/store/redis/transport.js";

const fromIoredis = createRequire(createRequire(import.meta.url).resolve("ioredis"));
const commands = fromIoredis("@ioredis/commands") as {
  list: string[];
  exists(name: string): boolean;
  hasFlag(name: string, flag: string): boolean;
};

describe("masterBound", () => {
  it("gives no read-only command a name ioredis's Cluster would route to a replica", () => {
    const readOnly = commands.list.filter((c) => commands.hasFlag(c, "readonly"));
    // The reads errand sends are among them, as written in lower case.
    for (const read of ["hget", "hgetall", "hkeys", "exists"]) expect(readOnly).toContain(read);
    const routedToReplica = readOnly.filter(
      (c) => commands.exists(masterBound(c)) && commands.hasFlag(masterBound(c), "readonly"),
    );
    expect(routedToReplica).toEqual([]);
  });

  it("keeps the command: Redis reads names in any case", () => {
    expect(masterBound("hget")).toBe("HGET");
    expect(masterBound("EVALSHA")).toBe("EVALSHA");
  });
});
