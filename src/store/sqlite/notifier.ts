/**
 * The SQLite store's wake-ups: an emitter for this process, and a doorbell file beside the
 * database (`<file>-wake`) that other processes watch.
 * @module
 */
import { closeSync, constants, type FSWatcher, openSync, watch, writeSync } from "node:fs";
import { type Notifier, WakeListeners } from "../notifier.js";

/**
 * Wake-ups for one SQLite file. A ring rewrites the doorbell's first byte; every process watching
 * the file (inotify) hears it, this one included, and this one's listeners are also called at once.
 */
export class SqliteNotifier implements Notifier {
  readonly #listeners = new WakeListeners();
  readonly #doorbellPath: string | null;
  #doorbellFd: number | null = null;
  #watcher: FSWatcher | null = null;

  /** @param doorbellPath - the doorbell file, or null to wake this process only (`:memory:`). */
  constructor(doorbellPath: string | null) {
    this.#doorbellPath = doorbellPath;
  }

  /** Creates the doorbell file if needed and starts watching it. */
  open(): void {
    if (!this.#doorbellPath) return;
    // Not O_APPEND: every ring rewrites byte 0, so the file never grows.
    this.#doorbellFd = openSync(this.#doorbellPath, constants.O_RDWR | constants.O_CREAT, 0o644);
    this.#watcher = watch(this.#doorbellPath, { persistent: false }, () => this.#emitWake());
    this.#watcher.on("error", () => {
      // The doorbell is an optimisation: workers still poll when it is gone.
      this.#watcher?.close();
      this.#watcher = null;
    });
  }

  wake(): void {
    if (this.#doorbellFd !== null) {
      try {
        writeSync(this.#doorbellFd, "1", 0);
      } catch {
        // Best effort: other processes fall back to polling.
      }
    }
    this.#emitWake();
  }

  #emitWake(): void {
    this.#listeners.emit();
  }

  onWake(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Stops watching, closes the doorbell file and forgets every listener. */
  async close(): Promise<void> {
    this.#watcher?.close();
    this.#watcher = null;
    if (this.#doorbellFd !== null) closeSync(this.#doorbellFd);
    this.#doorbellFd = null;
    this.#listeners.clear();
  }
}
