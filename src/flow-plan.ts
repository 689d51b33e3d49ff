/**
 * Flow planning: a DAG of jobs given by refs (`enqueueFlow`) checked and resolved into the
 * {@link NewJob}s one `enqueueMany` inserts, dependencies before their dependents, so the store
 * sees every ref as a job earlier in the same call. Nothing is stored unless the whole graph is
 * valid.
 * @module
 */
import { type AnyJobDefinition, validatePayload } from "./define-job.js";
import { jobTarget, type PlannedJobs, type Planner } from "./enqueue-plan.js";
import { ErrandError } from "./errors.js";
import { uuidv7 } from "./id.js";
import { checkKnownKeys } from "./known-keys.js";
import type { EnqueueOptions } from "./queue-options.js";
import { withPayload } from "./store/new-jobs.js";
import type { NewJob } from "./store/store.js";
import { checkJobId, describe, MAX_DEPENDENCIES, NAME_PATTERN, toJsonText } from "./validation.js";

/**
 * One job of a flow. `dependsOn` names other nodes of the same flow by `ref`, or existing jobs as
 * `{ id }`.
 * @since 0.2.0
 */
export interface FlowNode<P = unknown> {
  /** The node's name within the flow (a name: letters, digits, `_ . : -`, up to 128). */
  ref: string;
  /** A definition made by `defineJob`, or a type name. */
  job: AnyJobDefinition | string;
  /** The job's payload, checked against the type's schema when the definition is known. */
  payload: P;
  /** Refs of nodes of this flow, or `{ id }` of jobs already stored. */
  dependsOn?: ReadonlyArray<string | { id: string }>;
  /**
   * Every enqueue option but `dependsOn` (given above), `db` and `debounce` (a node is one job
   * that others may wait for; debounce decides which job it is). Give `id` to make re-running the
   * flow a no-op.
   */
  options?: Omit<EnqueueOptions, "dependsOn" | "db" | "debounce">;
}

/** A flow's jobs, topologically ordered, with the ref of each. */
export interface PlannedFlow extends PlannedJobs {
  refs: string[];
}

const NODE_KEYS = new Set(["ref", "job", "payload", "dependsOn", "options"]);

/**
 * A flow as HTTP and the CLI's flow files give it, `{ jobs: [{ ref, type, payload, dependsOn,
 * ...options }] }`, as the nodes {@link planFlow} takes: `type` becomes `job`, the other keys
 * `options`. Only the outer shape is checked here; {@link planFlow} checks the nodes.
 * @throws ErrandError `INVALID_FLOW` when `body` is not `{ jobs: [...] }`.
 */
export function flowNodesFromWire(body: unknown): FlowNode[] {
  const jobs = (body as { jobs?: unknown } | null)?.jobs;
  if (typeof body !== "object" || body === null || !Array.isArray(jobs)) {
    throw new ErrandError("INVALID_FLOW", `a flow must be { jobs: [...] }, got ${describe(body)}`);
  }
  return jobs.map((node: unknown) => {
    // Anything else is passed on for planFlow to refuse with its index named.
    if (typeof node !== "object" || node === null || Array.isArray(node)) return node as FlowNode;
    const { ref, type, payload, dependsOn, ...options } = node as Record<string, unknown>;
    return {
      ref,
      job: type,
      payload: payload === undefined ? null : payload,
      ...(dependsOn === undefined ? {} : { dependsOn }),
      options,
    } as FlowNode;
  });
}

/**
 * Checks a flow and resolves it into jobs in dependency order (Kahn's algorithm, keeping the
 * given order among nodes that are ready together).
 * @throws ErrandError `INVALID_FLOW` for a bad or duplicate ref, a ref to nothing or a cycle;
 *   any enqueue error of a node, its index named.
 */
