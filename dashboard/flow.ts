/**
 * The flow view (`#/flows/{id}`): the graph of jobs a job belongs to, found by walking its
 * dependencies and dependents from it, drawn left to right (a job right of every job it waits
 * for), each node a link to its job with its state.
 */
import { ApiError, api, withQuery } from "./api.js";
import { badge, h, link } from "./dom.js";
import type { Job, JobPage, JobState } from "./types.js";
import type { View } from "./view.js";

/** Most jobs the view walks to: a flow larger than this is drawn in part, and says so. */
export const MAX_FLOW_NODES = 200;
/** Dependents read per job: a job waited on by more is drawn with the first ones only. */
const DEPENDENTS_PER_JOB = 100;

/** A job of the graph; `state` null for one that is gone (pruned) or hidden from this token. */
interface FlowNode {
  id: string;
  type: string | null;
  state: JobState | null;
  dependsOn: string[];
}

/** What the walk found: nodes by id, edges as [dependency, dependent], and whether it stopped early. */
interface FlowGraph {
  nodes: Map<string, FlowNode>;
  edges: Array<[string, string]>;
  truncated: boolean;
}

export const flow: View = async (ctx) => {
  const id = ctx.path[0] ?? "";
  const graph = await walk(id);
  ctx.root.append(
    h("p", {}, link(`#/jobs/${encodeURIComponent(id)}`, "« Job")),
    h("h1", {}, "Flow of ", h("span", { class: "mono" }, id)),
    h(
      "p",
      { class: "muted", "data-testid": "flow-summary" },
      `${graph.nodes.size} jobs, ${graph.edges.length} dependencies.`,
      graph.truncated
        ? ` The flow is larger than this: the walk stopped at ${MAX_FLOW_NODES} jobs (or ${DEPENDENTS_PER_JOB} dependents of one job).`
        : "",
    ),
    h("section", { class: "panel flow" }, draw(graph, id)),
  );
  return undefined;
};

