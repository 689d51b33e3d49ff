/**
 * The HTTP schemas (src/server/schemas.ts) against the TypeScript types errand/client sends and
 * returns, at compile time: `npm run typecheck` fails when a field is added, removed or retyped on
 * one side only (`npx vitest run --typecheck.only test/types` runs the same checks).
 *
 * Each schema's type comes from json-schema-to-ts. The TypeScript side is put in its JSON form
 * first (Dates become ISO strings), and the two are compared with `toEqualTypeOf`: same keys, same
 * optionality, same value types. Where they differ on purpose, the difference is spelled out here.
 */
import type { FromSchema } from "json-schema-to-ts";
import { expectTypeOf } from "vitest";
import type { BackoffFunction, BackoffOptions } from "../../src/backoff.js";
import type {
  ErrandClient,
  JobSummaryPage,
  RemoteJobType,
  RemoteLeaseOptions,
  RemoteListOptions,
  RemoteTypePage,
  ReportItem,
  wireError,
} from "../../src/client/client.js";
import type { FlowNode } from "../../src/flow-plan.js";
import type { Job, JobDependency, JobSummary } from "../../src/job.js";
import type {
  EnqueuedJob,
  EnqueueOptions,
  FailOptions,
  JobPage,
  ListOptions,
  ListViewOptions,
  Queue,
  QueueStats,
  Schedule,
  ScheduleOptions,
  SchedulePage,
} from "../../src/queue.js";
import type { JobTypeConfig } from "../../src/server/job-types.js";
import type { routeSchemas, scheduleSchema, sharedSchemas } from "../../src/server/schemas.js";
import type { StatsHistoryResult } from "../../src/server/stats-history.js";
import type { AttemptRef } from "../../src/store/store.js";

// ---- from schema to type ------------------------------------------------------------------------

type References = [...typeof sharedSchemas, typeof scheduleSchema];
/** An object's named keys, without the index signature an open schema (no additionalProperties) adds. */
type Named<T> = { [K in keyof T as string extends K ? never : K]: T[K] };
/** Drops those index signatures, deeply; a map (an object with no named keys) keeps its own. */
type Closed<T> = T extends readonly (infer I)[]
  ? Closed<I>[]
  : T extends object
    ? [keyof Named<T>] extends [never]
      ? { [K in keyof T]: Closed<T[K]> }
      : { [K in keyof Named<T>]: Closed<Named<T>[K]> }
    : T;
/**
 * What a schema accepts or documents, as a type. A field with a `default` stays optional: the
 * client may leave it out (the server's validator then fills in the default).
 */
type Wire<S> = Closed<
  FromSchema<S & object, { references: References; keepDefaultedPropertiesOptional: true }>
>;

type Route = typeof routeSchemas;
type Body<K extends keyof Route> = Route[K] extends { body: infer B } ? Wire<B> : never;
type Reply<K extends keyof Route, Status extends number> = Route[K] extends { response: infer R }
  ? Status extends keyof R
    ? Wire<R[Status]>
    : never
  : never;
type Shared<Id extends string> = Wire<Extract<(typeof sharedSchemas)[number], { $id: Id }>>;

// ---- from TypeScript to its JSON form -----------------------------------------------------------

/** Marks a function where JSON would silently drop it: it never equals a schema's type. */
type NotJson = "a function does not survive JSON";
/**
 * `T` as JSON carries it: Dates as ISO strings, no readonly, intersections flattened. `Duration`'s
 * `string & {}` arm is plain `string`.
 */
type Json<T> = T extends Date
  ? string
  : T extends (...args: never[]) => unknown
    ? NotJson
    : T extends string
      ? string extends T
        ? string
        : T
      : T extends readonly (infer I)[]
        ? Json<I>[]
        : T extends object
          ? { -readonly [K in keyof T]: Json<T[K]> }
          : T;

type Awaited2<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;
/** A backoff the client can send: never a function (the client refuses one). */
type SendableBackoff = Exclude<BackoffOptions, BackoffFunction>;
/** Enqueue options as the client sends them: `db` and a function backoff are refused before sending. */
type SentOptions = Omit<EnqueueOptions, "db" | "backoff"> & { backoff?: SendableBackoff };
/** One job as `enqueue`/`enqueueBatch` send it; an undefined payload is left out by JSON. */
type SentJob = { type: string; payload?: unknown } & SentOptions;
/** An error as the client sends it: a message, or what `wireError` makes of an Error. */
type SentError = string | ReturnType<typeof wireError>;
/** A job as the server sends it: `duplicate` is there on enqueue replies. */
type WireJob = Json<Job & { duplicate?: boolean }>;

