/**
 * How the PostgreSQL store claims: one statement per queue share (see {@link planClaimAsync}),
 * taking ready rows with `FOR UPDATE SKIP LOCKED`, and, for capped types, a transaction that holds
 * an advisory lock per capped type while it counts their active jobs, so no two claimers can both
 * see the same free room. Types with per-key rules (keyConcurrency, ordered) add the same per
 * (type, key) met in the claim ({@link KeyRoom}). Rate limits count a type's starts under the same
 * lock as its cap, and a key's under the key's lock, and take their room as caps do ({@link Rates}).
 *
 * Every claim statement is given its open types: the types it names (or, naming none, the queue's
 * pending types, read once per claim by a loose index scan), less those at their cap or out of
 * rate. It walks each one on the claim index (queue, type, priority DESC, run_at, id) and merges
 * them in claim order (queries/claim.sql), so a held type, however large its backlog, is not read;
 * with no open type left, no statement runs.
 *
 * A claim of one type from one queue whose only rule is a cap, or per-key rules (keyConcurrency,
 * ordered, fair) with no cap or rate limit, is one statement, its own transaction
 * ({@link claimCappedAlone}, {@link claimKeyedAlone}): the SQL functions errand_cap_room and
 * errand_key_room (migration 0009) take the locks and then count in a snapshot of their own, which
 * one statement alone could not (its snapshot predates the lock).
 * @module
 */
import type { JobRecord } from "../../job.js";
import { claimOrder } from "../claim-order.js";
import { planClaimAsync } from "../claim-plan.js";
import type { StatementName } from "../generated/postgres-queries.js";
import { type ClaimParams, holdUntil, type KeyRules, rateScope } from "../store.js";
import { bandedTexts } from "./bands.js";
import { CLAIMED_COLUMNS, claimedRecord } from "./claimed-row.js";
import { CAP_LOCK, KEY_LOCK } from "./columns.js";
import type { PgConnection, Queryable } from "./connection.js";
import { fairAdvanceText, fairStatements } from "./fair.js";
import { literalLimits } from "./literal-limit.js";
import { oneTypeStatements } from "./one-type.js";
import { Rates } from "./rates.js";

/** Leases up to `p.limit` ready jobs to `p.workerId` (`Store.claim`), in claim order. */
export async function claimJobs(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  p: ClaimParams,
): Promise<JobRecord[]> {
  // A claim of several types from one queue, one of them keyed as claimKeyedAlone takes it: first
  // the types with pending jobs (queueTypes, a few index descents), so that a worker of many types
  // whose keyed type alone has work takes the one-statement path, not the general keyed one (eight
  // round trips). One round trip more when several have work; none of the rest when none has.
  if (
    p.types !== undefined &&
    p.types.length > 1 &&
    p.queues.length === 1 &&
    p.types.some((t) => keyedInOneStatement(p, t))
  ) {
    const rows = await connection.op("pool", (db) =>
      connection.query<{ type: string }>(db, sql.queueTypes, [p.queues[0]!.name]),
    );
    const pending = new Set(rows.map((r) => r.type));
    const types = p.types.filter((t) => pending.has(t));
    if (types.length === 0) return [];
    return claimFor(connection, sql, { ...p, types });
  }
  return claimFor(connection, sql, p);
}

function claimFor(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  p: ClaimParams,
): Promise<JobRecord[]> {
  // One queue, one type whose rules need nothing counted before the claim (per-key rules) or only
  // the cap: one statement, its own transaction (claimKeyedAlone, claimCappedAlone).
  const lone = p.types?.length === 1 && p.queues.length === 1 ? p.types[0]! : null;
  if (lone !== null && keyedInOneStatement(p, lone)) {
    return claimKeyedAlone(connection, sql, p, lone, ruleOf(p.keyRules, lone)!.fair === true);
  }
  const cap = lone !== null ? ruleOf(p.concurrencyLimits, lone) : undefined;
  const rule = lone !== null ? ruleOf(p.keyRules, lone) : undefined;
  if (
    cap !== undefined &&
    ruleOf(p.rateLimits, lone!) === undefined &&
    (rule === undefined ||
      (rule.keyConcurrency === undefined &&
        rule.ordered !== true &&
        rule.keyRateLimit === undefined &&
        rule.fair !== true))
  ) {
    return claimCappedAlone(connection, sql, p, lone!, cap);
  }
  return claimGeneral(connection, sql, p);
}

