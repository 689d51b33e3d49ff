/**
 * The door announces the key holders an enqueue or a schedule's tick expired (Store.enqueueMany:
 * a holder past its expiresAt holds its key no longer) as `expired`, as the expiry sweep does. The
 * stores' side is in the conformance suite; here, through the door, on a real in-memory store, the
 * paths a queue's sweep cannot reach on its own (it expires such holders before it fires ticks).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { QueueEvents } from "../../src/events.js";
import type { Job } from "../../src/job.js";
import { openStore } from "../../src/open-store.js";
import { StoreDoor } from "../../src/store/instrument.js";
import type { Store } from "../../src/store/store.js";
import { newJob, scheduleRecord } from "../helpers/new-job.js";

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

/**
 * A door on `store` that records every event, in order. `listening`: which events someone listens
 * for (the door builds jobs only for those).
 */
function doorOn(
  store: Store,
  listening: (event: keyof QueueEvents) => boolean = () => true,
): { door: StoreDoor; events: Array<[keyof QueueEvents, Job]> } {
  const events: Array<[keyof QueueEvents, Job]> = [];
  const sink = {
    emit<K extends keyof QueueEvents>(event: K, ...args: QueueEvents[K]): boolean {
      events.push([event, args[0] as Job]);
      return true;
    },
    listenerCount: (event: keyof QueueEvents) => (listening(event) ? 1 : 0),
  };
  return {
    door: new StoreDoor(
      store,
      sink,
      () => false,
      () => false,
    ),
    events,
  };
}

describe("the door announces expired key holders", () => {
  let store: Store;
  beforeEach(async () => {
    store = await openStore("sqlite::memory:");
  });
  afterEach(async () => {
    await store.close();
  });

  /** A job of type "other" holding `keys`, pending a minute, expiring a second after T0. */
  async function holder(id: string, keys: { uniqueKey?: string; debounceKey?: string }): Promise<void> {
    await store.enqueueMany({
      jobs: [newJob({ id, type: "other", runAt: T0 + MINUTE, expiresAt: T0 + 1_000, ...keys })],
      now: T0,
    });
  }

  it("a schedule's tick that frees a unique or debounce key: `expired` for the holder, then `enqueued`", async () => {
    for (const [name, keys] of [
      ["sync", { uniqueKey: "sync" }],
      ["tidy", { debounceKey: "tidy" }],
    ] as const) {
      await store.putSchedule(scheduleRecord({ name, options: "{}", createdAt: T0 }));
      await holder(`held-${name}`, keys);
      const { door, events } = doorOn(store);
      const now = T0 + 5 * MINUTE;
      const id = `schedule:${name}:${now}`;
      const fired = await door.fireSchedule(
        {
          name,
          now,
          expectedRunAt: now,
          nextRunAt: now + 5 * MINUTE,
          job: newJob({ id, type: "report", runAt: now, ...keys }),
        },
        {},
      );
      expect(fired).toBe(true);
      expect(events.map(([event, job]) => [event, job.id, job.state])).toEqual([
        ["expired", `held-${name}`, "expired"],
        ["enqueued", id, "pending"],
      ]);
    }
  });

  it("enqueueIds, which builds no job for its answer, still announces the holders it expired", async () => {
    await holder("held", { uniqueKey: "k" });
    // Nobody listens for `enqueued`, so enqueueIds takes its own path (no jobs built).
    const { door, events } = doorOn(store, (event) => event === "expired");
    const now = T0 + 2_000;
    const ids = await door.enqueueIds(
      { jobs: [newJob({ id: "new", runAt: now, uniqueKey: "k" }), newJob({ id: "plain", runAt: now })], now },
      [{}, {}],
    );
    expect(ids).toEqual(["new", "plain"]);
    expect(events.map(([event, job]) => [event, job.id])).toEqual([["expired", "held"]]);
    expect((await store.get({ id: "held" }))?.state).toBe("expired");
  });
});
