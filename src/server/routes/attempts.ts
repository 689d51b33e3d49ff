/** How the worker protocol speaks of attempts: a remote worker's error, and the 409 of a stale report. @module */
import { ErrandError } from "../../errors.js";
import type { Job } from "../../job.js";

/** A failure as a remote worker reports it: a message, or `{ message, name, stack }`. */
export type FailError = string | { message: string; name?: string; stack?: string };

/** A remote worker's error as an Error, keeping its own name and stack (not the server's). */
export function toError(e: FailError): Error {
  const error = new Error(typeof e === "string" ? e : e.message);
  error.name = typeof e === "string" ? "Error" : (e.name ?? "Error");
  error.stack = typeof e === "string" ? undefined : e.stack;
  return error;
}

/**
 * The 409 for a report that changed nothing, saying what it conflicts with: a job cancelled or
 * expired, an attempt never handed out, a later attempt, or this attempt already ended (a repeat
 * with another outcome). `details` carries the job's state and attempt for programs.
 */
export function stale(job: Job, attempt: number, conflict?: "different result"): ErrandError {
  const j = `job ${job.id}`;
  let why: string;
  if (job.state === "cancelled" || job.state === "expired") {
    why = `${j} is ${job.state}`;
  } else if (attempt > job.attempt) {
    why =
      job.attempt === 0
        ? `${j} has no attempt ${attempt}: it has not been handed out yet (it is ${job.state})`
        : `${j} has no attempt ${attempt}: it is on attempt ${job.attempt} (${job.state})`;
  } else if (attempt < job.attempt) {
    why = `attempt ${attempt} of ${j} is not current: the job is on attempt ${job.attempt} (${job.state})`;
  } else if (job.state === "completed") {
    why = `${j} attempt ${attempt} already completed${conflict === "different result" ? " with a different result" : ""}`;
  } else if (job.state === "dead") {
    why = `${j} attempt ${attempt} already failed, and the job is dead`;
  } else if (job.state === "pending") {
    why = `${j} attempt ${attempt} has already ended; the job is pending for attempt ${attempt + 1}`;
  } else {
    why = `${j} attempt ${attempt} is ${job.state} but changed while the report was made`;
  }
  return new ErrandError("STALE_ATTEMPT", `${why}; nothing changed`, {
    details: { state: job.state, attempt: job.attempt },
  });
}
