/**
 * A lease's claims (server/lease-claims.ts): a large lease is taken in claims of a bounded size,
 * each asking for what is left of the limit and the weight, stopping at the first short claim or
 * once the jobs are past what one answer carries.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import { claimSize, type LeaseAsked, leaseInClaims } from "../../src/server/lease-claims.js";
import { MAX_PAGE_CHARS } from "../../src/server/page-size.js";
import { fcParams } from "../helpers/property.js";

/**
 * A store of `ready` jobs that claims as a store does: in order, within `limit` and `maxWeight`;
 * with `skip`, a job too heavy for the weight left is passed over for lighter ones after it. With
 * `rateRuled`, `ahead` is taken off the room first, as Queue.lease takes it (leaseNow).
 */
function fakeStore(ready: Array<{ weight?: number; payload?: string }>, skip = false, rateRuled = false) {
  const asked: LeaseAsked[] = [];
  const taken = new Set<number>();
  const claim = async (asking: LeaseAsked): Promise<Job[]> => {
    asked.push(asking);
    let options = asking;
    if (rateRuled && (asking.ahead ?? 0) > 0) {
      const room = (asking.maxWeight ?? asking.limit) - asking.ahead!;
      if (room <= 0) return [];
      options = {
        ...asking,
        limit: Math.min(asking.limit, room),
        ...(asking.maxWeight === undefined ? {} : { maxWeight: room }),
      };
    }
    const out: Job[] = [];
    let weight = 0;
    for (let i = 0; i < ready.length && out.length < options.limit; i++) {
      if (taken.has(i)) continue;
      const r = ready[i]!;
      const w = Math.min(r.weight ?? 1, options.weightCap ?? Number.POSITIVE_INFINITY);
      if (options.maxWeight !== undefined && weight + w > options.maxWeight) {
        if (skip) continue;
        break;
      }
      weight += w;
      taken.add(i);
      out.push({ id: `j${i}`, weight: r.weight ?? 1, payload: r.payload ?? null } as unknown as Job);
    }
    return out;
  };
  return { asked, claim };
}

const never = (error: unknown) => {
  throw new Error(`no later claim should fail here: ${String(error)}`);
};

describe("claimSize", () => {
  it("fits a claim's payloads and checkpoints at the queue's bound in four answers", () => {
    expect(claimSize(1_048_576)).toBe(64);
    expect(claimSize(16 * 1_048_576)).toBe(4);
    // A bound past a claim's budget still claims one job at a time.
    expect(claimSize(256 * 1_048_576)).toBe(1);
    expect(claimSize(1024)).toBe(65_536);
  });
});

