/**
 * The Python standard-library worker (examples/python-worker/worker.py) against a live server:
 * jobs enqueued from TypeScript are leased, heartbeaten, checkpointed, failed and completed from
 * Python over HTTP, with auth.
 */
import { spawn } from "node:child_process";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect, onTestFinished, test } from "vitest";
import { someBackend } from "../conformance/backend.js";
import { startServer, TOKENS } from "./harness.js";

const WORKER = fileURLToPath(new URL("../../examples/python-worker/worker.py", import.meta.url));

test("a Python worker leases, checkpoints, heartbeats, fails and completes jobs enqueued from TypeScript", {
  timeout: 30_000,
}, async () => {
  const backend = someBackend();
  const h = await startServer(backend, {
    auth: { tokens: Object.entries(TOKENS).map(([role, token]) => ({ token, role: role as never })) },
    types: [
      { type: "py-resize", maxAttempts: 3, backoff: { type: "fixed", delayMs: 0 } },
      { type: "py-refuse", maxAttempts: 5 },
    ],
  });
  const enqueue = (type: string, payload: unknown) =>
    h.http("POST", "/v1/jobs", { token: TOKENS.producer, body: { type, payload } }).then((r) => {
      expect(r.status).toBe(201);
      return r.body.id as string;
    });
  const fine = await enqueue("py-resize", { file: "a.png", sizes: [64, 256] });
  const flaky = await enqueue("py-resize", { file: "b.png", sizes: [64, 256, 1024], failAfterFirst: true });
  const refused = await enqueue("py-refuse", { what: "c.gif" });

  // fine: 1 report; flaky: fail then complete (2); refused: 1. Four reports, then it exits.
  const child = spawn(
    "python3",
    [WORKER, "--server", h.base, "--max-jobs", "4", "--wait-ms", "5000", "--lease-ms", "3000"],
    { env: { ...process.env, ERRAND_TOKEN: TOKENS.worker }, stdio: ["ignore", "pipe", "pipe"] },
  );
  onTestFinished(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const events: Array<{ event: string; id: string; attempt: number }> = [];
  createInterface({ input: child.stdout }).on("line", (line) => events.push(JSON.parse(line)));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(stderr).toBe("");
  expect(code).toBe(0);

  expect(events.filter((e) => e.id === flaky).map((e) => [e.event, e.attempt])).toEqual([
    ["failed", 1],
    ["completed", 2],
  ]);
  const flakyJob = (await h.http("GET", `/v1/jobs/${flaky}`, { token: TOKENS.viewer })).body;
  expect(flakyJob).toMatchObject({ state: "completed", attempt: 2 });
  // The retry resumed from the checkpoint the first attempt saved: 64 was not redone.
  expect(flakyJob.result).toEqual({ file: "b.png", sizes: [64, 256, 1024], attempt: 2 });
  expect(flakyJob.errors).toHaveLength(1);
  expect(flakyJob.errors[0]).toMatchObject({ attempt: 1, message: "disk full after 64" });

  const fineJob = (await h.http("GET", `/v1/jobs/${fine}`, { token: TOKENS.viewer })).body;
  expect(fineJob).toMatchObject({ state: "completed", attempt: 1, result: { sizes: [64, 256] } });
  const refusedJob = (await h.http("GET", `/v1/jobs/${refused}`, { token: TOKENS.viewer })).body;
  expect(refusedJob).toMatchObject({ state: "dead", attempt: 1 });
  expect(refusedJob.errors[0].message).toBe("cannot process c.gif");
});

test("a Python worker waits out a server's 503 on a lease and sends its completion again", {
  timeout: 30_000,
}, async () => {
  const backend = someBackend();
  const h = await startServer(backend);
  // In front of the server, as a restart behind a load balancer would look: the first lease and
  // the first completion are answered 503 with Retry-After, the rest passed through.
  const refused = new Map<string, number>();
  const proxy = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const kind = req.url === "/v1/lease" ? "lease" : req.url?.endsWith("/complete") ? "complete" : "other";
    if (kind !== "other" && !refused.has(kind)) {
      refused.set(kind, 1);
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
      res.end(JSON.stringify({ code: "UNAVAILABLE", message: "draining", details: { retryAfterMs: 1000 } }));
      return;
    }
    const answer = await fetch(`${h.base}${req.url}`, {
      method: req.method!,
      headers: { "content-type": "application/json" },
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(await answer.text());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  const id = (await h.queue.enqueue("py-resize", { file: "d.png", sizes: [64] })).id;

  const child = spawn(
    "python3",
    [
      WORKER,
      "--server",
      `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      "--max-jobs",
      "1",
      "--wait-ms",
      "5000",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  onTestFinished(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const events: Array<{ event: string; id: string }> = [];
  createInterface({ input: child.stdout }).on("line", (line) => events.push(JSON.parse(line)));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect([...refused.keys()].sort()).toEqual(["complete", "lease"]);
  expect(events.map((e) => [e.event, e.id])).toEqual([["completed", id]]);
  expect(await h.queue.get(id)).toMatchObject({ state: "completed", attempt: 1 });
});