// ---- shared shapes ------------------------------------------------------------------------------

expectTypeOf<Shared<"Job">>().toEqualTypeOf<WireJob>();
expectTypeOf<Json<EnqueuedJob>>().toExtend<Shared<"Job">>();
expectTypeOf<Shared<"Backoff">>().toEqualTypeOf<Json<SendableBackoff>>();
expectTypeOf<Wire<typeof scheduleSchema>>().toEqualTypeOf<Json<Schedule>>();
// A PUT names the type in its path, so the body need not; replies always carry it.
expectTypeOf<Shared<"JobType">>().toEqualTypeOf<
  Json<Partial<Pick<RemoteJobType, "type">> & Omit<RemoteJobType, "type">>
>();
expectTypeOf<Shared<"JobType">>().toEqualTypeOf<
  Json<Partial<Pick<JobTypeConfig, "type">> & Omit<JobTypeConfig, "type">>
>();

// ---- jobs ---------------------------------------------------------------------------------------

expectTypeOf<Body<"POST /v1/jobs">>().toEqualTypeOf<Json<SentJob> | { jobs: Json<SentJob>[] }>();
expectTypeOf<Body<"PUT /v1/jobs/:id">>().toEqualTypeOf<Json<Omit<SentJob, "id">>>();
// `?return=ids` answers `{ ids }`: what ErrandClient.enqueueManyIds returns.
/**
 * A duplicate of a job the caller may not read (a producer meeting another owner's job): its id
 * only. ErrandClient's EnqueuedJob does not model it (its TSDoc says so): a producer's own jobs are
 * whole.
 */
type HiddenDuplicate = { id: string; duplicate: true };
type Enqueued = WireJob | HiddenDuplicate;
type EnqueueReply = Enqueued | { jobs: Enqueued[] } | { ids: Awaited2<ErrandClient["enqueueManyIds"]> };
expectTypeOf<Reply<"POST /v1/jobs", 201>>().toEqualTypeOf<EnqueueReply>();
expectTypeOf<Reply<"POST /v1/jobs", 200>>().toEqualTypeOf<EnqueueReply>();
expectTypeOf<Route["POST /v1/jobs"]["querystring"]["properties"]["return"]["enum"]>().toEqualTypeOf<
  readonly ["jobs", "ids"]
>();
expectTypeOf<Reply<"PUT /v1/jobs/:id", 201>>().toEqualTypeOf<WireJob>();
expectTypeOf<Reply<"PUT /v1/jobs/:id", 200>>().toEqualTypeOf<Enqueued>();
expectTypeOf<Reply<"GET /v1/jobs/:id", 200>>().toEqualTypeOf<WireJob>();
/** A page of whole jobs, as `GET /v1/jobs` (its default view) and a job's dependents answer it. */
type WirePage = Json<Omit<JobPage, "jobs"> & { jobs: Array<Job & { duplicate?: boolean }> }>;
// `view=summary` answers JobSummary, what ErrandClient.list({ view: "summary" }) returns; the two
// views are the two arms of the reply.
expectTypeOf<Shared<"JobSummary">>().toEqualTypeOf<Json<JobSummary>>();
expectTypeOf<Reply<"GET /v1/jobs", 200>>().toEqualTypeOf<WirePage | Json<JobSummaryPage>>();
declare const client: ErrandClient;
expectTypeOf(client.list({ view: "summary" })).resolves.toEqualTypeOf<JobSummaryPage>();
expectTypeOf(client.list({ state: "dead", view: "full" })).resolves.toEqualTypeOf<JobPage>();
expectTypeOf(client.list()).resolves.toEqualTypeOf<JobPage>();
// The Queue's list is typed the same, and a ListOptions of the caller's (no view) lists whole jobs.
declare const queue: Queue;
declare const filter: ListOptions;
declare const anyView: ListViewOptions;
expectTypeOf(queue.list({ view: "summary" })).resolves.toEqualTypeOf<JobSummaryPage>();
expectTypeOf(queue.list(filter)).resolves.toEqualTypeOf<JobPage>();
expectTypeOf(client.list(filter)).resolves.toEqualTypeOf<JobPage>();
expectTypeOf(queue.list(anyView)).resolves.toEqualTypeOf<JobPage | JobSummaryPage>();
expectTypeOf<Route["GET /v1/jobs"]["querystring"]["properties"]["view"]["enum"][number]>().toEqualTypeOf<
  NonNullable<RemoteListOptions["view"]>
