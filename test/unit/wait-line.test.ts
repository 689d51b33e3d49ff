import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Job } from "../../src/job.js";
import { type Waiting, WaitLine } from "../../src/worker/wait-line.js";

const entry = (id: string, weight = 1): Waiting => ({ job: { id } as Job, weight, leaseUntil: 0 });

describe("WaitLine", () => {
  it("takes jobs first in, first out, and keeps their total weight", () => {
    const line = new WaitLine();
    line.push(entry("a", 2));
    line.push(entry("b", 3));
    line.push(entry("c", 1));
    expect([line.size, line.weight]).toEqual([3, 6]);
    expect(line.peek()?.job.id).toBe("a");
    expect(line.shift()?.job.id).toBe("a");
    expect(line.remove("c")?.job.id).toBe("c");
    expect(line.remove("missing")).toBeNull();
    expect([line.size, line.weight]).toEqual([1, 3]);
    expect(line.clear().map((w) => w.job.id)).toEqual(["b"]);
    expect([line.size, line.weight, line.shift()]).toEqual([0, 0, undefined]);
  });

  it("keeps its order across the compaction of a long-moved head", () => {
    const line = new WaitLine();
    for (let i = 0; i < 3000; i++) line.push(entry(String(i)));
    for (let i = 0; i < 2000; i++) expect(line.shift()?.job.id).toBe(String(i));
    line.push(entry("3000"));
    expect(line.remove("2500")?.job.id).toBe("2500");
    expect(line.toArray().map((w) => Number(w.job.id))).toEqual([
      ...Array.from({ length: 500 }, (_, i) => 2000 + i),
      ...Array.from({ length: 499 }, (_, i) => 2501 + i),
      3000,
    ]);
    expect(line.weight).toBe(1000);
  });

  it("removes by id only the very entry asked for, not a newer claim of the same job", () => {
    const line = new WaitLine();
    const old = entry("a");
    line.push(entry("x"));
    line.push(entry("a"));
    expect(line.remove("a", old)).toBeNull();
    expect(line.size).toBe(2);
  });

  it("behaves as an array would through any mix of pushes, shifts and removals", () => {
    const op = fc.oneof(
      fc.record({ push: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ shift: fc.constant(true) }),
      fc.record({ remove: fc.nat(3000) }),
      fc.record({ removeWeight: fc.integer({ min: 1, max: 5 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 4000 }), (ops) => {
        const line = new WaitLine();
        const model: Waiting[] = [];
        let n = 0;
        for (const o of ops) {
          if ("push" in o) {
            const e = entry(String(n++), o.push);
            line.push(e);
            model.push(e);
          } else if ("shift" in o) {
            expect(line.shift()).toBe(model.shift());
          } else if ("removeWeight" in o) {
            const out = model.filter((e) => e.weight === o.removeWeight);
            const byWeight = new Map(model.map((e) => [e.job.id, e.weight]));
            expect(line.removeWhere((job) => byWeight.get(job.id) === o.removeWeight)).toEqual(out);
            model.splice(0, model.length, ...model.filter((e) => e.weight !== o.removeWeight));
          } else {
            const at = model.findIndex((e) => e.job.id === String(o.remove));
            const removed = at < 0 ? null : model.splice(at, 1)[0];
            expect(line.remove(String(o.remove))).toBe(removed);
          }
          expect(line.size).toBe(model.length);
          expect(line.peek()).toBe(model[0]);
        }
        expect(line.weight).toBe(model.reduce((w, e) => w + e.weight, 0));
        expect(line.toArray()).toEqual(model);
      }),
      { numRuns: 60 },
    );
  });
});
