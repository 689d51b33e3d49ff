/**
 * The CLI at its edges: options the library refuses and values given empty, a store left open by
 * a refusal, a closed standard output, a token the server refuses, text from jobs on a terminal,
 * and `enqueue --file` refusing a line partway through.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { openQueue, type Queue } from "../../src/index.js";
import { selectedBackends, someBackend } from "../conformance/backend.js";
import { errand, errandPipedToHead, startErrand, tempDir } from "./cli-process.js";
import { ALL_TOKENS, startServer, TOKENS } from "./harness.js";

const SRC = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
const EXAMPLE_JOBS = fileURLToPath(new URL("../../examples/server/jobs.ts", import.meta.url));

/** A module of one job type, `slow`, whose handler takes `ms`. */
function slowJobs(dir: string, ms: number): string {
  const file = join(dir, "slow-jobs.mjs");
  writeFileSync(
    file,
    `import { defineJob } from ${JSON.stringify(SRC)};\n` +
      `export const slow = defineJob({ type: "slow", handler: async () => { await new Promise((r) => setTimeout(r, ${ms})); return null; } });\n`,
  );
  return file;
}

/** A SQLite store in a fresh temporary folder, and a queue on it closed when the test ends. */
async function sqliteQueue(name: string): Promise<{ dir: string; store: string; queue: Queue }> {
  const dir = tempDir();
  const store = `sqlite:${join(dir, `${name}.db`)}`;
  const queue = await openQueue(store);
  onTestFinished(() => queue.close());
  return { dir, store, queue };
}
describe("the errand CLI at its edges", () => {
  for (const backend of selectedBackends()) {
    it(`worker: an option the Worker refuses exits 2 and closes the ${backend.name} store`, async () => {
      const { url } = await backend.setup();
      const cases: Array<[string[], RegExp]> = [
        [["--concurrency", "0"], /concurrency must be .*got 0 \(INVALID_OPTION\)/],
        [["--prefetch", "99999"], /prefetch .*99999.*\(INVALID_OPTION\)/],
        [
          ["--queues", "a=abc"],
          /--queues: the weight of "a" must be an integer, got "abc" \(INVALID_OPTION\)/,
        ],
        [["--queues", "a=0x10"], /got "0x10"/],
        [["--queues", "a="], /got ""/],
      ];
      // One at a time: each may open (and migrate) the same store.
      for (const [args, message] of cases) {
        const r = await errand(
          ["worker", "--jobs", EXAMPLE_JOBS, ...args, "--store", url],
          {},
          { timeoutMs: 20_000 },
        );
        expect(r.timedOut, `${args.join(" ")}: still running after 20 s`).toBe(false);
        expect(r.code, args.join(" ")).toBe(2);
        expect(r.stderr, args.join(" ")).toMatch(message);
      }
    }, 120_000);
  }

  it("types set: a --config that is not a JSON object is refused (exit 2) and nothing is sent", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const via = ["--server", h.base, "--token", TOKENS.admin];
    expect((await errand(["types", "set", "report", "--config", '{"maxAttempts":3}', ...via])).code).toBe(0);
    const configs = ["1e400", "true", "5", "null", '"abc"', "[1]"];
    const results = await Promise.all(
      configs.map((config) => errand(["types", "set", "report", "--config", config, ...via])),
    );
    for (const [i, config] of configs.entries()) {
      expect(results[i]!.code, config).toBe(2);
      expect(results[i]!.stderr, config).toMatch(
        /--config must be a JSON object of settings.*INVALID_OPTION/,
      );
    }
    const listed = JSON.parse((await errand(["types", "list", "--json", ...via])).stdout);
    expect(listed).toEqual([{ type: "report", maxAttempts: 3 }]);
  }, 60_000);

  it("refuses an empty --server (exit 2) rather than acting on ./errand.db; an empty ERRAND_SERVER is no server", async () => {
    const dir = tempDir();
    const [flag, types, worker] = await Promise.all([
      errand(["enqueue", "send", "--server", "", "--token", "secret-token-123"], {}, { cwd: dir }),
      errand(["types", "list", "--server", ""], {}, { cwd: dir }),
      errand(["worker", "--jobs", EXAMPLE_JOBS, "--server", ""], {}, { cwd: dir, timeoutMs: 25_000 }),
    ]);
    for (const r of [flag, types, worker]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--server is empty.*INVALID_OPTION/);
    }
    expect(existsSync(join(dir, "errand.db"))).toBe(false);
    const env = await errand(
      ["enqueue", "send", "--json"],
      { ERRAND_SERVER: "", ERRAND_STORE: "sqlite:./errand.db" },
      { cwd: dir },
    );
    expect(env.code).toBe(0);
    expect(existsSync(join(dir, "errand.db"))).toBe(true);
  }, 60_000);

  it("passes an option given empty to the target, which refuses it with its code (exit 2), storing nothing", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "e.db")}`;
    const s = ["--store", store];
    const cases: Array<[string[], RegExp]> = [
      [["enqueue", "t", "--id", ""], /INVALID_JOB_ID/],
      [["enqueue", "t", "--at", ""], /runAt must be .*INVALID_DATE/],
      [["enqueue", "t", "--delay", ""], /delayMs .*INVALID_DURATION/],
      [["enqueue", "t", "--queue", ""], /INVALID_QUEUE_NAME/],
      [["enqueue", "t", "--on-dependency-failure", ""], /onDependencyFailure .*INVALID_OPTION/],
      [["enqueue", "t", "--file", ""], /--file: cannot read .*INVALID_OPTION/],
      [["jobs", "list", "--state", ""], /state must be one of .*INVALID_OPTION/],
      [["jobs", "list", "--queue", ""], /INVALID_QUEUE_NAME/],
      [["jobs", "list", "--type", ""], /INVALID_TYPE_NAME/],
      [["jobs", "list", "--cursor", ""], /cursor .*INVALID_OPTION/],
    ];
    // One at a time: each opens the same SQLite file.
    for (const [args, message] of cases) {
      const r = await errand([...args, ...s]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
    const queue = await openQueue(store);
    onTestFinished(() => queue.close());
    expect((await queue.list({ limit: 10 })).jobs).toEqual([]);
  }, 120_000);

  it("reads integer options only as decimal digits with an optional sign (exit 2 otherwise)", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "never.db")}`];
    const priorities = ["", " ", "0x10", "0b11", " 1e3 ", "1.0", "+-1"];
    const results = await Promise.all([
      ...priorities.map((p) => errand(["enqueue", "t", "--priority", p, ...s])),
      // Killed if they serve after all, so that a regression fails rather than leaves servers behind.
      errand(["serve", "--port", "", ...s], {}, { timeoutMs: 20_000 }),
      errand(["serve", "--port", "0x1F91", ...s], {}, { timeoutMs: 20_000 }),
      errand(["serve", ...s], { PORT: " " }, { timeoutMs: 20_000 }),
      errand(["jobs", "list", "--limit", "1e2", ...s]),
    ]);
    for (const r of results) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/must be an integer.*got ".*" \(INVALID_OPTION\)/);
    }
    expect(existsSync(join(dir, "never.db"))).toBe(false);
    const signed = await errand(["enqueue", "t", "--priority", "+7", "--json", ...s]);
    expect(JSON.parse(signed.stdout)).toMatchObject({ priority: 7 });
  }, 60_000);

  it("jobs get shows a payload's control characters escaped, never raw on the terminal", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "esc.db")}`];
    const hostile = "\u001b]0;pwned\u0007\u001b[31mRED\u001b[0m\rid              fake\u009b2J\nline";
    const enqueued = await errand([
      "enqueue",
      "t",
      "--id",
      "esc1",
      "--payload",
      JSON.stringify(hostile),
      ...s,
    ]);
    expect(enqueued.code).toBe(0);
    const shown = await errand(["jobs", "get", "esc1", ...s]);
    expect(shown.code).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters.
    expect(shown.stdout.replace(/\n/g, "")).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    const payload = shown.stdout.split("\n").find((l) => l.startsWith("payload"))!;
    expect(payload).toMatch(/^payload\s+"\\u001b\]0;pwned\\u0007.*\\r.*\\u009b2J\\nline"$/);
    expect(JSON.parse(payload.replace(/^payload\s+/, ""))).toBe(hostile);
    // --json is the same JSON as before: the payload reads back whole.
    const json = await errand(["jobs", "get", "esc1", "--json", ...s]);
    expect(JSON.parse(json.stdout).payload).toBe(hostile);
  }, 60_000);

  it("a closed standard output ends jobs list, stats --watch and a worker quietly (exit 0), the worker after a graceful close", async () => {
    const { dir, store, queue } = await sqliteQueue("pipe");
    await queue.enqueueManyIds(
      "slow",
      Array.from({ length: 1000 }, (_, i) => i),
    );
    const [list, stats] = await Promise.all([
      errandPipedToHead(["jobs", "list", "--limit", "1000", "--store", store]),
      errandPipedToHead(["stats", "--watch", "0.2", "--json", "--store", store]),
    ]);
    expect(list).toMatchObject({ code: 0, stderr: "" });
    expect(list.line).toMatch(/ slow {2}default {2}pending /);
    expect(stats).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(stats.line).states.pending).toBe(1000);

    const worker = await errandPipedToHead(["worker", "--jobs", slowJobs(dir, 300), "--store", store]);
    expect(worker).toMatchObject({ code: 0, line: "worker running slow" });
    expect(worker.stderr).not.toMatch(/EPIPE/);
    // Closed gracefully: what was running finished (or went back), nothing is left active.
    const s = await queue.stats();
    expect(s.states.active).toBe(0);
    expect(s.states.completed).toBeGreaterThan(0);
  }, 120_000);

  it("worker --server with a token the server refuses ends with exit 6, logs on standard error only", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const [wrong, viewer] = await Promise.all(
      ["wrong-token-0123456789", TOKENS.viewer].map((token) =>
        errand(
          ["worker", "--jobs", EXAMPLE_JOBS, "--json", "--server", h.base, "--token", token],
          {},
          { timeoutMs: 25_000 },
        ),
      ),
    );
    expect(wrong!.timedOut).toBe(false);
    expect(wrong!.code).toBe(6);
    expect(wrong!.stderr).toMatch(/"code":"UNAUTHORIZED"/);
    expect(viewer!.code).toBe(6);
    expect(viewer!.stderr).toMatch(/"code":"FORBIDDEN"/);
    // Standard output holds the event lines alone.
    for (const line of wrong!.stdout.split("\n").filter(Boolean))
      expect(JSON.parse(line)).toHaveProperty("event");
    const human = await errand(
      ["worker", "--jobs", EXAMPLE_JOBS, "--server", h.base, "--token", "wrong-token-0123456789"],
      {},
      { timeoutMs: 25_000 },
    );
    expect(human.code).toBe(6);
    expect(human.stderr).toMatch(/^errand: .* \(UNAUTHORIZED\)$/m);
    expect(human.stdout).toMatch(/^(worker running [^\n]*\n)?$/);
  }, 60_000);

  it("enqueue --file checks its first batch before opening the store, and says how far it got when it stops", async () => {
    const dir = tempDir();
    const db = join(dir, "f.db");
    const s = ["--store", `sqlite:${db}`];
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, '{"ok":1}\n{nope\n');
    const first = await errand(["enqueue", "t", "--file", bad, ...s]);
    expect(first.code).toBe(2);
    expect(first.stderr).toMatch(/bad\.ndjson:2 is not valid JSON/);
    expect(first.stderr).not.toMatch(/enqueued before it/);
    expect(existsSync(db), "a refused first batch opens no store").toBe(false);

    const mid = join(dir, "mid.ndjson");
    writeFileSync(
      mid,
      `${Array.from({ length: 2500 }, (_, i) => (i === 1499 ? "{bad" : JSON.stringify({ i }))).join("\n")}\n`,
    );
    const partway = await errand(["enqueue", "t", "--file", mid, "--json", ...s]);
    expect(partway.code).toBe(2);
    const refusal = JSON.parse(partway.stderr);
    expect(refusal.code).toBe("INVALID_PAYLOAD");
    expect(refusal.message).toMatch(
      /mid\.ndjson:1500 is not valid JSON.*; 1000 jobs \(.*mid\.ndjson lines 1 to 1000\) were enqueued before it: resume from line 1001$/,
    );

    const big = join(dir, "big.ndjson");
    writeFileSync(
      big,
      `${Array.from({ length: 20 }, (_, i) => JSON.stringify(i === 12 ? { big: "x".repeat(1_100_000) } : { i })).join("\n")}\n`,
    );
    const oversized = await errand(["enqueue", "big", "--file", big, ...s]);
    expect(oversized.code).toBe(2);
    expect(oversized.stderr).toMatch(/big\.ndjson:13: payload is 1100010 bytes; the limit is 1048576/);

    const both = await errand(["enqueue", "t", "--file", mid, "--payload", "{}", ...s]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/'--file <ndjson>' cannot be used with option '--payload <json>'/);

    const queue = await openQueue(`sqlite:${db}`);
    onTestFinished(() => queue.close());
    const stats = await queue.stats();
    expect(stats.types.t?.pending).toBe(1000);
    expect(stats.types.big?.pending ?? 0).toBeLessThan(13);
  }, 120_000);

  it("reads a UTF-8 BOM in --payload @file and --file, says an empty flow is empty, and names every store URL form", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "m.db")}`];
    const bom = join(dir, "bom.json");
    writeFileSync(bom, '\uFEFF{"a":1}\n');
    const payload = await errand(["enqueue", "t", "--payload", `@${bom}`, "--json", ...s]);
    expect(payload.stderr).toBe("");
    expect(JSON.parse(payload.stdout).payload).toEqual({ a: 1 });
    const file = await errand(["enqueue", "t", "--file", bom, "--json", ...s]);
    expect(file.stderr).toBe("");
    expect(JSON.parse(file.stdout)).toEqual({ enqueued: 1 });

    const flow = join(dir, "flow.json");
    writeFileSync(flow, '{"jobs":[]}');
    const empty = await errand(["flows", "enqueue", flow, ...s]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe("no jobs: the flow is empty\n");

    const unknown = await errand(["stats", "--store", "postgresq://x"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/expected sqlite:.*postgres:\/\/.*redis:\/\/.*INVALID_STORE_URL/);
  }, 60_000);

  it("enqueue --file through a server splits batches under its body limit: 1,500 payloads of 1 KB", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const dir = tempDir();
    const file = join(dir, "kb.ndjson");
    writeFileSync(
      file,
      Array.from({ length: 1500 }, (_, i) => JSON.stringify({ i, body: "x".repeat(1100) })).join("\n"),
    );
    const r = await errand([
      "enqueue",
      "t",
      "--file",
      file,
      "--json",
      "--server",
      h.base,
      "--token",
      TOKENS.admin,
    ]);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ enqueued: 1500 });
    expect((await h.queue.stats()).states.pending).toBe(1500);

    // A server whose body limit is lower still: the refusal says to lower --batch.
    const small = await startServer(someBackend(), { bodyLimit: 64 * 1024 });
    const refused = await errand(["enqueue", "t", "--file", file, "--server", small.base]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/kb\.ndjson: lines 1 to \d+: .*give a smaller --batch.*PAYLOAD_TOO_LARGE/);
  }, 60_000);

  it("a worker still stops with exit 0 on SIGTERM, after a graceful close", async () => {
    const { dir, store, queue } = await sqliteQueue("w");
    await queue.enqueueManyIds("slow", [1, 2, 3]);
    const worker = startErrand(["worker", "--jobs", slowJobs(dir, 500), "--store", store, "--json"]);
    await worker.seen(/"event":"started"/);
    expect(await worker.stop("SIGTERM")).toBe(0);
    expect((await queue.stats()).states.active).toBe(0);
  }, 60_000);
});
