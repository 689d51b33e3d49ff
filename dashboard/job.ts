import { ApiError, api } from "./api.js";
import { badge, duration, h, json, link, time } from "./dom.js";
import type { Job, JobState } from "./types.js";
import type { View } from "./view.js";

const CANCELLABLE: readonly JobState[] = ["pending", "active"];
const RETRYABLE: readonly JobState[] = ["dead", "cancelled", "expired"];
const FINISHED: readonly JobState[] = ["completed", "dead", "cancelled", "expired"];

/** One job: its fields, payload, result, checkpoint, error history, and what can be done to it. */
export const job: View = async (ctx) => {
  const id = ctx.path[0] ?? "";
  const show = (j: Job) => ctx.root.replaceChildren(...render(j, act));
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
  show(await api<Job>("GET", `v1/jobs/${encodeURIComponent(id)}`));
  return undefined;
};

function render(
  j: Job,
  act: (a: "cancel" | "retry" | "replay", b: HTMLButtonElement) => void,
): HTMLElement[] {
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
    h("dd", {}, value === null || value === undefined || value === "" ? "—" : value),
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
        "Cancel a pending or active job (an active job's handler is aborted)",
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
      ),
    ),
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
                  e.kind ? ` · ${e.kind}` : "",
                  e.name ? ` · ${e.name}` : "",
                ),
                h("div", { class: "error-message" }, e.message),
                e.stack ? h("details", {}, h("summary", {}, "stack"), h("pre", {}, e.stack)) : null,
              ),
            ),
          )
        : h("p", { class: "muted" }, "No failed attempts."),
    ),
  ];
}