/** Reads a job, or null when there is none (pruned, or not this token's to read). */
async function readJob(id: string): Promise<Job | null> {
  try {
    return await api<Job>("GET", `v1/jobs/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** Walks breadth-first from `start` along dependencies and dependents, a level at a time. */
async function walk(start: string): Promise<FlowGraph> {
  const nodes = new Map<string, FlowNode>();
  const edges = new Map<string, [string, string]>();
  const addEdge = (from: string, to: string) => edges.set(`${from}\u0000${to}`, [from, to]);
  let truncated = false;
  let frontier = [start];
  const seen = new Set(frontier);
  while (frontier.length > 0) {
    const level = await Promise.all(
      frontier.map(async (id) => {
        const job = await readJob(id);
        const dependents = job
          ? await api<JobPage>(
              "GET",
              withQuery(`v1/jobs/${encodeURIComponent(id)}/dependents`, { limit: DEPENDENTS_PER_JOB }),
            )
          : { jobs: [], nextCursor: null };
        return { id, job, dependents };
      }),
    );
    const next: string[] = [];
    const visit = (other: string) => {
      if (seen.has(other)) return;
      if (seen.size >= MAX_FLOW_NODES) {
        truncated = true;
        return;
      }
      seen.add(other);
      next.push(other);
    };
    for (const { id, job, dependents } of level) {
      nodes.set(id, {
        id,
        type: job?.type ?? null,
        state: job?.state ?? null,
        dependsOn: job?.dependsOn ?? [],
      });
      for (const dep of job?.dependsOn ?? []) {
        addEdge(dep, id);
        visit(dep);
      }
      for (const d of dependents.jobs) {
        addEdge(id, d.id);
        visit(d.id);
      }
      if (dependents.nextCursor) truncated = true;
    }
    frontier = next;
  }
  // Edges to jobs the walk did not reach (past the bound) are left out of the drawing.
  const drawn = [...edges.values()].filter(([a, b]) => nodes.has(a) && nodes.has(b));
  return { nodes, edges: drawn, truncated };
}

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 190;
const NODE_H = 44;
const GAP_X = 70;
const GAP_Y = 18;

function svg(
  tag: string,
  attrs: Record<string, string | number>,
  ...children: Array<Node | string>
): Element {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/**
 * Layers: each job one column right of the furthest job it waits for (the longest path from a
 * job that waits for none), so every edge points right.
 */
function layers(graph: FlowGraph): Map<string, number> {
  const incoming = new Map<string, string[]>();
  const outgoing = new Map<string, string[]>();
  for (const id of graph.nodes.keys()) {
    incoming.set(id, []);
    outgoing.set(id, []);
  }
  for (const [from, to] of graph.edges) {
    incoming.get(to)!.push(from);
    outgoing.get(from)!.push(to);
  }
  const depth = new Map<string, number>();
  const waiting = new Map([...incoming].map(([id, ins]) => [id, ins.length]));
  const ready = [...graph.nodes.keys()].filter((id) => waiting.get(id) === 0);
  for (const id of ready) depth.set(id, 0);
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i]!;
    for (const to of outgoing.get(id)!) {
      depth.set(to, Math.max(depth.get(to) ?? 0, depth.get(id)! + 1));
      const left = waiting.get(to)! - 1;
      waiting.set(to, left);
      if (left === 0) ready.push(to);
    }
  }
  // A cycle cannot be enqueued; should one show up anyway, its jobs go in the first column.
  for (const id of graph.nodes.keys()) if (!depth.has(id)) depth.set(id, 0);
  return depth;
}

function draw(graph: FlowGraph, current: string): Element {
  const depth = layers(graph);
  const columns: string[][] = [];
  for (const [id, d] of depth) (columns[d] ??= []).push(id);
  for (const column of columns) column?.sort();
  const at = new Map<string, { x: number; y: number }>();
  columns.forEach((column, c) => {
    for (const [r, id] of (column ?? []).entries()) {
      at.set(id, { x: 10 + c * (NODE_W + GAP_X), y: 10 + r * (NODE_H + GAP_Y) });
    }
  });
  const width = 20 + columns.length * (NODE_W + GAP_X) - GAP_X;
  const height = 20 + Math.max(1, ...columns.map((c) => c?.length ?? 0)) * (NODE_H + GAP_Y) - GAP_Y;

  const edges = graph.edges.map(([from, to]) => {
    const a = at.get(from)!;
    const b = at.get(to)!;
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const mid = (x1 + x2) / 2;
    return svg("path", {
      class: "flow-edge",
      d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2 - 6} ${y2}`,
      "marker-end": "url(#flow-arrow)",
      "data-from": from,
      "data-to": to,
    });
  });
  const nodes = [...graph.nodes.values()].map((n) => {
    const p = at.get(n.id)!;
    const state = n.state ?? "gone";
    const label = n.type ?? "(pruned or hidden)";
    return svg(
      "a",
      {
        href: `#/jobs/${encodeURIComponent(n.id)}`,
        "data-id": n.id,
        "data-state": state,
        class: "flow-node",
      },
      svg("title", {}, `${n.id} · ${state}`),
      svg("rect", {
        x: p.x,
        y: p.y,
        width: NODE_W,
        height: NODE_H,
        rx: 6,
        class: `flow-box state-${state}${n.id === current ? " current" : ""}`,
      }),
      svg("text", { x: p.x + 10, y: p.y + 18, class: "flow-type" }, clip(label, 24)),
      svg("text", { x: p.x + 10, y: p.y + 35, class: "flow-state" }, `${state} · ${clip(n.id, 16)}`),
    );
  });
  const picture = svg(
    "svg",
    {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: "img",
      "aria-label": `the flow: ${graph.nodes.size} jobs`,
      "data-testid": "flow-graph",
    },
    svg(
      "defs",
      {},
      svg(
        "marker",
        {
          id: "flow-arrow",
          viewBox: "0 0 10 10",
          refX: 4,
          refY: 5,
          markerWidth: 8,
          markerHeight: 8,
          orient: "auto",
        },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "flow-arrowhead" }),
      ),
    ),
    ...edges,
    ...nodes,
  );
  // The legend repeats the states in words, for a reader who cannot tell the colours apart.
  const legend = h(
    "p",
    { class: "muted flow-legend" },
    ...[...new Set([...graph.nodes.values()].map((n) => n.state ?? "gone"))]
      .sort()
      .flatMap((s) => [badge(s), " "]),
  );
  return h("div", { class: "flow-scroll" }, picture as unknown as HTMLElement, legend);
}

function clip(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
