/**
 * How the property tests (test/property/) run: a fixed seed and a modest number of runs by
 * default, so `npm test` stays quick and repeatable; `ERRAND_FC_RUNS` and `ERRAND_FC_SEED` for a
 * longer or different run, e.g. `ERRAND_FC_RUNS=10000 ERRAND_FC_SEED=7 npx vitest run test/property`.
 */
import { appendFileSync } from "node:fs";
import fc from "fast-check";

/** The seed every property uses unless `ERRAND_FC_SEED` names another. */
export const DEFAULT_FC_SEED = 20_260_112;

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** The runs a property gets: `ERRAND_FC_RUNS` when set, else its own modest default. */
export function fcRuns(defaultRuns: number): number {
  return envInt("ERRAND_FC_RUNS") ?? defaultRuns;
}

/**
 * fast-check parameters for one property: the seed (fixed unless `ERRAND_FC_SEED`), the runs
 * ({@link fcRuns}), and failures reported with the shrunk counterexample and the replay path.
 */
export function fcParams<T>(defaultRuns: number, extra: fc.Parameters<T> = {}): fc.Parameters<T> {
  return {
    seed: envInt("ERRAND_FC_SEED") ?? DEFAULT_FC_SEED,
    numRuns: fcRuns(defaultRuns),
    ...extra,
  };
}

/**
 * A vitest timeout for a property test: `defaultMs` for the default runs, scaled with
 * `ERRAND_FC_RUNS` for a long run.
 */
export function propertyTimeout(defaultRuns: number, defaultMs: number): number {
  const runs = fcRuns(defaultRuns);
  return Math.max(defaultMs, Math.ceil((defaultMs * runs) / defaultRuns));
}

/**
 * Wraps a property's predicate for a catalogue run: with `ERRAND_FC_CATALOGUE=<file>` a failing
 * case is appended to `<file>` as one JSON line (`where`, the error and its causes, the case) and
 * the run goes on, so one long run lists every distinct failure instead of stopping at the first.
 * Without it the predicate is returned as it is.
 */
export function catalogued<A extends unknown[]>(
  where: string,
  predicate: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  const file = process.env.ERRAND_FC_CATALOGUE;
  if (!file) return predicate;
  return async (...args: A) => {
    try {
      await predicate(...args);
    } catch (error) {
      const causes: string[] = [];
      for (let e: unknown = error; e instanceof Error && causes.length < 4; e = e.cause) {
        causes.push(`${e.name}: ${e.message}`.slice(0, 400));
      }
      const line = { where, errors: causes, case: fc.stringify(args).slice(0, 600) };
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    }
  };
}