/**
 * A claim of one capped type from one queue, with no other rule: claimCapped's one-type form with
 * the room counted in the statement (one-type.ts claimCappedAlone: errand_cap_room takes the cap
 * lock and counts, before any row is locked), run as its own transaction. Jobs passed over can
 * only be the cap's, which then has no room left: one statement is the whole claim.
 */
async function claimCappedAlone(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  p: ClaimParams,
  type: string,
  cap: number,
): Promise<JobRecord[]> {
  const text = bandedTexts(sql)(oneTypeStatements(sql).claimCappedAlone);
  const rows = await connection.op("pool", (db) =>
    connection.query<unknown[]>(
      db,
      text,
      [
        p.queues[0]!.name,
        p.now,
        p.limit,
        p.weightCap !== undefined && Number.isFinite(p.weightCap) ? p.weightCap : null,
        p.maxWeight !== undefined && Number.isFinite(p.maxWeight) ? p.maxWeight : null,
        p.workerId,
        p.now + p.leaseMs,
        [type],
        cap,
        CAP_LOCK,
      ],
      true,
    ),
  );
  const out: JobRecord[] = [];
  for (const row of rows)
    if (row[0] !== null) out.push(claimedRecord(row, p.workerId, p.now + p.leaseMs, p.now));
  return out.sort(claimOrder);
}

/**
 * `record[type]` when `type` is one of its own keys: a claim's rules are read through their own
 * keys only (ClaimParams), so a type named `toString` finds no rule it was not given.
 */
function ruleOf<T>(record: Readonly<Record<string, T>> | undefined, type: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, type) ? record[type] : undefined;
}

/**
 * Whether `type`'s claim may take its jobs in one statement with its per-key rules
 * (fairClaimKeyed, or its usual-order form): keyConcurrency or ordered, and nothing counted before
 * the claim (no cap, no rate limit of its own or per key).
 */
function keyedInOneStatement(p: ClaimParams, type: string): boolean {
  const rule = ruleOf(p.keyRules, type);
  return (
    rule !== undefined &&
    (rule.keyConcurrency !== undefined || rule.ordered === true) &&
    rule.keyRateLimit === undefined &&
    ruleOf(p.concurrencyLimits, type) === undefined &&
    ruleOf(p.rateLimits, type) === undefined
  );
}