export async function planFlow(p: Planner, nodes: readonly unknown[]): Promise<PlannedFlow> {
  if (!Array.isArray(nodes)) {
    throw new ErrandError("INVALID_FLOW", `enqueueFlow: nodes must be an array, got ${describe(nodes)}`);
  }
  if (nodes.length > MAX_DEPENDENCIES) {
    throw new ErrandError("INVALID_FLOW", `enqueueFlow: ${nodes.length} nodes; at most ${MAX_DEPENDENCIES}`);
  }
  const index = new Map<string, number>();
  const checked: FlowNode[] = nodes.map((node, i) => {
    const where = `enqueueFlow: nodes[${i}]`;
    if (typeof node !== "object" || node === null || Array.isArray(node)) {
      throw new ErrandError(
        "INVALID_FLOW",
        `${where} must be an object { ref, job, payload }, got ${describe(node)}`,
      );
    }
    checkKnownKeys(where, node, NODE_KEYS);
    const n = node as FlowNode;
    if (typeof n.ref !== "string" || !NAME_PATTERN.test(n.ref)) {
      throw new ErrandError(
        "INVALID_FLOW",
        `${where}.ref must be a name matching ${NAME_PATTERN}, got ${describe(n.ref)}`,
      );
    }
    if (index.has(n.ref)) {
      throw new ErrandError("INVALID_FLOW", `${where}: the ref ${JSON.stringify(n.ref)} is used twice`, {
        details: { ref: n.ref },
      });
    }
    if (n.dependsOn !== undefined && !Array.isArray(n.dependsOn)) {
      throw new ErrandError(
        "INVALID_FLOW",
        `${where}.dependsOn must be an array, got ${describe(n.dependsOn)}`,
      );
    }
    if (
      n.options !== undefined &&
      (typeof n.options !== "object" || n.options === null || Array.isArray(n.options))
    ) {
      throw new ErrandError("INVALID_FLOW", `${where}.options must be an object, got ${describe(n.options)}`);
    }
    const given = n.options as EnqueueOptions | undefined;
    if (given?.dependsOn !== undefined || given?.db !== undefined) {
      throw new ErrandError(
        "INVALID_FLOW",
        `${where}.options: give dependsOn on the node, and db is not supported in a flow`,
      );
    }
    index.set(n.ref, i);
    return n;
  });

  // Edges within the flow, each checked; existing jobs by id are left to the store.
  const within: number[][] = checked.map((n, i) => {
    // A dependency named twice is the flow's mistake: named in its terms (the ref, or the id),
    // not as the generated id the enqueue would see it under.
    const named = new Set<string>();
    const once = (key: string, what: string) => {
      if (named.has(key)) {
        throw new ErrandError(
          "INVALID_FLOW",
          `enqueueFlow: nodes[${i}] (${JSON.stringify(n.ref)}) names the dependency ${what} twice`,
          { details: { ref: n.ref } },
        );
      }
      named.add(key);
    };
    return (n.dependsOn ?? []).flatMap((d) => {
      if (typeof d === "string") {
        once(`ref:${d}`, `ref ${JSON.stringify(d)}`);
        const j = index.get(d);
        if (j === undefined) {
          throw new ErrandError(
            "INVALID_FLOW",
            `enqueueFlow: nodes[${i}] (${JSON.stringify(n.ref)}) depends on the ref ${JSON.stringify(d)}, which no node has`,
            { details: { ref: n.ref, dependsOn: d } },
          );
        }
        return [j];
      }
      if (
        typeof d === "object" &&
        d !== null &&
        !Array.isArray(d) &&
        typeof (d as { id: unknown }).id === "string"
      ) {
        once(`id:${(d as { id: string }).id}`, `{ id: ${JSON.stringify((d as { id: string }).id)} }`);
        return [];
      }
      throw new ErrandError(
        "INVALID_FLOW",
        `enqueueFlow: nodes[${i}].dependsOn entries are refs or { id }, got ${describe(d)}`,
      );
    });
  });
  const order = topologicalOrder(checked, within);

  // Given ids checked in node order; the others made in dependency order, so that a job's generated
  // id sorts after those of the jobs it waits for: an ordered key (same createdAt within the call)
  // takes its jobs by (createdAt, id), and a dependent sorting first would hold its key against
  // its own dependency for ever.
  const ids = checked.map((n) => (n.options?.id === undefined ? "" : checkJobId(n.options.id)));
  const givenAt = new Map<string, number>();
  ids.forEach((id, i) => {
    if (id === "") return;
    const first = givenAt.get(id);
    if (first !== undefined) {
      throw new ErrandError(
        "INVALID_FLOW",
        `enqueueFlow: nodes[${first}] and nodes[${i}] give the same id ${JSON.stringify(id)}: a flow's nodes are distinct jobs`,
        { details: { id } },
      );
    }
    givenAt.set(id, i);
  });
  for (const i of order) if (ids[i] === "") ids[i] = uuidv7(p.now);
  const jobs: NewJob[] = new Array(order.length);
  const values: unknown[] = new Array(order.length);
  const refs: string[] = new Array(order.length);
  let idsGenerated = true;
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    const n = checked[i]!;
    const where = `enqueueFlow: nodes[${i}]`;
    const { type, def } = jobTarget(where, n.job, p.definition);
    const dependsOn = (n.dependsOn ?? []).map((d) => (typeof d === "string" ? ids[index.get(d)!]! : d.id));
    // Refused by type too; checked here for JavaScript callers and the server's nodes.
    if ((n.options as EnqueueOptions | undefined)?.debounce !== undefined) {
      throw new ErrandError(
        "INVALID_FLOW",
        `${where} (${JSON.stringify(n.ref)}): debounce is not for a flow's nodes: a node is one job that others may wait for, and debounce decides which job it is`,
        { details: { ref: n.ref } },
      );
    }
    const options: EnqueueOptions = { ...n.options, id: ids[i] };
    if (dependsOn.length > 0) options.dependsOn = dependsOn;
    const base = p.plan(type, def, options);
    const value = def?.schema ? await validatePayload(def, n.payload) : n.payload;
    if (n.options?.id !== undefined) idsGenerated = false;
    values[k] = value;
    refs[k] = n.ref;
    jobs[k] = withPayload(base, base.id, toJsonText(`nodes[${i}].payload`, value, p.maxPayloadBytes));
  }
  return { jobs, values, refs, idsGenerated };
}

