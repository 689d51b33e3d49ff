/**
 * Fair types in the SQLite store (KeyRules.fair; queries/fair.sql): turns given at enqueue, and
 * the claim's substitution of a fair type's job by the one whose turn it is.
 * @module
 */
import type { JobRecord } from "../../job.js";
import type { EnqueueResult, KeyRules, NewJob } from "../store.js";
import { PENDING_COLUMNS, pendingRecord } from "./pending-row.js";
import type { Statements } from "./statements.js";

/** Gives each inserted job of a fair type its turn (inside the enqueue's write transaction). */
export function assignTurns(
  q: Statements,
  jobs: readonly NewJob[],
  results: readonly EnqueueResult[],
  fairTypes: readonly string[],
): void {
  const typeTurn = new Map<string, number>();
  /** Next turn per `type\0key`, this call's jobs counted. */
  const next = new Map<string, { type: string; key: string; next: number }>();
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i]!;
    const r = results[i]!;
    // A duplicate (or a debounced job) keeps the turn it has.
    if (!r.inserted || !fairTypes.includes(j.type)) continue;
    let now = typeTurn.get(j.type);
    if (now === undefined) {
      now = (q.fairTypeTurn.get(j.type) as number | undefined) ?? 0;
      typeTurn.set(j.type, now);
    }
    const key = j.key ?? "";
    const slot = `${j.type}\0${key}`;
    let k = next.get(slot);
    if (k === undefined) {
      k = { type: j.type, key, next: (q.fairKeyNext.get(j.type, key) as number | undefined) ?? 0 };
      next.set(slot, k);
    }
    const turn = Math.max(k.next, now);
    q.fairJobTurn.run(turn, j.id);
    k.next = turn + 1;
  }
  for (const k of next.values()) q.fairKeySet.run(k.type, k.key, k.next);
}

/**
 * One claim's view of its fair types: which job takes a fair type's slot, and the turns taken,
 * written back once at the end ({@link FairClaim.finish}).
 */
export class FairClaim {
  readonly #q: Statements;
  readonly #types: ReadonlySet<string>;
  readonly #taken = new Map<string, number>();
  /** The jobs this claim took by turn. */
  readonly #ids = new Set<string>();
  /** Per `queue\0type`: the next jobs by turn read ahead (raw rows), and how many are handed out. */
  readonly #ahead = new Map<string, { rows: unknown[][]; at: number }>();

  constructor(q: Statements, types: ReadonlySet<string>) {
    this.#q = q;
    this.#types = types;
  }

  /**
   * Whether `row`'s slot goes to the job whose turn it is: its type is fair and it has a turn
   * (`hadTurn`, as the walk read it), or it was taken by turn already in this claim (a candidate
   * read before it was).
   */
  substitutes(row: JobRecord, hadTurn: boolean): boolean {
    if (!this.#types.has(row.type)) return false;
    return hadTurn || this.#ids.has(row.id);
  }

  /**
   * The type's ready job whose turn it is in `queue`, with its turn; null when none. The caller
   * takes it or passes it over (its id into `$skip`, or its key into `$xkeys`) before asking again.
   * @param keys - the claim's `$skip` and `$xkeys` now, asked only when the jobs read ahead
   *   (claimFair's 16) run out, right before the next read.
   */
  next(
    queue: string,
    type: string,
    now: number,
    keys: () => { skip: string | null; xkeys: string | null },
  ): { row: JobRecord; turn: number } | null {
    const lane = `${queue}\0${type}`;
    let ahead = this.#ahead.get(lane);
    if (ahead === undefined || ahead.at === ahead.rows.length) {
      // Read again past what was handed out: those were taken (their turns are gone) or passed
      // over (now in $skip or $xkeys), so the statement starts at the next one by turn.
      const rows = this.#q.claimFair.all({ queue, type, now, ...keys() }) as unknown[][];
      ahead = { rows, at: 0 };
      this.#ahead.set(lane, ahead);
    }
    const r = ahead.rows[ahead.at];
    if (r === undefined) return null;
    ahead.at++;
    return { row: pendingRecord(r, queue), turn: r[PENDING_COLUMNS] as number };
  }

  /**
   * `row`, of turn `turn`, was taken. Its activation (claim.sql's claimActivateTurnMany, which the
   * store runs before the next read of turns) takes its turn away, so claimFair no longer finds it.
   */
  took(row: JobRecord, turn: number): void {
    this.#ids.add(row.id);
    const t = this.#taken.get(row.type);
    if (t === undefined || turn > t) this.#taken.set(row.type, turn);
  }

  /** Moves each fair type's turn up to the highest this claim took. */
  finish(): void {
    for (const [type, turn] of this.#taken) this.#q.fairAdvance.run(type, turn);
  }
}

/** The claim's view of its fair types among `types` (all when absent); null when none is fair. */
export function fairClaim(
  q: Statements,
  rules: Record<string, KeyRules>,
  types: readonly string[] | undefined,
): FairClaim | null {
  let fair: Set<string> | null = null;
  for (const [type, rule] of Object.entries(rules)) {
    if (rule.fair && (!types || types.length === 0 || types.includes(type))) (fair ??= new Set()).add(type);
  }
  return fair ? new FairClaim(q, fair) : null;
}