/** claimJobs' general path: one transaction, or one statement for the simplest claims. */
async function claimGeneral(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  p: ClaimParams,
): Promise<JobRecord[]> {
  const filterTypes = p.types && p.types.length > 0 ? p.types : null;
  const capped = p.concurrencyLimits
    ? Object.keys(p.concurrencyLimits)
        .filter((t) => !filterTypes || filterTypes.includes(t))
        .sort()
    : [];
  const ruled = p.keyRules
    ? Object.keys(p.keyRules)
        .filter((t) => !filterTypes || filterTypes.includes(t))
        .filter((t) => {
          const r = p.keyRules![t]!;
          return r.keyConcurrency !== undefined || r.ordered === true || r.keyRateLimit !== undefined;
        })
        .sort()
    : [];
  const fairTypes = p.keyRules
    ? Object.keys(p.keyRules).filter((t) => p.keyRules![t]!.fair && (!filterTypes || filterTypes.includes(t)))
    : [];
  const fair = fairTypes.length > 0 ? fairStatements(sql) : null;
  const one = oneTypeStatements(sql);
  const rated = p.rateLimits
    ? Object.keys(p.rateLimits)
        .filter((t) => !filterTypes || filterTypes.includes(t))
        .sort()
    : [];
  const keyRatedTypes = ruled.filter((t) => p.keyRules![t]!.keyRateLimit !== undefined);
  const keyRated = keyRatedTypes.length > 0;
  if (keyRated) {
    // Keys parked by their rate limit whose window has opened come back first (migration 0011).
    const { next } = await wakeParked(connection, sql, p.now, keyRatedTypes, null);
    holdUntil(p.held, next);
  }
  // One queue, no caps, no per-key rules, no fair types and no rate limits: a single statement,
  // atomic by itself. Otherwise one transaction, so the locks hold throughout and a fault leaves
  // no share claimed and unreported.
  const mode =
    capped.length === 0 && ruled.length === 0 && rated.length === 0 && !fair && p.queues.length === 1
      ? "pool"
      : "tx";
  return connection.op(mode, async (db) => {
    const rates = rated.length > 0 || keyRated ? new Rates(connection, sql, db, p.now) : null;
    const keys = ruled.length > 0 ? new KeyRoom(connection, db, p.keyRules!, ruled, rates) : null;
    const room = new Map<string, number>();
    if (capped.length > 0 || rated.length > 0) {
      // A rate-limited type's window is counted under its cap lock, taken with the capped types'
      // in the one type order (lockCaps sorts), so every claimer takes them in the same order.
      const locked = rated.length === 0 ? capped : [...new Set([...capped, ...rated])];
      await connection.query(db, sql.lockCaps, [CAP_LOCK, locked]);
    }
    if (capped.length > 0) {
      for (const t of capped) room.set(t, p.concurrencyLimits![t]!);
      const counts = await connection.query<{ type: string; n: number }>(db, sql.countActive, [capped]);
      for (const { type, n } of counts) room.set(type, room.get(type)! - n);
    }
    if (rates && rated.length > 0) {
      const free = await rates.count(rated.map((type) => ({ type, key: null, rule: p.rateLimits![type]! })));
      for (const [type, n] of free) room.set(type, Math.min(room.get(type) ?? n, n));
    }
    const weightCap = p.weightCap ?? Number.POSITIVE_INFINITY;
    let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
    const leaseExpiresAt = p.now + p.leaseMs;
    const excludedTypes = (): string[] => [...room].filter(([, n]) => n <= 0).map(([t]) => t);
    /** Each queue's pending types (queueTypes), for a claim that names none; read once per claim. */
    const pendingTypes = new Map<string, string[]>();
    /**
     * The types a statement of `queue`'s share walks: the claim's types, or the queue's pending
     * types, less those held back (at their cap, or their rate limit spent). Each is walked from
     * its first job on the claim index (queue, type, ...); a held type is not read at all.
     */
    const openTypes = async (queue: string): Promise<string[]> => {
      let types = filterTypes ?? pendingTypes.get(queue);
      if (types === undefined) {
        const rows = await connection.query<{ type: string }>(db, sql.queueTypes, [queue]);
        types = rows.map((r) => r.type);
        pendingTypes.set(queue, types);
      }
      const excluded = excludedTypes();
      return excluded.length === 0 ? [...types] : types.filter((t) => !excluded.includes(t));
    };

    /**
     * One claim statement: up to `want` jobs of `queue` (of `types`), in the usual order, or with
     * `turnOf`, the turned jobs of that fair type in turn order; with fair types in the claim and
     * no `turnOf`, their turned jobs are left out (their slots were filled by turn).
     */
    const step = async (queue: string, want: number, turnOf: string | null, out: JobRecord[]) => {
      const types = turnOf !== null ? [turnOf] : await openTypes(queue);
      // No type left to take: no statement.
      if (types.length === 0) return { overflow: false, again: false };
      let discovered = false;
      if (keys) {
        discovered = await keys.discover(
          queue,
          p.now,
          want,
          types,
          bandedTexts(sql)(turnOf === null ? sql.keyPeek : fair!.turn.keyPeek),
        );
      }
      const capTypes: string[] = [];
      const capRoom: number[] = [];
      for (const [t, n] of room) {
        if (n > 0) {
          capTypes.push(t);
          capRoom.push(n);
        }
      }
      const values: unknown[] = [
        queue,
        p.now,
        want,
        Number.isFinite(weightCap) ? weightCap : null,
        Number.isFinite(budget) ? budget : null,
        p.workerId,
        leaseExpiresAt,
        types,
      ];
      const texts =
        fair !== null ? (turnOf !== null ? fair.turn : fair.rest) : types.length === 1 ? one : sql;
      let text = texts.claim;
      if (keys) {
        values.push(capTypes, capRoom, ruled, ...keys.open());
        text = texts.claimKeyed;
      } else if (capTypes.length > 0) {
        values.push(capTypes, capRoom);
        text = texts.claimCapped;
      }
      if (fair !== null && turnOf === null) values.push(fairTypes);
      // Its limit written in and its other values out of the planner's sight, the claim keeps one
      // plan rather than being planned on every call (literal-limit.ts).
      // Each walk by priority band (bands.ts).
      const run = literalLimits(sql).statement(bandedTexts(sql)(text), values);
      const rows = await connection.query<unknown[]>(db, run.text, run.values, true);
      const took = takeClaimed(rows, p, weightCap, room, keys, rates, out);
      budget -= took.weight;
      return { overflow: took.overflow, again: took.skipped || discovered };
    };

    /** Whether `type`, a share's one open type, takes the one-statement turn step (fairClaimKeyed). */
    const fairKeyed = (type: string): boolean => fairTypes.includes(type) && keyedInOneStatement(p, type);
    /** Per fair keyed type: the keys fairClaimKeyed found closed, and those it has peeked at. */
    const fairKeys = new Map<string, { closed: Set<string>; seen: Set<string> }>();
    /**
     * The turn step of a share whose one open type is fair and keyed (see fairKeyed), in one
     * statement: the type's slots, its keys' locks and counts, and the claim of up to `slots` of
     * its turned jobs. Its keys' locks are KeyRoom's (`keys.locked`: waited for only while the
     * claim holds none), and the jobs it takes count against KeyRoom's rooms.
     */
    const fairKeyedStep = async (queue: string, want: number, type: string, out: JobRecord[]) => {
      let state = fairKeys.get(type);
      if (state === undefined) {
        state = { closed: new Set(), seen: new Set() };
        fairKeys.set(type, state);
      }
      const r = await runKeyedClaim(connection, bandedTexts(sql)(sql.fairClaimKeyed), db, p, {
        queue,
        want,
        type,
        budget: Number.isFinite(budget) ? budget : null,
        state,
        wait: !keys!.locked,
        advance: false,
      });
      if (r.locked) keys!.markLocked();
      for (const record of r.jobs) {
        budget -= Math.min(record.weight, weightCap);
        keys!.take(record);
        rates?.take(record);
        out.push(record);
      }
      return r;
    };

    const taken = await planClaimAsync(p.queues, p.limit, p.random ?? Math.random, async (queue, count) => {
      const out: JobRecord[] = [];
      for (let round = 0; ; round++) {
        let again = false;
        const open = fair ? await openTypes(queue) : [];
        let rest = true;
        if (open.length === 1 && fairKeyed(open[0]!)) {
          const r = await fairKeyedStep(queue, count - out.length, open[0]!, out);
          if (r.overflow) return { taken: out, full: true };
          again ||= r.again;
          // Every one of the first jobs in the usual order has a turn: no job for the rest step.
          rest = r.slots < count - out.length + r.jobs.length;
        } else if (fair) {
          // The slots the usual order gives each fair type, filled by turn.
          const slots = open.some((t) => fairTypes.includes(t))
            ? await connection.query<{ type: string; n: number }>(db, bandedTexts(sql)(sql.fairSlots), [
                queue,
                p.now,
                count - out.length,
                open,
                fairTypes,
              ])
            : [];
          for (const { type, n } of slots) {
            const r = await step(queue, n, type, out);
            if (r.overflow) return { taken: out, full: true };
            again ||= r.again;
          }
        }
        if (rest && out.length < count) {
          const r = await step(queue, count - out.length, null, out);
          if (r.overflow) return { taken: out, full: true };
          again ||= r.again;
        }
        // Rows of a type that just hit its cap, or of a key that just hit its own, were passed
        // over: look again without them. Keys met for the first time this round: look again for
        // more. Every round closes a type or a key, or takes jobs; the bound is a backstop.
        if (out.length === count || !again || round === MAX_ROUNDS) {
          return { taken: out, full: budget <= 0 };
        }
      }
    });
    if (fair && taken.length > 0)
      connection.atCommit(
        db,
        fairAdvanceText(
          sql,
          taken.map((j) => j.id),
        ),
      );
    await rates?.finish(
      p.queues.map((q) => q.name),
      p.limit,
      filterTypes,
      p.held,
    );
    if (keys) holdUntil(p.held, await parkKeys(connection, sql, db, keys.parkable(), p.now));
    taken.sort(claimOrder);
    return taken;
  });
}