>();
expectTypeOf<Body<"POST /v1/jobs/:id/reschedule">>().toEqualTypeOf<
  Json<Parameters<ErrandClient["reschedule"]>[1]>
>();
expectTypeOf<Reply<"POST /v1/jobs/:id/cancel", 200>>().toEqualTypeOf<WireJob>();

// A flow node as the client sends it: `job` goes as `type`, its options flat beside it.
type SentFlowNode = Omit<FlowNode, "job" | "payload" | "options"> & {
  type: string;
  payload?: unknown;
} & Omit<SentOptions, "dependsOn" | "debounce">;
expectTypeOf<Body<"POST /v1/flows">>().toEqualTypeOf<{ jobs: Json<SentFlowNode>[] }>();
expectTypeOf<Reply<"POST /v1/flows", 201>>().toEqualTypeOf<{ jobs: Record<string, Enqueued> }>();
expectTypeOf<Reply<"POST /v1/flows", 200>>().toEqualTypeOf<{ jobs: Record<string, Enqueued> }>();
expectTypeOf<Reply<"GET /v1/jobs/:id/dependencies", 200>>().toEqualTypeOf<{
  dependencies: Json<Awaited2<ErrandClient["dependencies"]>>;
}>();
expectTypeOf<Json<JobDependency>>().toEqualTypeOf<
  Reply<"GET /v1/jobs/:id/dependencies", 200>["dependencies"][number]
>();
expectTypeOf<Reply<"GET /v1/jobs/:id/dependents", 200>>().toEqualTypeOf<WirePage>();
expectTypeOf<Reply<"POST /v1/jobs/:id/replay", 201>>().toEqualTypeOf<WireJob>();

// ---- the remote-worker protocol -----------------------------------------------------------------

expectTypeOf<Body<"POST /v1/lease">>().toEqualTypeOf<Json<Omit<RemoteLeaseOptions, "signal">>>();
expectTypeOf<Reply<"POST /v1/lease", 200>>().toEqualTypeOf<{ jobs: WireJob[]; ahead?: boolean }>();
expectTypeOf<Body<"POST /v1/jobs/:id/complete">>().toEqualTypeOf<
  Json<Pick<AttemptRef, "attempt"> & { result?: Parameters<ErrandClient["complete"]>[1] }>
>();
expectTypeOf<Body<"POST /v1/jobs/:id/fail">>().toEqualTypeOf<
  Json<Pick<AttemptRef, "attempt"> & FailOptions & { error: SentError }>
>();
expectTypeOf<Reply<"POST /v1/jobs/:id/fail", 200>>().toEqualTypeOf<{
  ok: boolean;
  state: NonNullable<Awaited2<ErrandClient["failWithState"]>>;
  runAt: string;
  duplicate: boolean;
}>();
expectTypeOf<Body<"POST /v1/jobs/:id/heartbeat">>().toEqualTypeOf<
  Json<Pick<AttemptRef, "attempt"> & NonNullable<Parameters<ErrandClient["heartbeat"]>[1]>>
>();
// The batch: the client sends each job's id and attempt, and reads `ok` per job and the paused queues.
expectTypeOf<Body<"POST /v1/heartbeats">>().toEqualTypeOf<
  Json<
    { jobs: Array<Pick<AttemptRef, "id" | "attempt">> } & NonNullable<
      Parameters<ErrandClient["heartbeatMany"]>[1]
    >
  >
>();
expectTypeOf<Reply<"POST /v1/heartbeats", 200>>().toEqualTypeOf<{
  results: Array<{ id: string; ok: boolean }>;
  pausedQueues: Awaited2<ErrandClient["heartbeatMany"]>["pausedQueues"];
}>();
expectTypeOf<Body<"POST /v1/jobs/:id/checkpoint">>().toEqualTypeOf<
  Json<Pick<AttemptRef, "attempt"> & { data: Parameters<ErrandClient["checkpoint"]>[1] }>
>();
expectTypeOf<Body<"POST /v1/jobs/:id/release">>().toEqualTypeOf<Json<Pick<AttemptRef, "attempt">>>();
expectTypeOf<Body<"POST /v1/jobs/:id/snooze">>().toEqualTypeOf<
  Json<Pick<AttemptRef, "attempt"> & { delayMs: Parameters<ErrandClient["snooze"]>[1] }>
>();

/** A report as `client.report` sends it: its error through `wireError`. */
type SentReport = ReportItem extends infer I
  ? I extends { error: unknown }
    ? Omit<I, "error"> & { error: SentError }
    : I
  : never;
