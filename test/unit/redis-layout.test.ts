/**
 * The Redis store's key layout and its version go together: an errand opens a prefix only at its
 * own SCHEMA_VERSION (lua/includes/prelude.lua), refusing a newer one, and lua/open.lua upgrades an
 * older one. A key added, dropped or renamed without raising the version lets an older errand write
 * a prefix in a layout it does not know (as versions 2's keys did: see prelude.lua's note on 3).
 * This pins the key names the scripts build (`P .. "<suffix>"`) to the version they came with.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const LUA = join(import.meta.dirname, "../../src/store/redis/lua");

/** The layout as of the last version raise. Change it only together with SCHEMA_VERSION. */
const RECORDED = {
  version: 3,
  suffixes: [
    "act",
    "blocked",
    "deb",
    "dep:",
    "exp",
    "f:",
    "fk|",
    "fkc",
    "fr|",
    "ft",
    "j:",
    "kact",
    "ko|",
    "lease",
    "n",
    "parked",
    "paused",
    "pk|",
    "pkt|",
    "prune",
    "pwake",
    "pwaken",
    "r|",
    "rate|",
    "rf|",
    "rl|",
    "s|",
    "schd",
    "sched",
    "schema_version",
    "schn",
    "scratch",
    "types",
    "uniq",
    // Version 3 (not shipped before it): the parked jobs of an upgrade from 2 not yet put back.
    "upgrade3",
    "wake",
  ],
};

/** Every .lua file under the scripts' folder, includes too. */
function luaSources(dir = LUA): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? luaSources(join(dir, entry.name))
      : entry.name.endsWith(".lua")
        ? [readFileSync(join(dir, entry.name), "utf8")]
        : [],
  );
}

/** The key suffixes the scripts append to the prefix, sorted by their UTF-16 code units. */
function keySuffixes(): string[] {
  const found = new Set<string>();
  for (const text of luaSources()) {
    for (const match of text.matchAll(/\bP \.\. "([^"]*)"/g)) found.add(match[1]!);
  }
  return [...found].sort();
}

function schemaVersion(): number {
  const prelude = readFileSync(join(LUA, "includes/prelude.lua"), "utf8");
  const match = /^local SCHEMA_VERSION = (\d+)$/m.exec(prelude);
  if (!match) throw new Error("includes/prelude.lua no longer sets SCHEMA_VERSION on a line of its own");
  return Number(match[1]);
}

describe("Redis key layout", () => {
  it("changes only with a raised SCHEMA_VERSION", () => {
    const suffixes = keySuffixes();
    const added = suffixes.filter((s) => !RECORDED.suffixes.includes(s));
    const dropped = RECORDED.suffixes.filter((s) => !suffixes.includes(s));
    const version = schemaVersion();
    expect(
      { added, dropped, version },
      `the Redis scripts' keys changed (added ${JSON.stringify(added)}, dropped ${JSON.stringify(dropped)}) ` +
        `at SCHEMA_VERSION ${version}, recorded here with version ${RECORDED.version}: raise SCHEMA_VERSION in ` +
        "src/store/redis/lua/includes/prelude.lua, add a step to lua/open.lua that upgrades a prefix from the " +
        "version before (repairing what an older errand leaves out of step), then record the new keys and " +
        "version in RECORDED",
    ).toEqual({ added: [], dropped: [], version: RECORDED.version });
  });

  it("finds the keys the scripts build", () => {
    // Guards the pattern above: a rewrite of how scripts name keys must not make it find nothing.
    expect(keySuffixes()).toEqual(expect.arrayContaining(["j:", "lease", "schema_version", "schn", "pk|"]));
  });
});