/**
 * A claim statement's rows added to `out` as records, each counted against its type's room, its
 * key's and its rate's; with the flags of the statement's last row, and the weight taken.
 *
 * A function of its own, not a loop in the claim's `step`: run for every claimed job, the loop made
 * V8 optimise the whole of that large async closure in every worker process (~34 ms of TurboFan
 * compile in a traced 5,000-job drain). Here only this loop is optimised (~9 ms): a fresh worker
 * process's first 5,000 jobs take ~55 M fewer instructions (−3% of the process; a 20,000-job
 * drain −75 M, callgrind, bench/RESULTS.md session 23).
 */
function takeClaimed(
  rows: readonly unknown[][],
  p: ClaimParams,
  weightCap: number,
  room: Map<string, number>,
  keys: KeyRoom | null,
  rates: Rates | null,
  out: JobRecord[],
): { overflow: boolean; skipped: boolean; weight: number } {
  let overflow = false;
  let skipped = false;
  let weight = 0;
  for (const row of rows) {
    if (row[0] === null) {
      overflow = row[CLAIMED_COLUMNS] === true;
      skipped = row[CLAIMED_COLUMNS + 1] === true;
      continue;
    }
    const record = claimedRecord(row, p.workerId, p.now + p.leaseMs, p.now);
    weight += Math.min(record.weight, weightCap);
    const left = room.get(record.type);
    if (left !== undefined) room.set(record.type, left - 1);
    keys?.take(record);
    rates?.take(record);
    out.push(record);
  }
  return { overflow, skipped, weight };
}

