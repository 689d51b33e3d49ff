/**
 * Records keyed by names users choose (queues, job types), for the places where the shape must stay
 * a plain JSON object (`stats().queues`, `.types`) rather than a `Map`.
 *
 * A `{}` literal inherits from `Object.prototype`, so on it `record["__proto__"] ??= {}` finds the
 * prototype and writes into every object of the process, and `record["toString"]` finds a function
 * where no queue of that name exists. A record made here has no prototype: every name, whatever it
 * is, is an own key or absent. Assigning `"__proto__"` to it makes an ordinary own property, and
 * `JSON.stringify` writes it like any other key.
 * @module
 */

/**
 * A record with no prototype, optionally filled from `entries` (later entries win).
 * @remarks It has no methods of its own: `record.hasOwnProperty(name)` throws, so use
 * `Object.hasOwn(record, name)` (or `name in record`, which sees only own keys here).
 */
export function nameRecord<V>(entries?: Iterable<readonly [string, V]>): Record<string, V> {
  const record = Object.create(null) as Record<string, V>;
  if (entries) for (const [name, value] of entries) record[name] = value;
  return record;
}

/** A copy of `source`'s own enumerable string keys into a {@link nameRecord} (for records parsed from JSON). */
export function toNameRecord<V>(source: Readonly<Record<string, V>> | null | undefined): Record<string, V> {
  return nameRecord(source ? Object.entries(source) : undefined);
}

/**
 * Compares by UTF-8 bytes, as SQLite's BINARY and PostgreSQL's "C" collations do: the order every
 * store lists names in, whatever the process's locale (`localeCompare` puts "a" before "B").
 */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
