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
  type BatchItem,
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
import type { EnqueueManyParams, NewJob, SharedJobs } from "./store/store.js";
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

/** What enqueueBatch and enqueueBatchIds take: jobs of any types, each with its own options. */
type BatchItems = ReadonlyArray<BatchItem>;

/** Planned jobs, with the instant they were planned at and the caller's connection (`db`), if any. */
interface Planned extends PlannedJobs {
  now: number;
  connection: unknown;
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
    const planned = await this.#planMany("enqueueMany", job, payloads, options);
    if (planned === null) return [];
    return this.#c.door.enqueue(this.#params(planned), planned.values) as Promise<EnqueuedJob<P>[]>;
  }

  /** See Queue.enqueueManyIds. */
  async manyIds<P>(job: JobTarget<P>, payloads: readonly P[], options: EnqueueOptions): Promise<string[]> {
    const planned = await this.#planMany("enqueueManyIds", job, payloads, options);
    if (planned === null) return [];
    return this.#c.door.enqueueIds(this.#params(planned), planned.values);
  }

  /** enqueueMany's input checked and planned; null for no payloads (nothing to store). */
  async #planMany<P>(
    where: string,
    job: JobTarget<P>,
    payloads: readonly P[],
    options: EnqueueOptions,
  ): Promise<Planned | null> {
    const { type, def } = jobTarget("enqueue", job, (t) => this.#c.types.get(t));
    if (!Array.isArray(payloads))
      throw new ErrandError("INVALID_OPTION", `${where}: payloads must be an array`);
    checkObject("enqueue", "options", options);
    if (payloads.length === 0) return null;
    if (options.id !== undefined && payloads.length > 1) {
      throw new ErrandError(
        "INVALID_OPTION",
        `${where}: options.id names one job; give each job its own enqueue`,
      );
    }
    const now = this.#c.clock.now();
    return {
      ...(await planMany(this.#planner(now), type, def, payloads, options)),
      now,
      connection: options.db,
    };
  }

  /** See Queue.enqueueBatch. */
  async batch(items: BatchItems): Promise<EnqueuedJob[]> {
    const planned = await this.#planBatch("enqueueBatch", items);
    return planned === null ? [] : this.#insert(planned);
  }

  /** See Queue.enqueueBatchIds. */
  async batchIds(items: BatchItems): Promise<string[]> {
    const planned = await this.#planBatch("enqueueBatchIds", items);
    return planned === null ? [] : this.#c.door.enqueueIds(this.#params(planned), planned.values);
  }

  /** enqueueBatch's input checked and planned; null for no items (nothing to store). */
  async #planBatch(where: string, items: BatchItems): Promise<Planned | null> {
    if (!Array.isArray(items)) throw new ErrandError("INVALID_OPTION", `${where}: items must be an array`);
    if (items.length === 0) return null;
    const now = this.#c.clock.now();
    return { ...(await planBatch(this.#planner(now), items)), now, connection: undefined };
  }

  /** See Queue.enqueueFlow. */
  async flow(nodes: readonly FlowNode[]): Promise<FlowResult> {
    const now = this.#c.clock.now();
    const plan = await planFlow(this.#planner(now), nodes);
    return { jobs: byRef(plan.refs, await this.#insert({ ...plan, now, connection: undefined })) };
  }

  /** One job's options resolved over its type's definition (also for schedules' ticks). */
  plan(type: string, def: AnyJobDefinition | undefined, o: EnqueueOptions, now: number): NewJob {
    return planEnqueue(type, def, o, now, this.#c.canEnlist);
  }

  /** Stores resolved jobs in one call and turns the store's answers into jobs (emitting `enqueued`). */
  #insert(planned: Planned): Promise<EnqueuedJob[]> {
    return this.#c.door.enqueue(this.#params(planned), planned.values);
  }

  /** What the store is handed for planned jobs. */
  #params({ jobs, now, idsGenerated, connection }: Planned): EnqueueManyParams {
    const fairTypes = this.#fairTypes(jobs);
    return {
      // A fair type's jobs each get a turn: the stores give them one NewJob at a time.
      jobs: fairTypes ? expandJobs(jobs) : jobs,
      now,
      idsGenerated,
      connection,
      ...(fairTypes ? { fairTypes } : {}),
    };
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