/** What one fairClaimKeyed statement (or its usual-order form) did (see {@link runKeyedClaim}). */
interface KeyedRun {
  /** The jobs it leased, in claim order. */
  jobs: JobRecord[];
  /** A job did not fit the weight budget: the claim is full. */
  overflow: boolean;
  /** Another round may find more: jobs were passed over, or keys met for the first time. */
  again: boolean;
  /** The type's slots: how many of its first `want` ready jobs in the usual order have a turn. */
  slots: number;
  /** It took key locks (the claim now holds some). */
  locked: boolean;
  /** Locked keys left without room whose jobs it passed over: to park (migration 0011). */
  parkable: string[];
}

/**
 * One fairClaimKeyed statement (queries/fair.sql), `text`: the turn step of a share whose one open
 * type, `a.type`, is fair and keyed, with nothing counted before it (no cap, no rate limit of its
 * own or per key); or its usual-order form (fair.ts usualKeyed), a keyed type's claim that is not
 * fair. `a.state` carries the keys found closed and those seen across the rounds of one claim;
 * `a.wait`: the claim holds no key lock yet (KeyRoom); `a.advance`: move the type's turn in the
 * statement itself, for a statement that is its transaction (otherwise fairAdvance runs at the
 * commit, as it must come last).
 */
async function runKeyedClaim(
  connection: PgConnection,
  text: string,
  db: Queryable,
  p: ClaimParams,
  a: {
    queue: string;
    want: number;
    type: string;
    budget: number | null;
    state: { closed: Set<string>; seen: Set<string> };
    wait: boolean;
    advance: boolean;
  },
): Promise<KeyedRun> {
  const rule = ruleOf(p.keyRules, a.type)!;
  const rows = await connection.query<unknown[]>(
    db,
    text,
    [
      a.queue,
      p.now,
      a.want,
      p.weightCap !== undefined && Number.isFinite(p.weightCap) ? p.weightCap : null,
      a.budget,
      p.workerId,
      p.now + p.leaseMs,
      a.type,
      [...a.state.closed],
      KEY_LOCK,
      a.wait,
      rule.keyConcurrency ?? null,
      rule.ordered === true,
      a.advance,
    ],
    true,
  );
  const out: KeyedRun = { jobs: [], overflow: false, again: false, slots: 0, locked: false, parkable: [] };
  for (const row of rows) {
    if (row[0] !== null) {
      out.jobs.push(claimedRecord(row, p.workerId, p.now + p.leaseMs, p.now));
      continue;
    }
    out.overflow = row[CLAIMED_COLUMNS] === true;
    out.again = row[CLAIMED_COLUMNS + 1] === true;
    out.slots = row[CLAIMED_COLUMNS + 2] as number;
    for (const k of row[CLAIMED_COLUMNS + 3] as string[]) a.state.closed.add(k);
    const seen = row[CLAIMED_COLUMNS + 4] as string[];
    out.parkable = row[CLAIMED_COLUMNS + 5] as string[];
    out.locked = seen.length > 0;
    for (const k of seen) {
      if (!a.state.seen.has(k)) {
        out.again = true;
        a.state.seen.add(k);
      }
    }
  }
  return out;
}

