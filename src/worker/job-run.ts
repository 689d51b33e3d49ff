import type { Logger } from "pino";
import type { JobContext } from "../define-job.js";
import type { Duration } from "../duration.js";
import type { Job, JobDependency } from "../job.js";
import { Snooze } from "../snooze.js";

/** What a running job's context asks of its worker. One object per worker, shared by every run. */
export interface RunHooks {
  heartbeat(run: JobRun): Promise<boolean>;
  checkpoint(run: JobRun, data: unknown): Promise<boolean>;
  dependencies(run: JobRun): Promise<JobDependency[]>;
  logger(): Logger;
}

/**
 * One attempt running in a worker. The `AbortController` is made only when the handler reads
 * `ctx.signal`: most handlers never do, and at tens of thousands of jobs a second the controller
 * and its signal are a good part of the worker's garbage.
 */
export class JobRun {
  /** Set once the attempt's outcome is decided (reported, abandoned), so it is decided once. */
  settled = false;
  cancelTimeout: (() => void) | null = null;
  readonly context: JobContext<never>;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(
    readonly job: Job,
    readonly weight: number,
    hooks: RunHooks,
  ) {
    this.context = new RunContext(this, hooks);
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** The `ctx` a handler gets: methods on the prototype, so a job costs one small object. */
class RunContext implements JobContext<never> {
  readonly #run: JobRun;
  readonly #hooks: RunHooks;
  #log: Logger | undefined;

  constructor(run: JobRun, hooks: RunHooks) {
    this.#run = run;
    this.#hooks = hooks;
  }

  get job(): Job<never> {
    return this.#run.job as Job<never>;
  }

  get attempt(): number {
    return this.#run.job.attempt;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }

  heartbeat(): Promise<boolean> {
    return this.#hooks.heartbeat(this.#run);
  }

  checkpoint(data: unknown): Promise<boolean> {
    return this.#hooks.checkpoint(this.#run, data);
  }

  dependencies(): Promise<JobDependency[]> {
    return this.#hooks.dependencies(this.#run);
  }

  snooze(delay: Duration): Snooze {
    return new Snooze(delay);
  }

  get log(): Logger {
    const { job } = this.#run;
    this.#log ??= this.#hooks.logger().child({ jobId: job.id, type: job.type, attempt: job.attempt });
    return this.#log;
  }
}
