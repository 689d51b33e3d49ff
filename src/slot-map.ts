/** A table entry: emptied when its entry leaves, so a stale reference to it holds nothing. */
interface Slot<V> {
  value: V | undefined;
}

/**
 * A Map for entries that come and go at a high rate (the jobs running in a worker, the commands
 * awaiting a reply), which does not leak them into the old generation.
 *
 * A plain Map that sees a steady stream of adds and deletes is rehashed every few dozen entries,
 * and V8 leaves each old table pointing at the entries it held (and at its successor, for live
 * iterators). A long-lived Map's tables live in the old generation, where a dead one lingers
 * until the next full collection, and every scavenge treats its pointers as roots. So whatever
 * an obsolete table listed survived scavenges and was promoted: in a worker draining tens of
 * thousands of jobs a second, the runs (with their jobs, payloads and the store's reply strings)
 * and the settled reply promises of Redis commands made ~1.9 MB per scavenge, which grew both
 * generations (PostgreSQL and Redis workers ended a 20,000-job drain 15-20 MB larger). Here the
 * Map holds small slots, emptied on delete: an obsolete table keeps only a slot and its key.
 */
export class SlotMap<K, V> {
  readonly #slots = new Map<K, Slot<V>>();

  get size(): number {
    return this.#slots.size;
  }

  get(key: K): V | undefined {
    return this.#slots.get(key)?.value;
  }

  set(key: K, value: V): void {
    const slot = this.#slots.get(key);
    if (slot) slot.value = value;
    else this.#slots.set(key, { value });
  }

  delete(key: K): void {
    const slot = this.#slots.get(key);
    if (!slot) return;
    slot.value = undefined;
    this.#slots.delete(key);
  }

  /** The values, in insertion order. */
  values(): V[] {
    const out: V[] = [];
    for (const slot of this.#slots.values()) out.push(slot.value as V);
    return out;
  }

  /** Empties every slot, then the map. */
  clear(): void {
    for (const slot of this.#slots.values()) slot.value = undefined;
    this.#slots.clear();
  }
}