/**
 * A claim of one keyed type from one queue (see claimJobs): its first statement on its own, as its
 * own transaction (fairClaimKeyed, or for a type that is not fair its usual-order form), which
 * also moves a fair type's turn; most claims need no other. What it left (another round, or for a
 * fair type the rest step for jobs without a turn) is claimed by the general path, in a
 * transaction of its own: a fault there leaves the first statement's jobs claimed and returned.
 */
async function claimKeyedAlone(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  p: ClaimParams,
  type: string,
  fair: boolean,
): Promise<JobRecord[]> {
  const text = bandedTexts(sql)(fair ? sql.fairClaimKeyed : fairStatements(sql).keyedAlone);
  const first = await connection.op("pool", (db) =>
    runKeyedClaim(connection, text, db, p, {
      queue: p.queues[0]!.name,
      want: p.limit,
      type,
      budget: p.maxWeight !== undefined && Number.isFinite(p.maxWeight) ? p.maxWeight : null,
      state: { closed: new Set(), seen: new Set() },
      wait: true,
      advance: fair,
    }),
  );
  if (!fair && first.parkable.length > 0) {
    const rule = ruleOf(p.keyRules, type)!;
    const park = first.parkable.map((key) => ({ type, key, rule }));
    // After the claim's commit, in a statement of its own: errand_key_park needs no key lock (it
    // parks only under share locks on what keeps the key full), and the claim's jobs are taken
    // whether or not it succeeds: parking only spares later claims the walk.
    await connection.op("pool", (db) => parkKeys(connection, sql, db, park, p.now)).catch(() => undefined);
  }
  const n = first.jobs.length;
  if (first.overflow || n === p.limit || (!first.again && first.slots >= p.limit)) {
    return first.jobs.sort(claimOrder);
  }
  const cap = p.weightCap ?? Number.POSITIVE_INFINITY;
  const used = first.jobs.reduce((sum, j) => sum + Math.min(j.weight, cap), 0);
  const more = await claimGeneral(connection, sql, {
    ...p,
    limit: p.limit - n,
    ...(p.maxWeight !== undefined ? { maxWeight: p.maxWeight - used } : {}),
  });
  return [...first.jobs, ...more].sort(claimOrder);
}

/**
 * The most jobs one claim parks (migration 0011), so its write stays short (10,000 took ~0.5 s, each
 * row written with its index entries): a longer backlog is parked by the claims after it that meet
 * the key again.
 */
const PARK_MOST = 10_000;

/** A (type, key) whose ready jobs a claim passed over, with its type's rules. */
interface ParkKey {
  type: string;
  key: string;
  rule: KeyRules;
}

/**
 * Parks the ready jobs of `keys` that cannot start another job (parkKeys: errand_key_park, which
 * decides under its own share locks, so a key given in error is left as it is).
 */
async function parkKeys(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  db: Queryable,
  keys: readonly ParkKey[],
  now: number,
): Promise<number | null> {
  if (keys.length === 0) return null;
  const rate = (k: ParkKey) => k.rule.keyRateLimit;
  const rows = await connection.query<{ parked: number; wake: number | null }>(db, sql.parkKeys, [
    keys.map((k) => k.type),
    keys.map((k) => k.key),
    keys.map((k) => k.rule.keyConcurrency ?? null),
    keys.map((k) => k.rule.ordered === true),
    keys.map((k) => (rate(k) ? rateScope(k.type, k.key) : null)),
    keys.map((k) => rate(k)?.limit ?? null),
    keys.map((k) => rate(k)?.periodMs ?? null),
    now,
    PARK_MOST,
  ]);
  return rows[0]?.wake ?? null;
}

