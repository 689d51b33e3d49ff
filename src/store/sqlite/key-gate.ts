/**
 * Per-key rules during one SQLite claim (ClaimParams.keyRules): a keyed job of a type with
 * `keyConcurrency` is taken only while its key has room, and under `ordered` only as its key's
 * earliest job in the hot set. The store's single writer makes the counts read here exact for the
 * claim's transaction.
 * @module
 */
import type { JobRecord } from "../../job.js";
import type { KeyRules } from "../store.js";
import type { Statements } from "./statements.js";

export class KeyGate {
  readonly #q: Statements;
  readonly #rules: Record<string, KeyRules>;
  readonly #now: number;
  /** Running jobs per `type\0key`, those taken by this claim included. */
  readonly #active = new Map<string, number>();
  readonly #skip: string[] = [];
  readonly #excluded: Array<[string, string]> = [];
  readonly #closed = new Set<string>();

  constructor(q: Statements, rules: Record<string, KeyRules>, now: number) {
    this.#q = q;
    this.#rules = rules;
    this.#now = now;
  }

  /** The candidates query's `$skip` and `$xkeys`. */
  params(): { skip: string | null; xkeys: string | null } {
    return {
      skip: this.#skip.length > 0 ? JSON.stringify(this.#skip) : null,
      xkeys: this.#excluded.length > 0 ? JSON.stringify(this.#excluded) : null,
    };
  }

  /** Whether `row`, a candidate of `queue`, may be taken; if not, it is passed over from now on. */
  admit(row: JobRecord, queue: string): boolean {
    if (row.key === null || !Object.hasOwn(this.#rules, row.type)) return true;
    const rules = this.#rules[row.type]!;
    const slot = `${row.type}\0${row.key}`;
    if (this.#closed.has(slot)) return this.#pass(row, slot, false);
    if (rules.keyConcurrency !== undefined && this.#running(row, slot) >= rules.keyConcurrency) {
      return this.#pass(row, slot, true);
    }
    if (rules.ordered) {
      const first = this.#q.claimKeyEarliest.get(row.type, row.key) as Earliest;
      if (first.id !== row.id) {
        // The earliest will come up later in this walk if it can start now; else the key waits.
        const canStart =
          first.state === "pending" &&
          first.runAt <= this.#now &&
          first.queue === queue &&
          (first.expiresAt === null || first.expiresAt > this.#now);
        return this.#pass(row, slot, !canStart);
      }
    }
    return true;
  }

  /** `row` was taken: its key has one more running, and an ordered key is closed for this claim. */
  took(row: JobRecord): void {
    if (row.key === null || !Object.hasOwn(this.#rules, row.type)) return;
    const slot = `${row.type}\0${row.key}`;
    this.#active.set(slot, this.#running(row, slot) + 1);
    if (this.#rules[row.type]!.ordered) this.#close(row, slot);
  }

  #running(row: JobRecord, slot: string): number {
    let n = this.#active.get(slot);
    if (n === undefined) {
      n = this.#q.claimKeyActive.get(row.type, row.key) as number;
      this.#active.set(slot, n);
    }
    return n;
  }

  #pass(row: JobRecord, slot: string, closeKey: boolean): false {
    if (closeKey) this.#close(row, slot);
    else this.#skip.push(row.id);
    return false;
  }

  #close(row: JobRecord, slot: string): void {
    if (this.#closed.has(slot)) return;
    this.#closed.add(slot);
    this.#excluded.push([row.type, row.key!]);
  }
}

interface Earliest {
  id: string;
  state: string;
  runAt: number;
  queue: string;
  expiresAt: number | null;
}
