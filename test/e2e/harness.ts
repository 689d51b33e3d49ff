/**
 * A real errand server on a random loopback port, over a fresh store from the conformance
 * backends, and a small fetch helper. Each test gets its own.
 */
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { onTestFinished, vi } from "vitest";
import type { ManualClock } from "../../src/clock.js";
import type { Queue } from "../../src/queue.js";
import { createServer, type ServerOptions } from "../../src/server/index.js";
import type { Backend, Bundle } from "../conformance/backend.js";

export interface Harness extends Bundle {
  app: FastifyInstance;
  base: string;
  /** One request; the body is JSON unless `raw` is given. */
  http(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; token?: string; headers?: Record<string, string> },
    // biome-ignore lint/suspicious/noExplicitAny: tests read any JSON the server answers.
  ): Promise<{ status: number; body: any; headers: Headers }>;
}

export const TOKENS = {
  admin: "admin-token-0123456789",
  producer: "producer-token-0123456789",
  worker: "worker-token-0123456789",
  viewer: "viewer-token-0123456789",
} as const;

export const ALL_TOKENS = Object.entries(TOKENS).map(([role, token]) => ({
  role: role as keyof typeof TOKENS,
  token,
}));

export async function startServer(
  backend: Backend,
  options: Omit<ServerOptions, "queue"> = {},
): Promise<Harness> {
  const bundle = await backend.setup();
  return { ...bundle, ...(await serve(bundle.queue, options)) };
}

/** Another server on `queue` (a second server on the same store, or one started again). */
export async function serve(
  queue: Queue,
  options: Omit<ServerOptions, "queue"> = {},
): Promise<Pick<Harness, "app" | "base" | "http">> {
  const app = await createServer({ queue, maintenance: false, ...options });
  await app.listen({ port: 0 });
  onTestFinished(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const http: Harness["http"] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) body = JSON.stringify(o.body);
    // As errand's client does: every change says JSON, body or not (the server refuses it otherwise).
    if (body !== undefined || (method !== "GET" && method !== "HEAD"))
      headers["content-type"] ??= "application/json";
    const r = await fetch(base + path, { method, headers, body });
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: r.status, body: parsed, headers: r.headers };
  };
  return { app, base, http };
}

/** Every job in the store, for "nothing changed" checks. */
export async function snapshot(h: Bundle): Promise<unknown> {
  const page = await h.queue.list({ limit: 1000 });
  return { jobs: page.jobs, schedules: await h.queue.schedules() };
}

/**
 * Moves `clock` on by `stepMs` at a time, letting the network answer between steps, until `done`
 * holds: a worker's resend or retry waits on its clock, and is due whenever the test's passes it.
 */
export async function advanceUntil(
  clock: ManualClock,
  done: () => boolean | Promise<boolean>,
  stepMs = 100,
): Promise<void> {
  await vi.waitFor(
    async () => {
      if (await done()) return;
      await clock.advance(stepMs);
      throw new Error(`not yet, at ${clock.now()}`);
    },
    { interval: 5, timeout: 10_000 },
  );
}
