/**
 * `errand stats`: jobs per queue and state, once or refreshed until Ctrl-C.
 * @module
 */
import type { Command } from "commander";
import { MAX_TIMER_MS } from "../../duration.js";
import { ErrandError } from "../../errors.js";
import type { QueueStats } from "../../queue.js";
import type { CliContext } from "../context.js";
import { timerDuration } from "../input.js";
import { clearScreen, print, table } from "../output.js";
import { onStop } from "../stop-signal.js";
import { act, type TargetCommandOptions, withTarget } from "../target.js";

/** Shortest `stats` refresh: a tighter loop only loads the store. */
const MIN_REFRESH_MS = 100;

/** Refresh period when `--watch` has no value. */
const DEFAULT_REFRESH_MS = 2000;

interface StatsOptions extends TargetCommandOptions {
  /** ms, or true for `--watch` without a value. */
  watch?: number | true;
  interval?: number;
}

/** Seconds as people write them: digits, maybe a fraction (not `0x10`, `1e3` or blanks). */
const DECIMAL_SECONDS = /^[0-9]+(?:\.[0-9]+)?$/;

/** `--watch [seconds]`'s value, in ms. */
function watchSeconds(v: string): number {
  const seconds = DECIMAL_SECONDS.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds * 1000 < MIN_REFRESH_MS || seconds * 1000 > MAX_TIMER_MS) {
    throw new ErrandError(
      "INVALID_OPTION",
      `--watch takes seconds from ${MIN_REFRESH_MS / 1000} to ${Math.floor(MAX_TIMER_MS / 1000)}, got ${v}`,
    );
  }
  return Math.round(seconds * 1000);
}

/** `--interval <duration>`: "500ms", "2s", or ms. */
function refreshInterval(v: string): number {
  const ms = timerDuration("--interval")(v);
  if (ms < MIN_REFRESH_MS) {
    throw new ErrandError("INVALID_OPTION", `--interval must be at least ${MIN_REFRESH_MS}ms, got ${v}`);
  }
  return ms;
}

const STATES = ["blocked", "pending", "active", "completed", "dead", "cancelled", "expired"] as const;

/** A table of queues by state with a total row, then the derived counts, then the held-back table. */
function statsText(s: QueueStats): string {
  const rows = Object.entries(s.queues).map(([q, c]) => [q, ...STATES.map((st) => String(c[st] ?? 0))]);
  return [
    table([["queue", ...STATES], ...rows, ["total", ...STATES.map((st) => String(s.states[st]))]]),
    `scheduled ${s.scheduled}  retrying ${s.retrying}  oldest ready ${Math.round(s.oldestPendingAgeMs / 1000)}s`,
    ...heldText(s),
  ].join("\n");
}

/**
 * Per type with rate limits or per-key rules: its ready jobs held back by each rule ("1000+" when
 * stats read only part of the backlog) and its busiest keys as `key ready/active`.
 */
function heldText(s: QueueStats): string[] {
  const types = Object.entries(s.limits);
  if (types.length === 0) return [];
  const rows = types.map(([type, { heldBack: h, busiestKeys }]) => {
    const n = (v: number) => (h.exact ? String(v) : `${v}+`);
    const keys = busiestKeys.slice(0, 3).map((k) => `${k.key} ${k.ready}/${k.active}`);
    return [type, n(h.rateLimit), n(h.keyConcurrency), n(h.order), keys.join(", ") || "-"];
  });
  return [
    "",
    "ready jobs held back now, by rule:",
    table([["type", "rate limit", "key cap", "order", "busiest keys (ready/active)"], ...rows]),
  ];
}

/**
 * Calls `show` every `everyMs` until SIGINT, SIGTERM or a closed standard output (resolves: exit
 * 0) or a refresh fails (rejects with its error, so the exit code is the error's). The next refresh
 * is timed from the end of the last, so a slow store never stacks them up.
 */
function refreshUntilStopped(everyMs: number, show: () => Promise<void>): Promise<void> {
  return new Promise<void>((done, fail) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = (error?: unknown) => {
      clearTimeout(timer);
      timer = undefined;
      stopListening();
      if (error === undefined) done();
      else fail(error);
    };
    const next = () => {
      timer = setTimeout(() => {
        show().then(() => {
          if (timer !== undefined) next();
        }, stop);
      }, everyMs);
    };
    const stopListening = onStop(() => stop());
    next();
  });
}

/** Registers `stats`. */
export function registerStats(program: Command, ctx: CliContext): void {
  withTarget(program.command("stats"))
    .description("jobs per queue and state")
    .option("--watch [seconds]", "refresh every few seconds (default 2)", watchSeconds)
    .option(
      "--interval <duration>",
      'refresh this often ("500ms", "5s", or ms); implies --watch',
      refreshInterval,
    )
    .hook("preAction", (cmd) => {
      // Before the action, so a contradiction is refused before the store is opened.
      const { watch, interval } = cmd.opts() as StatsOptions;
      if (typeof watch === "number" && interval !== undefined) {
        throw new ErrandError(
          "INVALID_OPTION",
          "give the refresh period once: --watch <seconds> or --interval",
        );
      }
    })
    .action(
      act(ctx, async ({ target }, o: StatsOptions) => {
        const show = async () => {
          const s = await target.stats();
          print(ctx, o, s, () => statsText(s));
        };
        await show();
        if (o.watch === undefined && o.interval === undefined) return;
        const everyMs = o.interval ?? (typeof o.watch === "number" ? o.watch : DEFAULT_REFRESH_MS);
        await refreshUntilStopped(everyMs, async () => {
          if (!o.json) clearScreen(ctx);
          await show();
        });
      }),
    );
}
