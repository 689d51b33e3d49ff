import type { EventEmitter } from "node:events";

/**
 * Calls each listener of `event` on `emitter` with `args`, as `EventEmitter.prototype.emit` does,
 * except that a listener's fault stays the listener's: each runs in its own try/catch, a thenable
 * it returns gets a rejection handler, and the fault goes to {@link listenerFault}. Later
 * listeners still run, and the caller (a store write that has already happened, a worker's run of
 * a job) never sees it: a listener that throws cannot make `enqueue()` reject for a job that was
 * stored, nor leave a job running with no one to finish it.
 *
 * Listeners are read with `rawListeners`, so a `once` listener is called through its wrapper and
 * removed as `emit` would remove it; like `emit`, a listener added or removed during the call
 * changes the next call, not this one. The list is a copy, as `emit` makes for two listeners or
 * more (for a lone listener it is a one-element array that `emit` does not make); nothing else is
 * allocated unless a listener returns a thenable.
 *
 * Not for `error`: the emitters call `EventEmitter.prototype.emit` for it, so an `error` with no
 * listener throws at the emitter as it always has.
 * @returns whether `event` had listeners, as `emit` does.
 * @internal
 */
export function emitIsolated(emitter: EventEmitter, event: string | symbol, args: unknown[]): boolean {
  if (emitter.listenerCount(event) === 0) return false;
  const listeners = emitter.rawListeners(event);
  for (let i = 0; i < listeners.length; i++) {
    try {
      const out: unknown = Reflect.apply(listeners[i]!, emitter, args);
      if (isThenable(out)) out.then(undefined, (error: unknown) => listenerFault(emitter, error));
    } catch (error) {
      listenerFault(emitter, error);
    }
  }
  return true;
}

/**
 * The `error` listener a Queue adds so that its background faults never crash the process. It is
 * not someone listening: a listener's fault with no other `error` listener is a process warning.
 * @internal
 */
export function ignoreError(): void {}

const warned = new WeakSet<EventEmitter>();

/**
 * Where a listener's fault goes: the emitter's `error` event when someone listens for it. When
 * only {@link ignoreError} does (a Queue nobody listens to for `error`), the first such fault of
 * that emitter is a process warning (a listener's bug would otherwise vanish; a warning per event
 * would flood the log). With no `error` listener at all it is thrown on the next tick, outside the
 * emitter's caller, as an uncaught exception (what Node does with any throw that no one catches).
 * An `error` listener that throws in turn is thrown the same way, so the fault never comes back
 * into the emitter's caller.
 * @internal
 */
export function listenerFault(emitter: EventEmitter, error: unknown): void {
  const listeners = emitter.listenerCount("error");
  if (listeners === 1 && emitter.listeners("error")[0] === ignoreError) {
    if (warned.has(emitter)) return;
    warned.add(emitter);
    process.emitWarning(
      `an event listener threw (${error instanceof Error ? error.message : String(error)}); listen for "error" to handle listener faults (this warning is shown once)`,
      { code: "ERRAND_LISTENER_FAULT" },
    );
    return;
  }
  if (listeners > 0) {
    try {
      emitter.emit("error", error);
      return;
    } catch (thrown) {
      error = thrown;
    }
  }
  process.nextTick(rethrow, error);
}

function rethrow(error: unknown): never {
  throw error;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}
