/**
 * Hostile arguments to every `errand` command that ends by itself, run in this process on a seeded
 * SQLite store: each command either succeeds, or is refused as a usage error (commander's) or with
 * an ErrandError of a client code, never an internal error; a refused command leaves the store's
 * jobs as they were and creates no store of its own (`./errand.db`); nothing pollutes
 * `Object.prototype`. The commands and their options are read off the program itself, so a new
 * command or option is covered without a change here.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Command, CommanderError } from "commander";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../../src/cli/program.js";
import { ManualClock } from "../../src/clock.js";
import { openQueue, Queue } from "../../src/queue.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { catalogued, fcParams, propertyTimeout } from "../helpers/property.js";
import { assertPrototypeClean, storeSnapshot } from "./checks.js";
import {
  assertClientError,
  describeError,
  hostileNumber,
  hostileString,
  outcome,
  prototypeKeys,
} from "./hostile.js";
import { SEEDS, seedStore } from "./seed.js";

const RUNS = 60;

/**
 * Commands that run until stopped (a server, a worker) or that reach past the store under test
 * (another store or a server), left out; `-` reads standard input, which a test has none of.
 */
const LONG_RUNNING = new Set(["serve", "worker"]);
const LEFT_OUT_OPTIONS = new Set(["--store", "--server", "--token", "--watch", "--interval", "--help"]);

/** A leaf command's path (`["jobs", "get"]`), its positional arguments and its options. */
interface Leaf {
  path: string[];
  args: number;
  options: Array<{ flag: string; takesValue: boolean }>;
}

function leaves(cmd: Command, path: string[] = []): Leaf[] {
  if (cmd.commands.length > 0) return cmd.commands.flatMap((c) => leaves(c, [...path, c.name()]));
  return [
    {
      path,
      args: cmd.registeredArguments.length,
      options: cmd.options
        .filter((o) => o.long !== undefined && !LEFT_OUT_OPTIONS.has(o.long))
        .map((o) => ({ flag: o.long!, takesValue: o.required || o.optional })),
    },
  ];
}

const program = buildProgram({ env: {}, stdout: { write: () => true } });
const LEAVES = leaves(program).filter((l) => l.path[0] !== "help" && !LONG_RUNNING.has(l.path[0]!));

/** Files the commands may be pointed at: valid and invalid JSON, ndjson, a flow, and two unreadable. */
let dir: string;
let storeFile: string;
let files: string[];

const seededId = fc.constantFrom(...Object.values(SEEDS), "no-such-job");
/** A value an argument or option takes: hostile text, a number past a bound, or something sound. */
const value = (): fc.Arbitrary<string> =>
  fc
    .oneof(
      { arbitrary: hostileString, weight: 4 },
      { arbitrary: hostileNumber.map(String), weight: 2 },
      { arbitrary: seededId, weight: 2 },
      {
        arbitrary: fc.constantFrom("seed", "default", "paused-queue", "existing", "1", "0", "5s"),
        weight: 2,
      },
      { arbitrary: fc.constantFrom(0, 1, 2, 3, 4, 5).map((i) => files[i]!), weight: 1 },
      { arbitrary: fc.constantFrom(0, 1, 2, 3, 4, 5).map((i) => `@${files[i]!}`), weight: 1 },
      {
        arbitrary: fc.constantFrom("{}", '{"a":1}', "[1,2]", "null", "{", '{"__proto__":{"x":1}}'),
        weight: 2,
      },
    )
    // `-` reads standard input; a test has none to give.
    .map((v) => (v === "-" ? "--" : v));

