/**
 * Reading a job's dependencies as its handler sees them (`ctx.dependencies()`,
 * `Queue.dependencies`): one read of the job, one of its dependencies, in `dependsOn` order.
 * @module
 */
import { ErrandError } from "./errors.js";
import type { JobDependency } from "./job.js";
import type { Store } from "./store/store.js";

/**
 * The jobs `id` waits for, each with its state and parsed result; a dependency pruned by
 * retention keeps its id and nothing else.
 * @throws ErrandError `JOB_NOT_FOUND` when there is no such job.
 */
export async function dependenciesOf(store: Store, id: string): Promise<JobDependency[]> {
  const job = await store.get({ id });
  if (!job) throw new ErrandError("JOB_NOT_FOUND", `no job with id ${JSON.stringify(id)}`);
  if (job.dependsOn === null) return [];
  const ids = JSON.parse(job.dependsOn) as string[];
  const records = await store.getMany({ ids });
  return ids.map((depId, i) => {
    const r = records[i];
    if (!r) return { id: depId, type: null, state: null, result: null };
    return {
      id: depId,
      type: r.type,
      state: r.state,
      result: r.result === null ? null : JSON.parse(r.result),
    };
  });
}