/** A flow's jobs by ref, in a record without a prototype (a ref is any name). */
export function byRef<J>(refs: readonly string[], jobs: readonly J[]): Record<string, J> {
  const out: Record<string, J> = Object.create(null);
  refs.forEach((ref, k) => {
    out[ref] = jobs[k]!;
  });
  return out;
}

/**
 * Node indexes, every node after the nodes it depends on; among nodes ready at once, the given
 * order.
 * @throws ErrandError `INVALID_FLOW` naming the refs on a cycle.
 */
function topologicalOrder(nodes: readonly FlowNode[], within: readonly number[][]): number[] {
  const waiting = within.map((deps) => deps.length);
  const dependents: number[][] = nodes.map(() => []);
  within.forEach((deps, i) => {
    for (const j of deps) dependents[j]!.push(i);
  });
  const order: number[] = [];
  // A min-heap would keep the given order exactly; a queue in index order is enough for a stable,
  // deterministic order and is O(V + E).
  const ready = waiting.flatMap((w, i) => (w === 0 ? [i] : []));
  for (let head = 0; head < ready.length; head++) {
    const i = ready[head]!;
    order.push(i);
    for (const d of dependents[i]!) if (--waiting[d]! === 0) ready.push(d);
  }
  if (order.length < nodes.length) {
    const onCycle = nodes.flatMap((n, i) => (waiting[i]! > 0 ? [n.ref] : []));
    throw new ErrandError(
      "INVALID_FLOW",
      `enqueueFlow: the dependencies form a cycle among ${onCycle
        .slice(0, 10)
        .map((r) => JSON.stringify(r))
        .join(", ")}`,
      { details: { refs: onCycle } },
    );
  }
  return order;
}
