import { ApiError, api, withQuery } from "./api.js";
import { badge, duration, h, json, link, longText, table, time } from "./dom.js";
import { keyHref } from "./jobs.js";
import type { Job, JobDependency, JobPage, JobState } from "./types.js";
import type { View } from "./view.js";

const CANCELLABLE: readonly JobState[] = ["blocked", "pending", "active"];
/** Dependents listed on a job's page; the flow view walks further. */
const DEPENDENTS_SHOWN = 50;
const RETRYABLE: readonly JobState[] = ["dead", "cancelled", "expired"];
const FINISHED: readonly JobState[] = ["completed", "dead", "cancelled", "expired"];
/**
 * Characters of an error message shown before its "show all" toggle: a history holds up to 100
 * messages of up to 65,536 characters each, which laid out whole took seconds.
 */
const MESSAGE_SHOWN = 2_000;

/**
 * One job: its fields, the jobs it waits for and the jobs waiting on it (with their states),
 * payload, result, checkpoint, error history, and what can be done to it.
 */
export const job: View = async (ctx) => {
  const id = ctx.path[0] ?? "";
  const path = `v1/jobs/${encodeURIComponent(id)}`;
  let related: Related = { dependencies: [], dependents: { jobs: [], nextCursor: null } };
  const show = (j: Job) => ctx.root.replaceChildren(...render(j, related, act).filter((e) => e !== null));
  const act = async (action: "cancel" | "retry" | "replay", button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      const j = await api<Job>("POST", `v1/jobs/${encodeURIComponent(id)}/${action}`);
      if (action === "replay") {
        ctx.navigate(`#/jobs/${encodeURIComponent(j.id)}`, `Replayed as a new job, ${j.id}.`);
        return;
      }
      show(j);
      ctx.notice(
        action === "cancel" ? `Cancelled: the job is now ${j.state}.` : `Retried: the job is now ${j.state}.`,
      );
    } catch (error) {
      button.disabled = false;
      // 409: someone else moved the job first; show where it is now beside the refusal.
      if (error instanceof ApiError && error.status === 409) {
        api<Job>("GET", `v1/jobs/${encodeURIComponent(id)}`).then(show, () => {});
      }
      ctx.fail(error);
    }
  };
  const j = await api<Job>("GET", path);
  const [dependencies, dependents] = await Promise.all([
    j.dependsOn.length
      ? api<{ dependencies: JobDependency[] }>("GET", `${path}/dependencies`).then((r) => r.dependencies)
      : [],
    api<JobPage>("GET", withQuery(`${path}/dependents`, { limit: DEPENDENTS_SHOWN })),
  ]);
  related = { dependencies, dependents };
  show(j);
  return undefined;
};

/** The jobs around one: what it waits for, and the first page of what waits on it. */
interface Related {
  dependencies: JobDependency[];
  dependents: JobPage;
}

/** The jobs a job waits for and the jobs waiting on it, each a link with its state. */
function relations(j: Job, related: Related): HTMLElement | null {
  const { dependencies, dependents } = related;
  if (dependencies.length === 0 && dependents.jobs.length === 0) return null;
  const row = (id: string, type: string | null, state: JobState | null) =>
    h(
      "tr",
      { "data-id": id },
      h("td", { class: "mono" }, link(`#/jobs/${encodeURIComponent(id)}`, id)),
      h("td", {}, type ?? "—"),
      h("td", {}, state ? badge(state) : h("span", { class: "muted" }, "pruned or hidden")),
    );
  const waiting =
    j.state === "blocked"
      ? `waiting on ${j.blockedBy} of ${j.dependsOn.length}; `
      : j.dependsOn.length
        ? ""
        : null;
  return h(
    "section",
    { class: "panel relations", "data-testid": "relations" },
    h("p", {}, link(`#/flows/${encodeURIComponent(j.id)}`, "Show the flow graph »")),
    h("h2", {}, `Depends on (${dependencies.length})`),
    waiting === null
      ? h("p", { class: "muted" }, "No dependencies.")
      : h(
          "div",
          { "data-testid": "dependencies" },
          h(
            "p",
            { class: "muted" },
            `${waiting}if one ends dead, cancelled or expired: ${j.onDependencyFailure === "run" ? "run anyway" : "cancel this job"}.`,
          ),
          table(
            ["job", "type", "state"],
            dependencies.map((d) => row(d.id, d.type, d.state)),
          ),
        ),
    h(
      "h2",
      {},
      `Dependents${dependents.nextCursor ? ` (first ${dependents.jobs.length})` : ` (${dependents.jobs.length})`}`,
    ),
    dependents.jobs.length
      ? h(
          "div",
          { "data-testid": "dependents" },
          table(
            ["job", "type", "state"],
            dependents.jobs.map((d) => row(d.id, d.type, d.state)),
          ),
        )
      : h("p", { class: "muted" }, "No job waits on this one."),
  );
}

