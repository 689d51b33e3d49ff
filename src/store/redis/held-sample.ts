/**
 * The Redis store's part of `stats().limits`: lua/statsHeld.lua's arguments and its reply read into
 * held-back.ts's samples.
 * @module
 */
import {
  type HeldSample,
  type LimitStatsParams,
  limitStatsMany,
  rulesOf,
  type TypeLimitStats,
} from "../held-back.js";
import type { Arg } from "./transport.js";

/** statsHeld.lua's ARGV for `p`'s types at `now`. */
export function statsHeldArgs(p: LimitStatsParams, now: number): Arg[] {
  const args: Arg[] = [now, p.sampleLimit, p.types.length];
  for (const type of p.types) {
    const { keyRules, rateLimit } = rulesOf(p, type);
    args.push(
      type,
      keyRules.ordered ? "1" : "",
      keyRules.keyRateLimit?.periodMs ?? "",
      rateLimit?.periodMs ?? "",
    );
  }
  return args;
}

type TypeReply = [number, number, number, Array<string | number>];

/** `stats().limits` from statsHeld.lua's reply to {@link statsHeldArgs}. */
export function limitStatsFromReply(p: LimitStatsParams, reply: TypeReply[]): Record<string, TypeLimitStats> {
  const samples = new Map<string, HeldSample>();
  p.types.forEach((type, i) => {
    const [exact, unkeyed, typeStarts, flat] = reply[i]!;
    const sample: HeldSample = {
      exact: Number(exact) === 1,
      unkeyed: Number(unkeyed),
      typeStarts: Number(typeStarts),
      keys: new Map(),
    };
    for (let j = 0; j < flat.length; j += 5) {
      sample.keys.set(String(flat[j]), {
        ready: Number(flat[j + 1]),
        heads: Number(flat[j + 2]),
        active: Number(flat[j + 3]),
        starts: Number(flat[j + 4]),
      });
    }
    samples.set(type, sample);
  });
  return limitStatsMany(p, samples);
}
