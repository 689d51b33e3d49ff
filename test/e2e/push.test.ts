import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { signPush } from "../../src/server/index.js";
import { selectedBackends } from "../conformance/backend.js";
import { serve, startServer } from "./harness.js";

const SECRET = "push-secret-0123456789";

/** A downstream HTTP worker: answers each delivery by what its payload asks for. */
async function receiver() {
  // biome-ignore lint/suspicious/noExplicitAny: the delivered JSON, as the receiver sees it.
  const seen: Array<{ body: any; signatureOk: boolean }> = [];
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      // Where a redirect leads: a page that answers anything with success.
      if (req.method !== "POST") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ page: "login" }));
        return;
      }
      const body = JSON.parse(text);
      const ts = Number(req.headers["x-errand-timestamp"]);
      const signatureOk = req.headers["x-errand-signature"] === signPush(SECRET, ts, text);
      seen.push({ body, signatureOk });
      const answer = body.payload.answer as number;
      res.writeHead(answer, {
        "content-type": "application/json",
        ...(answer === 303 ? { location: "/login" } : {}),
      });
      res.end(
        answer === 200
          ? JSON.stringify({ echoed: body.payload.n })
          : answer === 422
            ? JSON.stringify({ retryable: false, message: "bad payload" })
            : "",
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen };
}

/**
 * A downstream that reads each delivery and lets `answer` reply to it; its push URL. Closed when the
 * test ends.
 */