function render(
  j: Job,
  related: Related,
  act: (a: "cancel" | "retry" | "replay", b: HTMLButtonElement) => void,
): Array<HTMLElement | null> {
  const button = (action: "cancel" | "retry" | "replay", label: string, enabled: boolean, title: string) =>
    h(
      "button",
      {
        type: "button",
        "data-action": action,
        class: action === "cancel" ? "danger" : "",
        disabled: !enabled,
        title,
        onclick: (e: Event) => act(action, e.currentTarget as HTMLButtonElement),
      },
      label,
    );
  const field = (name: string, value: Node | string | number | null | undefined) => [
    h("dt", {}, name),
    h("dd", { "data-field": name }, value === null || value === undefined || value === "" ? "—" : value),
  ];
  return [
    h("p", {}, link("#/jobs", "« Jobs")),
    h("h1", { class: "mono" }, j.id, " ", badge(j.state)),
    h(
      "div",
      { class: "actions" },
      button(
        "cancel",
        "Cancel",
        CANCELLABLE.includes(j.state),
        "Cancel a blocked, pending or active job (an active job's handler is aborted)",
      ),
      button(
        "retry",
        "Retry",
        RETRYABLE.includes(j.state),
        "Put a dead, cancelled or expired job back to pending",
      ),
      button(
        "replay",
        "Replay",
        FINISHED.includes(j.state),
        "Enqueue the same type and payload again under a new id",
      ),
    ),
    h(
      "section",
      { class: "panel" },
      h(
        "dl",
        { class: "fields" },
        field("type", j.type),
        field("queue", j.queue),
        field("attempt", `${j.attempt} of ${j.maxAttempts}`),
        field("key", j.key === null ? null : link(keyHref(j.key), j.key)),
        // Each snooze gave back the attempt it ended: maxAttempts grew by one.
        field("snoozes", j.snoozes),
        field("debounce key", j.debounceKey),
        field("priority", j.priority),
        field("weight", j.weight),
        field("delivery", j.delivery),
        field("backoff", JSON.stringify(j.backoff)),
        field("retry queue", j.retryQueue),
        field("timeout", j.timeoutMs === null ? null : duration(j.timeoutMs)),
        field("unique key", j.uniqueKey),
        field("created", time(j.createdAt)),
        field("run at", time(j.runAt)),
        field("expires", time(j.expiresAt)),
        field("started", time(j.startedAt)),
        field("finished", time(j.finishedAt)),
        field("lease expires", time(j.leaseExpiresAt)),
        field("worker", j.workerId),
        field("on dependency failure", j.dependsOn.length ? j.onDependencyFailure : null),
      ),
    ),
    relations(j, related),
    h("section", { class: "panel" }, h("h2", {}, "Payload"), json(j.payload, "payload")),
    h("section", { class: "panel" }, h("h2", {}, "Result"), json(j.result, "result")),
    h("section", { class: "panel" }, h("h2", {}, "Checkpoint"), json(j.checkpoint, "checkpoint")),
    h(
      "section",
      { class: "panel" },
      h("h2", {}, `Errors (${j.errors.length})`),
      j.errors.length
        ? h(
            "ol",
            { class: "errors", "data-testid": "errors" },
            ...j.errors.map((e) =>
              h(
                "li",
                {},
                h(
                  "div",
                  {},
                  h("strong", {}, `attempt ${e.attempt}`),
                  " · ",
                  time(e.at),
                  // Isolated: a right-to-left override in a name cannot reorder what follows it.
                  e.kind ? [" · ", h("bdi", {}, e.kind)] : "",
                  e.name ? [" · ", h("bdi", {}, e.name)] : "",
                  e.dependency
                    ? [" · ", link(`#/jobs/${encodeURIComponent(e.dependency)}`, e.dependency)]
                    : "",
                ),
                longText(e.message, MESSAGE_SHOWN, { class: "error-message" }),
                e.stack ? h("details", {}, h("summary", {}, "stack"), h("pre", {}, e.stack)) : null,
              ),
            ),
          )
        : h("p", { class: "muted" }, "No failed attempts."),
    ),
  ];
}
