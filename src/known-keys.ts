import { ErrandError } from "./errors.js";

/**
 * Refuses unknown option keys, suggesting the closest known one.
 * @throws ErrandError `INVALID_OPTION`: `unknown option "concurency"; did you mean "concurrency"?`
 */
export function checkKnownKeys(where: string, options: object, known: ReadonlySet<string>): void {
  if (typeof options !== "object" || options === null) {
    throw new ErrandError("INVALID_OPTION", `${where}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (known.has(key)) continue;
    let best: string | undefined;
    let bestDistance = 3;
    for (const k of known) {
      const d = editDistance(key, k);
      if (d < bestDistance) {
        bestDistance = d;
        best = k;
      }
    }
    throw new ErrandError(
      "INVALID_OPTION",
      `${where}: unknown option "${key}"${best ? `; did you mean "${best}"?` : ""}`,
    );
  }
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}