/**
 * Puts back the jobs parked by a key's rate limit whose window has opened (wakeParked), for
 * `types` (null: all); returns the next wake still set for them. Run on its own, outside any
 * claim's transaction (queries/claim.sql says why).
 */
export async function wakeParked(
  connection: PgConnection,
  sql: Record<StatementName, string>,
  now: number,
  types: readonly string[] | null,
  notifyTag: string | null,
): Promise<{ woken: number; next: number | null }> {
  const [row] = await connection.op("pool", (db) =>
    connection.query<{ woken: number; next: number | null }>(db, sql.wakeParked, [now, types, notifyTag]),
  );
  return { woken: row?.woken ?? 0, next: row?.next ?? null };
}

/** The most rounds (claim statements) one queue share takes before it returns what it has. */
const MAX_ROUNDS = 32;

/** One (type, key)'s room in a claim: how many more of its jobs may start, and which one. */
interface KeyState {
  /** Jobs of the key this claim may still start (0: closed). */
  room: number;
  /** Under `ordered`, the key's earliest hot job: the only one that may start; else null. */
  first: string | null;
  /** Its lock is held: this claim counted it. */
  locked: boolean;
  /** Its running jobs when counted. */
  active: number;
  /** Its jobs in the window that found it. */
  seen: number;
  /** Its jobs this claim took. */
  taken: number;
  /** Starts its keyRateLimit's window had room for when counted; null: no such limit. */
  rateFree: number | null;
}

/**
 * The (type, key)s of a claim's types with per-key rules. Before a key's jobs can be claimed, its
 * advisory lock is held (so no other claimer counts the same room) and its room counted. Keys are
 * found by peeking at the share's next candidates (keyPeek, a plain read that locks no row), which
 * hands them to errand_key_room (migration 0009) to be locked and counted in the same round trip.
 *
 * Deadlocks: the first keys a claim meets are locked with waiting locks in one statement, in hash
 * order, while the transaction holds no key lock (cap locks, which every claimer takes first, may
 * be held); keys met later in the same claim only with try-locks, and a key whose lock another
 * claimer holds is closed for this claim (that claimer is starting its jobs). So, but within that
 * one statement's hash order, a claimer holding key locks never waits for another lock (nor does
 * any claimer wait for a row: SKIP LOCKED): no cycle of waits can form.
 */
class KeyRoom {
  readonly #connection: PgConnection;
  readonly #db: Queryable;
  readonly #rules: Record<string, KeyRules>;
  readonly #ruled: string[];
  readonly #rates: Rates | null;
  /** The ruled types that are `ordered`: only theirs need a key's earliest job. */
  readonly #ordered: string[];
  /** By `type \u001f key` (a Map: keys are user-supplied names). */
  readonly #known = new Map<string, KeyState & { type: string; key: string }>();
  #locked = false;

  constructor(
    connection: PgConnection,
    db: Queryable,
    rules: Record<string, KeyRules>,
    ruled: string[],
    rates: Rates | null,
  ) {
    this.#connection = connection;
    this.#db = db;
    this.#rules = rules;
    this.#ruled = ruled;
    this.#rates = rates;
    this.#ordered = ruled.filter((t) => rules[t]!.ordered === true);
  }

