/**
 * Enqueueing: one type's jobs, a batch of any types, or a flow, each checked and resolved
 * (enqueue-plan.ts, flow-plan.ts) and stored in one call through the door, which emits
 * `enqueued`. The Queue's enqueue methods delegate here.
 * @internal
 * @module
 */
import type { Clock } from "./clock.js";
import type { AnyJobDefinition, JobDefinition } from "./define-job.js";
import {
  jobTarget,
  type PlannedJobs,
  type Planner,
  planBatch,
  planEnqueue,
  planMany,
} from "./enqueue-plan.js";
import { ErrandError } from "./errors.js";
import { byRef, type FlowNode, planFlow } from "./flow-plan.js";
import type { EnqueuedJob } from "./job.js";
import { checkObject } from "./queue-checks.js";
import type { EnqueueOptions, FlowResult } from "./queue-options.js";
import type { StoreDoor } from "./store/instrument.js";
import { expandJobs, isShared } from "./store/new-jobs.js";
import type { NewJob, SharedJobs } from "./store/store.js";
import type { TypeRegistry } from "./type-registry.js";
import { checkTypeName } from "./validation.js";

/** A definition made by `defineJob`, or a type name. */
export type JobTarget<P> = JobDefinition<P, unknown> | string;

/** What enqueueing needs of its Queue. */
export interface EnqueuerContext {
  door: StoreDoor;
  clock: Clock;
  types: TypeRegistry;
  maxPayloadBytes: number;
  /** The store can insert inside the caller's transaction (`db`). */
  canEnlist: boolean;
}

export class Enqueuer {
  readonly #c: EnqueuerContext;

  constructor(context: EnqueuerContext) {
    this.#c = context;
  }

  /** See Queue.enqueueMany. */
  async many<P>(
    job: JobTarget<P>,
    payloads: readonly P[],
    options: EnqueueOptions,
  ): Promise<EnqueuedJob<P>[]> {
    const { type, def } = jobTarget("enqueue", job, (t) => this.#c.types.get(t));
    if (!Array.isArray(payloads))
      throw new ErrandError("INVALID_OPTION", "enqueueMany: payloads must be an array");
    checkObject("enqueue", "options", options);
    if (payloads.length === 0) return [];
    if (options.id !== undefined && payloads.length > 1) {
      throw new ErrandError(
        "INVALID_OPTION",
        "enqueueMany: options.id names one job; give each job its own enqueue",
      );
    }
    const now = this.#c.clock.now();
    const plan = await planMany(this.#planner(now), type, def, payloads, options);
    return this.#insert(plan, now, options.db) as Promise<EnqueuedJob<P>[]>;
  }

  /** See Queue.enqueueBatch. */
  async batch(
    items: ReadonlyArray<{ job: JobTarget<unknown>; payload: unknown; options?: EnqueueOptions }>,
  ): Promise<EnqueuedJob[]> {
    if (!Array.isArray(items))
      throw new ErrandError("INVALID_OPTION", "enqueueBatch: items must be an array");
    if (items.length === 0) return [];
    const now = this.#c.clock.now();
    return this.#insert(await planBatch(this.#planner(now), items), now, undefined);
  }

  /** See Queue.enqueueFlow. */
  async flow(nodes: readonly FlowNode[]): Promise<FlowResult> {
    const now = this.#c.clock.now();
    const plan = await planFlow(this.#planner(now), nodes);
    return { jobs: byRef(plan.refs, await this.#insert(plan, now, undefined)) };
  }

  /** One job's options resolved over its type's definition (also for schedules' ticks). */
  plan(type: string, def: AnyJobDefinition | undefined, o: EnqueueOptions, now: number): NewJob {
    return planEnqueue(type, def, o, now, this.#c.canEnlist);
  }

  /** Stores resolved jobs in one call and turns the store's answers into jobs (emitting `enqueued`). */
  #insert(
    { jobs, values, idsGenerated }: PlannedJobs,
    now: number,
    connection: unknown,
  ): Promise<EnqueuedJob[]> {
    const fairTypes = this.#fairTypes(jobs);
    return this.#c.door.enqueue(
      {
        // A fair type's jobs each get a turn: the stores give them one NewJob at a time.
        jobs: fairTypes ? expandJobs(jobs) : jobs,
        now,
        idsGenerated,
        connection,
        ...(fairTypes ? { fairTypes } : {}),
      },
      values,
    );
  }

  /** The fair types among `jobs`' (a batch is mostly of one type: looked up once per run of it). */
  #fairTypes(jobs: readonly NewJob[] | SharedJobs): string[] | undefined {
    if (isShared(jobs)) return this.#c.types.fair(jobs.shared.type) ? [jobs.shared.type] : undefined;
    let fair: string[] | undefined;
    let last: string | undefined;
    for (const j of jobs) {
      if (j.type === last) continue;
      last = j.type;
      if (this.#c.types.fair(j.type) && !fair?.includes(j.type)) (fair ??= []).push(j.type);
    }
    return fair;
  }

  #planner(now: number): Planner {
    return {
      now,
      definition: (type) => this.#c.types.get(checkTypeName(type)),
      plan: (type, def, options) => this.plan(type, def, options, now),
      maxPayloadBytes: this.#c.maxPayloadBytes,
    };
  }
}
