/**
 * Fills the `{{fragment}}` placeholders of a store's embedded SQL (src/store/generated/*-queries.ts)
 * once, when the store opens: table names qualified by the configured schema, shared column lists.
 * An unknown placeholder is a bug in errand, so it throws at open rather than reaching the database.
 * @internal
 */
export function renderStatements<K extends string>(
  statements: Readonly<Record<K, string>>,
  fragments: Readonly<Record<string, string>>,
): Record<K, string> {
  const out = {} as Record<K, string>;
  for (const name of Object.keys(statements) as K[]) {
    out[name] = statements[name].replace(/\{\{([A-Za-z][A-Za-z0-9]*)\}\}/g, (_, key: string) => {
      const value = fragments[key];
      if (value === undefined) throw new Error(`SQL statement ${name} uses unknown fragment {{${key}}}`);
      return value;
    });
  }
  return out;
}

/** `statements` narrowed to `names` (a store's statements rendered again with other fragments). */
export function pickStatements<K extends string>(
  statements: Readonly<Record<string, string>>,
  names: readonly K[],
): Record<K, string> {
  return Object.fromEntries(names.map((n) => [n, statements[n]!])) as Record<K, string>;
}