/** Every key of every member of a union. */
type KeysOf<U> = U extends unknown ? keyof U : never;
type ReportBodyItem = Body<"POST /v1/report">["reports"][number];
// The schema takes one flat object for both outcomes: every report the client sends fits it, and
// the two name the same fields.
expectTypeOf<Json<SentReport>>().toExtend<ReportBodyItem>();
expectTypeOf<keyof ReportBodyItem>().toEqualTypeOf<KeysOf<Json<SentReport>>>();
expectTypeOf<Reply<"POST /v1/report", 200>>().toEqualTypeOf<{
  results: Awaited2<ErrandClient["report"]>;
}>();

// ---- types, schedules, inspection ---------------------------------------------------------------

expectTypeOf<Body<"PUT /v1/types/:type">>().toEqualTypeOf<Shared<"JobType">>();
expectTypeOf<Json<Omit<RemoteJobType, "type">>>().toExtend<Body<"PUT /v1/types/:type">>();
expectTypeOf<Reply<"GET /v1/types", 200>>().toEqualTypeOf<{
  types: Shared<"JobType">[];
  nextCursor: string | null;
}>();
expectTypeOf<Reply<"GET /v1/types", 200>["nextCursor"]>().toEqualTypeOf<RemoteTypePage["nextCursor"]>();

// Schedule options as the client sends them: `job` goes as `type`; the payload may be left out.
type SentSchedule = Omit<ScheduleOptions, "job" | "payload" | "options"> & {
  type: string;
  payload?: unknown;
  options?: Omit<NonNullable<ScheduleOptions["options"]>, "backoff"> & { backoff?: SendableBackoff };
};
expectTypeOf<Body<"PUT /v1/schedules/:name">>().toEqualTypeOf<Json<SentSchedule>>();
expectTypeOf<Reply<"PUT /v1/schedules/:name", 200>>().toEqualTypeOf<Json<Schedule>>();
expectTypeOf<Reply<"GET /v1/schedules", 200>>().toEqualTypeOf<Json<SchedulePage>>();

expectTypeOf<Reply<"GET /v1/stats", 200>>().toEqualTypeOf<Json<QueueStats>>();
expectTypeOf<Reply<"GET /v1/queues", 200>>().toEqualTypeOf<{
  queues: Json<Awaited2<ErrandClient["queues"]>>;
}>();
expectTypeOf<Reply<"POST /v1/prune", 200>>().toEqualTypeOf<{
  deleted: Awaited2<ErrandClient["prune"]>;
}>();

// ---- the dashboard's own copies (dashboard/types.ts, compiled apart for the browser) -------------
// What the server sends must fit what the dashboard reads, and every field the dashboard reads
// must be one the server sends.

type DashJob = import("../../dashboard/types.js").Job;
type DashStats = import("../../dashboard/types.js").Stats;
type DashHistory = import("../../dashboard/types.js").History;
type DashPage = import("../../dashboard/types.js").JobPage;
type DashSummary = import("../../dashboard/types.js").JobSummary;
type DashSummaryPage = import("../../dashboard/types.js").JobSummaryPage;
type DashSchedule = import("../../dashboard/types.js").Schedule;
type DashType = import("../../dashboard/types.js").JobType;

expectTypeOf<WireJob>().toExtend<DashJob>();
expectTypeOf<keyof DashJob>().toExtend<keyof WireJob>();
expectTypeOf<WirePage>().toExtend<DashPage>();
// The jobs list asks for summaries: it reads nothing a summary leaves out.
expectTypeOf<Json<JobSummaryPage>>().toExtend<DashSummaryPage>();
expectTypeOf<keyof DashSummary>().toExtend<keyof Json<JobSummary>>();
expectTypeOf<Reply<"GET /v1/stats", 200>>().toExtend<DashStats>();
expectTypeOf<keyof DashStats>().toExtend<keyof Reply<"GET /v1/stats", 200>>();
expectTypeOf<Reply<"GET /v1/stats/history", 200>>().toEqualTypeOf<Json<StatsHistoryResult>>();
expectTypeOf<Reply<"GET /v1/stats/history", 200>>().toExtend<DashHistory>();
expectTypeOf<keyof DashHistory>().toExtend<keyof Reply<"GET /v1/stats/history", 200>>();
expectTypeOf<Json<Schedule>>().toExtend<DashSchedule>();
expectTypeOf<keyof DashSchedule>().toExtend<keyof Json<Schedule>>();
expectTypeOf<Shared<"JobType">>().toExtend<Omit<DashType, "type"> & { type?: string }>();
expectTypeOf<keyof DashType>().toExtend<keyof Shared<"JobType">>();