const invocation: fc.Arbitrary<string[]> = fc.constantFrom(...LEAVES).chain((leaf) =>
  fc
    .tuple(
      // Now and then one argument too many.
      fc
        .tuple(
          fc.array(value(), { minLength: leaf.args, maxLength: leaf.args }),
          fc.oneof({ arbitrary: fc.constant(null), weight: 7 }, { arbitrary: value(), weight: 1 }),
        )
        .map(([args, extra]) => (extra === null ? args : [...args, extra])),
      fc
        .subarray(leaf.options, { maxLength: Math.min(4, leaf.options.length) })
        .chain((chosen) =>
          fc.tuple(
            ...chosen.map((o) => (o.takesValue ? value().map((v) => [o.flag, v]) : fc.constant([o.flag]))),
          ),
        ),
      fc.boolean(),
    )
    .map(([args, options, json]) => [...leaf.path, ...args, ...options.flat(), ...(json ? ["--json"] : [])]),
);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "errand-hostile-cli-"));
  storeFile = join(dir, "store.db");
  // The last two cannot be read: one is missing, one is a directory.
  files = [
    join(dir, "valid.json"),
    join(dir, "invalid.json"),
    join(dir, "jobs.ndjson"),
    join(dir, "flow.json"),
    join(dir, "missing.json"),
    dir,
  ];
  writeFileSync(files[0]!, '{"n":1}');
  writeFileSync(files[1]!, "{nope");
  writeFileSync(files[2]!, '{"n":1}\n{"n":2}\n\n');
  writeFileSync(
    files[3]!,
    JSON.stringify({
      jobs: [
        { ref: "a", type: "seed" },
        { ref: "b", type: "seed", dependsOn: ["a"] },
      ],
    }),
  );
  const clock = new ManualClock();
  const queue = new Queue(await SqliteStore.open({ filename: storeFile }), { clock });
  await seedStore({ queue, clock } as never);
  await queue.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `errand …argv` in this process against the seeded store; what it threw, if anything. */
async function run(argv: string[]): Promise<{ ok: true } | { ok: false; error: unknown }> {
  const ctx = { env: { ERRAND_STORE: `sqlite:${storeFile}` }, stdout: { write: () => true } };
  const cli = buildProgram(ctx);
  const quiet = (c: Command): void => {
    c.configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} });
    for (const sub of c.commands) quiet(sub);
  };
  quiet(cli);
  const result = await outcome(() => cli.parseAsync(["node", "errand", ...argv]));
  return result.ok ? { ok: true } : { ok: false, error: result.error };
}

async function snapshot(): Promise<unknown> {
  const queue = await openQueue(`sqlite:${storeFile}`);
  try {
    return await storeSnapshot(queue);
  } finally {
    await queue.close();
  }
}

describe("hostile arguments to the errand CLI", () => {
  it("covers every command that ends by itself", () => {
    expect(LEAVES.map((l) => l.path.join(" "))).toEqual(
      expect.arrayContaining([
        "enqueue",
        "flows enqueue",
        "jobs list",
        "jobs get",
        "schedules set",
        "types set",
        "prune",
      ]),
    );
  });

  it(
    "succeeds, or refuses as usage or with a client code, changing nothing and creating no store",
    async () => {
      const strayStore = resolve("errand.db");
      const strayBefore = existsSync(strayStore);
      await fc.assert(
        fc.asyncProperty(
          invocation,
          catalogued("errand CLI", async (argv) => {
            const where = `errand ${argv.map((a) => JSON.stringify(a.slice(0, 60))).join(" ")}`;
            const before = await snapshot();
            const proto = prototypeKeys();
            const result = await run(argv);
            assertPrototypeClean(proto, where);
            if (!result.ok) {
              const { error } = result;
              if (!(error instanceof CommanderError)) assertClientError(error, where);
              else expect(error.code, `${where}: ${describeError(error)}`).toMatch(/^commander\./);
              expect(
                await snapshot(),
                `${where}: refused (${describeError(error)}) but the store changed`,
              ).toEqual(before);
            }
            expect(existsSync(strayStore), `${where}: created ./errand.db`).toBe(strayBefore);
          }),
        ),
        fcParams(RUNS),
      );
    },
    propertyTimeout(RUNS, 60_000),
  );
});
