/**
 * What every command is handed: the environment it reads and the stream it prints to, so the
 * commands reach `process` in one place only (the entry point builds this from it).
 */
export interface CliContext {
  /** Where `ERRAND_STORE`, `ERRAND_SERVER`, `ERRAND_TOKEN`, `ERRAND_TOKENS` and `PORT` come from. */
  readonly env: NodeJS.ProcessEnv;
  /** Results go here; errors and the progress bar go to standard error. */
  readonly stdout: { write(text: string): unknown };
}

/** The context of the running process. */
export function processContext(): CliContext {
  return { env: process.env, stdout: process.stdout };
}
