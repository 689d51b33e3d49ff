import type { QueueWeight } from "./store.js";

/** What one queue gave for a share of a claim. */
export interface QueueTake<R> {
  taken: R[];
  /** The claimer has no room left (weight budget spent): end the whole claim. */
  full: boolean;
}

/**
 * Splits a claim of `limit` jobs across weighted queues, the same way in every store.
 *
 * Each slot goes to a queue with probability proportional to its weight among the queues still
 * open. A queue that gives fewer jobs than its share is closed (it has no more ready jobs) and the
 * unfilled slots are shared again among the rest, so an empty queue never blocks another and a
 * busy low-weight queue still gets the whole claim when the others are empty.
 *
 * @param take - claims up to `count` jobs from one queue inside the caller's transaction.
 */
export function planClaim<R>(
  queues: readonly QueueWeight[],
  limit: number,
  random: () => number,
  take: (queue: string, count: number) => QueueTake<R>,
): R[] {
  const out: R[] = [];
  const steps = claimSteps(queues, limit, random);
  for (let step = steps.next(); !step.done; ) {
    const got = take(step.value.queue, step.value.count);
    for (const r of got.taken) out.push(r);
    step = steps.next(got);
  }
  return out;
}

/**
 * {@link planClaim} for stores whose `take` is asynchronous (a round trip per queue share, as in
 * PostgreSQL). The same shares, in the same order, from the same random draws.
 */
export async function planClaimAsync<R>(
  queues: readonly QueueWeight[],
  limit: number,
  random: () => number,
  take: (queue: string, count: number) => Promise<QueueTake<R>>,
): Promise<R[]> {
  const out: R[] = [];
  const steps = claimSteps(queues, limit, random);
  for (let step = steps.next(); !step.done; ) {
    const got = await take(step.value.queue, step.value.count);
    for (const r of got.taken) out.push(r);
    step = steps.next(got);
  }
  return out;
}

/** The plan itself, shared by both drivers: yields each queue's share, is told what it gave. */
function* claimSteps(
  queues: readonly QueueWeight[],
  limit: number,
  random: () => number,
): Generator<{ queue: string; count: number }, void, QueueTake<unknown>> {
  let open = queues.filter((q) => q.weight > 0);
  let want = limit;
  while (want > 0 && open.length > 0) {
    const shares = allocate(open, want, random);
    const stillOpen: QueueWeight[] = [];
    for (const q of open) {
      const share = shares.get(q.name) ?? 0;
      if (share === 0) {
        stillOpen.push(q);
        continue;
      }
      const { taken, full } = yield { queue: q.name, count: share };
      want -= taken.length;
      if (full) return;
      if (taken.length === share) stillOpen.push(q);
    }
    open = stillOpen;
  }
}

function allocate(queues: readonly QueueWeight[], slots: number, random: () => number): Map<string, number> {
  const shares = new Map<string, number>();
  if (queues.length === 1) {
    shares.set(queues[0]!.name, slots);
    return shares;
  }
  let total = 0;
  for (const q of queues) total += q.weight;
  for (let i = 0; i < slots; i++) {
    let r = random() * total;
    let chosen = queues[queues.length - 1]!;
    for (const q of queues) {
      r -= q.weight;
      if (r < 0) {
        chosen = q;
        break;
      }
    }
    shares.set(chosen.name, (shares.get(chosen.name) ?? 0) + 1);
  }
  return shares;
}