  /**
   * Locks and counts the keys among the share's next `limit` candidates not met before (closed
   * keys left out of the window); `true` when there were any.
   */
  async discover(
    queue: string,
    now: number,
    limit: number,
    types: readonly string[],
    peek: string,
  ): Promise<boolean> {
    // Jobs that cannot start in this claim are left out of the peek's window: a closed key's, and
    // an open ordered key's but its earliest (were they in it, a busy key's backlog would fill the
    // window claim after claim, and the keys behind it would never be found). Open keys are
    // neither locked nor counted again.
    const heldTypes: string[] = [];
    const heldKeys: string[] = [];
    const firsts: string[] = [];
    const openTypes: string[] = [];
    const openKeys: string[] = [];
    for (const k of this.#known.values()) {
      if (k.room > 0) {
        openTypes.push(k.type);
        openKeys.push(k.key);
        if (k.first === null) continue;
        firsts.push(k.first);
      }
      heldTypes.push(k.type);
      heldKeys.push(k.key);
    }
    // One round trip: the peek, the keys' locks and their counts (errand_key_room, migration 0009).
    const found = await this.#connection.query<{
      type: string;
      key: string;
      ok: boolean;
      active: number | null;
      first: string | null;
      n: number;
    }>(this.#db, peek, [
      queue,
      now,
      limit,
      types,
      this.#ruled,
      heldTypes,
      heldKeys,
      KEY_LOCK,
      !this.#locked,
      openTypes,
      openKeys,
      this.#ordered,
      firsts,
    ]);
    if (found.length === 0) return false;
    this.#locked = true;
    const states: Array<{ type: string; key: string; active: number; first: string | null; n: number }> = [];
    for (const f of found) {
      if (f.ok) states.push({ type: f.type, key: f.key, active: f.active ?? 0, first: f.first, n: f.n });
      else {
        this.#known.set(`${f.type}\u001f${f.key}`, {
          type: f.type,
          key: f.key,
          room: 0,
          first: null,
          locked: false,
          active: 0,
          seen: f.n,
          taken: 0,
          rateFree: null,
        });
      }
    }
    const limited = states.filter((s) => this.#rules[s.type]!.keyRateLimit !== undefined);
    const rateRoom =
      this.#rates && limited.length > 0
        ? await this.#rates.count(
            limited.map((s) => ({ type: s.type, key: s.key, rule: this.#rules[s.type]!.keyRateLimit! })),
          )
        : null;
    for (const s of states) {
      const rule = this.#rules[s.type]!;
      let room = rule.keyConcurrency === undefined ? Number.MAX_SAFE_INTEGER : rule.keyConcurrency - s.active;
      const free = rateRoom?.get(rateScope(s.type, s.key));
      if (free !== undefined) room = Math.min(room, free);
      // Under `ordered`, only the earliest starts, and not while a job of the key runs (the
      // earliest can be behind a running job when it was retried by hand from dead or cancelled).
      if (rule.ordered) room = s.first === null || s.active > 0 ? 0 : Math.min(room, 1);
      this.#known.set(`${s.type}\u001f${s.key}`, {
        type: s.type,
        key: s.key,
        room,
        first: rule.ordered ? s.first : null,
        locked: true,
        active: s.active,
        seen: s.n,
        taken: 0,
        rateFree: free ?? null,
      });
    }
    return true;
  }

  /** Whether the claim holds a key lock: from then on, keys are only tried (see the class). */
  get locked(): boolean {
    return this.#locked;
  }

  /** The claim now holds key locks taken elsewhere (fairClaimKeyed's). */
  markLocked(): void {
    this.#locked = true;
  }

  /** The keys with room, as claimKeyed's $12-$15: types, keys, rooms, first ids. */
  open(): [string[], string[], number[], Array<string | null>] {
    const out: [string[], string[], number[], Array<string | null>] = [[], [], [], []];
    for (const k of this.#known.values()) {
      if (k.room <= 0) continue;
      out[0].push(k.type);
      out[1].push(k.key);
      out[2].push(k.room);
      out[3].push(k.first);
    }
    return out;
  }

  /** A job the claim took: one less room for its key. */
  take(record: JobRecord): void {
    if (record.key === null) return;
    const k = this.#known.get(`${record.type}\u001f${record.key}`);
    if (k) {
      k.room -= 1;
      k.taken += 1;
    }
  }

  /**
   * The keys this claim locked whose jobs it passed over because their running jobs fill their
   * keyConcurrency, or under `ordered`, and those whose keyRateLimit window it left full (their
   * jobs parked earlier need the window's next opening, even when none was passed over now); not
   * fair types, whose turns keep a key from filling the front. Their ready jobs are to be parked.
   */
  parkable(): ParkKey[] {
    const out: ParkKey[] = [];
    for (const k of this.#known.values()) {
      const rule = this.#rules[k.type]!;
      if (!k.locked || rule.fair === true) continue;
      const passed = k.seen > k.taken;
      const full = rule.keyConcurrency !== undefined && k.active + k.taken >= rule.keyConcurrency;
      const rateFull = k.rateFree !== null && k.rateFree - k.taken <= 0;
      if ((passed && (full || rule.ordered === true)) || rateFull)
        out.push({ type: k.type, key: k.key, rule });
    }
    return out;
  }
}
