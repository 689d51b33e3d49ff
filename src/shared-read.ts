/**
 * One read for many callers, never two at once: a caller who asks while the read runs shares the
 * next one, which starts when the running one ends. So every answer was read after it was asked
 * for (a caller sees what was written before it asked), and any number of callers (dashboard tabs
 * polling, probes, scrapes) keep at most one read running and one waiting.
 */
export class SharedRead<T> {
  readonly #read: () => Promise<T>;
  #running: Promise<T> | null = null;
  #next: Promise<T> | null = null;

  constructor(read: () => Promise<T>) {
    this.#read = read;
  }

  /** The next read's answer (or its error), shared with everyone who asked meanwhile. */
  get(): Promise<T> {
    if (this.#next !== null) return this.#next;
    if (this.#running === null) return this.#start();
    const next = this.#running.then(settled, settled).then(() => {
      this.#next = null;
      return this.#start();
    });
    this.#next = next;
    return next;
  }

  #start(): Promise<T> {
    // A read that throws before its first await rejects its callers like one that fails later.
    const running = Promise.resolve().then(this.#read);
    this.#running = running;
    const done = () => {
      if (this.#running === running) this.#running = null;
    };
    running.then(done, done);
    return running;
  }
}

function settled(): void {}
