/**
 * `--grace` of `errand serve` and `errand worker`: how long a stopping process lets the jobs it
 * runs finish. A bad value is refused before anything opens; the value reaches the worker's
 * close (and the server's drain), so a job that would finish shortly after the stop signal
 * finishes under a long grace and is given back under a grace of 0.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { stopServing } from "../../src/cli/commands/serve.js";
import { timerDuration } from "../../src/cli/input.js";
import { openQueue } from "../../src/index.js";
import { errand, startErrand, tempDir } from "./cli-process.js";

const SRC = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
const EXAMPLE_JOBS = fileURLToPath(new URL("../../examples/server/jobs.ts", import.meta.url));

/**
 * A module of one job type, `hold`, that prints `running hold` once it runs and finishes 200 ms
 * after the process gets SIGTERM, unless its signal aborts first. The 200 ms start with the
 * signal, in the same turn as the close's grace timer: a grace of 0 ends first, every time, and a
 * grace of seconds lets the job finish. The test itself waits on output and exits only.
 */
function holdJobs(dir: string): string {
  const file = join(dir, "hold-jobs.mjs");
  writeFileSync(
    file,
    `import { defineJob } from ${JSON.stringify(SRC)};
export const hold = defineJob({
  type: "hold",
  handler: (_payload, { signal }) =>
    new Promise((resolve, reject) => {
      let finishing;
      signal.addEventListener("abort", () => { clearTimeout(finishing); reject(signal.reason); }, { once: true });
      process.once("SIGTERM", () => { finishing = setTimeout(() => resolve("finished"), 200); });
      process.stdout.write("running hold\\n");
    }),
});
`,
  );
  return file;
}

/**
 * Runs `errand ARGS --store S --grace GRACE` on a fresh SQLite store holding one `hold` job, stops
 * it with SIGTERM once the job runs and the command has printed `ready` (after which it listens
 * for the signal), and answers its exit code and the job as it was left.
 */
async function stopWhileRunning(args: string[], ready: RegExp, grace: string) {
  const dir = tempDir();
  const store = `sqlite:${join(dir, "grace.db")}`;
  const queue = await openQueue(store);
  onTestFinished(() => queue.close());
  await queue.enqueue("hold", null, { id: "h1" });
  const child = startErrand([...args, "--jobs", holdJobs(dir), "--store", store, "--grace", grace]);
  // Both: serve starts its worker before it listens for signals, and a SIGTERM the job alone
  // heard would leave the process running.
  await Promise.all([child.seen(/^running hold$/m), child.seen(ready)]);
  const code = await child.stop("SIGTERM");
  return { code, job: await queue.get("h1") };
}

describe("errand serve and errand worker --grace", () => {
  it("refuses a --grace that is not a duration, negative, or past the longest timer (exit 2), opening nothing", async () => {
    const dir = tempDir();
    const dbFile = join(dir, "never.db");
    const cases: Array<[string, RegExp]> = [
      ["abc", /--grace must be milliseconds or a duration like "30s".*; got "abc" \(INVALID_DURATION\)/],
      ["-1", /--grace must be milliseconds or a duration .*got "-1" \(INVALID_DURATION\)/],
      ["1.5", /--grace must be milliseconds or a duration .*got "1\.5"/],
      ["", /--grace must be milliseconds or a duration .*got ""/],
      ["2147483648", /--grace must be at most 2147483647 ms .*got 2147483648 \(INVALID_DURATION\)/],
      ["25d", /--grace must be at most 2147483647 ms .*got "25d"/],
    ];
    const commands = [
      ["serve", "--port", "0", "--jobs", EXAMPLE_JOBS],
      ["worker", "--jobs", EXAMPLE_JOBS],
    ];
    const runs = commands.flatMap((command) =>
      cases.map(([grace, message]) => ({ args: [...command, "--grace", grace], message })),
    );
    const results = await Promise.all(
      runs.map(({ args }) => errand([...args, "--store", `sqlite:${dbFile}`], {}, { timeoutMs: 25_000 })),
    );
    for (const [i, { args, message }] of runs.entries()) {
      const r = results[i]!;
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stdout, args.join(" ")).toBe("");
    }
    expect(existsSync(dbFile), "no refused command opened the store").toBe(false);
  }, 60_000);

  it("reads --grace as milliseconds or a duration, 0 to 2^31 − 1 ms", () => {
    const grace = timerDuration("--grace");
    expect(["0", "250", "500ms", "10s", "1m30s", "2147483647"].map(grace)).toEqual([
      0, 250, 500, 10_000, 90_000, 2_147_483_647,
    ]);
  });

  it("worker --grace 0 gives a running job back at once; --grace 30s lets it finish", async () => {
    const [cut, waited] = await Promise.all([
      stopWhileRunning(["worker", "--json"], /"event":"started"/, "0"),
      stopWhileRunning(["worker", "--json"], /"event":"started"/, "30s"),
    ]);
    expect(cut.code).toBe(0);
    expect(cut.job).toMatchObject({ state: "pending", result: null });
    expect(waited.code).toBe(0);
    expect(waited.job).toMatchObject({ state: "completed", result: "finished" });
  }, 60_000);

  it("serve --grace 0 gives its in-process worker's running job back at once; --grace 30s lets it finish", async () => {
    const serve = ["serve", "--port", "0", "--no-dashboard"];
    const [cut, waited] = await Promise.all([
      stopWhileRunning(serve, /^errand serving /m, "0"),
      stopWhileRunning(serve, /^errand serving /m, "30s"),
    ]);
    expect(cut.code).toBe(0);
    expect(cut.job).toMatchObject({ state: "pending", result: null });
    expect(waited.code).toBe(0);
    expect(waited.job).toMatchObject({ state: "completed", result: "finished" });
  }, 60_000);

  it("serve's stop hands the grace to the server's drain and the worker's close, then closes the server and the queue", async () => {
    const calls: string[] = [];
    const app = {
      errand: { drain: async (o?: { graceMs?: number }) => void calls.push(`drain ${o?.graceMs}`) },
      close: async () => void calls.push("server closed"),
    } as unknown as Parameters<typeof stopServing>[0];
    const worker = { close: async (o?: { graceMs?: unknown }) => void calls.push(`worker ${o?.graceMs}`) };
    const queue = { close: async () => void calls.push("queue closed") };

    await stopServing(app, worker, queue, 0);
    expect(calls).toEqual(["drain 0", "worker 0", "server closed", "queue closed"]);
    calls.length = 0;
    // No --grace: the 10 s a Worker's close and a server's drain default to.
    await stopServing(app, null, queue);
    expect(calls).toEqual(["drain 10000", "server closed", "queue closed"]);
  });
});
