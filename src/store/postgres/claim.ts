/**
 * How the PostgreSQL store claims: one statement per queue share (see {@link planClaimAsync}),
 * taking ready rows with `FOR UPDATE SKIP LOCKED`, and, for capped types, a transaction that holds
 * an advisory lock per capped type while it counts their active jobs, so no two claimers can both
 * see the same free room.
 * @module
 */
import type { JobRecord } from "../../job.js";
import { claimOrder } from "../claim-order.js";
import { planClaimAsync } from "../claim-plan.js";
import type { StatementName } from "../generated/postgres-queries.js";
import { hotRecord } from "../hot-record.js";
import type { ClaimParams } from "../store.js";
import { CAP_LOCK, HOT_FIELD_COUNT } from "./columns.js";
import type { PgConnection } from "./connection.js";

/** Leases up to `p.limit` ready jobs to `p.workerId` (`Store.claim`), in claim order. */
export function claimJobs(
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
  // One queue and no caps: a single statement, atomic by itself. Otherwise one transaction, so
  // the cap locks hold throughout and a fault leaves no share claimed and unreported.
  const mode = capped.length === 0 && p.queues.length === 1 ? "pool" : "tx";
  return connection.op(mode, async (db) => {
    const room = new Map<string, number>();
    if (capped.length > 0) {
      await connection.query(db, sql.lockCaps, [CAP_LOCK, capped]);
      for (const t of capped) room.set(t, p.concurrencyLimits![t]!);
      const counts = await connection.query<{ type: string; n: number }>(db, sql.countActive, [capped]);
      for (const { type, n } of counts) room.set(type, room.get(type)! - n);
    }
    const weightCap = p.weightCap ?? Number.POSITIVE_INFINITY;
    let budget = p.maxWeight ?? Number.POSITIVE_INFINITY;
    const leaseExpiresAt = p.now + p.leaseMs;
    const taken = await planClaimAsync(p.queues, p.limit, p.random ?? Math.random, async (queue, count) => {
      const out: JobRecord[] = [];
      for (;;) {
        const excluded: string[] = [];
        const capTypes: string[] = [];
        const capRoom: number[] = [];
        for (const [t, n] of room) {
          if (n <= 0) excluded.push(t);
          else {
            capTypes.push(t);
            capRoom.push(n);
          }
        }
        const values: unknown[] = [
          queue,
          p.now,
          count - out.length,
          Number.isFinite(weightCap) ? weightCap : null,
          Number.isFinite(budget) ? budget : null,
          p.workerId,
          leaseExpiresAt,
          filterTypes,
          excluded.length > 0 ? excluded : null,
        ];
        if (capTypes.length > 0) values.push(capTypes, capRoom);
        const rows = await connection.query<unknown[]>(
          db,
          capTypes.length > 0 ? sql.claimCapped : sql.claim,
          values,
          true,
        );
        let overflow = false;
        let skipped = false;
        for (const row of rows) {
          if (row[0] === null) {
            overflow = row[HOT_FIELD_COUNT] === true;
            skipped = row[HOT_FIELD_COUNT + 1] === true;
            continue;
          }
          const record = hotRecord(row);
          budget -= Math.min(record.weight, weightCap);
          const left = room.get(record.type);
          if (left !== undefined) room.set(record.type, left - 1);
          out.push(record);
        }
        if (overflow) return { taken: out, full: true };
        // Rows of a type that just hit its cap were passed over: look again without that type.
        if (out.length === count || !skipped) return { taken: out, full: budget <= 0 };
      }
    });
    taken.sort(claimOrder);
    return taken;
  });
}