describe("leaseInClaims", () => {
  it("claims a lease within the size once, with its options as asked", async () => {
    const s = fakeStore(Array.from({ length: 10 }, () => ({})));
    const asked: LeaseAsked = { limit: 4, ahead: 2, maxWeight: 6 };
    const jobs = await leaseInClaims(asked, 4, true, s.claim, never);
    expect(jobs).toHaveLength(4);
    expect(s.asked).toEqual([asked]);
  });

  it("claims a larger lease in steps of the size until the limit", async () => {
    const s = fakeStore(Array.from({ length: 20 }, () => ({})));
    const jobs = await leaseInClaims({ limit: 10 }, 4, false, s.claim, never);
    expect(jobs.map((j) => j.id)).toEqual(Array.from({ length: 10 }, (_, i) => `j${i}`));
    expect(s.asked.map((o) => o.limit)).toEqual([4, 4, 2]);
  });

  it("stops at a claim that comes back short: nothing more is ready", async () => {
    const s = fakeStore(Array.from({ length: 6 }, () => ({})));
    const jobs = await leaseInClaims({ limit: 100 }, 4, false, s.claim, never);
    expect(jobs).toHaveLength(6);
    expect(s.asked).toHaveLength(2);
  });

  it("asks each claim for the weight left, each job counted as at most weightCap", async () => {
    const s = fakeStore(Array.from({ length: 10 }, () => ({ weight: 3 })));
    const jobs = await leaseInClaims({ limit: 10, maxWeight: 9, weightCap: 2 }, 2, false, s.claim, never);
    expect(jobs).toHaveLength(4);
    expect(s.asked.map((o) => o.maxWeight)).toEqual([9, 5, 1]);
  });

  it("stops once the weight is spent, without a claim for none", async () => {
    const s = fakeStore(Array.from({ length: 10 }, () => ({ weight: 2 })));
    const jobs = await leaseInClaims({ limit: 10, maxWeight: 8 }, 2, false, s.claim, never);
    expect(jobs).toHaveLength(4);
    expect(s.asked.map((o) => o.maxWeight)).toEqual([8, 4]);
  });

  it("takes a rate-ruled lease's `ahead` off its room once, and asks no claim for any", async () => {
    const s = fakeStore(Array.from({ length: 20 }, () => ({})));
    const jobs = await leaseInClaims({ limit: 10, ahead: 6 }, 2, true, s.claim, never);
    expect(jobs).toHaveLength(4);
    expect(s.asked.map((o) => [o.limit, o.ahead])).toEqual([
      [2, undefined],
      [2, undefined],
    ]);

    const weighed = fakeStore(Array.from({ length: 20 }, () => ({ weight: 2 })));
    const heavy = await leaseInClaims({ limit: 10, maxWeight: 10, ahead: 4 }, 2, true, weighed.claim, never);
    expect(heavy).toHaveLength(3);
    expect(weighed.asked.map((o) => o.maxWeight)).toEqual([6, 2]);

    const none = fakeStore([{}]);
    expect(await leaseInClaims({ limit: 10, ahead: 10 }, 2, true, none.claim, never)).toEqual([]);
    expect(none.asked).toEqual([]);
  });

  it("leaves `ahead` to a lease of no rate-ruled type: it claims the whole limit", async () => {
    const s = fakeStore(Array.from({ length: 20 }, () => ({})));
    const jobs = await leaseInClaims({ limit: 10, ahead: 6 }, 4, false, s.claim, never);
    expect(jobs).toHaveLength(10);
    expect(s.asked.every((o) => o.ahead === undefined)).toBe(true);
  });

  it("claims no more once the jobs are past what one answer carries", async () => {
    const big = "x".repeat(Math.ceil(MAX_PAGE_CHARS / 3));
    const s = fakeStore(Array.from({ length: 50 }, () => ({ payload: big })));
    const jobs = await leaseInClaims({ limit: 50 }, 2, false, s.claim, never);
    // Two claims reach 4 jobs, past the answer's bound: no third.
    expect(jobs).toHaveLength(4);
    expect(s.asked).toHaveLength(2);
  });

  it("takes, in any number of claims, exactly the jobs one claim of the whole lease takes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 40 }),
        fc.record(
          {
            limit: fc.integer({ min: 1, max: 30 }),
            maxWeight: fc.integer({ min: 1, max: 60 }),
            weightCap: fc.integer({ min: 1, max: 6 }),
            ahead: fc.integer({ min: 0, max: 40 }),
          },
          { requiredKeys: ["limit"] },
        ),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        fc.boolean(),
        async (weights, asked, size, rateRuled, skip) => {
          const ready = weights.map((weight) => ({ weight }));
          const once = await fakeStore(ready, skip, rateRuled).claim(asked);
          const steps = fakeStore(ready, skip, rateRuled);
          const stepped = await leaseInClaims(asked, size, rateRuled, steps.claim, never);
          expect(stepped.map((j) => j.id)).toEqual(once.map((j) => j.id));
          expect(steps.asked.every((o) => o.limit <= size || o === asked)).toBe(true);
        },
      ),
      fcParams(300),
    );
  });

  it("answers a job a later claim took again once, at its later attempt", async () => {
    // The first claim's short lease ran out during the second, and a pass put j1 back.
    const answers = [
      [
        { id: "j0", attempt: 1 },
        { id: "j1", attempt: 1 },
      ],
      [
        { id: "j2", attempt: 1 },
        { id: "j1", attempt: 2 },
      ],
      [],
    ];
    const claim = async () => answers.shift()!.map((j) => ({ ...j, weight: 1 }) as unknown as Job);
    const jobs = await leaseInClaims({ limit: 10 }, 2, false, claim, never);
    expect(jobs.map((j) => [j.id, j.attempt])).toEqual([
      ["j0", 1],
      ["j1", 2],
      ["j2", 1],
    ]);
  });

  it("makes no claim after the first once told the answer will not be sent", async () => {
    const s = fakeStore(Array.from({ length: 20 }, () => ({})));
    let gone = false;
    const claim = async (o: LeaseAsked) => {
      const jobs = await s.claim(o);
      gone = true;
      return jobs;
    };
    const jobs = await leaseInClaims({ limit: 10 }, 4, false, claim, never, () => gone);
    expect(jobs).toHaveLength(4);
    expect(s.asked).toHaveLength(1);
  });

  it("answers the jobs already claimed when a later claim fails, and reports the fault", async () => {
    const s = fakeStore(Array.from({ length: 20 }, () => ({})));
    const fault = new Error("connection lost");
    let calls = 0;
    const claim = async (o: LeaseAsked) => {
      if (calls++ === 1) throw fault;
      return s.claim(o);
    };
    const faults: unknown[] = [];
    const jobs = await leaseInClaims({ limit: 10 }, 4, false, claim, (e) => faults.push(e));
    expect(jobs.map((j) => j.id)).toEqual(["j0", "j1", "j2", "j3"]);
    expect(faults).toEqual([fault]);

    const first = async () => {
      throw fault;
    };
    await expect(leaseInClaims({ limit: 10 }, 4, false, first, never)).rejects.toBe(fault);
  });
});
