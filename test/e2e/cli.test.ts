import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { servedAddress } from "../../src/cli/commands/serve.js";
import { LIST_SCAN, openQueue } from "../../src/index.js";
import { someBackend } from "../conformance/backend.js";
import { CLI, errand, startErrand, tempDir } from "./cli-process.js";
import { ALL_TOKENS, startServer, TOKENS } from "./harness.js";

// The first two tests start ~30 CLI processes one after another (each loads tsx: ~1 s, ~2 s on a
// loaded machine), so they get a larger budget than the default 30 s; every wait is on output.
describe("the errand CLI", () => {
  it("manages jobs directly on a store, with JSON output and meaningful exit codes", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "e.db")}`;
    const s = ["--store", store];
    expect((await errand(["migrate", ...s])).code).toBe(0);
    const one = await errand([
      "enqueue",
      "send",
      "--payload",
      '{"to":"a"}',
      "--id",
      "j1",
      "--priority",
      "3",
      "--json",
      ...s,
    ]);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ id: "j1", priority: 3, payload: { to: "a" } });
    writeFileSync(join(dir, "p.json"), '{"from":"file"}');
    const delayed = await errand([
      "enqueue",
      "send",
      "--payload",
      `@${join(dir, "p.json")}`,
      "--delay",
      "1h",
      "--queue",
      "later",
      ...s,
    ]);
    expect(delayed.stdout).toMatch(/^enqueued .* send {2}later {2}pending/);

    const list = JSON.parse((await errand(["jobs", "list", "--json", ...s])).stdout);
    expect(list.jobs).toHaveLength(2);
    expect(list.jobs.find((j: { id: string }) => j.id === "j1").payload).toEqual({ to: "a" });
    // Lines, and `--view summary`, read summaries: the store leaves the payloads unread.
    const summaries = JSON.parse(
      (await errand(["jobs", "list", "--view", "summary", "--json", ...s])).stdout,
    );
    expect(summaries.jobs.map((j: { id: string }) => j.id)).toEqual(
      list.jobs.map((j: { id: string }) => j.id),
    );
    expect(summaries.jobs.every((j: object) => !("payload" in j) && !("dependsOn" in j))).toBe(true);
    expect((await errand(["jobs", "list", ...s])).stdout).toMatch(/^j1 {2}send {2}default {2}pending/m);
    const badView = await errand(["jobs", "list", "--view", "whole", ...s]);
    expect(badView.code).toBe(2);
    expect(badView.stderr).toMatch(/--view.*full, summary/);
    expect((await errand(["jobs", "get", "j1", ...s])).stdout).toMatch(/payload\s+\{"to":"a"\}/);
    expect((await errand(["jobs", "cancel", "j1", ...s])).stdout).toMatch(/cancel: j1 .* cancelled/);
    expect((await errand(["jobs", "retry", "j1", ...s])).stdout).toMatch(/pending/);
    const stats = JSON.parse((await errand(["stats", "--json", ...s])).stdout);
    expect(stats.states.pending).toBe(2);
    expect((await errand(["stats", ...s])).stdout).toMatch(/later\s+0\s+1\s/); // blocked 0, pending 1

    expect(
      (await errand(["schedules", "set", "nightly", "--cron", "0 3 * * *", "--type", "report", ...s])).code,
    ).toBe(0);
    expect((await errand(["schedules", "list", ...s])).stdout).toMatch(/nightly {2}0 3 \* \* \* \(UTC\)/);
    expect((await errand(["schedules", "rm", "nightly", ...s])).code).toBe(0);
    expect((await errand(["schedules", "rm", "nightly", ...s])).code).toBe(3);
    expect(JSON.parse((await errand(["prune", "--json", ...s])).stdout)).toEqual({ deleted: 0 });

    const missing = await errand(["jobs", "get", "nope", ...s]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/JOB_NOT_FOUND/);
    expect((await errand(["jobs", "replay", "j1", ...s])).code).toBe(4);
    expect((await errand(["enqueue", "'; DROP TABLE", ...s])).code).toBe(2);
    expect((await errand(["enqueue", "x", "--payload", "{nope", ...s])).code).toBe(2);
    expect((await errand(["enqueue", "x", "--priority", "high", ...s])).code).toBe(2);
    expect((await errand(["jobs", "lsit"])).code).toBe(2);
    for (const cmd of [
      [],
      ["serve"],
      ["worker"],
      ["enqueue"],
      ["jobs", "list"],
      ["schedules", "set"],
      ["types", "set"],
      ["queues", "pause"],
    ]) {
      const help = await errand([...cmd, "--help"]);
      expect(help.code, cmd.join(" ")).toBe(0);
      expect(help.stdout).toMatch(/^Usage: errand/);
    }
  }, 120_000);

  it("works through a server with a token, and streams a 100,000-line ndjson file in batches", async () => {
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const dir = tempDir();
    const file = join(dir, "jobs.ndjson");
    writeFileSync(file, Array.from({ length: 100_000 }, (_, i) => JSON.stringify({ n: i })).join("\n"));
    const via = ["--server", h.base, "--token", TOKENS.admin];
    const bulk = await errand(["enqueue", "bulk", "--file", file, "--json", ...via]);
    expect(bulk.stderr).toBe("");
    expect(JSON.parse(bulk.stdout)).toEqual({ enqueued: 100_000 });
    expect((await h.queue.stats()).states.pending).toBe(100_000);

    const one = await errand(["enqueue", "single", "--id", "s1", "--json", ...via]);
    expect(JSON.parse(one.stdout)).toMatchObject({ id: "s1", type: "single" });
    expect(JSON.parse((await errand(["jobs", "get", "s1", "--json", ...via])).stdout).id).toBe("s1");
    const typeSet = await errand(["types", "set", "single", "--config", '{"maxAttempts": 2}', ...via]);
    expect(typeSet.code).toBe(0);
    expect((await errand(["types", "list", ...via])).stdout).toMatch(/single/);
    const denied = await errand(["enqueue", "x", "--server", h.base, "--token", TOKENS.viewer]);
    expect(denied.code).toBe(6);
    expect(denied.stderr).toMatch(/FORBIDDEN/);
    const down = await errand(["stats", "--server", "http://127.0.0.1:1"]);
    expect(down.code).toBe(5);
  }, 120_000);

  it("shows the ready jobs held back by each rule and the busiest keys, through a server", async () => {
    const h = await startServer(someBackend());
    const via = ["--server", h.base];
    await h.http("PUT", "/v1/types/sync", {
      body: { keyConcurrency: 1, rateLimit: { limit: 1, periodMs: 60_000 } },
    });
    const jobs = ["a", "a", "a", "b", "b"].map((key) => ({ type: "sync", key }));
    expect((await h.http("POST", "/v1/jobs", { body: { jobs } })).status).toBe(201);
    const text = (await errand(["stats", ...via])).stdout;
    // a: 2 beyond its key's room; of a1 and b1, the type's window lets one start.
    expect(text).toMatch(/^type\s+rate limit\s+key cap\s+order\s+busiest keys \(ready\/active\)$/m);
    expect(text).toMatch(/^sync\s+1\s+3\s+0\s+a 3\/0, b 2\/0$/m);
    const json = JSON.parse((await errand(["stats", "--json", ...via])).stdout);
    expect(json.limits.sync.heldBack).toEqual({ rateLimit: 1, keyConcurrency: 3, order: 0, exact: true });
  }, 60_000);

  it("reads --at only as a date-time with an offset on a real calendar day; anything else is INVALID_DATE (exit 2)", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "at.db")}`];
    // No offset was the CLI's own time zone (TZ decided the instant); February 30 was March 2.
    for (const at of ["2030-01-01T00:00:00", "2026-02-30T00:00:00Z"]) {
      const r = await errand(["enqueue", "t", "--at", at, ...s], { TZ: "America/New_York" });
      expect(r.code, at).toBe(2);
      expect(r.stderr, at).toMatch(/runAt must be .*INVALID_DATE/);
    }
    const ok = await errand(["enqueue", "t", "--at", "2030-01-01T00:00:00+01:00", "--json", ...s], {
      TZ: "America/New_York",
    });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ runAt: "2029-12-31T23:00:00.000Z" });
    expect(JSON.parse((await errand(["jobs", "list", "--json", ...s])).stdout).jobs).toHaveLength(1);
  }, 60_000);

  it("refuses a file it cannot read or parse, and a port out of range, as input errors (exit 2) before opening the store", async () => {
    const dir = tempDir();
    const dbFile = join(dir, "never.db");
    const s = ["--store", `sqlite:${dbFile}`];
    const missing = join(dir, "missing.json");
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{nope");
    const cases: Array<[string[], RegExp]> = [
      [["serve", "--port", "70000"], /--port must be an integer from 0 to 65535.*INVALID_OPTION/],
      [["serve", "--port", "0", "--types", missing], /--types: cannot read .*ENOENT.*INVALID_OPTION/],
      [["serve", "--port", "0", "--types", bad], /--types: .* is not valid JSON.*INVALID_OPTION/],
      [["serve", "--port", "0", "--tokens-file", missing], /tokens file: cannot read .*INVALID_OPTION/],
      [
        ["serve", "--port", "0", "--jobs", join(dir, "missing.mjs")],
        /--jobs: cannot import .*INVALID_OPTION/,
      ],
      [["worker", "--jobs", join(dir, "missing.mjs")], /--jobs: cannot import .*INVALID_OPTION/],
      [["enqueue", "t", "--payload", `@${missing}`], /--payload: cannot read .*INVALID_OPTION/],
      [["enqueue", "t", "--payload", `@${bad}`], /--payload: .* is not valid JSON.*INVALID_PAYLOAD/],
      [["enqueue", "t", "--file", missing], /--file: cannot read .*ENOENT.*INVALID_OPTION/],
      [["enqueue", "t", "--file", dir], /--file: cannot read .*it is a directory.*INVALID_OPTION/],
      [["flows", "enqueue", missing], /flows enqueue: cannot read .*INVALID_OPTION/],
      [["flows", "enqueue", bad], /flows enqueue: .* is not valid JSON.*INVALID_FLOW/],
      [
        ["schedules", "set", "n", "--cron", "* * * * *", "--type", "t", "--payload", `@${missing}`],
        /--payload: cannot read .*INVALID_OPTION/,
      ],
      [["types", "list"], /types: give --server.*INVALID_OPTION/],
      [["types", "set", "t", "--config", "{}"], /types: give --server.*INVALID_OPTION/],
    ];
    for (const [args, message] of cases) {
      const r = await errand([...args, ...s]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
    const badEnv = await errand(["serve", ...s], { PORT: "abc" });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/PORT must be an integer from 0 to 65535/);
    expect(existsSync(dbFile), "no refused command opened the store").toBe(false);
  }, 120_000);

  it("reports a port in use as unavailable (exit 5), leaving nothing open", async () => {
    const dir = tempDir();
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const { port } = taken.address() as AddressInfo;
    const r = await errand(["serve", "--port", String(port), "--store", `sqlite:${join(dir, "s.db")}`]);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(
      new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*UNAVAILABLE`),
    );
  }, 60_000);

  it("enqueues an ndjson file on a store with the flags' options, in line order, stopping at a bad line", async () => {
    const dir = tempDir();
    const db = `sqlite:${join(dir, "f.db")}`;
    const file = join(dir, "jobs.ndjson");
    writeFileSync(
      file,
      `${Array.from({ length: 2_500 }, (_, i) => JSON.stringify({ n: i })).join("\n")}\n\n`,
    );
    const bulk = await errand([
      "enqueue",
      "bulk",
      "--file",
      file,
      "--batch",
      "1000",
      "--queue",
      "imports",
      "--priority",
      "3",
      "--json",
      "--store",
      db,
    ]);
    expect(bulk.stderr).toBe("");
    expect(JSON.parse(bulk.stdout)).toEqual({ enqueued: 2_500 });
    for (const batch of ["0", "-5", "10001"]) {
      const refusedBatch = await errand(["enqueue", "bulk", "--file", file, "--batch", batch, "--store", db]);
      expect(refusedBatch.code, `--batch ${batch}`).toBe(2);
      expect(refusedBatch.stderr).toMatch(/--batch must be an integer from 1 to 10000/);
    }
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, `${JSON.stringify({ n: "ok" })}\n{nope\n`);
    const refused = await errand(["enqueue", "bulk", "--file", bad, "--batch", "1", "--store", db]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/bad\.ndjson:2 is not valid JSON/);

    const queue = await openQueue(db);
    try {
      expect((await queue.stats()).states.pending).toBe(2_501);
      const jobs = [];
      let cursor: string | undefined;
      do {
        const page = await queue.list({ type: "bulk", limit: 1000, cursor });
        jobs.push(...page.jobs);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      const fromFile = jobs.filter((j) => typeof (j.payload as { n: unknown }).n === "number");
      // list() is newest first; within one batch the jobs run, and sort, in line order.
      expect(fromFile.map((j) => (j.payload as { n: number }).n).reverse()).toEqual(
        Array.from({ length: 2_500 }, (_, i) => i),
      );
      expect(new Set(fromFile.map((j) => `${j.queue}/${j.priority}`))).toEqual(new Set(["imports/3"]));
    } finally {
      await queue.close();
    }
  }, 60_000);

  it("enqueues with dependencies and flows, and shows blocked jobs, on a store and through a server", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "d.db")}`];
    expect((await errand(["enqueue", "fetch", "--id", "a", ...s])).code).toBe(0);
    expect((await errand(["enqueue", "fetch", "--id", "b", ...s])).code).toBe(0);
    const merge = await errand([
      "enqueue",
      "merge",
      "--id",
      "m",
      "--depends-on",
      "a",
      "b",
      "--on-dependency-failure",
      "run",
      "--json",
      ...s,
    ]);
    expect(merge.stderr).toBe("");
    expect(JSON.parse(merge.stdout)).toMatchObject({
      state: "blocked",
      blockedBy: 2,
      dependsOn: ["a", "b"],
      onDependencyFailure: "run",
    });
    const missing = await errand(["enqueue", "merge", "--depends-on", "nope", ...s]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/DEPENDENCY_NOT_FOUND/);
    const badPolicy = await errand([
      "enqueue",
      "merge",
      "--depends-on",
      "a",
      "--on-dependency-failure",
      "x",
      ...s,
    ]);
    expect(badPolicy.code).toBe(2);
    expect(badPolicy.stderr).toMatch(/onDependencyFailure/);

    const flowFile = join(dir, "flow.json");
    writeFileSync(
      flowFile,
      JSON.stringify({
        jobs: [
          { ref: "report", type: "report", dependsOn: ["sum", { id: "m" }] },
          { ref: "sum", type: "sum", payload: { n: 1 }, queue: "math" },
        ],
      }),
    );
    const flow = await errand(["flows", "enqueue", flowFile, ...s]);
    expect(flow.code).toBe(0);
    expect(flow.stdout).toMatch(/^enqueued sum {2}\S+ {2}sum {2}math {2}pending/m);
    expect(flow.stdout).toMatch(/^enqueued report {2}\S+ {2}report {2}default {2}blocked .*blockedBy=2\/2/m);
    writeFileSync(flowFile, JSON.stringify({ jobs: [{ ref: "x", type: "t", dependsOn: ["x"] }] }));
    const cycle = await errand(["flows", "enqueue", flowFile, ...s]);
    expect(cycle.code).toBe(2);
    expect(cycle.stderr).toMatch(/INVALID_FLOW/);

    const blocked = await errand(["jobs", "list", "--state", "blocked", ...s]);
    expect(
      blocked.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split("  ")[1]),
    ).toEqual(["merge", "report"]);
    // A summary line counts the dependencies still unfinished; a full one says of how many.
    expect(blocked.stdout).toMatch(/^\S+ {2}report {2}default {2}blocked .*blockedBy=2$/m);
    expect((await errand(["jobs", "list", "--state", "blocked", "--view", "full", ...s])).stdout).toMatch(
      /^\S+ {2}report {2}default {2}blocked .*blockedBy=2\/2$/m,
    );
    expect((await errand(["jobs", "get", "m", ...s])).stdout).toMatch(
      /dependsOn\s+\["a","b"\]\nblockedBy\s+2\n/,
    );
    expect((await errand(["jobs", "dependents", "m", ...s])).stdout).toMatch(/ report {2}default {2}blocked/);
    expect((await errand(["stats", ...s])).stdout).toMatch(/^queue\s+blocked\s+pending/);
    expect(JSON.parse((await errand(["stats", "--json", ...s])).stdout).states).toMatchObject({
      blocked: 2,
      pending: 3,
    });

    // The same through a server, by the client.
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const via = ["--server", h.base, "--token", TOKENS.admin];
    await h.queue.enqueue("fetch", {}, { id: "a" });
    writeFileSync(
      flowFile,
      JSON.stringify({ jobs: [{ ref: "m", type: "merge", dependsOn: [{ id: "a" }], id: "remote-m" }] }),
    );
    const remote = await errand(["flows", "enqueue", flowFile, "--json", ...via]);
    expect(JSON.parse(remote.stdout).jobs.m).toMatchObject({ id: "remote-m", state: "blocked" });
    const deps = await errand(["jobs", "dependencies", "remote-m", ...via]);
    expect(deps.stdout).toBe("a  fetch  pending\n");
    const dependent = await errand(["enqueue", "after", "--depends-on", "remote-m", "--json", ...via]);
    expect(JSON.parse(dependent.stdout)).toMatchObject({ state: "blocked", dependsOn: ["remote-m"] });
  }, 120_000);

  it("enqueues with --key and --debounce-key/--debounce-ms, lists by --key, shows key and snoozes", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "d.db")}`];
    const keyed = await errand(["enqueue", "sync", "--id", "k1", "--key", "tenant-7", "--json", ...s]);
    expect(keyed.stderr).toBe("");
    expect(JSON.parse(keyed.stdout)).toMatchObject({ id: "k1", key: "tenant-7", snoozes: 0 });
    expect((await errand(["enqueue", "sync", "--id", "k2", ...s])).code).toBe(0);
    const badKey = await errand(["enqueue", "sync", "--key", "two words", ...s]);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/INVALID_KEY/);

    const d1 = await errand([
      "enqueue",
      "reindex",
      "--payload",
      '{"v":1}',
      "--debounce-key",
      "reindex:9",
      "--debounce-ms",
      "5s",
      "--json",
      ...s,
    ]);
    const first = JSON.parse(d1.stdout);
    expect(first).toMatchObject({ debounceKey: "reindex:9", duplicate: false });
    const d2 = await errand([
      "enqueue",
      "reindex",
      "--payload",
      '{"v":2}',
      "--debounce-key",
      "reindex:9",
      "--debounce-ms",
      "5000",
      ...s,
    ]);
    expect(d2.stdout).toMatch(new RegExp(`^exists +${first.id} `));
    const half = await errand(["enqueue", "reindex", "--debounce-key", "reindex:9", ...s]);
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/--debounce-key and --debounce-ms/);

    const listed = await errand(["jobs", "list", "--key", "tenant-7", ...s]);
    expect(listed.stdout).toMatch(/^k1 {2}sync {2}default {2}pending {2}attempt=0\/5 {2}key=tenant-7 runAt=/);
    expect(listed.stdout.trim().split("\n")).toHaveLength(1);
    const got = await errand(["jobs", "get", "k1", ...s]);
    expect(got.stdout).toMatch(/^key\s+tenant-7$/m);
    expect(got.stdout).toMatch(/^snoozes\s+0$/m);
    const payload = await errand(["jobs", "get", first.id, "--json", ...s]);
    expect(JSON.parse(payload.stdout)).toMatchObject({ payload: { v: 2 }, debounceKey: "reindex:9" });

    // A key only an older job has, behind more newer jobs than a page reads: page on.
    const old = JSON.parse((await errand(["enqueue", "sync", "--key", "tenant-old", "--json", ...s])).stdout);
    const direct = await openQueue({ store: s[1]! });
    await direct.enqueueManyIds(
      "bulk",
      Array.from({ length: LIST_SCAN }, (_, i) => i),
    );
    await direct.close();
    const stretch = await errand(["jobs", "list", "--key", "tenant-old", ...s]);
    expect(stretch.code).toBe(0);
    const cursor = /^none in this stretch of jobs; older ones may match\nnext: --cursor (\S+)$/.exec(
      stretch.stdout.trim(),
    )?.[1];
    expect(cursor).toBeDefined();
    const found = await errand(["jobs", "list", "--key", "tenant-old", "--cursor", cursor!, ...s]);
    expect(found.stdout.trim().split("  ")[0]).toBe(old.id);

    // Through a server: the same flags, and per-key type settings with `types set`.
    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const via = ["--server", h.base, "--token", TOKENS.admin];
    const remote = await errand(["enqueue", "sync", "--key", "tenant-8", "--json", ...via]);
    expect(JSON.parse(remote.stdout)).toMatchObject({ key: "tenant-8" });
    const remoteList = await errand(["jobs", "list", "--key", "tenant-8", "--json", ...via]);
    expect(JSON.parse(remoteList.stdout).jobs.map((j: { key: string }) => j.key)).toEqual(["tenant-8"]);
    const type = await errand([
      "types",
      "set",
      "sync",
      "--config",
      '{"keyConcurrency": 2, "ordered": true}',
      "--json",
      ...via,
    ]);
    expect(JSON.parse(type.stdout)).toEqual({ type: "sync", keyConcurrency: 2, ordered: true });
    const limited = await errand([
      "types",
      "set",
      "call-api",
      "--config",
      '{"rateLimit": {"limit": 100, "periodMs": "1m"}, "keyRateLimit": {"limit": 10, "periodMs": 1000}}',
      "--json",
      ...via,
    ]);
    expect(JSON.parse(limited.stdout)).toEqual({
      type: "call-api",
      rateLimit: { limit: 100, periodMs: "1m" },
      keyRateLimit: { limit: 10, periodMs: 1000 },
    });
    const bad = await errand([
      "types",
      "set",
      "call-api",
      "--config",
      '{"rateLimit": {"limit": 0, "periodMs": "1m"}}',
      ...via,
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/INVALID_RATE_LIMIT/);
  }, 120_000);

  it("pauses, resumes and lists queues on a store and through a server (admin only)", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "q.db")}`;
    const s = ["--store", store];
    expect((await errand(["enqueue", "send", "--queue", "mail", ...s])).code).toBe(0);
    const paused = await errand(["queues", "pause", "mail", "--json", ...s]);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toEqual({ name: "mail", paused: true, changed: true });
    expect((await errand(["queues", "pause", "mail", ...s])).stdout).toMatch(/^mail was already paused/);
    expect((await errand(["queues", "pause", "idle", ...s])).stdout).toMatch(/^paused idle/);
    const listed = JSON.parse((await errand(["queues", "list", "--json", ...s])).stdout);
    expect(listed).toEqual([
      { name: "idle", counts: {}, paused: true },
      { name: "mail", counts: { pending: 1 }, paused: true },
    ]);
    expect((await errand(["queues", "list", ...s])).stdout).toMatch(
      /^idle {2}\(paused\) {2}no jobs\nmail {2}\(paused\) {2}pending 1/,
    );
    const bad = await errand(["queues", "pause", "no spaces", ...s]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/INVALID_QUEUE_NAME/);
    expect((await errand(["queues", "resume", "mail", ...s])).stdout).toMatch(/^resumed mail/);
    const q = await openQueue(store);
    onTestFinished(() => q.close());
    expect(await q.pausedQueues()).toEqual(["idle"]);

    const h = await startServer(someBackend(), { auth: { tokens: ALL_TOKENS } });
    const via = ["--server", h.base, "--token", TOKENS.admin];
    expect((await errand(["queues", "pause", "mail", ...via])).stdout).toMatch(/^paused mail/);
    expect(await h.queue.pausedQueues()).toEqual(["mail"]);
    const remote = JSON.parse((await errand(["queues", "list", "--json", ...via])).stdout);
    expect(remote).toEqual([{ name: "mail", counts: {}, paused: true }]);
    const denied = await errand(["queues", "resume", "mail", "--server", h.base, "--token", TOKENS.viewer]);
    expect(denied.code).toBe(6);
    expect(await h.queue.pausedQueues()).toEqual(["mail"]);
    expect((await errand(["queues", "resume", "mail", ...via])).stdout).toMatch(/^resumed mail/);
    expect(await h.queue.pausedQueues()).toEqual([]);
  }, 120_000);

  it("refuses a serve option out of range before opening anything (exit 2)", async () => {
    const dir = tempDir();
    const r = await errand(["serve", "--store", `sqlite:${join(dir, "s.db")}`, "--push-lease", "-5"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--push-lease/);
    expect(existsSync(join(dir, "s.db"))).toBe(false);
    const types = await errand(["serve", "--store", `sqlite:${join(dir, "s.db")}`, "--max-job-types", "0"]);
    expect(types.code).toBe(2);
    expect(types.stderr).toMatch(/--max-job-types/);
    expect(existsSync(join(dir, "s.db"))).toBe(false);
  });

  it("serve --max-job-types: more types in --types than it allows is a refusal (exit 4) that stores none", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "t.db")}`;
    const types = fileURLToPath(new URL("../../examples/server/types.json", import.meta.url));
    const r = await errand([
      "serve",
      "--port",
      "0",
      "--store",
      store,
      "--types",
      types,
      "--max-job-types",
      "1",
    ]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/maxJobTypes 1/);
    const queue = await openQueue(store);
    onTestFinished(() => queue.close());
    expect(await queue.typeRecords.listJobTypes()).toEqual([]);
  });

  it("runs a worker process over a store from a module of job definitions", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "w.db")}`;
    const jobs = fileURLToPath(new URL("../../examples/server/jobs.ts", import.meta.url));
    const queue = await openQueue(store);
    onTestFinished(() => queue.close());
    await queue.enqueue("send-email", { to: "x@y.z" }, { id: "e1", queue: "emails" });
    const worker = startErrand(["worker", "--jobs", jobs, "--store", store, "--prefetch", "5", "--json"]);
    await worker.seen(/"event":"completed"/);
    expect((await queue.get("e1"))?.result).toEqual({ sent: true, to: "x@y.z" });
    expect(await worker.stop("SIGTERM")).toBe(0);

    // A prefetch out of range is the worker's INVALID_OPTION: refused, nothing claimed.
    await queue.enqueue("send-email", { to: "q@y.z" }, { id: "e2", queue: "emails" });
    const r = await errand(["worker", "--jobs", jobs, "--store", store, "--prefetch", "10001"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/prefetch/);
    expect((await queue.get("e2"))?.state).toBe("pending");
  });

  it("refuses a module whose definitions another copy of errand made, by name (exit 2)", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "w.db")}`;
    // What defineJob of another installation returns looks like this to this one: checked by nothing here.
    const module = join(dir, "jobs.mjs");
    writeFileSync(
      module,
      'export const copied = { type: "copied", queue: "default", handler: async () => null };\n',
    );
    const r = await errand(["worker", "--jobs", module, "--store", store]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/"copied" was not made by this errand's defineJob/);
  });

  it("serve --types --jobs: the server's job types win over the in-process handlers' defaults", async () => {
    const dir = tempDir();
    const examples = fileURLToPath(new URL("../../examples/server/", import.meta.url));
    const serve = startErrand([
      "serve",
      "--port",
      "0",
      "--no-dashboard",
      "--store",
      `sqlite:${join(dir, "serve.db")}`,
      "--types",
      join(examples, "types.json"),
      "--jobs",
      join(examples, "jobs.ts"),
    ]);
    const [, base] = await serve.seen(/errand serving (http:\/\/\S+)/);
    const res = await fetch(`${base}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "send-email", payload: { to: "a@b.c" } }),
    });
    const job = (await res.json()) as { id: string; maxAttempts: number; queue: string; backoff: unknown };
    // examples/server/types.json: send-email has 4 attempts and a 500 ms base backoff; the handler
    // in jobs.ts sets neither, so its defaults (5, 1 s) must not win.
    expect(job).toMatchObject({
      queue: "emails",
      maxAttempts: 4,
      backoff: { type: "exponential", baseMs: 500 },
    });
    await serve.seen(new RegExp(`completed send-email ${job.id}`));
    expect(await serve.stop("SIGINT")).toBe(0);
  });

  it("serve --host 0.0.0.0 --port 0 prints the wildcard address and the port it really bound", async () => {
    const dir = tempDir();
    const serve = startErrand(
      ["serve", "--host", "0.0.0.0", "--port", "0", "--store", `sqlite:${join(dir, "any.db")}`],
      { ERRAND_TOKENS: `admin:${TOKENS.admin}` },
    );
    const [line] = await serve.seen(/errand serving .*\n/);
    const m = line.match(
      /^errand serving http:\/\/0\.0\.0\.0:(\d+) \(all interfaces\) on sqlite:\S+ \(1 tokens\)$/m,
    );
    expect(m, line).not.toBeNull();
    const port = Number(m![1]);
    expect(port).toBeGreaterThan(0);
    await serve.seen(new RegExp(`^dashboard: http://0\\.0\\.0\\.0:${port}/dashboard/$`, "m"));
    // The printed port is the one bound: the server answers there, on loopback as on any interface.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(await serve.stop("SIGTERM")).toBe(0);
  });

  it("names IPv6 addresses in brackets and calls only the wildcards all interfaces", () => {
    expect(servedAddress({ address: "::", family: "IPv6", port: 8080 })).toEqual({
      url: "http://[::]:8080",
      allInterfaces: true,
    });
    expect(servedAddress({ address: "::1", family: "IPv6", port: 80 })).toEqual({
      url: "http://[::1]:80",
      allInterfaces: false,
    });
    expect(servedAddress({ address: "127.0.0.1", family: "IPv4", port: 8080 })).toEqual({
      url: "http://127.0.0.1:8080",
      allInterfaces: false,
    });
  });

  it("stats --watch refreshes until SIGINT, then exits 0", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "stats.db")}`;
    const queue = await openQueue(store);
    onTestFinished(() => queue.close());
    await queue.enqueue("send", {}, { queue: "mail" });
    const child = spawn(
      process.execPath,
      ["--import", "tsx", CLI, "stats", "--watch", "--interval", "100ms", "--json", "--store", store],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    // Each refresh prints one JSON line; resolves with the first line after `from` that matches.
    const lines: QueueStatsLine[] = [];
    let partial = "";
    const waiters = new Set<() => void>();
    child.stdout.on("data", (c) => {
      const parts = (partial + c).split("\n");
      partial = parts.pop()!;
      for (const p of parts) lines.push(JSON.parse(p));
      for (const w of waiters) w();
    });
    const refresh = (from: number, match: (s: QueueStatsLine) => boolean) =>
      new Promise<number>((resolve, reject) => {
        const check = () => {
          const i = lines.findIndex((s, k) => k >= from && match(s));
          if (i < 0) return;
          waiters.delete(check);
          resolve(i);
        };
        waiters.add(check);
        void exited.then(({ code }) => reject(new Error(`stats exited (${code}) early: ${stderr}`)));
        check();
      });

    const first = await refresh(0, (s) => s.states.pending === 1);
    expect(lines[first]!.queues).toEqual({ mail: { pending: 1 } });
    await queue.enqueueBatch([
      { job: "send", payload: {}, options: { queue: "mail" } },
      { job: "report", payload: {}, options: { queue: "batch" } },
      { job: "report", payload: {}, options: { queue: "batch", delayMs: "1h" } },
    ]);
    const later = await refresh(first + 1, (s) => s.states.pending === 4);
    expect(lines[later]).toMatchObject({
      scheduled: 1,
      queues: { mail: { pending: 2 }, batch: { pending: 2 } },
      types: { send: { pending: 2 }, report: { pending: 2 } },
    });

    child.kill("SIGINT");
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(stderr).toBe("");
  });

  it("refuses a bad stats refresh period before opening the store (exit 2)", async () => {
    const dir = tempDir();
    const s = ["--store", `sqlite:${join(dir, "none.db")}`];
    const cases = [
      [["--interval", "10ms"], /--interval must be at least 100ms/],
      [["--interval", "soon"], /--interval/],
      [["--watch", "0"], /--watch takes seconds/],
      [["--watch", "often"], /--watch takes seconds/],
      [["--watch", "0x10"], /--watch takes seconds/],
      [["--watch", " 5"], /--watch takes seconds/],
      [["--watch", "5", "--interval", "1s"], /once/],
    ] as const;
    const results = await Promise.all(cases.map(([args]) => errand(["stats", ...args, ...s])));
    for (const [i, [args, message]] of cases.entries()) {
      expect(results[i]!.code, args.join(" ")).toBe(2);
      expect(results[i]!.stderr, args.join(" ")).toMatch(message);
    }
    expect(existsSync(join(dir, "none.db"))).toBe(false);
  });
});

interface QueueStatsLine {
  states: Record<string, number>;
  scheduled: number;
  queues: Record<string, Record<string, number>>;
  types: Record<string, Record<string, number>>;
}