// biome-ignore lint/suspicious/noExplicitAny: the delivered JSON, as the receiver sees it.
async function downstream(answer: (delivery: any, res: ServerResponse) => void): Promise<string> {
  const server = createHttpServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => answer(JSON.parse(text), res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

for (const backend of selectedBackends()) {
  describe(`push delivery on ${backend.name}`, () => {
    it("POSTs signed jobs and completes, waits for callbacks, retries or kills by the answer", async () => {
      const r = await receiver();
      const h = await startServer(backend, {
        types: [
          {
            type: "hook",
            maxAttempts: 3,
            backoff: { type: "fixed", delayMs: 1000 },
            push: { url: r.url, secret: SECRET, timeoutMs: 5000 },
          },
        ],
      });
      await h.queue.enqueue("hook", { answer: 200, n: 7 }, { id: "ok" });
      await h.queue.enqueue("hook", { answer: 202 }, { id: "later" });
      await h.queue.enqueue("hook", { answer: 422 }, { id: "bad" });
      await h.queue.enqueue("hook", { answer: 503 }, { id: "down" });
      // A redirect is no answer of the receiver's: followed, the POST would become a GET whose
      // success completed the job.
      await h.queue.enqueue("hook", { answer: 303 }, { id: "moved" });
      await vi.waitFor(
        async () => {
          const moved = await h.queue.get("moved");
          expect(moved?.state).toBe("pending");
          expect(moved?.errors[0]?.message).toMatch(/answered 303/);
          expect((await h.queue.get("ok"))?.state).toBe("completed");
          expect((await h.queue.get("bad"))?.state).toBe("dead");
          // Pending before its first delivery too: wait for the failed attempt itself.
          const down = await h.queue.get("down");
          expect(down?.state).toBe("pending");
          expect(down?.errors.length).toBe(1);
          expect(r.seen.map((s) => s.body.id)).toContain("later");
        },
        { interval: 10, timeout: 10_000 },
      );
      expect(r.seen.every((s) => s.signatureOk)).toBe(true);
      expect(r.seen.find((s) => s.body.id === "ok")!.body).toMatchObject({
        type: "hook",
        attempt: 1,
        payload: { answer: 200, n: 7 },
      });
      expect((await h.queue.get("ok"))?.result).toEqual({ echoed: 7 });
      expect((await h.queue.get("bad"))?.errors[0]?.message).toMatch(/422: bad payload/);
      const down = (await h.queue.get("down"))!;
      expect(down.errors[0]?.message).toMatch(/503/);
      expect(+down.runAt).toBe(h.clock.now() + 1000);

      // 202: the receiver calls back later with the attempt.
      expect((await h.queue.get("later"))?.state).toBe("active");
      const cb = await h.http("POST", "/v1/jobs/later/complete", { body: { attempt: 1, result: "async" } });
      expect(cb.status).toBe(200);
      expect((await h.queue.get("later"))?.result).toBe("async");

      // The retry is delivered again once its backoff passes.
      await h.clock.advance(1000);
      // Time keeps moving while waiting (the pusher's next poll may be armed after the step above),
      // so a third 503 attempt may follow: the first two are what this checks.
      await vi.waitFor(
        async () => {
          await h.clock.advance(100);
          const attempts = r.seen.filter((s) => s.body.id === "down").map((s) => s.body.attempt);
          expect(attempts.slice(0, 2)).toEqual([1, 2]);
        },
        { interval: 10, timeout: 10_000 },
      );
    });

    it("keeps no count for a type once its deliveries are over, so a deleted type leaves nothing behind", async () => {
      const r = await receiver();
      const h = await startServer(backend);
      for (const type of ["hook-a", "hook-b"]) {
        const put = await h.http("PUT", `/v1/types/${type}`, {
          body: { push: { url: r.url, secret: SECRET, timeoutMs: 5000 } },
        });
        expect(put.status).toBe(201);
        await h.queue.enqueue(type, { answer: 200, n: 1 }, { id: `${type}-job` });
      }
      await vi.waitFor(
        async () => {
          expect((await h.queue.get("hook-a-job"))?.state).toBe("completed");
          expect((await h.queue.get("hook-b-job"))?.state).toBe("completed");
          expect(h.app.errand.push.deliveriesUnderWay()).toEqual(new Map());
        },
        { interval: 10, timeout: 10_000 },
      );
      expect((await h.http("DELETE", "/v1/types/hook-a")).status).toBe(204);
      expect(h.app.errand.push.deliveriesUnderWay()).toEqual(new Map());
    });

    it("fails an attempt the receiver never answers within timeoutMs, and retries with the backoff", async () => {
      // Holds the first attempt of job "slow" open without a word; answers everything else.
      const held: Array<{ closed: Promise<void> }> = [];
      const answered: string[] = [];
      const silent = createHttpServer((req, res) => {
        const id = String(req.headers["x-errand-job-id"]);
        const attempt = Number(req.headers["x-errand-attempt"]);
        if (id === "slow" && attempt === 1) {
          held.push({ closed: new Promise((resolve) => res.once("close", () => resolve())) });
          return;
        }
        req.resume();
        req.on("end", () => {
          answered.push(`${id}#${attempt}`);
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ attempt }));
        });
      });
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
      onTestFinished(() => {
        silent.closeAllConnections();
        return new Promise<void>((resolve) => silent.close(() => resolve()));
      });
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`;
      const h = await startServer(backend, {
        types: [
          {
            type: "hook",
            maxAttempts: 3,
            backoff: { type: "fixed", delayMs: 5000 },
            push: { url, timeoutMs: 200 },
          },
        ],
      });
      // One answered delivery first: the held one then goes out on a connection the receiver has
      // already accepted, not racing its short timeout against a first connect.
      await h.queue.enqueue("hook", { n: 0 }, { id: "warm" });
      await vi.waitFor(async () => expect((await h.queue.get("warm"))?.state).toBe("completed"), {
        interval: 10,
        timeout: 10_000,
      });
      await h.queue.enqueue("hook", { n: 1 }, { id: "slow" });

      // The clock stands still here: the attempt fails by the push timeout alone.
      await vi.waitFor(async () => expect((await h.queue.get("slow"))?.errors).toHaveLength(1), {
        interval: 10,
        timeout: 10_000,
      });
      const failed = (await h.queue.get("slow"))!;
      expect(failed.state).toBe("pending");
      expect(failed.errors[0]).toMatchObject({ attempt: 1, kind: "push" });
      expect(failed.errors[0]!.message).toMatch(/push to .* timed out/);
      expect(+failed.runAt).toBe(h.clock.now() + 5000);
      // The server gave up on the request: the receiver sees its connection closed.
      expect(held).toHaveLength(1);
      await held[0]!.closed;
      expect(answered).toEqual(["warm#1"]);

      await h.clock.advance(5000);
      // Keep time moving while waiting: the pusher's next poll may be armed after that step.
      await vi.waitFor(
        async () => {
          await h.clock.advance(100);
          expect((await h.queue.get("slow"))?.state).toBe("completed");
        },
        { interval: 10, timeout: 10_000 },
      );
      const done = (await h.queue.get("slow"))!;
      expect(done).toMatchObject({ attempt: 2, result: { attempt: 2 } });
      expect(done.errors).toHaveLength(1);
      expect(answered).toEqual(["warm#1", "slow#2"]);
      expect(held).toHaveLength(1);
    });

    it("fails for good an answer of success too large to keep, and reads no more of one past twice the bound", async () => {
      // Answers each job with the JSON its payload names, `size` characters of it.
      const url = await downstream(({ payload }, res) => {
        const answer = payload.numbers
          ? `[${Array.from({ length: payload.numbers }, () => "1e20").join(",")}]`
          : JSON.stringify("x".repeat(payload.size));
        res.writeHead(200, { "content-type": "application/json" }).end(answer);
      });
      const bundle = await backend.setup({ maxPayloadBytes: 1000 });
      const h = { ...bundle, ...(await serve(bundle.queue, { types: [{ type: "hook", push: { url } }] })) };
      // 499 bytes sent, 2,099 stored: past the bound once kept.
      await h.queue.enqueue("hook", { numbers: 100 }, { id: "wide" });
      // Past twice the bound as sent: not read to its end.
      await h.queue.enqueue("hook", { size: 5000 }, { id: "long" });
      await h.queue.enqueue("hook", { size: 10 }, { id: "fine" });
      await vi.waitFor(
        async () => {
          expect((await h.queue.get("fine"))?.state).toBe("completed");
          expect((await h.queue.get("wide"))?.state).toBe("dead");
          expect((await h.queue.get("long"))?.state).toBe("dead");
        },
        { interval: 10, timeout: 10_000 },
      );
      expect((await h.queue.get("wide"))!.errors[0]).toMatchObject({
        kind: "push",
        message: expect.stringMatching(/answered 200: .*result/),
      });
      expect((await h.queue.get("long"))!.errors[0]).toMatchObject({
        kind: "push",
        message: expect.stringMatching(/answered 200 with more than 2000 bytes/),
      });
      expect((await h.queue.get("fine"))!.result).toBe("xxxxxxxxxx");
    });

    it("retries a success cut off mid-body, keeping no result, and takes a cut-off 202 as accepted", async () => {
      // Each answer promises 100 bytes and sends 10 before the connection drops.
      const answered: number[] = [];
      const url = await downstream(({ payload }, res) => {
        res.writeHead(payload.answer, { "content-type": "application/json", "content-length": "100" });
        res.write('{"partial"');
        setImmediate(() => {
          res.socket?.destroy();
          answered.push(payload.answer);
        });
      });
      const h = await startServer(backend, {
        types: [{ type: "hook", maxAttempts: 3, backoff: { type: "fixed", delayMs: 1000 }, push: { url } }],
      });
      await h.queue.enqueue("hook", { answer: 200 }, { id: "cut" });
      await h.queue.enqueue("hook", { answer: 202 }, { id: "accepted" });
      await vi.waitFor(
        async () => {
          expect((await h.queue.get("cut"))?.errors).toHaveLength(1);
          expect(answered).toContain(202);
        },
        { interval: 10, timeout: 10_000 },
      );
      // Closing waits for deliveries in flight: the 202's is over once it returns.
      await h.app.close();
      const job = (await h.queue.get("cut"))!;
      expect(job.state).toBe("pending");
      expect(job.result).toBeNull();
      expect(job.errors[0]).toMatchObject({
        kind: "push",
        message: expect.stringMatching(/answered 200, then failed mid-body/),
      });
      // The 202's attempt is the receiver's to report: still running, nothing failed.
      const accepted = (await h.queue.get("accepted"))!;
      expect(accepted.state).toBe("active");
      expect(accepted.errors).toEqual([]);
    });

    it("takes a 202 as accepted whatever its body's size: the receiver reports later", async () => {
      const accepted: string[] = [];
      const url = await downstream((delivery, res) => {
        accepted.push(delivery.id);
        res.writeHead(202, { "content-type": "text/plain" }).end("x".repeat(5000));
      });
      const bundle = await backend.setup({ maxPayloadBytes: 1000 });
      const h = { ...bundle, ...(await serve(bundle.queue, { types: [{ type: "hook", push: { url } }] })) };
      await h.queue.enqueue("hook", {}, { id: "later" });
      await vi.waitFor(() => expect(accepted).toEqual(["later"]), { interval: 10, timeout: 10_000 });
      // Closing waits for deliveries in flight: this one's is over once it returns.
      await h.app.close();
      expect(await h.queue.get("later")).toMatchObject({ state: "active", errors: [] });
    });

    it("retries when the receiver is down, and delivers once it is up", async () => {
      const h = await startServer(backend, {
        types: [
          { type: "hook", backoff: { type: "fixed", delayMs: 1000 }, push: { url: "http://127.0.0.1:1/x" } },
        ],
      });
      await h.queue.enqueue("hook", { answer: 200, n: 1 }, { id: "j" });
      await vi.waitFor(async () => expect((await h.queue.get("j"))?.errors).toHaveLength(1), {
        interval: 10,
        timeout: 10_000,
      });
      expect((await h.queue.get("j"))?.errors[0]?.message).toMatch(/push to .* failed/);
      const r = await receiver();
      await h.http("PUT", "/v1/types/hook", {
        body: { backoff: { type: "fixed", delayMs: 1000 }, push: { url: r.url } },
      });
      await h.clock.advance(1000);
      // The pusher's next poll may be armed after that step (its previous round still in flight):
      // keep time moving while waiting, as a real clock would.
      await vi.waitFor(
        async () => {
          await h.clock.advance(100);
          expect((await h.queue.get("j"))?.state).toBe("completed");
        },
        { interval: 10, timeout: 10_000 },
      );
    });
    it("pushes a rate-limited type's held-back job when its window opens, not at the next poll", async () => {
      const r = await receiver();
      const h = await startServer(backend, {
        // A poll far beyond the window: only the held-back timer can deliver in time.
        push: { pollIntervalMs: 600_000 },
        types: [{ type: "hook", rateLimit: { limit: 1, periodMs: 5000 }, push: { url: r.url } }],
      });
      await h.queue.enqueue("hook", { answer: 200, n: 1 }, { id: "first" });
      await h.queue.enqueue("hook", { answer: 200, n: 2 }, { id: "second" });
      await vi.waitFor(async () => expect((await h.queue.get("first"))?.state).toBe("completed"), {
        interval: 10,
      });
      await h.clock.advance(4999);
      expect((await h.queue.get("second"))?.state).toBe("pending");
      expect(r.seen.map((s) => s.body.id)).toEqual(["first"]);
      await h.clock.advance(1);
      await vi.waitFor(async () => expect((await h.queue.get("second"))?.state).toBe("completed"), {
        interval: 10,
      });
      expect(r.seen.map((s) => s.body.id)).toEqual(["first", "second"]);
    });

    it("keeps no held-back wake-up for a type deleted while its rate limit held it back", async () => {
      const r = await receiver();
      const h = await startServer(backend, { push: { pollIntervalMs: 600_000 } });
      const push = h.app.errand.push;
      const body = { rateLimit: { limit: 1, periodMs: 60_000 }, push: { url: r.url } };
      for (const type of ["hook-a", "hook-b", "hook-c"]) {
        expect((await h.http("PUT", `/v1/types/${type}`, { body })).status).toBe(201);
        const delivered = once(h.queue, "completed");
        await h.queue.enqueueMany(type, [
          { answer: 200, n: 1 },
          { answer: 200, n: 2 },
        ]);
        await delivered;
        // The second job waits for the window: a wake-up is set for when it opens, a minute on.
        expect(push.heldTypes).toBe(1);
        expect((await h.http("DELETE", `/v1/types/${type}`)).status).toBe(204);
        // Before: each deleted type's wake-up stayed until its window opened, so types made and
        // deleted over a server's life piled up.
        expect(push.heldTypes).toBe(0);
      }
      // A type set again is held back and woken as before: its waiting job goes when the window opens.
      expect((await h.http("PUT", "/v1/types/hook-c", { body })).status).toBe(201);
      await vi.waitFor(() => expect(push.heldTypes).toBe(1), { interval: 10 });
      const second = once(h.queue, "completed");
      await h.clock.advance(60_000);
      await second;
      expect(r.seen.map((s) => `${s.body.type}:${s.body.payload.n}`)).toEqual([
        "hook-a:1",
        "hook-b:1",
        "hook-c:1",
        "hook-c:2",
      ]);
    });

    it("delivers nothing a lease under way at close took: close waits for it, and the jobs go back unspent", async () => {
      const posted: string[] = [];
      const fetchSpy: typeof fetch = async (_url, init) => {
        posted.push(String(init?.body));
        return new Response("{}", { status: 200 });
      };
      const bundle = await backend.setup();
      // Every lease of push's waits at this gate, opened only once the close has stopped push. Set
      // before the server starts: a lease push began unwatched (its first, at start) could take
      // the job and deliver it (it did, on PostgreSQL, once in CI).
      const lease = bundle.queue.lease.bind(bundle.queue);
      const inLease = deferred();
      const gate = deferred();
      vi.spyOn(bundle.queue, "lease").mockImplementation(async (options, held) => {
        if (options?.workerId === "push:hook") {
          inLease.resolve();
          await gate.promise;
        }
        return lease(options, held);
      });
      const h = {
        ...bundle,
        ...(await serve(bundle.queue, {
          types: [{ type: "hook", push: { url: "http://127.0.0.1:9/hook" } }],
          push: { fetch: fetchSpy, pollIntervalMs: 600_000 },
        })),
      };
      const push = h.app.errand.push;
      const stop = push.stop.bind(push);
      vi.spyOn(push, "stop").mockImplementation(() => {
        const stopping = stop();
        gate.resolve();
        return stopping;
      });
      await h.queue.enqueue("hook", { n: 1 }, { id: "j", delivery: "at_most_once" });
      await inLease.promise;
      await h.app.close();
      // Before: close resolved with the lease still under way, which then POSTed the job after
      // it (or left it active, and an at-most-once job then went dead though delivered).
      expect(posted).toEqual([]);
      // Released as a closing Worker releases: pending, on the attempt it was leased as, no error.
      expect(await h.queue.get("j")).toMatchObject({ state: "pending", attempt: 1, errors: [] });
    });
  });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
