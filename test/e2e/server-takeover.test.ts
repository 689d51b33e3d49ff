/**
 * A server SIGKILLed mid-delivery, and a second server on the same store takes over: nothing is
 * lost. Server A (a child process) pushes to a receiver in this process that never answers the
 * first deliveries; A is killed while they hang; server B (another child) recovers A's leases
 * when they run out and delivers those jobs again as attempt 2, and the rest as attempt 1.
 * Real time across processes: every wait is on an event or a bounded `vi.waitFor`, never a sleep.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { openQueue, type Queue } from "../../src/index.js";
import { signPush } from "../../src/server/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { type Message, WorkerProcess } from "../integration/child-process.js";
import type { ServerInit } from "./server-process.js";

const SECRET = "takeover-secret-0123456789";
const SCRIPT = fileURLToPath(new URL("./server-process.ts", import.meta.url));
/** Jobs enqueued, and deliveries A has in flight (held open) when it is killed. */
const JOBS = 6;
const HELD = 3;
/** A's push lease: how long its jobs stay stuck after the kill. */
const LEASE_MS = 1000;

interface Delivery {
  id: string;
  attempt: number;
  headerAttempt: string | undefined;
  signatureOk: boolean;
  /** Held open, never answered (A's in-flight deliveries). */
  held: boolean;
}

/** A downstream HTTP worker that holds the first `hold` deliveries open and answers the rest 200. */
async function receiver(hold: number) {
  const deliveries: Delivery[] = [];
  const listeners = new Set<() => void>();
  let toHold = hold;
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      const body = JSON.parse(text);
      const ts = Number(req.headers["x-errand-timestamp"]);
      const held = toHold > 0;
      if (held) toHold--;
      deliveries.push({
        id: body.id,
        attempt: body.attempt,
        headerAttempt: req.headers["x-errand-attempt"] as string | undefined,
        signatureOk: req.headers["x-errand-signature"] === signPush(SECRET, ts, text),
        held,
      });
      for (const fn of listeners) fn();
      if (held) return; // never answered: the server that sent it dies waiting
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ handled: body.id, attempt: body.attempt }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    deliveries,
    /** Resolves once `n` deliveries have arrived (rejects after `timeoutMs`). */
    until(n: number, timeoutMs: number): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (deliveries.length < n) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`only ${deliveries.length} of ${n} deliveries arrived in ${timeoutMs} ms`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

/** A server process; rejects `ready` if it reports an error or exits first. */
async function serverProcess(init: ServerInit): Promise<{ child: WorkerProcess; errors: string[] }> {
  const child = new WorkerProcess(init as unknown as Record<string, unknown>, SCRIPT);
  children.push(child);
  const errors: string[] = [];
  child.on("error", (m) => errors.push(String(m.message)));
  await child.next<Message & { port: number }>("ready");
  return { child, errors };
}

const children: WorkerProcess[] = [];
let opened: Queue | undefined;

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => (c.alive ? c.kill() : undefined)));
  await opened?.close();
  opened = undefined;
});

for (const backend of selectedBackends().filter((b) => b.capabilities.multiProcess)) {
  describe(`server takeover on ${backend.name}`, () => {
    it("a server SIGKILLed mid-delivery loses nothing: another takes over, attempt 2", {
      timeout: 20_000,
    }, async () => {
      const started = Date.now();
      // A fresh store (its own file, schema or key prefix), shared with the children by URL; this
      // test reads it through a queue on the real clock, like the servers.
      const { url } = await backend.setup();
      const queue = await openQueue(url);
      opened = queue;
      const r = await receiver(HELD);
      const types = [
        {
          type: "hook",
          maxAttempts: 5,
          backoff: { type: "fixed" as const, delayMs: 10 },
          push: { url: r.url, secret: SECRET },
        },
      ];

      // Server A: HELD deliveries at a time, no maintenance of its own (so nothing but the kill
      // ends its leases), a short push lease.
      const a = await serverProcess({
        url,
        types,
        maintenance: false,
        push: { leaseMs: LEASE_MS, concurrency: HELD },
      });
      const ids = (
        await queue.enqueueMany(
          "hook",
          Array.from({ length: JOBS }, (_, n) => ({ n })),
        )
      ).map((j) => j.id);
      expect(new Set(ids).size).toBe(JOBS);

      // A has HELD jobs mid-delivery, each hanging at the receiver.
      await r.until(HELD, 10_000);
      const heldIds = r.deliveries.map((d) => d.id);
      expect(r.deliveries.every((d) => d.held && d.attempt === 1)).toBe(true);
      expect(new Set(heldIds).size).toBe(HELD);
      for (const id of heldIds) expect((await queue.get(id))?.state).toBe("active");
      expect(a.errors).toEqual([]);

      await a.child.kill();
      const beforeKill = r.deliveries.length;
      expect(beforeKill).toBe(HELD); // A could deliver no more: its concurrency was full

      // Server B on the same store: it delivers the jobs A never started, and once A's leases run
      // out, its sweep recovers A's jobs and delivers them again.
      const b = await serverProcess({
        url,
        types,
        maintenance: true,
        sweepIntervalMs: 100,
        push: { leaseMs: 5_000, pollIntervalMs: 100 },
      });
      await vi.waitFor(
        async () => {
          const states = await Promise.all(ids.map(async (id) => (await queue.get(id))?.state));
          expect(states).toEqual(ids.map(() => "completed"));
        },
        { interval: 50, timeout: 12_000 },
      );
      expect(b.errors).toEqual([]);

      // Nothing lost, nothing twice: after the kill each job was delivered exactly once, A's
      // in-flight ones as attempt 2 (the lease expiry cost them an attempt), the rest as attempt 1.
      const after = r.deliveries.slice(beforeKill);
      expect(after.every((d) => !d.held && d.signatureOk)).toBe(true);
      expect(r.deliveries.every((d) => d.signatureOk && d.headerAttempt === String(d.attempt))).toBe(true);
      expect(after.map((d) => d.id).sort()).toEqual([...ids].sort());
      for (const d of after) expect([d.id, d.attempt]).toEqual([d.id, heldIds.includes(d.id) ? 2 : 1]);

      for (const id of ids) {
        const job = (await queue.get(id))!;
        const attempt = heldIds.includes(id) ? 2 : 1;
        expect(job).toMatchObject({ state: "completed", attempt, result: { handled: id, attempt } });
        if (attempt === 2) expect(job.errors[0]?.message).toMatch(/lease expired/);
      }
      const stats = await queue.stats();
      expect(stats.states).toMatchObject({ pending: 0, active: 0, completed: JOBS, dead: 0 });

      await b.child.close();
      expect(Date.now() - started).toBeLessThan(20_000);
    });
  });
}
