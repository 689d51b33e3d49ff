import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { scriptNames, scriptSha, scriptText } from "../../src/store/redis/scripts.js";

// The generated module keeps each piece of script text once and each script's SHA-1 beside it
// (scripts/gen.ts); EVALSHA finds a script only if the SHA is that of the text SCRIPT LOAD sent.
describe("generated Redis scripts", () => {
  it("gives every script the SHA-1 of the text it puts together", () => {
    expect(scriptNames.length).toBeGreaterThan(20);
    for (const name of scriptNames) {
      expect(scriptSha(name), name).toBe(createHash("sha1").update(scriptText(name)).digest("hex"));
    }
  });

  it("puts every include into a script once, at its first --@include", () => {
    const claim = scriptText("claim");
    expect(claim.match(/^-- includes\/prelude\.lua$/gm)).toHaveLength(1);
    expect(claim).not.toMatch(/^--@include/m);
    expect(claim.indexOf("local META = KEYS[1]")).toBeLessThan(claim.indexOf("-- includes/job.lua"));
  });
});
